"""`rescue-sim play`: you are the supporter. The session pauses (a LangGraph interrupt) for each of your moves."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from personas.library import resolve_case
from personas.taxonomy import strategies_for
from simulator.cli._common import console, err_console, flag_names, print_path, user_errors
from simulator.cli._models import make_client, model_settings

HELP = (
    "[dim]Your turn as the counsellor. Type what you say (Enter alone = stay quiet). "
    "Then who it is for (names, comma-separated; Enter = everyone) and, optionally, a strategy label. "
    "Start with /end to close the session after this line.[/]"
)


def ask_move(payload: dict[str, Any]) -> dict[str, Any]:
    """Ask the person at the terminal for one supporter move; re-asks on an unknown name or label."""
    text = typer.prompt("Therapist", default="", show_default=False).strip()
    if not text:
        return {"text": ""}
    close = text.startswith("/end")
    text = text.removeprefix("/end").strip()
    valid = [*payload["members"], payload["group_label"]]
    while True:
        raw = typer.prompt(f"  to ({', '.join(valid)})", default=payload["group_label"])
        targets = [t.strip() for t in raw.split(",") if t.strip()]
        if targets and all(t in valid for t in targets):
            break
        err_console.print(f"  [red]unknown target[/]; choose from {', '.join(valid)}")
    labels = list(strategies_for(payload["group"]))
    while True:
        strategy = typer.prompt(
            f"  strategy ({', '.join(labels)}; Enter = none)", default="", show_default=False
        ).strip()
        if not strategy or strategy in labels:
            break
        err_console.print(f"  [red]not a {payload['group']} strategy[/]")
    return {"text": text, "targets": targets, "strategy": strategy or None, "close_session": close}


@user_errors
@flag_names(out_dir="--out")
def play(
    case: Annotated[str, typer.Option("--case", "-c", help="Case id or card path.")],
    model: Annotated[
        str | None, typer.Option(help="Model playing the personas and tracker.", envvar="RESCUE_SIM_MODEL")
    ] = None,
    turns: Annotated[int, typer.Option("--turns", "-n", min=1, max=200, help="Member turns.")] = 8,
    seed: Annotated[int, typer.Option(help="Session seed.")] = 0,
    tracker_every: Annotated[int, typer.Option(min=0, help="Run the tracker every N member turns and at the end.")] = 3,
    out: Annotated[Path | None, typer.Option(help="Run folder (default: runs/play-<case>-<time>).")] = None,
) -> None:
    """Be the supporter yourself: the personas react to what you say."""
    from simulator.cli._render import LiveSession
    from simulator.runner.runs import RunConfig, RunEvents, run_sessions
    from simulator.supporters import HumanSupporter

    the_case = resolve_case(case)
    settings = model_settings(model)
    client = make_client(settings)
    config = RunConfig(
        cases=[the_case.id],
        supporter="human",
        models={r: settings.model_for(r) for r in ("member", "tracker")},
        seeds=[seed],
        max_turns=turns,
        tracker_every=tracker_every,
        judge=False,
    )
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = out or Path("runs") / f"play-{the_case.id}-{stamp}"
    live = LiveSession(console)
    console.print(HELP)

    async def human_input(payload: dict[str, Any], record) -> dict[str, Any]:
        live(record)
        return ask_move(payload)

    def finished(record, path: Path) -> None:
        live.finish(record)
        print_path("[dim]saved[/]", path)

    events = RunEvents(session_update=live, session_finished=finished)
    try:
        asyncio.run(
            run_sessions(config, [the_case], client, HumanSupporter(), out_dir, events=events, human_input=human_input)
        )
    except (KeyboardInterrupt, typer.Abort):
        print_path("[yellow]interrupted[/]: session saved as incomplete in", out_dir, to=err_console)
        raise typer.Exit(130) from None
    print_path("run folder:", out_dir, style="bold")
