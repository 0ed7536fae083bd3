"""Facts checked from the session record before a judge reads it, and what they bind.

**Evidence ownership.** A score may rest only on turns that belong to what it scores: a member dimension on that
member's own turns; an intervention dimension on its window, the turns since the counsellor last spoke (the moment
it answered, with the silences marked in it) and the turn itself; a session dimension on any turn. The reply
schema offers only those turns (an enum, which a local model's grammar enforces), while the reply is validated
against every turn of the transcript: a hosted model that cites another turn is then caught entry by entry
(`out_of_scope`: re-asked once, saying why, then unsupported) rather than failing the whole call.

**Copied lines.** A supporter turn made mostly of members' words is parroting, whether it hands back one line or
splices pieces of several: its words are matched against the earlier member turns in verbatim runs of at least
COPY_RUN_WORDS words (case and punctuation ignored; runs a member had taken from the counsellor's own earlier turns
do not count), and when the runs, from any number of member turns, cover COPY_MIN_COVERAGE of its words or more,
it is recorded on the judgment with each source turn's share, shown to the judges, and caps every dimension whose
rubric entry has a `copy_cap`. A counsellor quoting a short phrase back inside its own sentences stays under it.

**Repeated lines.** A supporter turn that says again what the supporter itself said before is repetition, not a
strategy: its words are matched against each of the supporter's own earlier turns in verbatim runs of at least
REPEAT_RUN_WORDS words, and when the runs from one earlier turn cover REPEAT_MIN_COVERAGE of its words or more
(word for word, or nearly: a new name or a word changed here and there), it is recorded on the judgment with the
turn it repeats, shown to the judges, and caps every dimension whose rubric entry has a `repeat_cap`. It is the
supporter's behaviour, never a simulator fault.

**Voiced lines.** A supporter turn that speaks of the speaker's own hurt or life ("my father's absence is
challenging for me") is said from a member's seat, not the counsellor's (`simulator.transcript.member_voice`: on
RESCUE's real sessions 1 of 59 therapist turns, a "for me" in a request to re-enact a fight). It is recorded on the
judgment and caps every dimension whose rubric entry has a `voice_cap`; the supporter's behaviour, never a simulator
fault. Not shown to the judges: their prompts are unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from judges.scoring._records import CopiedLine, CopySource, DimensionScore, RepeatedLine, VoicedLine
from judges.scoring._rubric import LINE_CAPS, Level, Rubric
from simulator.records import SessionRecord, Turn
from simulator.transcript import member_voice
from simulator.turn_checks import MIN_REPEAT_WORDS, words

# Measured (tests/benchmarks/copy_bench.py) on 59 RESCUE therapist turns (known answer: none parrots) and 78
# embedded-model supporter turns: the therapists' highest coverage is 0.45 (a therapist voicing a member's sentence
# inside a longer turn); 24 of the 78 cross 0.5, the same with 4-, 5- or 6-word runs, and 4-word runs count a
# chance phrase in RESCUE ("you need to say the truth", 0.27).
COPY_RUN_WORDS = 5  # a copied run: this many consecutive words of a member line or more
COPY_MIN_COVERAGE = 0.5  # copied runs cover at least this share of the supporter turn's words: mostly members' words
# The same runs against the supporter's own earlier turns (tests/benchmarks/copy_bench.py --repeats): of RESCUE's 59
# therapist turns, the highest is 0.62 (an 8-word question reusing the 5-word frame of an earlier one, "what do you
# think the ... is", with another noun), every other one under 0.3; so a repeat is 0.8 or more: the earlier line
# again, word for word or with a name or a word changed.
REPEAT_RUN_WORDS = COPY_RUN_WORDS
REPEAT_MIN_COVERAGE = 0.8  # runs from one earlier supporter turn cover at least this share of the turn's words


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


def _runs(ws: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)}


# repeated_lines compares each supporter turn with every earlier one, so the same texts were split into words and
# runs again and again (a tenth of a never-served run page's first load); kept here by text
@functools.lru_cache(maxsize=4096)
def _text_words(text: str) -> tuple[str, ...]:
    return tuple(words(text))


@functools.lru_cache(maxsize=4096)
def _text_runs(text: str, n: int) -> frozenset[tuple[str, ...]]:
    return frozenset(_runs(_text_words(text), n))


def copy_runs(turn: Turn, earlier: Sequence[Turn]) -> CopiedLine | None:
    """How much of `turn` is verbatim runs from the member turns in `earlier` (any coverage; None when none is).

    Sources are credited greedily, the turn that covers most first, so each word counts once and their
    coverages add up. A turn shorter than COPY_RUN_WORDS words counts only as a whole (never under
    MIN_REPEAT_WORDS words)."""
    ws = words(turn.text)
    n = min(COPY_RUN_WORDS, len(ws))
    if n < MIN_REPEAT_WORDS:
        return None
    counsellors: set[tuple[str, ...]] = set()  # runs the counsellor said first: a member echoing it is no source
    covered: dict[int, tuple[Turn, set[int]]] = {}
    for t in earlier:
        runs = _runs(words(t.text), n)
        if t.kind == "supporter":
            counsellors |= runs
            continue
        runs -= counsellors
        at = {i + k for i in range(len(ws) - n + 1) if tuple(ws[i : i + n]) in runs for k in range(n)}
        if at:
            covered[t.index] = (t, at)
    if not covered:
        return None
    left = set().union(*(at for _, at in covered.values()))
    coverage = len(left) / len(ws)
    sources: list[CopySource] = []
    while left:
        source, at = max(covered.values(), key=lambda c: (len(c[1] & left), -c[0].index))
        sources.append(CopySource(turn=source.index, member=source.speaker, coverage=len(at & left) / len(ws)))
        left -= at
    return CopiedLine(turn=turn.index, coverage=coverage, sources=sources, quote=turn.text[:200])


def copied_lines(record: SessionRecord) -> list[CopiedLine]:
    """Supporter turns made mostly of earlier members' words (see the module docstring), in turn order."""
    out: list[CopiedLine] = []
    for i, turn in enumerate(record.turns):
        if turn.kind != "supporter" or not turn.text.strip():
            continue
        found = copy_runs(turn, record.turns[:i])
        if found is not None and found.coverage >= COPY_MIN_COVERAGE:
            out.append(found)
    return out


def apply_line_caps(
    scores: Sequence[DimensionScore],
    rubric: Rubric,
    copies: Sequence[CopiedLine],
    repeats: Sequence[RepeatedLine],
    voiced: Sequence[VoicedLine],
) -> list[DimensionScore]:
    """Scores with each dimension's `copy_cap`, `repeat_cap` and `voice_cap` applied: to an intervention that
    copied, repeated or was said as a member, and to the session if any did. A capped score keeps the judge's own
    value in `capped_from`."""
    out = list(scores)
    for field, lines in zip(LINE_CAPS, (copies, repeats, voiced), strict=True):
        caps = {d.id: getattr(d, field) for d in rubric.active if getattr(d, field) is not None}
        out = _apply_caps(out, {line.turn for line in lines}, caps)
    return out


def _apply_caps(scores: Sequence[DimensionScore], turns: set[int], caps: dict[str, int]) -> list[DimensionScore]:
    """`caps` (dimension -> highest score) applied to the interventions at `turns`, and to the session when any
    turn is there; `capped_from` keeps the judge's own value, also when an earlier cap came first."""
    if not turns:
        return list(scores)
    out = []
    for sc in scores:
        cap = caps.get(sc.dimension)
        hit = sc.level == "session" or (sc.level == "intervention" and sc.turn in turns)
        if cap is not None and hit and sc.score is not None and sc.score > cap:
            own = sc.capped_from if sc.capped_from is not None else sc.score
            sc = sc.model_copy(update={"score": cap, "capped_from": own})
        out.append(sc)
    return out


def repeat_runs(turn: Turn, earlier: Sequence[Turn]) -> RepeatedLine | None:
    """How much of `turn` is verbatim runs from the one earlier supporter turn in `earlier` that it shares most
    with (any coverage; the earlier turn on a tie; None when it shares none). A turn shorter than REPEAT_RUN_WORDS
    words counts only as a whole (never under MIN_REPEAT_WORDS words)."""
    ws = _text_words(turn.text)
    n = min(REPEAT_RUN_WORDS, len(ws))
    if n < MIN_REPEAT_WORDS:
        return None
    best: tuple[Turn, float] | None = None
    for t in earlier:
        if t.kind != "supporter":
            continue
        runs = _text_runs(t.text, n)
        at = {i + k for i in range(len(ws) - n + 1) if tuple(ws[i : i + n]) in runs for k in range(n)}
        if at and (best is None or len(at) / len(ws) > best[1]):
            best = (t, len(at) / len(ws))
    if best is None:
        return None
    return RepeatedLine(turn=turn.index, repeats_turn=best[0].index, coverage=best[1], quote=turn.text[:200])


def repeated_lines(record: SessionRecord) -> list[RepeatedLine]:
    """Supporter turns that repeat one of the supporter's own earlier turns (see the module docstring)."""
    out: list[RepeatedLine] = []
    for i, turn in enumerate(record.turns):
        if turn.kind != "supporter" or not turn.text.strip():
            continue
        found = repeat_runs(turn, record.turns[:i])
        if found is not None and found.coverage >= REPEAT_MIN_COVERAGE:
            out.append(found)
    return out


def voiced_lines(record: SessionRecord) -> list[VoicedLine]:
    """Supporter turns said in a member's voice (see the module docstring), in turn order."""
    out = []
    for turn in record.turns:
        if turn.kind == "supporter" and (said := member_voice(turn.text)) is not None:
            out.append(VoicedLine(turn=turn.index, said=said, quote=turn.text[:200]))
    return out
