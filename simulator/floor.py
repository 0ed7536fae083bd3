"""Who speaks next among the members, and to whom: the floor reads what was just said, not only its addressee.

A room where the addressed member always answers collapses into a dyad: a counsellor that keeps talking to one
partner holds the other out (on unseen couples 3 of 8 sessions had one partner speak all 6 member turns). So the
floor answers the last turn the way people in a session do, by rules over the record and the members' own
readings (no model call), tried in this order:

0. nobody takes three member turns running;
1. `left_out`: a member who has not spoken for `left_out_after(case)` member turns comes in;
2. `pressing`: a member the last counsellor turn blamed (the room's own blame readings, recorded on the member
   turn after it) who has not answered it yet presses the point;
3. `cut_in`: a member the counsellor spoke *about* while addressing someone else (named, or "he"/"she" said to
   one partner of a couple) cuts in;
4. `addressed`: an addressed member answers (in a family, a third as often once they hold half the turns);
5. `weighted`: otherwise a pick weighted by intensity, the card's style and tension.

Whom they address: the counsellor's invitation to speak to another member (strategy `enact`, or "tell Theo")
turns the answer to that member; a pursuer who cuts in or presses accuses the member the counsellor was talking
to; a member coming in after another member's line answers that member (so the room talks among itself
wherever the counsellor stays silent). The card's style shapes every probability
(pursuers press, withdrawers hold back). Seeded: the same session seed and turn give the same choice.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from personas.case import Case, Member
from personas.graph import RelationSnapshot
from simulator.records import SUPPORTER, Turn

FloorReason = Literal["opening", "left_out", "pressing", "cut_in", "addressed", "weighted", "directed"]

ANSWER_PROBABILITY = 0.85  # an addressed member usually answers; sometimes someone cuts in
CUT_IN_PROBABILITY = 0.45  # a member spoken about, not to, cuts in (times the style factor)
PRESS_PROBABILITY = 0.6  # a member the counsellor's words blamed presses the point (times the style factor)
STYLE_FACTOR = {"pursuer": 1.5, "neutral": 1.0, "withdrawer": 0.6}
_PURSUE = ("pursu", "press", "chase", "confront", "demand", "interrogat", "lectur", "push")
_WITHDRAW = ("withdraw", "quiet", "shut", "avoid", "stonewall", "minimal", "deflect", "retreat", "silent", "flat")
_THIRD_PERSON = re.compile(r"\b(he|him|his|himself|she|her|hers|herself)\b", re.IGNORECASE)
_INVITE = re.compile(
    r"\b(tell|ask|show|say (?:it|that|this)?\s*to|talk to|speak to|turn to|look at|answer)\s+(\w+)", re.IGNORECASE
)


@dataclass(frozen=True)
class FloorChoice:
    speaker: str
    addressees: tuple[str, ...]
    reason: FloorReason


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


def left_out_after(case: Case) -> int:
    """Member turns a member may go without speaking before they come in: as many as there are members (2 in a
    couple: no partner speaks three times running), so in a family of up to four everyone has spoken within six
    member turns while an addressed member still usually answers (with one fewer, a four-member family fell
    into a rotation in which nearly every turn went to whoever had been out longest)."""
    return max(2, len(case.members))


def speaker_weights(case: Case, turns: Sequence[Turn], state: RelationSnapshot | None) -> dict[str, float]:
    """Relative chance of each member taking the floor unprompted."""
    intensity = {m.name: float(m.baseline_intensity) for m in case.members}
    out_tension = _out_tension(case, state)
    if state is not None:
        intensity.update({s.name: s.intensity for s in state.members})
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
        weights[m.name] = w
    return weights


def spoken_about(case: Case, turn: Turn) -> list[str]:
    """Members a counsellor turn talks about without talking to: named in it, or, said to one partner of a
    couple, referred to as he or she."""
    if turn.kind != "supporter":
        return []
    to = set(turn.addressees)
    named = [n for n in case.member_names if n not in to and re.search(rf"\b{re.escape(n)}\b", turn.text)]
    members_to = [n for n in case.member_names if n in to]
    if not named and len(case.members) == 2 and len(members_to) == 1 and _THIRD_PERSON.search(turn.text):
        named = [n for n in case.member_names if n not in to]
    return named


def blamed_unanswered(turns: Sequence[Turn]) -> list[str]:
    """Members the last counsellor turn blamed, by the room's own readings of it, who have not spoken since."""
    since = _since_last_supporter(turns)
    if since is None:
        return []
    readings: dict[str, bool] = {}
    for t in since:
        readings.update(t.felt_blamed)
    spoke = {t.speaker for t in since}
    return [name for name, blamed in readings.items() if blamed and name not in spoke]


def choose_next(case: Case, turns: Sequence[Turn], state: RelationSnapshot | None, seed: int) -> FloorChoice:
    """The next member turn: speaker, whom they address, and which rule gave the floor."""
    rng = rng_for(seed, "floor", len(turns))
    if not turns:
        weights = speaker_weights(case, turns, state)
        return FloorChoice(rng.choices(list(weights), weights=list(weights.values()))[0], (SUPPORTER,), "opening")
    speaker, reason = _pick(case, turns, state, rng)
    return FloorChoice(speaker, _addressees(case, speaker, reason, turns[-1], state), reason)


def _pick(
    case: Case, turns: Sequence[Turn], state: RelationSnapshot | None, rng: random.Random
) -> tuple[str, FloorReason]:
    names = case.member_names
    last = turns[-1]
    member_turns = [t for t in turns if t.kind == "member"]
    if len(member_turns) >= 2 and member_turns[-1].speaker == member_turns[-2].speaker:
        names = [n for n in names if n != member_turns[-1].speaker]  # nobody takes three member turns running
    silent = {n: _turns_since_spoke(n, member_turns) for n in names}
    weights = {n: w for n, w in speaker_weights(case, turns, state).items() if n in names}
    out = [n for n in names if silent[n] >= left_out_after(case)]
    if out:  # the longest out comes in; ties go by the usual weights
        longest = max(silent[n] for n in out)
        tied = [n for n in out if silent[n] == longest]
        return rng.choices(tied, weights=[weights[n] for n in tied])[0], "left_out"
    style = {m.name: STYLE_FACTOR[style_of(m)] for m in case.members if m.name in names}
    for name in blamed_unanswered(turns):
        if name in style and rng.random() < min(0.95, PRESS_PROBABILITY * style[name]):
            return name, "pressing"
    if last.kind == "supporter":
        for name in spoken_about(case, last):
            if name in style and rng.random() < min(0.95, CUT_IN_PROBABILITY * style[name]):
                return name, "cut_in"
    addressed = [a for a in last.addressees if a in names and a != last.speaker]
    if last.kind == "supporter" and last.decision and last.decision.target_kind == "whole_group":
        addressed = []
    if addressed:
        pick = addressed[0] if len(addressed) == 1 else rng.choice(addressed)
        if rng.random() < ANSWER_PROBABILITY * _yield_factor(case, pick, member_turns):
            return pick, "addressed"
    return rng.choices(list(weights), weights=list(weights.values()))[0], "weighted"


def _yield_factor(case: Case, name: str, member_turns: Sequence[Turn]) -> float:
    """In a family, a member who already holds half the member turns answers an address about a third as often:
    others come in, as they do in real family sessions (RESCUE: one member above half of six member turns in under 5%
    of stretches; simulator/data/fidelity.yaml)."""
    if len(case.members) < 3 or len(member_turns) < 2:
        return 1.0
    held = sum(t.speaker == name for t in member_turns) / len(member_turns)
    return 0.35 if held >= 0.5 else 1.0


def _addressees(
    case: Case,
    speaker: str,
    reason: FloorReason,
    last: Turn,
    state: RelationSnapshot | None,
) -> tuple[str, ...]:
    others = [n for n in case.member_names if n != speaker]
    if last.kind == "supporter":
        invited = _invited(case, speaker, last)
        if invited and reason in ("addressed", "weighted", "left_out"):
            return (invited,)
        if reason in ("cut_in", "pressing") and style_of(case.member(speaker)) == "pursuer":
            talked_to = [a for a in last.addressees if a in others]
            if talked_to:
                return (talked_to[0],)  # accusation: at the member the counsellor was talking to
        return (SUPPORTER,)
    if last.speaker != speaker:
        return (last.speaker,)
    return (_most_tense(speaker, others, case, state) if others else SUPPORTER,)


def _invited(case: Case, speaker: str, turn: Turn) -> str | None:
    """The member a counsellor turn asks `speaker` to speak to directly (an enactment), if it asks."""
    if speaker not in turn.addressees:
        return None
    others = [n for n in case.member_names if n != speaker]
    for m in _INVITE.finditer(turn.text):
        word = m.group(2)
        if word in others:
            return word
        if word.lower() in ("him", "her", "them", "each") and len(others) == 1:
            return others[0]
    if turn.decision is not None and turn.decision.strategy == "enact" and len(others) == 1:
        return others[0]
    return None


def _out_tension(case: Case, state: RelationSnapshot | None) -> dict[str, float]:
    out = {m.name: 0.0 for m in case.members}
    edges = [(e.source, e.tension) for e in state.edges] if state else [(v.source, v.tension) for v in case.viewpoints]
    for source, tension in edges:
        out[source] = max(out[source], tension)
    return out


def _most_tense(speaker: str, others: Sequence[str], case: Case, state: RelationSnapshot | None) -> str:
    edges = state.edges if state else case.viewpoints
    tension = {e.target: e.tension for e in edges if e.source == speaker}
    return max(others, key=lambda n: (tension.get(n, 0.0), -others.index(n)))


def _since_last_supporter(turns: Sequence[Turn]) -> list[Turn] | None:
    for i in range(len(turns) - 1, -1, -1):
        if turns[i].kind == "supporter":
            return list(turns[i + 1 :])
    return None


def _turns_since_spoke(name: str, member_turns: Sequence[Turn]) -> int:
    """Member turns since `name` last spoke; all of them when it never has."""
    for i, t in enumerate(reversed(member_turns)):
        if t.speaker == name:
            return i
    return len(member_turns)
