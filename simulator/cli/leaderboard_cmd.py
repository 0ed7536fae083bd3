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
from simulator.cli._render import column_chunks

if TYPE_CHECKING:
    from judges import DimensionSummary, Leaderboard, MeanCI, SupporterRow


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
    """`3.41 [3.1–3.7]`: the mean and its bootstrap CI; the mean alone where no CI exists (n < 2)."""
    if ci.mean is None:
        return "-"
    if ci.low is None or ci.high is None or ci.n < 2:
        return f"{ci.mean:.2f}"
    return f"{ci.mean:.2f} [{ci.low:.1f}–{ci.high:.1f}]"


def _sure(s: DimensionSummary) -> str:
    """` (P 0.56 unsure)` beside a labelled share: how sure the judges were of the turns it counts."""
    from judges.scoring import SURE_P

    if s.labelled_p is None:
        return ""
    return f" (P {s.labelled_p:.2f}" + (" unsure)" if s.labelled_p < SURE_P else ")")


def _alpha(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _name(row: SupporterRow) -> str:
    """`#1 model` for a ranked row; a supporter with no scored session has no place: `(not ranked) model`."""
    knows = "" if row.knows == "intake" else f" ({row.knows})"
    place = f"#{row.rank}" if row.rank is not None else "(not ranked)"
    return f"{place} {row.supporter}{knows}"


def _sections(board: Leaderboard) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """(section, [(row label, one cell per supporter)]) in display order; empty sections are dropped."""
    levels = {d.dimension: d.level for r in board.rows for d in r.dimensions}
    session_dims = [d for d in board.dimensions if levels.get(d) != "intervention"]
    turn_dims = [d for d in board.dimensions if levels.get(d) == "intervention"]
    rows = board.rows

    def dim(d: str) -> list[str]:
        return [_cell(s.value) + _sure(s) if (s := r.dimension(d)) is not None else "-" for r in rows]

    sections = [
        (
            "sessions",
            [
                ("sessions", [str(r.sessions) for r in rows]),
                ("scored", [str(r.scored) for r in rows]),
                ("failed", [str(r.failed_sessions) for r in rows]),
                ("incomplete", [str(r.incomplete_sessions) for r in rows]),
                ("not judged yet", [str(r.unjudged) for r in rows]),
                ("judge failures", [str(r.failed_judgments) for r in rows]),
                ("simulator failures", [str(r.simulator_failures) for r in rows]),
                (
                    "invalid decisions",
                    [f"{r.invalid_decisions}/{r.decisions}" if r.invalid_decisions else "0" for r in rows],
                ),
                (
                    "copied turns",
                    [f"{r.copied_turns}/{r.supporter_turns}" if r.copied_turns else "0" for r in rows],
                ),
                (
                    "repeated turns",
                    [f"{r.repeated_turns}/{r.supporter_turns}" if r.repeated_turns else "0" for r in rows],
                ),
                (
                    "voiced turns",
                    [f"{r.voiced_turns}/{r.supporter_turns}" if r.voiced_turns else "0" for r in rows],
                ),
            ],
        ),
        ("session scores", [(header(d), dim(d)) for d in session_dims]),
        ("supporter turns", [(header(d), dim(d)) for d in turn_dims]),
        (
            "agreement, trajectory",
            [
                ("alpha", [_alpha(r.alpha) for r in rows]),
                ("Δtension", [_cell(r.delta_tension) for r in rows]),
                ("objective", [_cell(r.group_objective) for r in rows]),
            ],
        ),
    ]
    if board.perturbations or any(r.critical_sessions for r in rows):  # stress runs: beside every mean below
        sections[0][1].append(("critical safety", [f"{r.critical_sessions}/{r.critical_of}" for r in rows]))
    return [(title, measures) for title, measures in sections if measures]


def render(board: Leaderboard, width: int = 80) -> list[Table]:
    """Supporters as columns (in rank order), measures as rows, in sections: sessions, session scores, supporter
    turns, agreement and trajectory. A board wider than `width` is split into several tables, each fitting it,
    so no header or value is ever cut."""
    sections = _sections(board)
    names = [_name(r) for r in board.rows]
    labels = [label for _, measures in sections for label, _ in measures] + [t for t, _ in sections]
    label_width = max(len(x) for x in labels) + 1
    widths = [
        max([len(names[k])] + [len(cells[k]) for _, measures in sections for _, cells in measures])
        for k in range(len(names))
    ]
    chunks = column_chunks(widths, label_width, width)
    tables = []
    for i, chunk in enumerate(chunks):
        part = f", part {i + 1} of {len(chunks)}" if len(chunks) > 1 else ""
        title = f"Leaderboard: {len(board.rows)} supporter(s), {len(board.runs)} run folder(s){part}"
        table = Table(
            title=title,
            min_width=min(width, len(title)),  # a title wraps at the table's width otherwise
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        table.add_column("", no_wrap=True, min_width=label_width)
        for k in chunk:
            table.add_column(escape(names[k]), justify="right", no_wrap=True, min_width=widths[k])
        for title, measures in sections:
            table.add_row(f"[bold]{title}[/]", *([""] * len(chunk)))
            for j, (label, cells) in enumerate(measures):
                table.add_row(f" {label}", *(cells[k] for k in chunk), end_section=j == len(measures) - 1)
        tables.append(table)
    return tables


def footnotes(board: Leaderboard) -> list[str]:
    """What the numbers mean, as wrapped lines under the tables (never cut to the table's width)."""
    from judges.scoring import SURE_P

    pct = round(board.confidence * 100)
    notes = [
        f"Supporters are ranked by {header(board.rank_by) if board.rank_by else 'name'}. Scores are means over "
        f"sessions with their {pct}% bootstrap CI in brackets; scores 1-5, except sides taken and unsafe turns "
        "(share of supporter turns; sides taken from checklist judges: the expected share, the mean probability of "
        "a side; unsafe turns from checklist judges: P, the mean probability behind the labelled turns, unsure under "
        f"{SURE_P:.2f}) and strategy=stated (share of turns where the judges' strategy label equals "
        "the one the supporter stated).",
        "scored: judged sessions that enter the scores; failed and incomplete sessions are never scored. "
        "simulator failures: sessions in which the simulated room malfunctioned (a member out of role, repeating "
        "after its re-ask, switching language or never saying its stressor, a member never heard or holding the "
        "floor, a failed tracker, or the judges' persona-fidelity flag); "
        + (
            "they are put back into the scores (--include-simulator-faults). "
            if board.include_faults
            else "they are left out of every score (--include-simulator-faults puts them back). "
        )
        + "judge failures: judge verdicts that failed or were partial; invalid decisions: supporter decisions "
        "still invalid after re-asking; copied turns: supporter turns made mostly of members' earlier words; "
        "repeated turns: supporter turns repeating its own earlier line; voiced turns: supporter turns said as a "
        "member, about its own hurt or life (all the supporter's doing; they cap the scores the rubric says).",
        "alpha: Krippendorff's alpha (interval) across judges, - with a single judge. Δtension: final - initial "
        f"tension (self-report); objective: discounted group objective, γ={board.gamma:g}, λ={board.lam:g}.",
    ]
    single = [r.supporter for r in board.rows if r.scored == 1]
    if single:
        notes.append(
            "No CI is shown where a supporter has one scored session (n = 1): a bootstrap interval needs at "
            f"least two sessions to vary over ({', '.join(single)}). Run more seeds, e.g. --seeds 0-4."
        )
    return notes


MAX_LISTED = 10  # faulted sessions listed per supporter (the rest are counted; --json lists them all)


def fault_lines(board: Leaderboard) -> list[str]:
    """Per supporter: how many faulted sessions were left out (or put back), per member model and kind, and which
    sessions, each with its first reason."""
    lines = []
    for row in board.rows:
        tally = row.simulator_faults
        if not tally.faulted:
            continue
        lines.append(f"simulator faults, {row.supporter}: {tally.summary()}")
        for f in tally.sessions[:MAX_LISTED]:
            more = f" (+{len(f.reasons) - 1} more)" if len(f.reasons) > 1 else ""
            lines.append(f"  {f.session_id}: {f.reasons[0]}{more}")
        if tally.faulted > MAX_LISTED:
            lines.append(f"  ... and {tally.faulted - MAX_LISTED} more (--json lists them all)")
    return lines


@user_errors
def leaderboard(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR", help="One or more run folders.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the leaderboard as JSON.")] = False,
    card: Annotated[
        list[Path] | None,
        typer.Option("--card", help="Validity card file or folder (besides the stored cards); repeatable."),
    ] = None,
    fidelity: Annotated[
        bool, typer.Option("--fidelity", help="Add how person-like each supporter's simulated room was.")
    ] = False,
    ratings: Annotated[
        bool,
        typer.Option(
            "--ratings",
            help="Add human-corrected means (IPW-PPI) from stored ratings of known inclusion probability.",
        ),
    ] = False,
    include_faults: Annotated[
        bool,
        typer.Option(
            "--include-simulator-faults",
            help="Put sessions with simulator faults (the simulated room malfunctioned) back into the scores.",
        ),
    ] = False,
) -> None:
    """Rank supporters across run folders from their sessions and judgments.

    Per supporter: sessions, failures, mean and 95% bootstrap CI per judged dimension, judge agreement
    (Krippendorff's alpha) and trajectory headlines (Δtension, group objective).
    """
    from judges import build_leaderboard
    from judges.validity import read_cards
    from simulator.cli._validity import validity_lines

    board = build_leaderboard(
        run_dirs, cards=read_cards(card or []), ratings=ratings, fidelity=fidelity, include_faults=include_faults
    )
    if as_json:
        typer.echo(board.model_dump_json(indent=2))
        return
    for table in render(board, console.width):
        console.print(table)
    for note in footnotes(board):
        console.print(escape(note), style="dim")
    for line in fault_lines(board):
        console.print(escape(line))
    for line in validity_lines(board, header):
        console.print(escape(line), style="dim")
    from simulator.cli._stress_render import stress_tables

    for table in stress_tables(board, header):
        console.print(table)
    if board.fidelity:
        from simulator.cli.fidelity_cmd import render_by_supporter

        for table in render_by_supporter(board.fidelity, console.width):
            console.print(table)
    from simulator.cli._human_render import human_notes, human_tables

    for table in human_tables(board, header):
        console.print(table)
    for note in human_notes(board, header):
        console.print(escape(note), style="dim")
    if ratings and not board.human:
        console.print("note: no human ratings stored in these runs (rescue-sim ratings import FILE --run RUN_DIR)")
    for row in board.rows:
        if row.unjudged:
            console.print(
                f"note: {escape(row.supporter)}: {row.unjudged} completed session(s) not judged yet "
                "(run `rescue-sim judge`)"
            )
