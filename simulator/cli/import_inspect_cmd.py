"""`rescue-sim import-inspect LOG`: an Inspect log of rescue_sim/rescue_session or rescue_stress as a run folder.
The logic lives in `simulator.integrations.inspect_log` (it needs the `inspect` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from personas.common.errors import UserError
from simulator.cli._common import flag_names, print_path, user_errors


@user_errors
@flag_names(out_dir="--out")
def import_inspect(
    log: Annotated[Path, typer.Argument(metavar="LOG", help="Inspect log (.eval or .json) of a rescue_sim task.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder to write (created, or resumed).")],
) -> None:
    """Turn an Inspect log of rescue_sim/rescue_session or rescue_stress into a rescue-sim run folder
    (sessions, results, judgments) that leaderboard, report and export read."""
    try:
        from simulator.integrations.inspect_log import import_inspect_log
    except ImportError:
        raise UserError("import-inspect needs Inspect AI: pip install 'rescue-sim[inspect]'") from None
    ids = import_inspect_log(log, out)
    print_path(f"imported {len(ids)} session(s) into", out, style="bold")
