"""Trajectory metrics: what a session did to the people and relationships in the room. No model calls.

Every function is pure: it reads relation snapshots, turns or decisions from a `SessionRecord` and returns a
small pydantic result. `trajectory_metrics(record)` bundles them all.

Views: `self_report` is the insider view (each member's own reported state), `observer` the outsider view (the
tracker coding the transcript). Both lists start with the case card's initial state at turn 0 and hold one
snapshot per turn (a turn that changes nothing carries the previous state forward).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import Field

from judges.stats._intervals import gini
from personas.common.records import Record
from personas.graph import RelationSnapshot
from personas.taxonomy import NEGATIVE_PATTERNS, REPAIR_PATTERNS
from simulator.records import SessionRecord, SupporterDecision, Turn

TRAJECTORY_SCHEMA_VERSION = 1
DEFAULT_GAMMA = 0.95
DEFAULT_LAMBDA = 0.5
OBJECTIVE_FORMULA = "J = sum_{k=1..K} gamma^k * ((mean_warmth_k - mean_tension_k)/10 - lam * max_intensity_k/10)"


def per_turn(snapshots: Iterable[RelationSnapshot]) -> list[RelationSnapshot]:
    """One snapshot per turn index (the last one given for that turn), in turn order."""
    by_turn: dict[int, RelationSnapshot] = {}
    for s in snapshots:
        by_turn[s.turn] = s
    return [by_turn[t] for t in sorted(by_turn)]


def _view_name(snapshots: Sequence[RelationSnapshot]) -> str:
    return next((s.view for s in snapshots if s.view != "initial"), "initial")


# ---- relation change -----------------------------------------------------------------------------------------


class PairChange(Record):
    """How one directed relation moved from the first to the last snapshot."""

    source: str = Field(description="Member who feels.")
    target: str = Field(description="Member felt about.")
    initial_warmth: float = Field(description="Warmth 0-10 in the first snapshot.")
    final_warmth: float = Field(description="Warmth 0-10 in the last snapshot.")
    delta_warmth: float = Field(description="final - initial.")
    initial_tension: float = Field(description="Tension 0-10 in the first snapshot.")
    final_tension: float = Field(description="Tension 0-10 in the last snapshot.")
    delta_tension: float = Field(description="final - initial.")


class RelationChange(Record):
    """Change in warmth and tension per directed pair and overall (mean over pairs), in one view."""

    view: str = Field(description="`self_report` or `observer`.")
    pairs: list[PairChange] = Field(default_factory=list, description="Directed pairs present at both ends.")
    delta_warmth: float | None = Field(default=None, description="Mean over pairs of final - initial warmth.")
    delta_tension: float | None = Field(default=None, description="Mean over pairs of final - initial tension.")


def relation_change(snapshots: Sequence[RelationSnapshot]) -> RelationChange:
    """Final minus initial warmth and tension for every directed pair present at both ends, and their means."""
    states = per_turn(snapshots)
    view = _view_name(states)
    if not states:
        return RelationChange(view=view)
    first = {(e.source, e.target): e for e in states[0].edges}
    last = {(e.source, e.target): e for e in states[-1].edges}
    pairs = [
        PairChange(
            source=s,
            target=t,
            initial_warmth=first[s, t].warmth,
            final_warmth=last[s, t].warmth,
            delta_warmth=last[s, t].warmth - first[s, t].warmth,
            initial_tension=first[s, t].tension,
            final_tension=last[s, t].tension,
            delta_tension=last[s, t].tension - first[s, t].tension,
        )
        for (s, t) in first
        if (s, t) in last
    ]
    if not pairs:
        return RelationChange(view=view)
    return RelationChange(
        view=view,
        pairs=pairs,
        delta_warmth=sum(p.delta_warmth for p in pairs) / len(pairs),
        delta_tension=sum(p.delta_tension for p in pairs) / len(pairs),
    )


# ---- distress ------------------------------------------------------------------------------------------------


class MemberDistress(Record):
    """A member's emotion intensity (0-10) over the session, in one view."""

    member: str = Field(description="Member name.")
    initial: float = Field(description="Intensity in the first snapshot (the case card's baseline).")
    peak: float = Field(description="Highest intensity at any turn, the initial state included.")
    peak_turn: int = Field(description="First turn at which the peak was reached.")
    final: float = Field(description="Intensity in the last snapshot.")


def distress(snapshots: Sequence[RelationSnapshot]) -> list[MemberDistress]:
    """Initial, peak and final intensity per member (members in the order of the first snapshot)."""
    states = per_turn(snapshots)
    if not states:
        return []
    out = []
    for m in states[0].members:
        series = [(s.turn, next((x.intensity for x in s.members if x.name == m.name), None)) for s in states]
        series = [(t, v) for t, v in series if v is not None]
        peak_turn, peak = max(series, key=lambda tv: (tv[1], -tv[0]))
        out.append(
            MemberDistress(member=m.name, initial=series[0][1], peak=peak, peak_turn=peak_turn, final=series[-1][1])
        )
    return out


# ---- relation patterns ---------------------------------------------------------------------------------------


class PatternShares(Record):
    """Share of turns whose dominant pattern is negative, repair/alignment, or neither (observer view)."""

    turns: int = Field(description="Turns counted (turn >= 1), each with the pattern in effect after it.")
    negative: float | None = Field(default=None, description="Share in conflict/disconnection patterns.")
    repair: float | None = Field(default=None, description="Share in repair_softening or alignment patterns.")
    other: float | None = Field(default=None, description="mixed_transition or no dominant pattern.")
    counts: dict[str, int] = Field(default_factory=dict, description="Pattern label -> turns.")


def pattern_shares(snapshots: Sequence[RelationSnapshot]) -> PatternShares:
    """Shares over turns 1..N: between tracker runs, the last coded pattern stays in effect (it is carried)."""
    states = [s for s in per_turn(snapshots) if s.turn >= 1]
    if not states:
        return PatternShares(turns=0)
    counts: dict[str, int] = {}
    for s in states:
        counts[s.pattern] = counts.get(s.pattern, 0) + 1
    n = len(states)
    neg = sum(c for p, c in counts.items() if p in NEGATIVE_PATTERNS)
    rep = sum(c for p, c in counts.items() if p in REPAIR_PATTERNS)
    return PatternShares(turns=n, negative=neg / n, repair=rep / n, other=(n - neg - rep) / n, counts=counts)


# ---- group objective -----------------------------------------------------------------------------------------


class GroupObjective(Record):
    """RESCUE Appendix-B-style discounted group objective over a session (see `group_objective`)."""

    view: str = Field(description="`self_report` or `observer`.")
    gamma: float = Field(description="Discount per scored turn.")
    lam: float = Field(description="Weight of the distress penalty (lambda).")
    turns: int = Field(description="K: number of scored turns.")
    value: float | None = Field(description="J; None when no turn was scored.")
    formula: str = Field(default=OBJECTIVE_FORMULA, description="The formula, for readers of the JSON.")


def group_objective(
    snapshots: Sequence[RelationSnapshot],
    turns: Iterable[int] | None = None,
    *,
    gamma: float = DEFAULT_GAMMA,
    lam: float = DEFAULT_LAMBDA,
) -> GroupObjective:
    """J = sum_{k=1..K} gamma^k * ( (mean_warmth_k - mean_tension_k)/10 - lam * max_intensity_k/10 ).

    k runs over the scored turns in order (1-based): by default every turn >= 1 that has a snapshot; pass
    `turns` (e.g. the member-turn indices) to score only those, so that supporter turns, which carry the state
    unchanged, are not counted twice. mean_warmth_k / mean_tension_k are means over all directed edges of the
    state after scored turn k (0-10, so the relational term lies in [-1, 1]); max_intensity_k is the highest
    member emotion intensity then (0-10). Higher is better: warm, calm relations and nobody in acute distress.
    The initial state is not scored (the supporter has not acted yet). A state without edges adds only its
    distress term.
    """
    wanted = None if turns is None else set(turns)
    states = [s for s in per_turn(snapshots) if s.turn >= 1 and (wanted is None or s.turn in wanted)]
    view = _view_name(snapshots)
    if not states:
        return GroupObjective(view=view, gamma=gamma, lam=lam, turns=0, value=None)
    total = 0.0
    for k, s in enumerate(states, start=1):
        relational = (
            (sum(e.warmth for e in s.edges) - sum(e.tension for e in s.edges)) / len(s.edges) / 10 if s.edges else 0.0
        )
        peak = max((m.intensity for m in s.members), default=0.0)
        total += gamma**k * (relational - lam * peak / 10)
    return GroupObjective(view=view, gamma=gamma, lam=lam, turns=len(states), value=total)


# ---- attention -----------------------------------------------------------------------------------------------


class MemberAttention(Record):
    """How much of the supporter's addressed attention went to one member."""

    member: str = Field(description="Member name.")
    weight: float = Field(description="Individual turn: 1; whole group: 1 for everyone; subgroup of k: 1/k each.")
    share: float | None = Field(description="weight / total weight; None when nobody was addressed.")


class AttentionShares(Record):
    """Attention share per member from the supporter's targets, and how unequal it is (Gini)."""

    interventions: int = Field(description="Speaking supporter decisions.")
    untargeted: int = Field(default=0, description="Interventions whose targets named no member or group label.")
    members: list[MemberAttention] = Field(default_factory=list, description="Per member, in case order.")
    gini: float | None = Field(default=None, description="Gini of the weights: 0 even, (n-1)/n all on one member.")


def attention_shares(
    decisions: Iterable[SupporterDecision], members: Sequence[str], group_label: str
) -> AttentionShares:
    """Count addressed attention per member over speaking decisions (passes address nobody)."""
    weights = {m: 0.0 for m in members}
    speaking = [d for d in decisions if d.speak]
    untargeted = 0
    for d in speaking:
        named = list(dict.fromkeys(t for t in d.targets if t in weights or t == group_label))
        if not named:
            untargeted += 1
        elif group_label in named or set(named) >= set(members):
            for m in members:
                weights[m] += 1.0
        elif len(named) == 1:
            weights[named[0]] += 1.0
        else:
            for m in named:
                weights[m] += 1.0 / len(named)
    total = sum(weights.values())
    return AttentionShares(
        interventions=len(speaking),
        untargeted=untargeted,
        members=[MemberAttention(member=m, weight=w, share=(w / total if total else None)) for m, w in weights.items()],
        gini=gini(list(weights.values())),
    )


# ---- felt heard ----------------------------------------------------------------------------------------------


class FeltHeard(Record):
    """How heard a member reported feeling by the supporter (self-report, 0-10)."""

    member: str = Field(description="Member name.")
    n: int = Field(description="Self-reports counted.")
    mean: float | None = Field(default=None, description="Mean felt-heard 0-10; None without self-reports.")
    last: int | None = Field(default=None, description="The last reported value.")


def felt_heard(turns: Iterable[Turn], members: Sequence[str]) -> list[FeltHeard]:
    """Mean and last `felt_heard` per member over their own turns' self-reports."""
    values: dict[str, list[int]] = {m: [] for m in members}
    for t in turns:
        if t.kind == "member" and t.inner is not None and t.speaker in values:
            values[t.speaker].append(t.inner.felt_heard)
    return [
        FeltHeard(member=m, n=len(v), mean=(sum(v) / len(v) if v else None), last=(v[-1] if v else None))
        for m, v in values.items()
    ]


# ---- insider / outsider gap ----------------------------------------------------------------------------------


class MemberGap(Record):
    """Mean |self-reported intensity - tracker intensity| for one member, where both exist."""

    member: str = Field(description="Member name.")
    n: int = Field(description="Tracker observations of this member made after they had self-reported.")
    mean_abs_gap: float | None = Field(default=None, description="Mean absolute gap; None when n is 0.")


class PairGap(Record):
    """Mean |self-reported tension - tracker tension| for one directed pair, where both exist."""

    source: str = Field(description="Member who feels.")
    target: str = Field(description="Member felt about.")
    n: int = Field(description="Tracker codings of this pair made after the source had self-reported toward target.")
    mean_abs_gap: float | None = Field(default=None, description="Mean absolute tension gap.")


class InsiderOutsiderGap(Record):
    """How far the tracker's reading of people differs from what they report about themselves."""

    members: list[MemberGap] = Field(default_factory=list, description="Intensity gap per member.")
    pairs: list[PairGap] = Field(default_factory=list, description="Tension gap per directed pair that was compared.")
    mean_intensity_gap: float | None = Field(default=None, description="Over all member comparisons.")
    mean_tension_gap: float | None = Field(default=None, description="Over all pair comparisons.")


def insider_outsider_gap(turns: Sequence[Turn], members: Sequence[str]) -> InsiderOutsiderGap:
    """At every turn where the tracker ran, compare its reading with each member's latest self-report.

    "Both exist" means: the tracker coded that member (or that directed pair) at that turn, and the member had
    self-reported by then (their own turn at or before it; the card's baseline is not a self-report).
    """
    intensity: dict[str, int] = {}
    tension: dict[tuple[str, str], float] = {}
    m_gaps: dict[str, list[float]] = {m: [] for m in members}
    p_gaps: dict[tuple[str, str], list[float]] = {}
    for t in turns:
        if t.kind == "member" and t.inner is not None:
            intensity[t.speaker] = t.inner.intensity
            for f in t.inner.toward:
                tension[(t.speaker, f.member)] = f.tension
        if t.tracker is None:
            continue
        for e in t.tracker.emotions:
            if e.person in intensity and e.person in m_gaps:
                m_gaps[e.person].append(abs(intensity[e.person] - e.intensity))
        for v in t.tracker.viewpoints:
            if (v.source, v.target) in tension:
                p_gaps.setdefault((v.source, v.target), []).append(abs(tension[v.source, v.target] - v.tension))
    all_m = [g for gs in m_gaps.values() for g in gs]
    all_p = [g for gs in p_gaps.values() for g in gs]
    return InsiderOutsiderGap(
        members=[
            MemberGap(member=m, n=len(g), mean_abs_gap=(sum(g) / len(g) if g else None)) for m, g in m_gaps.items()
        ],
        pairs=[
            PairGap(source=s, target=t, n=len(g), mean_abs_gap=sum(g) / len(g)) for (s, t), g in sorted(p_gaps.items())
        ],
        mean_intensity_gap=sum(all_m) / len(all_m) if all_m else None,
        mean_tension_gap=sum(all_p) / len(all_p) if all_p else None,
    )


# ---- everything ----------------------------------------------------------------------------------------------


class TrajectoryMetrics(Record):
    """All trajectory metrics of one session, both views where both exist."""

    schema_version: int = Field(default=TRAJECTORY_SCHEMA_VERSION, description="Version of this record's layout.")
    gamma: float = Field(description="Discount used by the group objective.")
    lam: float = Field(description="Distress weight used by the group objective.")
    self_report: RelationChange = Field(description="Change in warmth and tension, insider view.")
    observer: RelationChange = Field(description="Change in warmth and tension, outsider view.")
    distress_self_report: list[MemberDistress] = Field(description="Peak and final intensity, insider view.")
    distress_observer: list[MemberDistress] = Field(description="Peak and final intensity, outsider view.")
    patterns: PatternShares = Field(description="Observer view.")
    objective_self_report: GroupObjective = Field(description="Scored at member turns.")
    objective_observer: GroupObjective = Field(description="Scored at member turns.")
    attention: AttentionShares = Field(description="Supporter attention per member and its Gini.")
    felt_heard: list[FeltHeard] = Field(description="Felt heard per member (self-report).")
    gap: InsiderOutsiderGap = Field(description="Self-report vs tracker gaps.")


def trajectory_metrics(
    record: SessionRecord, *, gamma: float = DEFAULT_GAMMA, lam: float = DEFAULT_LAMBDA
) -> TrajectoryMetrics:
    """Every trajectory metric of a session; the group objective is scored at member turns."""
    names = record.case.member_names
    member_turns = [t.index for t in record.turns if t.kind == "member"]
    return TrajectoryMetrics(
        gamma=gamma,
        lam=lam,
        self_report=relation_change(record.self_report),
        observer=relation_change(record.observer),
        distress_self_report=distress(record.self_report),
        distress_observer=distress(record.observer),
        patterns=pattern_shares(record.observer),
        objective_self_report=group_objective(record.self_report, member_turns, gamma=gamma, lam=lam),
        objective_observer=group_objective(record.observer, member_turns, gamma=gamma, lam=lam),
        attention=attention_shares(record.decisions, names, record.case.group_label),
        felt_heard=felt_heard(record.turns, names),
        gap=insider_outsider_gap(record.turns, names),
    )
