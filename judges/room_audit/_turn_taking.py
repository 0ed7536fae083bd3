"""Who holds the floor, simulated and real: turn shares and addressees, beside RESCUE's real sessions.

A simulator for multi-party support that collapses into a dyad measures dyadic support (issue 33: in 3 of 8
sessions on new couples one partner spoke every member turn). These figures say whether the simulated room stays
a room, each set beside the same figures of RESCUE's real sessions:

- speakers: distinct speakers of a session, the counsellor included (as RESCUE-BENCH counts them: 3.00 per couple
  sample, 4.06 per family sample), mean over sessions;
- counsellor share: the counsellor's share of all turns, pooled over turns (RESCUE-BENCH: 35.4% / 47.1%);
- top member share: the share of a session's member turns held by its most-speaking member, mean over sessions
  (1/n when n members speak alike; 1.0 when one member speaks every member turn);
- addressees of member turns: to the counsellor, to another member, to both, pooled; a member turn addressed to
  neither (none given, or only the group label) is counted apart and left out of the shares;
- the same, split by the turn before: after a counsellor turn, and after another member's turn. The pooled mix
  depends on how often the counsellor speaks (the supporter under test decides that); the split says whether the
  members answer the way real members do given what came before, which is what the simulator owns (RESCUE's
  couples: to another member in 3 of 31 turns after the therapist, 35 of 40 after the other partner).

RESCUE labels addressees: every row carries `target` (participant names, `Therapist`, or the group label), and on
the six shared samples every member row has one, so the real side is read, not inferred. The simulated side is
the addressees the floor chose for each member turn. A RESCUE sample counts as one session.

Distances: the absolute difference for each scalar figure (in its own units: speakers, or a share), and the
Jensen-Shannon distance (base 2, 0-1) for the addressee mix as a whole. Nothing here calls a model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from judges.stats._distances import js_distance
from personas.common.records import Record
from personas.rescue import GoldTrajectory
from personas.taxonomy import SUPPORTER_NAME, Group
from simulator.records import SessionRecord
from simulator.supporters import SilentSupporter

ADDRESSEES = ("counsellor", "member", "both")
TurnMetric = Literal["absolute_difference", "jensen_shannon"]


class PublishedTurnTaking(Record):
    """RESCUE-BENCH's own figures for a whole group (the paper's Table 3, over every sample of the benchmark)."""

    group: Group
    samples: int = Field(description="Samples the figures are over.")
    speakers: float = Field(description="Average speakers per sample, the therapist included.")
    counsellor_share: float = Field(description="Therapist turns / all turns.")
    source: str = Field(description="Where the figures come from.")


_TABLE3 = "RESCUE-BENCH paper, Table 3"  # as quoted in the RESCUE reference notes (TAXONOMY.md, "Dataset")
PUBLISHED_TURN_TAKING: dict[str, PublishedTurnTaking] = {
    "couple": PublishedTurnTaking(group="couple", samples=174, speakers=3.00, counsellor_share=0.354, source=_TABLE3),
    "family": PublishedTurnTaking(group="family", samples=17, speakers=4.06, counsellor_share=0.471, source=_TABLE3),
}


class TurnTaking(Record):
    """Who held the floor over a set of sessions (or RESCUE samples, one sample a session)."""

    sessions: int = Field(description="Sessions (or samples) with at least one turn.")
    turns: int = Field(description="Counsellor and member turns.")
    member_turns: int = Field(description="Member turns.")
    speakers: float | None = Field(description="Distinct speakers per session, the counsellor included (mean).")
    counsellor_share: float | None = Field(description="Counsellor turns / all turns, pooled.")
    top_member_share: float | None = Field(
        description="Per session, the most-speaking member's share of member turns; mean over sessions."
    )
    addressees: dict[str, int] = Field(description="Member turns to the counsellor, to another member, to both.")
    unaddressed: int = Field(description="Member turns addressed to neither (none given, or the group label only).")
    addressees_after: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="The addressees again, by the turn before: `counsellor` (after a counsellor turn) and `member` "
        "(after another member's turn); a member's turn right after their own is in neither.",
    )

    def addressee_share(self, kind: str, after: str | None = None) -> float | None:
        counts = self.addressees if after is None else self.addressees_after.get(after, {})
        total = sum(counts.values())
        return counts.get(kind, 0) / total if total else None


class TurnTakingRow(Record):
    """One figure, simulated beside RESCUE, with its distance."""

    figure: str = Field(description="What is compared.")
    unit: Literal["speakers", "share", "mix"] = Field(description="Speakers; a share (0-1); the addressee mix.")
    metric: TurnMetric = Field(description="Distance used for the row.")
    simulated: float | None = Field(description="The simulated sessions' value (None for a distribution row).")
    real: float | None = Field(description="The RESCUE sample(s)' value (None for a distribution row).")
    distance: float | None = Field(description="Simulated vs RESCUE; None when either side has no data.")
    published: float | None = Field(default=None, description="RESCUE-BENCH's own figure, where it reports one.")
    distance_published: float | None = Field(default=None, description="Simulated vs the published figure.")


class FloorComparison(Record):
    """The turn-taking of simulated sessions beside RESCUE's: one derived case and its sample, or a whole group."""

    scope: str = Field(description="The case id, or the group (`couple`, `family`) for every session of it.")
    group: Group = Field(description="The group of the sessions and samples compared.")
    simulated: TurnTaking = Field(description="The run's sessions (silent-supporter sessions left out).")
    real: TurnTaking | None = Field(description="RESCUE's sample(s): the case's own, or every one of the group.")
    real_samples: list[str] = Field(default_factory=list, description="Sample ids on the RESCUE side.")
    published: PublishedTurnTaking | None = Field(default=None, description="The group's published figures.")
    rows: list[TurnTakingRow] = Field(description="One per figure, with its distance.")
    left_out: int = Field(default=0, description="Silent-supporter sessions left out (no counsellor by design).")


# ---- one session as turn-taking sees it -----------------------------------------------------------------------


@dataclass(frozen=True)
class Spoken:
    """One turn: who spoke, and to whom as recorded (RESCUE's `target`, or the floor's choice)."""

    speaker: str
    addressees: tuple[str, ...]


@dataclass(frozen=True)
class Floor:
    """One session's (or one RESCUE sample's) turns in speaking order; `members` never holds the counsellor."""

    members: tuple[str, ...]
    turns: tuple[Spoken, ...]


def floor_of_record(record: SessionRecord) -> Floor:
    """A simulated session: every spoken turn (a supporter's pass is not a turn)."""
    return Floor(
        members=tuple(record.case.member_names),
        turns=tuple(Spoken(t.speaker, tuple(t.addressees)) for t in record.turns),
    )


def floor_of_gold(gold: GoldTrajectory) -> Floor:
    """A RESCUE sample: the therapist's and the participants' rows (a row spoken by the group label is neither)."""
    members = tuple(gold.participants)
    return Floor(
        members=members,
        turns=tuple(
            Spoken(r.speaker, tuple(r.targets))
            for r in gold.rows
            if r.speaker == SUPPORTER_NAME or r.speaker in members
        ),
    )


def addressed(addressees: Sequence[str], members: Sequence[str], speaker: str) -> str | None:
    """`counsellor`, `member` (another member), `both`, or None when the turn names neither."""
    to_counsellor = SUPPORTER_NAME in addressees
    to_member = any(a in members and a != speaker for a in addressees)
    if to_counsellor and to_member:
        return "both"
    if to_counsellor:
        return "counsellor"
    return "member" if to_member else None


# ---- the figures ------------------------------------------------------------------------------------------------


def turn_taking(floors: Sequence[Floor]) -> TurnTaking:
    """The figures of a set of sessions (see the module docstring for each one's definition)."""
    speakers: list[int] = []
    top_shares: list[float] = []
    turns = counsellor = member_turns = unaddressed = 0
    to: Counter[str] = Counter()
    after: dict[str, Counter[str]] = {"counsellor": Counter(), "member": Counter()}
    for floor in floors:
        if not floor.turns:
            continue
        speakers.append(len({t.speaker for t in floor.turns}))
        by_member = Counter(t.speaker for t in floor.turns if t.speaker != SUPPORTER_NAME)
        n_members = sum(by_member.values())
        turns += len(floor.turns)
        counsellor += len(floor.turns) - n_members
        member_turns += n_members
        if n_members:
            top_shares.append(max(by_member.values()) / n_members)
        before: str | None = None
        for t in floor.turns:
            previous, before = before, t.speaker
            if t.speaker == SUPPORTER_NAME:
                continue
            kind = addressed(t.addressees, floor.members, t.speaker)
            if kind is None:
                unaddressed += 1
                continue
            to[kind] += 1
            if previous == SUPPORTER_NAME:
                after["counsellor"][kind] += 1
            elif previous is not None and previous != t.speaker:
                after["member"][kind] += 1
    return TurnTaking(
        sessions=len(speakers),
        turns=turns,
        member_turns=member_turns,
        speakers=_mean(speakers),
        counsellor_share=counsellor / turns if turns else None,
        top_member_share=_mean(top_shares),
        addressees={k: to[k] for k in ADDRESSEES},
        unaddressed=unaddressed,
        addressees_after={w: {k: c[k] for k in ADDRESSEES} for w, c in after.items()},
    )


def turn_taking_rows(
    sim: TurnTaking, real: TurnTaking | None, published: PublishedTurnTaking | None = None
) -> list[TurnTakingRow]:
    """One row per figure: simulated, RESCUE, their distance, and the published figure where there is one."""

    def row(figure: str, s: float | None, r: float | None, p: float | None = None, unit="share") -> TurnTakingRow:
        return TurnTakingRow(
            figure=figure,
            unit=unit,
            metric="absolute_difference",
            simulated=_round(s),
            real=_round(r),
            distance=_difference(s, r),
            published=p,
            distance_published=_difference(s, p),
        )

    def of(figures: BaseModel | None, name: str) -> float | None:
        return None if figures is None else getattr(figures, name)

    rows = [
        row("speakers per session", sim.speakers, of(real, "speakers"), of(published, "speakers"), unit="speakers"),
        row(
            "counsellor share of turns",
            sim.counsellor_share,
            of(real, "counsellor_share"),
            of(published, "counsellor_share"),
        ),
        row("top member's share of member turns", sim.top_member_share, of(real, "top_member_share")),
    ]
    for kind, figure in zip(ADDRESSEES, ("the counsellor", "another member", "both"), strict=True):
        rows.append(
            row(
                f"member turns to {figure}",
                sim.addressee_share(kind),
                None if real is None else real.addressee_share(kind),
            )
        )
    for when, figure in (("counsellor", "a counsellor turn"), ("member", "another member's turn")):
        rows.append(
            row(
                f"  to another member, after {figure}",
                sim.addressee_share("member", when),
                None if real is None else real.addressee_share("member", when),
            )
        )
    rows.append(
        TurnTakingRow(
            figure="addressee mix (counsellor / member / both)",
            unit="mix",
            metric="jensen_shannon",
            simulated=None,
            real=None,
            distance=js_distance(sim.addressees, real.addressees) if real is not None else None,
        )
    )
    return rows


def compare_floor(
    scope: str,
    group: Group,
    records: Sequence[SessionRecord],
    golds: Sequence[GoldTrajectory],
    *,
    published: PublishedTurnTaking | None = None,
) -> FloorComparison:
    """Simulated sessions beside RESCUE samples. Silent-supporter sessions are left out: they have no counsellor
    turns by design, and would pull every group's counsellor share toward 0."""
    kept = [r for r in records if r.supporter != SilentSupporter.spec]
    sim = turn_taking([floor_of_record(r) for r in kept])
    real = turn_taking([floor_of_gold(g) for g in golds]) if golds else None
    return FloorComparison(
        scope=scope,
        group=group,
        simulated=sim,
        real=real,
        real_samples=[g.sample_id for g in golds],
        published=published,
        rows=turn_taking_rows(sim, real, published),
        left_out=len(records) - len(kept),
    )


def floor_by_group(records: Sequence[SessionRecord], golds: Mapping[str, GoldTrajectory]) -> list[FloorComparison]:
    """Every session of a group (shipped and derived cases alike) beside every RESCUE sample of that group given,
    and beside RESCUE-BENCH's published figures for the group."""
    out = []
    for group in ("couple", "family"):
        mine = [r for r in records if r.case.group == group]
        if not mine:
            continue
        theirs = [g for g in golds.values() if g.group == group]
        out.append(compare_floor(group, group, mine, theirs, published=PUBLISHED_TURN_TAKING[group]))
    return out


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(abs(a - b), 4)
