"""`rescue-sim run`: put a supporter in the room with one or more cases and watch, live."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from personas.common.errors import UserError
from personas.library import load_library, resolve_case
from simulator.cli._aio import run_sync
from simulator.cli._common import (
    EXIT_FAILED,
    JudgeModeChoice,
    JudgeModeOpt,
    console,
    err_console,
    flag_names,
    print_path,
    user_errors,
)
from simulator.cli._models import make_client, model_settings, models_line

if TYPE_CHECKING:
    from simulator.cli._render import Waiting

ModelOpt = Annotated[
    str | None, typer.Option(help="Default model for personas, tracker and judges.", envvar="RESCUE_SIM_MODEL")
]


def parse_seeds(seed: int, seeds: str | None) -> list[int]:
    """`--seeds 0,1,2` or `0-9` (inclusive); an empty or backwards range is an error, not an empty run."""
    if not seeds:
        return [seed]
    hint = "use a list like 0,1,2 or a range like 0-9"
    try:
        if "-" in seeds.strip().lstrip("-") and "," not in seeds:
            lo, hi = (int(x) for x in seeds.split("-"))
            if lo > hi:
                raise UserError(f"--seeds {seeds!r}: the range runs backwards; write {hi}-{lo}")
            return list(range(lo, hi + 1))
        out = [int(x) for x in seeds.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--seeds {seeds!r}: {hint}") from None
    if not out:
        raise UserError(f"--seeds {seeds!r}: no seed given; {hint}")
    return list(dict.fromkeys(out))


CaseOpt = Annotated[
    list[str], typer.Option("--case", "-c", metavar="ID|PATH", help="Case id or card path; repeat it, or `all`.")
]
SupporterOpt = Annotated[
    str | None,
    typer.Option(
        metavar="SPEC",
        help="Supporter under test: a litellm model id (provider/model); an OpenAI-compatible endpoint "
        "URL#model; a Python callable module:function; the baselines silent and scripted; the ladder rungs "
        "sides:M, lecture:M and generic:M (model M told to take sides, to lecture, or to reflect "
        "generically). To be the supporter yourself (human), use `rescue-sim play`. Default: the --model.",
        envvar="RESCUE_SIM_SUPPORTER",
    ),
]
TrackerEveryOpt = Annotated[
    int, typer.Option(min=0, help="Run the tracker every N member turns and at the end (0: only at the end).")
]
OutOpt = Annotated[
    Path | None, typer.Option(metavar="DIR", help="Run folder. Default: runs/<case>-<supporter>-<hash>.")
]
KnowsOpt = Annotated[
    str,
    typer.Option(
        "--supporter-knows",
        metavar="intake|oracle",
        help="What the supporter sees: the intake and public transcript (default), or, for ablations, also "
        "the case card and the tracker's view (`oracle`; never ranked beside `intake`).",
    ),
]
ConcurrencyOpt = Annotated[
    int,
    typer.Option(
        min=1,
        help="Sessions in parallel (the embedded model still answers one call at a time). Above 1: a progress "
        "line instead of the live transcript.",
        envvar="RESCUE_SIM_CONCURRENCY",
    ),
]


# The library's parameter names, said as this command's options.
@user_errors
@flag_names(out_dir="--out")
def run(
    case: CaseOpt,
    supporter: SupporterOpt = None,
    model: ModelOpt = None,
    member_model: Annotated[str | None, typer.Option(help="Model playing the personas.")] = None,
    tracker_model: Annotated[str | None, typer.Option(help="Model of the observer/tracker.")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Model of the judge.")] = None,
    judges: Annotated[str | None, typer.Option(help="Judge panel: comma-separated model ids.")] = None,
    turns: Annotated[int, typer.Option("--turns", "-n", min=1, max=200, help="Member turns per session.")] = 6,
    seed: Annotated[int, typer.Option(help="Session seed.")] = 0,
    seeds: Annotated[str | None, typer.Option(help="Several seeds: 0,1,2 or 0-9 (overrides --seed).")] = None,
    tracker_every: TrackerEveryOpt = 3,
    out: OutOpt = None,
    no_live: Annotated[
        bool, typer.Option("--no-live", help="No live transcript; print a summary per session.")
    ] = False,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Skip judging at the end.")] = False,
    judge_mode: JudgeModeOpt = JudgeModeChoice.checklist,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the model call cache.")] = False,
    hide_inner: Annotated[bool, typer.Option("--hide-inner", help="Do not show members' private states live.")] = False,
    supporter_knows: KnowsOpt = "intake",
    concurrency: ConcurrencyOpt = 1,
) -> None:
    """Run simulated sessions with a supporter under test; re-running the same command resumes.

    Exit 1 when a session or its judging failed; 2 for bad input. A simulator fault (the simulated room
    malfunctioned) is not a failure: the session is left out of supporter scores and the exit code stays 0.
    """
    from simulator.runner.run_setup import run_config, run_supporter
    from simulator.runner.runs import default_run_dir

    cases = load_library() if case == ["all"] else [resolve_case(c) for c in case]
    settings = model_settings(
        model, roles={"member": member_model, "tracker": tracker_model, "judge": judge_model}, no_cache=no_cache
    )
    client = make_client(settings)
    spec = supporter or settings.default
    panel = [j.strip() for j in judges.split(",") if j.strip()] if judges else []
    sup = run_supporter(spec, client, settings)
    config = run_config(
        cases,
        spec,
        settings,
        seeds=parse_seeds(seed, seeds),
        turns=turns,
        tracker_every=tracker_every,
        judge=not no_judge,
        judges=panel,
        supporter_knows=supporter_knows,
    )
    out_dir = out or default_run_dir(config)
    _check_models(settings, client, config, sup)  # every model checked once, before anything is written
    console.print(escape(models_line(f"supporter={spec}", settings, judges=config.judges, judge=config.judge)))
    summary, judged = _run_live(
        config,
        cases,
        client,
        sup,
        out_dir,
        concurrency,
        live=not no_live,
        show_inner=not hide_inner,
        judge_mode=judge_mode.value,
    )
    _embedded_line(client)
    print_path("run folder:", out_dir, style="bold")
    if _report(summary, judged, len(cases) * len(config.seeds)):
        raise typer.Exit(EXIT_FAILED)


def _check_models(settings, client, config, sup) -> None:
    """The library's pre-check, its problems said with this command's options."""
    from simulator.cli.models_cmd import unusable_line
    from simulator.llm.preflight import UnusableModels, preflight
    from simulator.runner.run_setup import models_used

    uses, labels = models_used(config, sup)
    try:
        asyncio.run(preflight(client, uses, settings=settings))
    except UnusableModels as err:
        raise UserError(unusable_line(err, labels)) from None


def _run_live(
    config, cases, client, sup, out_dir: Path, concurrency: int, *, live: bool, show_inner: bool, judge_mode: str
):
    """The run with a live transcript (or, in parallel, a progress line), each session judged as it ends; the
    summary and the judgments made."""
    from simulator.cli._render import LiveSession, Tally, Waiting, session_footer
    from simulator.llm.progress import watching
    from simulator.runner.runs import RunEvents, run_sessions

    shown = None
    waiting = Waiting(console)
    board = None
    if concurrency > 1:  # sessions in parallel: one progress line, not a transcript or a spinner per call
        from simulator.cli._progress import RunProgress

        live, board = False, RunProgress(console)
    total = len(cases) * len(config.seeds)
    waiting.batch = Tally("sessions", total) if total > 1 else None

    def started(sid: str, c, resumed: bool) -> None:
        nonlocal shown
        if board is None:  # in parallel, sessions start and end interleaved: only their footers are printed
            console.rule(f"[bold]{sid}[/]" + (" [dim](resuming)[/]" if resumed else ""))
        shown = LiveSession(console, show_inner=show_inner) if live else None

    def update(record) -> None:
        if shown is not None:
            shown(record)

    def finished(record, path: Path) -> None:
        if shown is not None:
            shown.finish(record)
        else:
            console.print(session_footer(record))
        where = Path(path)  # inside the run folder, named at the end: short enough to stay whole at 80 columns
        if where.is_relative_to(out_dir):
            print_path("[dim]saved[/]", where.relative_to(out_dir), "[dim]in the run folder[/]")
        else:
            print_path("[dim]saved[/]", where)

    def progressed(p) -> None:
        if board is not None:
            board.update(p)
        if waiting.batch is not None:
            waiting.batch.done = p.done + p.failed + p.skipped
            waiting.batch.failed = p.failed

    events = RunEvents(
        session_started=started,
        session_update=update,
        session_finished=finished,
        session_skipped=lambda sid: console.print(f"[dim]skip {sid} (already completed)[/]"),
        progress=progressed,
    )
    judged: list = []
    hook = _judge_hook(client, config.judges, waiting, judged, judge_mode) if config.judge else None
    try:
        display = board or waiting
        with display, watching(display.hook):
            summary = run_sync(  # not asyncio.run: it would repr every record at exit
                run_sessions(  # a session a config error stops is saved as failed by the runner itself
                    config, cases, client, sup, out_dir, events=events, judge_hook=hook, concurrency=concurrency
                )
            )
    except KeyboardInterrupt:
        print_path("[yellow]interrupted[/]: session saved as incomplete; rerun to resume, in", out_dir, to=err_console)
        raise typer.Exit(130) from None
    return summary, judged


def _embedded_line(client) -> None:
    """The embedded model's calls, tokens and prefix-cache share, when it answered any."""
    stats = getattr(client, "embedded_stats", lambda: None)()
    if stats and stats["prompt_tokens"]:
        share = stats["cached_prompt_tokens"] / stats["prompt_tokens"]
        console.print(
            f"[dim]embedded model: {stats['calls']} calls, {stats['prompt_tokens']:,} prompt tokens "
            f"({share:.0%} from the prefix cache), {stats['completion_tokens']:,} generated, "
            f"{stats['seconds']:.0f}s[/]"
        )


def _report(summary, judged: list, total: int) -> bool:
    """The counts of what failed (sessions, judgments); True when anything did."""
    bad = False
    ran = len(summary.finished)
    if summary.failed:
        bad = True
        err_console.print(
            f"[red]{len(summary.failed)} of {ran} session(s) failed[/]: "
            + "; ".join(f"{r.session_id}: {r.failure}" for r in summary.failed)
        )
    not_ok = [j for j in judged if j.status.value != "ok"]
    errors = dict(summary.judge_errors)
    if not_ok or errors:
        bad = True
        tried = len(judged) + len(errors)
        lines = [f"{j.session_id}: {j.status.value}" for j in not_ok]
        lines += [f"{sid}: {reason}" for sid, reason in errors.items()]
        err_console.print(
            f"[red]judging failed for {len(not_ok) + len(errors)} of {tried} session(s)[/]: "
            + "; ".join(lines)
            + " (rerun `rescue-sim judge RUN_DIR` to retry)"
        )
    return bad


def _judge_hook(client, judges: list[str], waiting: Waiting, judged: list, judge_mode: str = "checklist"):
    """`judges.scoring.judge_hook`, showing its calls as they go and the judgment's table when written."""
    from judges.scoring import judge_hook
    from simulator.cli._render import Tally
    from simulator.cli.judge_cmd import print_judgments

    def start(units: int) -> None:
        console.print(f"[dim]judging with {', '.join(judges)} ({judge_mode}): {units} call(s)…[/]")
        waiting.judging = Tally("judging", units, warmup=True)

    def stop() -> None:
        waiting.judging = None

    def show(judgment) -> None:
        judged.append(judgment)
        print_judgments([judgment], validity=True)
        for verdict in judgment.verdicts:
            for failure in verdict.failures:
                err_console.print(f"[red]judge {verdict.judge} failed[/] ({failure.unit}): {failure.reason}")

    return judge_hook(client, judges, judge_mode, on_start=start, on_stop=stop, on_judged=show)  # type: ignore[arg-type]
