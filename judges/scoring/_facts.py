"""Facts checked from the session record before a judge reads it, and what they bind.

**Evidence ownership.** A score may rest only on turns that belong to what it scores: a member dimension on that
member's own turns; an intervention dimension on its window, the turns since the counsellor last spoke (the moment
it answered, with the silences marked in it) and the turn itself; a session dimension on any turn. The reply
schema offers only those turns (an enum, which a local model's grammar enforces), while the reply is validated
against every turn of the transcript: a hosted model that cites another turn is then caught entry by entry
(`out_of_scope`: re-asked once, saying why, then unsupported) rather than failing the whole call.

**Copied lines.** A supporter turn that repeats an earlier member line (the simulator's own near-duplicate measure,
`simulator.fidelity.repeat_of`), where that line makes up at least half of the turn's words, is parroting: it is
recorded on the judgment, shown to the judges, and caps every dimension whose rubric entry has a `copy_cap`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from judges.scoring._records import CopiedLine, DimensionScore
from judges.scoring._rubric import Level, Rubric
from simulator.fidelity import repeat_of, words
from simulator.records import SessionRecord, Turn

COPY_MIN_SHARE = 0.5  # the member's line is at least this share of the supporter turn's words


@dataclass(frozen=True)
class Scope:
    """The turns one scored item may cite (`turns` None: any turn), and how to name them to a judge."""

    turns: tuple[int, ...] | None
    owner: str  # "Dana's own turns", "the window of t6"

    def allows(self, turn: int) -> bool:
        return self.turns is None or turn in self.turns

    def describe(self) -> str:
        """`Dana's own turns (1, 4)` / `the window of t6 (turns 4-6)`."""
        if self.turns is None:
            return "any turn"
        if self.turns == tuple(range(self.turns[0], self.turns[-1] + 1)) and len(self.turns) > 1:
            return f"{self.owner} (turns {self.turns[0]}-{self.turns[-1]})"
        return f"{self.owner} ({', '.join(map(str, self.turns))})"


ANY_TURN = Scope(None, "any turn")


def intervention_window(record: SessionRecord, turn: Turn) -> tuple[int, ...]:
    """The turns after the counsellor's previous turn, up to and including `turn` (from turn 1 for the first)."""
    before = [t.index for t in record.turns if t.kind == "supporter" and t.index < turn.index]
    start = before[-1] + 1 if before else min((t.index for t in record.turns), default=turn.index)
    return tuple(t.index for t in record.turns if start <= t.index <= turn.index)


def member_turns(record: SessionRecord, name: str) -> tuple[int, ...]:
    """The turns `name` spoke."""
    return tuple(t.index for t in record.turns if t.kind == "member" and t.speaker == name)


def scope_of(record: SessionRecord, level: Level, *, turn: Turn | None = None, member: str | None = None) -> Scope:
    """Which turns an item of `level` may cite (see the module docstring)."""
    if level == "member" and member is not None:
        return Scope(member_turns(record, member), f"{member}'s own turns")
    if level == "intervention" and turn is not None:
        return Scope(intervention_window(record, turn), f"the window of t{turn.index}")
    return ANY_TURN


def speakers_of(record: SessionRecord) -> list[str]:
    """Members who said something: only they can be rated on their own lines."""
    return [m for m in record.case.member_names if member_turns(record, m)]


def out_of_scope(score: DimensionScore) -> list[int]:
    """Turns a score cites that it may not rest on."""
    return [e.turn for e in score.evidence if not e.in_scope]


def copied_lines(record: SessionRecord) -> list[CopiedLine]:
    """Supporter turns that copy an earlier member line (see the module docstring), in turn order."""
    out: list[CopiedLine] = []
    for i, turn in enumerate(record.turns):
        if turn.kind != "supporter" or not turn.text.strip():
            continue
        own = len(words(turn.text))
        best: CopiedLine | None = None
        for earlier in (t for t in record.turns[:i] if t.kind == "member"):
            found = repeat_of(turn.text, [earlier])
            share = len(words(earlier.text)) / own if own else 0.0
            if found is None or share < COPY_MIN_SHARE:
                continue
            _, _, overlap = found
            if best is None or overlap > best.overlap:
                best = CopiedLine(
                    turn=turn.index,
                    copies_turn=earlier.index,
                    member=earlier.speaker,
                    overlap=round(overlap, 3),
                    share=round(min(share, 1.0), 3),
                    quote=turn.text[:200],
                )
        if best is not None:
            out.append(best)
    return out


def apply_copy_caps(
    scores: Sequence[DimensionScore], copies: Sequence[CopiedLine], rubric: Rubric
) -> list[DimensionScore]:
    """Scores with each dimension's `copy_cap` applied: an intervention that copied, and the session if any did.
    A capped score keeps the judge's own value in `capped_from`."""
    if not copies:
        return list(scores)
    copied = {c.turn for c in copies}
    caps = {d.id: d.copy_cap for d in rubric.active if d.copy_cap is not None}
    out = []
    for sc in scores:
        cap = caps.get(sc.dimension)
        hit = sc.level == "session" or (sc.level == "intervention" and sc.turn in copied)
        if cap is not None and hit and sc.score is not None and sc.score > cap:
            sc = sc.model_copy(update={"score": cap, "capped_from": sc.score})
        out.append(sc)
    return out
