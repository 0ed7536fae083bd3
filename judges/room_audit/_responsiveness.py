"""Does the room answer the counsellor? Responsiveness of the simulated members, measured from saved sessions.

A member turn is a *step* from that member's previous self-report to this one. Steps are sorted by what came
right before the turn: `after_supporter` (the supporter spoke immediately before), `no_supporter` (nobody but
members spoke since this member last did: the room on its own, the null drift) or `earlier_supporter` (the
supporter spoke in between, but not right before; left out of both). A member's first turn has no earlier
self-report (only the card's numbers, which are not on the model's scale), so it gives a move but no change.

Per supporter: the mean change per dimension (intensity, felt-heard, warmth and tension toward the others)
after its turns, beside the null drift, and the *net* change: each unit's after-supporter mean minus the null
mean of its case (the no-supporter steps of every session of that case, whoever the supporter was); CIs are
percentile bootstraps over units (a session, or a case x seed in `sensitivity`), never over turns. Beside it
the moves after its turns and their Jensen-Shannon distance from the null moves. A room that ignores the
supporter changes the same way after its turns as without them: net ~0, move distance ~0.

`trajectory_separation(a, b)`: the difference in final self-reported state (mean intensity, warmth, tension)
between two supporters' sessions of the same case, seed, perturbation and trial, with a bootstrap CI over
those pairs: do the ladder's extremes leave the family in different places?
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from pydantic import Field

from judges.stats._distances import js_distance
from judges.stats._intervals import MeanCI, difference_separates, mean_ci, paired_difference_ci
from personas.common.records import Record
from simulator.members import current_state
from simulator.records import InnerState, SessionRecord, Turn

DIMENSIONS = ("intensity", "felt_heard", "warmth", "tension")
FINAL_DIMENSIONS = ("intensity", "warmth", "tension")
MIN_PAIRS = 2  # fewer matched pairs than this separate nothing

StepContext = Literal["after_supporter", "no_supporter", "earlier_supporter"]
UnitOf = Callable[["SessionResponsiveness"], str]


class StateStep(Record):
    """One member turn: what preceded it, the move it made and how the self-report moved."""

    turn: int = Field(description="The member turn.")
    member: str = Field(description="Who spoke.")
    context: StepContext = Field(description="What came right before: the supporter, only members, or a mix.")
    addressed: bool = Field(description="The supporter turn right before named this member or the whole group.")
    move: str | None = Field(description="The member move of this turn (None on records without moves).")
    reading: str | None = Field(
        default=None, description="What the supporter turn right before did, as the member read it."
    )
    change: dict[str, float] | None = Field(
        description="Dimension -> this self-report minus the member's previous one; None on a first turn."
    )


class SessionResponsiveness(Record):
    """The steps of one session and its final self-reported state."""

    session_id: str
    case_id: str
    supporter: str = Field(description="Supporter label (`spec [oracle]` for oracle runs).")
    seed: int
    perturbation: str | None
    trial: int
    steps: list[StateStep]
    final: dict[str, float] = Field(
        description="Final self-reported state: mean intensity over members, mean warmth and tension over pairs."
    )


class DimensionStat(Record):
    """One state dimension for one supporter: after its turns, the room on its own, and the difference."""

    after: MeanCI = Field(description="Mean change after the supporter's turns (CI over units).")
    null: MeanCI = Field(description="Mean change in this supporter's sessions' no-supporter steps (over units).")
    net: MeanCI = Field(description="After minus the case's null mean, per unit (CI over units).")


class SupporterResponsiveness(Record):
    """How the room reacted to one supporter, beside how it drifts on its own."""

    supporter: str
    sessions: int
    units: int = Field(description="Units the CIs resample (sessions, or case x seed).")
    after_steps: int = Field(description="State changes right after a supporter turn.")
    null_steps: int = Field(description="State changes with no supporter turn since the member last spoke.")
    dimensions: dict[str, DimensionStat] = Field(description="intensity, felt_heard, warmth, tension.")
    moves_after: dict[str, int] = Field(description="Moves of the member turns right after a supporter turn.")
    moves_null: dict[str, int] = Field(description="Moves of member turns with no supporter turn before them.")
    readings: dict[str, int] = Field(
        default_factory=dict, description="How members read its turns (softened, set_off, missed), on new records."
    )
    move_shift: float | None = Field(
        description="Jensen-Shannon distance (0-1) of moves_after from the null moves of all sessions."
    )


class ResponsivenessReport(Record):
    """Responsiveness per supporter, the pooled null drift and the trajectory separations asked for."""

    null_steps: int = Field(description="No-supporter state changes over all sessions (the null reference).")
    null: dict[str, MeanCI] = Field(description="Dimension -> mean no-supporter change over all sessions.")
    null_moves: dict[str, int] = Field(description="Moves of every no-supporter member turn.")
    supporters: list[SupporterResponsiveness]
    separations: list[TrajectorySeparation] = Field(default_factory=list)


class FinalDifference(Record):
    """a - b in one final-state dimension over matched sessions."""

    mean: float | None
    low: float | None = None
    high: float | None = None
    separates: bool = Field(description="The CI excludes 0 (from at least MIN_PAIRS pairs).")


class TrajectorySeparation(Record):
    """Where two supporters leave the family: final self-reported state, a minus b, over matched sessions."""

    a: str
    b: str
    pairs: int = Field(description="Matched units (same case, seed, perturbation, trial; or case x seed).")
    final: dict[str, FinalDifference] = Field(description="intensity, warmth, tension.")
    separates: bool = Field(description="Any dimension's CI excludes 0.")


# ---- one session --------------------------------------------------------------------------------------------


def _state_values(state: InnerState) -> dict[str, float]:
    values = {"intensity": float(state.intensity), "felt_heard": float(state.felt_heard)}
    if state.toward:
        values["warmth"] = sum(f.warmth for f in state.toward) / len(state.toward)
        values["tension"] = sum(f.tension for f in state.toward) / len(state.toward)
    return values


def _context(turns: Sequence[Turn], i: int) -> StepContext:
    speaker = turns[i].speaker
    if i > 0 and turns[i - 1].kind == "supporter" and turns[i - 1].text:
        return "after_supporter"
    for t in reversed(turns[:i]):
        if t.speaker == speaker:
            break
        if t.kind == "supporter" and t.text:
            return "earlier_supporter"
    return "no_supporter"


def _addressed(turns: Sequence[Turn], i: int, group_label: str) -> bool:
    if i == 0 or turns[i - 1].kind != "supporter":
        return False
    before = turns[i - 1]
    targets = set(before.addressees) | set(before.decision.targets if before.decision else ())
    return turns[i].speaker in targets or group_label in targets


def session_responsiveness(record: SessionRecord) -> SessionResponsiveness:
    """Every member turn of one session as a step, and where the session left the family."""
    steps = []
    for i, t in enumerate(record.turns):
        if t.kind != "member" or t.inner is None:
            continue
        earlier = [x for x in record.turns[:i] if x.speaker == t.speaker and x.inner is not None]
        change = None
        if earlier:
            before, now = _state_values(earlier[-1].inner), _state_values(t.inner)  # type: ignore[arg-type]
            change = {d: now[d] - before[d] for d in DIMENSIONS if d in now and d in before}
        steps.append(
            StateStep(
                turn=t.index,
                member=t.speaker,
                context=_context(record.turns, i),
                addressed=_addressed(record.turns, i, record.case.group_label),
                move=t.move,
                reading=t.reading,
                change=change,
            )
        )
    label = record.supporter if record.supporter_knows == "intake" else f"{record.supporter} [oracle]"
    return SessionResponsiveness(
        session_id=record.session_id,
        case_id=record.case.id,
        supporter=label,
        seed=record.seed,
        perturbation=record.perturbation,
        trial=record.trial,
        steps=steps,
        final=final_state(record),
    )


def blamed_share(record: SessionRecord) -> float | None:
    """Of the members who heard a counsellor turn, the share who read its words as blaming or criticising them
    (`Turn.felt_blamed`, every member asked; in records made before it was, the next speaker's reading
    `set_off`); None when the counsellor never spoke. The room's own account of side-taking:
    tests/benchmarks/reading_bench.py measures the appraisal on lines whose answer is known."""
    answers = [b for t in record.turns if t.kind == "member" for b in _blame_answers(t)]
    return sum(answers) / len(answers) if answers else None


def heard_gain(record: SessionRecord) -> float | None:
    """How much more heard by the counsellor the members said they felt right after its turns: the mean change
    of `felt_heard` over the member turns that follow a counsellor turn, from the speaker's previous self-report
    (a first turn has none, as in every step); None without such a turn. The room's own account of being heard,
    moved by its readings of the line (`simulator.members.REACTION`) and by the model past them."""
    changes = [
        s.change["felt_heard"]
        for s in session_responsiveness(record).steps
        if s.context == "after_supporter" and s.change is not None
    ]
    return sum(changes) / len(changes) if changes else None


def _blame_answers(turn: Turn) -> list[bool]:
    """Whether each member who heard the counsellor turn before `turn` felt blamed by it; [] after a member."""
    if turn.felt_blamed:
        return list(turn.felt_blamed.values())
    return [turn.reading == "set_off"] if turn.reading else []  # a record from before every member was asked


def final_state(record: SessionRecord) -> dict[str, float]:
    """Each member's last self-report (the card's baseline if they never spoke), averaged over the room."""
    states = [current_state(record.case, name, record.turns) for name in record.case.member_names]
    feelings = [f for s in states for f in s.toward]
    out = {"intensity": sum(s.intensity for s in states) / len(states)} if states else {}
    if feelings:
        out["warmth"] = sum(f.warmth for f in feelings) / len(feelings)
        out["tension"] = sum(f.tension for f in feelings) / len(feelings)
    return out


# ---- many sessions ------------------------------------------------------------------------------------------


def by_session(s: SessionResponsiveness) -> str:
    return s.session_id


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _changes(s: SessionResponsiveness, context: StepContext, dim: str) -> list[float]:
    return [st.change[dim] for st in s.steps if st.context == context and st.change and dim in st.change]


def _unit_means(
    sessions: Iterable[SessionResponsiveness], unit_of: UnitOf, value: Callable[[SessionResponsiveness], list[float]]
) -> dict[str, tuple[str, float]]:
    """Unit -> (case, mean of the values of its sessions' steps); units without values are left out."""
    pooled: dict[str, tuple[str, list[float]]] = {}
    for s in sessions:
        pooled.setdefault(unit_of(s), (s.case_id, []))[1].extend(value(s))
    return {u: (case, sum(vs) / len(vs)) for u, (case, vs) in pooled.items() if vs}


def _moves(sessions: Iterable[SessionResponsiveness], context: StepContext) -> Counter[str]:
    return Counter(st.move for s in sessions for st in s.steps if st.context == context and st.move)


def responsiveness(
    sessions: Sequence[SessionResponsiveness],
    *,
    unit_of: UnitOf = by_session,
    pairs: Sequence[tuple[str, str]] = (),
) -> ResponsivenessReport:
    """Per supporter, the change after its turns beside the null drift (see the module docstring); `pairs` of
    supporter labels get a trajectory separation each."""
    case_null = {
        dim: {
            case: _mean([v for s in sessions if s.case_id == case for v in _changes(s, "no_supporter", dim)])
            for case in {s.case_id for s in sessions}
        }
        for dim in DIMENSIONS
    }
    null_moves = _moves(sessions, "no_supporter")
    pair_unit = _matched if unit_of is by_session else unit_of  # sessions pair by case, seed, perturbation, trial
    groups: dict[str, list[SessionResponsiveness]] = {}
    for s in sessions:
        groups.setdefault(s.supporter, []).append(s)
    rows = []
    for label, group in sorted(groups.items()):
        dims = {}
        for dim in DIMENSIONS:
            after = _unit_means(group, unit_of, lambda s, d=dim: _changes(s, "after_supporter", d))
            own_null = _unit_means(group, unit_of, lambda s, d=dim: _changes(s, "no_supporter", d))
            net = [v - n for case, v in after.values() if (n := case_null[dim].get(case)) is not None]
            dims[dim] = DimensionStat(
                after=mean_ci([v for _, v in after.values()]),
                null=mean_ci([v for _, v in own_null.values()]),
                net=mean_ci(net),
            )
        moves_after = _moves(group, "after_supporter")
        rows.append(
            SupporterResponsiveness(
                supporter=label,
                sessions=len(group),
                units=len({unit_of(s) for s in group}),
                after_steps=sum(len(_changes(s, "after_supporter", "intensity")) for s in group),
                null_steps=sum(len(_changes(s, "no_supporter", "intensity")) for s in group),
                dimensions=dims,
                moves_after=dict(moves_after.most_common()),
                moves_null=dict(_moves(group, "no_supporter").most_common()),
                readings=dict(Counter(st.reading for s in group for st in s.steps if st.reading).most_common()),
                move_shift=js_distance(moves_after, null_moves),
            )
        )
    return ResponsivenessReport(
        null_steps=sum(len(_changes(s, "no_supporter", "intensity")) for s in sessions),
        null={dim: _null_ci(sessions, unit_of, dim) for dim in DIMENSIONS},
        null_moves=dict(null_moves.most_common()),
        supporters=rows,
        separations=[trajectory_separation(sessions, a, b, unit_of=pair_unit) for a, b in pairs],
    )


def _null_ci(sessions: Sequence[SessionResponsiveness], unit_of: UnitOf, dim: str) -> MeanCI:
    units = _unit_means(sessions, unit_of, lambda s: _changes(s, "no_supporter", dim))
    return mean_ci([v for _, v in units.values()])


def _matched(s: SessionResponsiveness) -> str:
    return f"{s.case_id}|s{s.seed}|{s.perturbation or 'none'}|t{s.trial}"


def trajectory_separation(
    sessions: Sequence[SessionResponsiveness], a: str, b: str, *, unit_of: UnitOf = _matched
) -> TrajectorySeparation:
    """Final state of `a`'s sessions minus `b`'s, paired by unit (default: same case, seed, perturbation and
    trial); a unit's value is the mean over its sessions. The CI over the pairs is the hull of the bootstrap and
    the paired t interval (judges.stats.paired_difference_ci), as in `rescue-sim sensitivity`."""

    def finals(label: str, dim: str) -> dict[str, float]:
        acc: dict[str, list[float]] = {}
        for s in sessions:
            if s.supporter == label and dim in s.final:
                acc.setdefault(unit_of(s), []).append(s.final[dim])
        return {u: sum(v) / len(v) for u, v in acc.items()}

    out: dict[str, FinalDifference] = {}
    n = 0
    for dim in FINAL_DIMENSIONS:
        fa, fb = finals(a, dim), finals(b, dim)
        shared = sorted(set(fa) & set(fb))
        n = max(n, len(shared))
        diffs = [fa[u] - fb[u] + 0.0 for u in shared]
        if not diffs:
            out[dim] = FinalDifference(mean=None, separates=False)
            continue
        ci = paired_difference_ci(diffs)
        assert ci is not None
        out[dim] = FinalDifference(
            mean=sum(diffs) / len(diffs),
            low=ci[0],
            high=ci[1],
            separates=len(diffs) >= MIN_PAIRS and difference_separates(diffs, ci),
        )
    return TrajectorySeparation(a=a, b=b, pairs=n, final=out, separates=any(d.separates for d in out.values()))


def default_pairs(labels: Iterable[str]) -> list[tuple[str, str]]:
    """Every supporter M run beside `sides:M`: the ladder's extremes among model-driven supporters."""
    present = set(labels)
    return [(m, f"sides:{m}") for m in sorted(present) if f"sides:{m}" in present]


ResponsivenessReport.model_rebuild()
