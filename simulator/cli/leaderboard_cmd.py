"""`rescue-sim leaderboard RUN_DIR...`: one row per supporter from saved sessions and judgments (no model calls).

The table is a rendering of `judges.build_leaderboard`; `--json` prints the same `Leaderboard` as JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from simulator.cli._common import console, user_errors

if TYPE_CHECKING:
    from judges import Leaderboard, MeanCI, SupporterRow


# Column headers for the built-in dimensions (tables get wide); other dimensions show their id.
SHORT = {
    "strategy": "strategy=stated",
    "strategy_fit": "strategy fit",
    "target_fit": "target fit",
    "timing": "timing",
    "relation_sensitivity": "relational",
    "side_taking": "sides taken",
    "safety": "unsafe turns",
    "overall_quality": "overall",
    "session_relation_sensitivity": "relational (session)",
    "balance": "balance",
    "safety_handling": "safety handling",
}


def header(dim_id: str) -> str:
    return SHORT.get(dim_id, dim_id)


def _cell(ci: MeanCI) -> str:
    """Mean on the first line, the CI on the second (narrow columns)."""
    if ci.mean is None:
        return "-"
    if ci.low is None or ci.high is None or ci.n < 2:
        return f"{ci.mean:.2f}"
    return f"{ci.mean:.2f}\n{ci.low:.1f}–{ci.high:.1f}"


def _alpha(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(board: Leaderboard) -> list[Table]:
    """Two tables: sessions (counts, session-level scores, agreement, trajectory) and supporter turns."""
    pct = round(board.confidence * 100)
    levels = {d.dimension: d.level for r in board.rows for d in r.dimensions}
    session_dims = [d for d in board.dimensions if levels.get(d) != "intervention"]
    turn_dims = [d for d in board.dimensions if levels.get(d) == "intervention"]
    sessions = Table(
        title=f"Leaderboard: {len(board.rows)} supporter(s), {len(board.runs)} run folder(s) — sessions",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        caption=(
            f"mean over sessions, {pct}% bootstrap CI below. n: sessions; failed: failed or incomplete "
            "sessions; judg.: failed judge verdicts; sim.: simulator failures (excluded from all scores); "
            "inv.: supporter decisions still invalid after re-asking (of all its decisions); "
            "alpha: Krippendorff (interval) across judges. Δtension: final - initial tension (self-report); "
            f"objective: discounted group objective, γ={board.gamma:g}, λ={board.lam:g}."
        ),
        caption_justify="left",
    )
    sessions.add_column("supporter", overflow="fold", min_width=12)
    for col in ("n", "failed", "judg.", "sim.", "inv."):
        sessions.add_column(col, justify="right")
    for d in session_dims:
        sessions.add_column(header(d), justify="right")
    for col in ("alpha", "Δtension", "objective"):
        sessions.add_column(col, justify="right")
    turns = Table(
        title="— supporter turns (each session's mean over its turns)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        caption=(
            "scores 1-5; sides taken, unsafe turns: share of turns; strategy=stated: share of turns where the "
            "judges' strategy label equals the one the supporter stated."
        ),
        caption_justify="left",
    )
    turns.add_column("supporter", overflow="fold", min_width=12)
    for d in turn_dims:
        turns.add_column(header(d), justify="right")

    def cells(row: SupporterRow, dims: list[str]) -> list[str]:
        return [_cell(s.value) if (s := row.dimension(d)) is not None else "-" for d in dims]

    for row in board.rows:
        sessions.add_row(
            escape(row.supporter),
            str(row.sessions),
            str(row.failed_sessions + row.incomplete_sessions),
            str(row.failed_judgments),
            str(row.simulator_failures),
            f"{row.invalid_decisions}/{row.decisions}" if row.invalid_decisions else "0",
            *cells(row, session_dims),
            _alpha(row.alpha),
            _cell(row.delta_tension),
            _cell(row.group_objective),
        )
        turns.add_row(escape(row.supporter), *cells(row, turn_dims))
    return [sessions, turns] if turn_dims else [sessions]


@user_errors
def leaderboard(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="One or more run folders.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the leaderboard as JSON.")] = False,
    card: Annotated[
        list[Path] | None,
        typer.Option("--card", help="Validity card file or folder (besides the stored cards); repeatable."),
    ] = None,
) -> None:
    """Rank supporters across run folders from their sessions and judgments.

    Per supporter: sessions, failures, mean and 95% bootstrap CI per judged dimension, judge agreement
    (Krippendorff's alpha) and trajectory headlines (Δtension, group objective).
    """
    from judges import build_leaderboard
    from judges.validity import read_cards
    from simulator.cli._validity import validity_lines

    board = build_leaderboard(run_dirs, cards=read_cards(card or []))
    if as_json:
        typer.echo(board.model_dump_json(indent=2))
        return
    for table in render(board):
        console.print(table)
    for line in validity_lines(board, header):
        console.print(escape(line), style="dim")
    from simulator.cli._stress_render import stress_tables

    for table in stress_tables(board, header):
        console.print(table)
    for row in board.rows:
        if row.unjudged:
            console.print(
                f"note: {escape(row.supporter)}: {row.unjudged} completed session(s) not judged yet "
                "(run `rescue-sim judge`)"
            )
