"""Who speaks next among the members: addressed members answer, pursuers press, withdrawers go quiet.

Driven by the case card and the current relation state, and seeded: the same session seed and turn give
the same choice.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from personas.case import Case, Member
from personas.graph import RelationSnapshot
from simulator.records import SUPPORTER, Turn

ANSWER_PROBABILITY = 0.85  # an addressed member usually answers; sometimes someone cuts in
_PURSUE = ("pursu", "press", "chase", "confront", "demand", "interrogat", "lectur", "push")
_WITHDRAW = ("withdraw", "quiet", "shut", "avoid", "stonewall", "minimal", "deflect", "retreat", "silent", "flat")


@dataclass(frozen=True)
class FloorChoice:
    speaker: str
    addressees: tuple[str, ...]
    reason: str


def style_of(member: Member) -> str:
    """`pursuer`, `withdrawer` or `neutral`, from whichever cue comes first in the card's communication style."""
    text = member.communication_style.lower()
    firsts = {
        style: min((i for k in keys if (i := text.find(k)) != -1), default=None)
        for style, keys in (("pursuer", _PURSUE), ("withdrawer", _WITHDRAW))
    }
    found = {s: i for s, i in firsts.items() if i is not None}
    return min(found, key=found.__getitem__) if found else "neutral"


def rng_for(seed: int, *parts: object) -> random.Random:
    """A private RNG per decision, so adding a call elsewhere never shifts this one."""
    digest = hashlib.sha256(repr((seed, *parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def speaker_weights(case: Case, turns: Sequence[Turn], state: RelationSnapshot | None) -> dict[str, float]:
    """Relative chance of each member taking the floor unprompted."""
    intensity = {m.name: float(m.baseline_intensity) for m in case.members}
    out_tension: dict[str, float] = {m.name: 0.0 for m in case.members}
    if state is not None:
        intensity.update({s.name: s.intensity for s in state.members})
        edges = [(e.source, e.tension) for e in state.edges]
    else:
        edges = [(v.source, v.tension) for v in case.viewpoints]
    for source, tension in edges:
        out_tension[source] = max(out_tension[source], tension)
    member_turns = [t for t in turns if t.kind == "member"]
    last_member = member_turns[-1].speaker if member_turns else None
    weights: dict[str, float] = {}
    for m in case.members:
        w = 1.0 + intensity[m.name] / 10
        style = style_of(m)
        if style == "pursuer":
            w *= 1.4 + out_tension[m.name] / 10  # pressing harder as tension rises
        elif style == "withdrawer":
            w *= max(0.25, 0.8 - out_tension[m.name] / 20)  # going quieter as tension rises
        if m.name == last_member:
            w *= 0.35  # no monologues: someone else usually comes in
        silent_for = _turns_since_spoke(m.name, member_turns)
        if silent_for >= 4:
            w *= 1.3  # even a withdrawer surfaces eventually
        weights[m.name] = w
    return weights


def choose_next(case: Case, turns: Sequence[Turn], state: RelationSnapshot | None, seed: int) -> FloorChoice:
    """The next member turn: speaker and whom they address."""
    rng = rng_for(seed, "floor", len(turns))
    names = case.member_names
    last = turns[-1] if turns else None
    if last is not None:
        addressed = [a for a in last.addressees if a in names and a != last.speaker]
        if last.kind == "supporter" and last.decision and last.decision.target_kind == "whole_group":
            addressed = []
        if addressed and rng.random() < ANSWER_PROBABILITY:
            speaker = addressed[0] if len(addressed) == 1 else rng.choice(addressed)
            return FloorChoice(speaker, (last.speaker,), "addressed")
    weights = speaker_weights(case, turns, state)
    speaker = rng.choices(list(weights), weights=list(weights.values()))[0]
    if last is None:
        addressees: tuple[str, ...] = (SUPPORTER,)
    elif last.speaker != speaker:
        addressees = (last.speaker,)
    else:
        others = [n for n in names if n != speaker]
        addressees = (rng.choice(others),)
    return FloorChoice(speaker, addressees, "weighted")


def _turns_since_spoke(name: str, member_turns: Sequence[Turn]) -> int:
    for i, t in enumerate(reversed(member_turns)):
        if t.speaker == name:
            return i
    return len(member_turns) + 1
