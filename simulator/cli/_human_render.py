"""The human-ratings part of `leaderboard --ratings`: PPI-corrected means beside judge-only and human-only ones,
and judge-human agreement, laid out to fit 80 columns (supporters as section rows, dimensions as rows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich import box
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from judges import Leaderboard, MeanCI


def _ci(ci: MeanCI) -> str:
    """The mean, and its CI on a second line (keeps three estimates side by side within 80 columns)."""
    if ci.mean is None:
        return "-"
    if ci.low is None or ci.high is None:
        return f"{ci.mean:.2f}"
    return f"{ci.mean:.2f}\n[{ci.low:.1f}–{ci.high:.1f}]"


def human_tables(board: Leaderboard, header: Callable[[str], str]) -> list[Table]:
    if not board.human:
        return []
    table = Table(
        title="With human ratings: mean per item",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("", overflow="fold", max_width=30)
    table.add_column("rated", justify="right", no_wrap=True)
    table.add_column("judges only", justify="right", no_wrap=True)
    table.add_column("humans only", justify="right", no_wrap=True)
    table.add_column("PPI", justify="right", no_wrap=True)
    current = None
    for e in board.human:
        if e.supporter != current:
            current = e.supporter
            table.add_row(f"[bold]{escape(e.supporter)}[/]", "", "", "", "")
        table.add_row(
            f" {escape(header(e.dimension))}",
            f"{e.labeled}/{e.labeled + e.unlabeled}",
            _ci(e.judge),
            _ci(e.human),
            _ci(e.ppi),
            end_section=True,
        )
    return [table]


def human_notes(board: Leaderboard) -> list[str]:
    if not board.human:
        return []
    pct = round(board.confidence * 100)
    notes = [
        (
            f"Means per item (session, or supporter turn for turn dimensions) with {pct}% CIs. rated: items with human "
            "ratings / all judged items. judges only: all items; humans only: rated items; PPI: prediction-powered "
            "inference (ppi_py, PPI++), the judges' scores on every item debiased by the human-judge gap on the rated "
            "ones. No PPI estimate from fewer than 2 rated items."
        )
    ]
    for a in board.human_agreement:
        if a.dimension == "all":
            exact = "-" if a.exact is None else f"{a.exact:.1%}"
            mae = "-" if a.mae is None else f"{a.mae:.3f}"
            notes.append(
                f"Judge-human agreement over {a.ratings} rating(s) of {a.items} item(s): exact {exact}, MAE {mae} "
                "(rescue-sim ratings show RUN_DIR for every dimension)."
            )
    return notes
