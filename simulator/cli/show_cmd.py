"""`rescue-sim show`: replay saved sessions from a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from simulator.cli._common import console, user_errors


@user_errors
def show(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="Run folder.")],
    session: Annotated[str | None, typer.Option(help="Session id (default: every session in the folder).")] = None,
    hide_inner: Annotated[bool, typer.Option("--hide-inner", help="Hide members' private states.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the session record(s) as JSON.")] = False,
) -> None:
    """Replay a saved session: transcript, inner states, supporter decisions, observer panels, outcome, and the
    judges' scores when the session was judged."""
    from judges import read_judgment
    from simulator.cli._render import print_session
    from simulator.cli.judge_cmd import print_judgments
    from simulator.runfolder import RunFolder

    folder = RunFolder(run_dir)
    folder.read_manifest()
    ids = [session] if session else folder.session_ids()
    for sid in ids:
        record = folder.load_session(sid)
        if as_json:
            typer.echo(record.model_dump_json(indent=2))
            continue
        print_session(console, record, show_inner=not hide_inner)
        judgment = read_judgment(folder, sid)
        if judgment is not None:
            print_judgments([judgment])
        elif record.status.value == "completed":
            console.print(f"[dim]not judged yet: rescue-sim judge {escape(str(run_dir))}[/]")
