"""Rendering of `judges.room_audit.ResponsivenessReport` (does the room answer the counsellor?), shared by
`rescue-sim fidelity` (one column per supporter) and `rescue-sim sensitivity` (one column per rung)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text

from simulator.cli._render import measure_tables

if TYPE_CHECKING:
    from judges import MeanCI
    from judges.room_audit import ResponsivenessReport, TrajectorySeparation

LABELS = {"intensity": "intensity", "felt_heard": "felt heard", "warmth": "warmth", "tension": "tension"}
NOTE = (
    "Δ: change per member turn in the self-report (points; a member's turn against their previous one); "
    "the null column: the change itself; supporter columns: "
    "the change after the supporter's turns minus the room on its own (member turns with no supporter turn since "
    "that member last spoke, all sessions of the case), [95% CI] over {units}; moves: member turns right after "
    "a supporter turn; shift: Jensen-Shannon distance of those moves from the null moves (0 = the same moves "
    "whatever the supporter does); read as: what members said its words did (softened, set_off, missed)."
)


def _ci(ci: MeanCI) -> str:
    if ci.mean is None:
        return "-"
    if ci.low is None or ci.high is None or ci.n < 2:
        return f"{ci.mean:+.2f} (n={ci.n})"
    return f"{ci.mean:+.2f} [{ci.low:+.2f}, {ci.high:+.2f}]"


def _moves(counts: Mapping[str, int], top: int = 3) -> str:
    n = sum(counts.values())
    if not n:
        return "-"
    return "\n".join(f"{m} {c / n:.0%}" for m, c in list(counts.items())[:top])


def render_responsiveness(
    report: ResponsivenessReport, width: int, *, labels: Mapping[str, str] | None = None, units: str = "sessions"
) -> list[RenderableType]:
    """One column for the room on its own, then one per supporter (named by `labels`, e.g. rung ids)."""
    rows = [r for r in report.supporters if r.after_steps]
    headers = ["room alone (null)", *((labels or {}).get(r.supporter, r.supporter) for r in rows)]
    table = [
        ("member turns (changes)", [str(report.null_steps), *(str(r.after_steps) for r in rows)]),
        *((f"Δ {LABELS[d]}", [_ci(report.null[d]), *(_ci(r.dimensions[d].net) for r in rows)]) for d in LABELS),
        ("moves", [_moves(report.null_moves), *(_moves(r.moves_after) for r in rows)]),
        ("move shift", ["0", *("-" if r.move_shift is None else f"{r.move_shift:.2f}" for r in rows)]),
    ]
    if any(r.readings for r in rows):
        table.append(("read as", ["", *(_moves(r.readings) for r in rows)]))
    out: list[RenderableType] = [
        *measure_tables("Responsiveness: the room after the supporter's turns vs on its own", headers, table, width),
        Text(NOTE.format(units=units) + "\n", style="dim"),
    ]
    if not report.null_steps:
        out.append(Text("no member turn without a supporter turn before it: run `silent` on the same cases.\n"))
    for sep in report.separations:
        out.extend(render_separation(sep, labels))
    return out


def render_separation(sep: TrajectorySeparation, labels: Mapping[str, str] | None = None) -> list[RenderableType]:
    name = lambda s: (labels or {}).get(s, s)  # noqa: E731
    parts = []
    for dim, d in sep.final.items():
        if d.mean is None:
            parts.append(f"{dim} -")
        elif d.low is None or sep.pairs < 2:
            parts.append(f"{dim} {d.mean:+.2f}")
        else:
            parts.append(f"{dim} {d.mean:+.2f} [{d.low:+.2f}, {d.high:+.2f}]{' *' if d.separates else ''}")
    verdict = "separate" if sep.separates else "do not separate"
    return [
        Text(
            f"Trajectory separation, {name(sep.a)} minus {name(sep.b)} (final self-reported state, {sep.pairs} "
            f"matched pair(s)): {'; '.join(parts)} -> they {verdict} (* CI excludes 0).\n"
        )
    ]
