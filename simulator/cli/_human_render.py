"""The human-ratings part of `leaderboard --ratings`: IPW-PPI-corrected means beside judge-only and human-only
ones, each with the effective number of ratings, and judge-human agreement, laid out to fit 80 columns (supporters
as section rows, dimensions as rows). A dimension whose ratings all have unknown inclusion probability gets one
line instead of a mean."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich import box
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from judges import Leaderboard, MeanCI
    from judges.ratings import PPIEstimate


def _ci(ci: MeanCI) -> str:
    """The mean, and its CI on a second line (keeps three estimates side by side within 80 columns)."""
    if ci.mean is None:
        return "-"
    if ci.low is None or ci.high is None:
        return f"{ci.mean:.2f}"
    return f"{ci.mean:.2f}\n[{ci.low:.1f}–{ci.high:.1f}]"


def _rated(e: PPIEstimate) -> str:
    """`12/40` rated of all, then the effective n, then ratings left out for unknown probability."""
    lines = [f"{e.labeled}/{e.labeled + e.unknown_pi + e.unlabeled}"]
    if e.n_eff is not None:
        lines.append(f"n_eff {e.n_eff:.1f}")
    if e.unknown_pi:
        lines.append(f"+{e.unknown_pi} unk.")
    return "\n".join(lines)


def unknown_only(e: PPIEstimate) -> bool:
    """Rated, but none of known inclusion probability: no mean may be made from these ratings."""
    return e.labeled == 0 and e.unknown_pi > 0


def unknown_line(e: PPIEstimate, header: Callable[[str], str]) -> str:
    return (
        f"{e.supporter} / {header(e.dimension)}: {e.unknown_pi} rated item(s), none of known inclusion probability "
        "(disagreement, extremes, unstable or pairs picks): agreement figures only, no human-corrected mean; "
        "rate a random, stratified or active batch for one."
    )


def human_tables(board: Leaderboard, header: Callable[[str], str]) -> list[Table]:
    return estimates_tables(board.human, header)


def estimates_tables(estimates: list[PPIEstimate], header: Callable[[str], str]) -> list[Table]:
    shown = [e for e in estimates if not unknown_only(e)]
    if not shown:
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
    table.add_column("IPW-PPI", justify="right", no_wrap=True)
    current = None
    for e in shown:
        if e.supporter != current:
            current = e.supporter
            table.add_row(f"[bold]{escape(e.supporter)}[/]", "", "", "", "")
        table.add_row(
            f" {escape(header(e.dimension))}",
            _rated(e),
            _ci(e.judge),
            _ci(e.human),
            _ci(e.ppi),
            end_section=True,
        )
    return [table]


def human_notes(board: Leaderboard, header: Callable[[str], str] = str) -> list[str]:
    if not board.human:
        return []
    return estimate_notes(board.human, board.confidence, header) + _agreement_notes(board)


def estimate_notes(estimates: list[PPIEstimate], confidence: float, header: Callable[[str], str]) -> list[str]:
    """One line per dimension without a known-pi rating, then what the columns mean."""
    pct = round(confidence * 100)
    notes = [unknown_line(e, header) for e in estimates if unknown_only(e)]
    if any(not unknown_only(e) for e in estimates):
        notes.append(
            f"Means per item (session, or supporter turn for turn dimensions) with {pct}% CIs. rated: items with human "
            "ratings of known inclusion probability (random, stratified or active batches) / all judged items, "
            "n_eff: their effective number (Kish, weights 1/pi), unk.: rated items of unknown probability "
            "(deterministic picks), left out of every mean and counted in agreement only. judges only: all items; "
            "humans only: rated items weighted by 1/pi; IPW-PPI: the judges' mean over every item, debiased by the "
            "1/pi-weighted human-judge gap (PPI++ power tuning). No estimate from fewer than 2 rated items."
        )
    return notes


def _agreement_notes(board: Leaderboard) -> list[str]:
    notes = []
    for a in board.human_agreement:
        if a.dimension == "all":
            exact = "-" if a.exact is None else f"{a.exact:.1%}"
            mae = "-" if a.mae is None else f"{a.mae:.3f}"
            notes.append(
                f"Judge-human agreement over {a.ratings} rating(s) of {a.items} item(s): exact {exact}, MAE {mae} "
                "(rescue-sim ratings show RUN_DIR for every dimension)."
            )
    return notes
