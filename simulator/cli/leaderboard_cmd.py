"""`rescue-sim leaderboard RUN_DIR...`: one row per supporter from saved sessions and judgments (no model calls).

The table is a rendering of `judges.build_leaderboard`; `--json` prints the same `Leaderboard` as JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from simulator.cli._common import console, user_errors

if TYPE_CHECKING:
    from judges import Leaderboard


def _alpha(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(board: Leaderboard) -> Table:
    pct = round(board.confidence * 100)
    table = Table(
        title=f"Leaderboard: {len(board.rows)} supporters, {len(board.runs)} run folder(s)", title_justify="left",
        caption=(f"mean [{pct}% bootstrap CI] over sessions. Scales 1-5; side_taking, safety: share of turns "
                 "flagged; strategy: share agreeing with the supporter's stated label. Simulator failures excluded. "
                 f"Δtension: final - initial (self-report); objective: γ={board.gamma:g}, λ={board.lam:g}."),
        caption_justify="left",
    )
    table.add_column("supporter", overflow="fold")
    for col in ("n", "failed", "failed judg.", "sim. fail", "unjudged"):
        table.add_column(col, justify="right")
    for d in board.dimensions:
        table.add_column(d, justify="right", overflow="fold")
    for col in ("alpha", "Δtension", "objective"):
        table.add_column(col, justify="right", overflow="fold")
    for row in board.rows:
        cells = []
        for d in board.dimensions:
            s = row.dimension(d)
            cells.append(s.value.render() if s is not None else "-")
        table.add_row(
            escape(row.supporter), str(row.sessions), str(row.failed_sessions + row.incomplete_sessions),
            str(row.failed_judgments), str(row.simulator_failures), str(row.unjudged), *cells,
            _alpha(row.alpha), row.delta_tension.render(), row.group_objective.render(),
        )
    return table


@user_errors
def leaderboard(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="One or more run folders.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the leaderboard as JSON.")] = False,
) -> None:
    """Rank supporters across run folders from their sessions and judgments.

    Per supporter: sessions, failures, mean and 95% bootstrap CI per judged dimension, judge agreement
    (Krippendorff's alpha) and trajectory headlines (Δtension, group objective).
    """
    from judges import build_leaderboard

    board = build_leaderboard(run_dirs)
    if as_json:
        typer.echo(board.model_dump_json(indent=2))
        return
    console.print(render(board))
