"""Simulator faults: the record's own evidence that the simulated room malfunctioned (no model call).

A pure function over a SessionRecord, so it runs when a session ends (simulator.runner.session) and on records
saved before it existed. It reuses what the engine already recorded per turn (simulator.turn_checks's flags on the
accepted member turns, the re-asks before them, the tracker's failure, the stressor's delivery verdict) and
turns it into faults, each with its turn, member and a quote from the record:

- `out_of_role`: a member line in the counsellor's voice (a counsellor's stock phrase or a `Therapist:` tag), the
  member naming themselves as someone else, or speaking of the member they address in the third person, still
  there after the re-ask;
- `ungrounded_room`: a session played with the director (simulator.director) whose member lines bring this
  case's own material (simulator.turn_checks.grounding) on fewer than `room.ungrounded_share` of them: the room did
  not play its case;
- `speaks_for_another`: a member line carrying another member's speaker tag, still there after the re-ask;
- `repeat_after_reask`: a member line re-asked and still repeating an earlier turn or echoing another speaker's;
- `language_switch`: an accepted member turn (line or self-report) off the session's language;
- `tracker_failure`: the tracker's call failed or returned nothing observed;
- `stressor_not_said`: the stressor was directed but the member's line did not say it (`record.delivery`);
- `fidelity_flags`: a member whose accepted turns still fail checks on more than a share of their turns
  (threshold as data: simulator/data/fidelity.yaml, `faults`);
- `member_silent`: a member who never spoke in a session of enough member turns: the room became a dyad (or a
  smaller family) and measures support for fewer people than the case has;
- `member_dominates`: one member holding more of the speaking turns than real rooms show (the share per group is
  data from RESCUE's speaker shares, `faults.dominant_share`; `judges.room_audit.rescue_speaker_shares` recomputes
  it). Neither is raised under a stressor that quiets a member by design (`faults.room_exempt_perturbations`).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import yaml

from personas.taxonomy import SUPPORTER_NAME
from simulator.records import (
    DeliveryStatus,
    FaultKind,
    FidelityCheck,
    FidelityFlag,
    SessionRecord,
    SimulatorFault,
    Turn,
)
from simulator.turn_checks import LEXICON_PATH, REPEATS, grounding, room_lexicon, tagged_speaker

QUOTE_MAX = 200
_TRACKER_FAILURE = re.compile(r"^tracker after turn (\d+)\b")


@dataclass(frozen=True)
class FaultThresholds:
    """The `faults` section of simulator/data/fidelity.yaml."""

    flagged_turn_share: float
    min_member_turns: int
    counted_checks: frozenset[FidelityCheck]


@functools.lru_cache(maxsize=1)
def _faults_section() -> dict:
    """The `faults` section of simulator/data/fidelity.yaml, read once for both kinds of threshold."""
    return yaml.safe_load(LEXICON_PATH.read_text(encoding="utf-8"))["faults"]


@functools.lru_cache(maxsize=1)
def fault_thresholds() -> FaultThresholds:
    data = _faults_section()
    return FaultThresholds(
        flagged_turn_share=float(data["flagged_turn_share"]),
        min_member_turns=int(data["min_member_turns"]),
        counted_checks=frozenset(FidelityCheck(c) for c in data["counted_checks"]),
    )


def _around(text: str, needle: str, width: int = QUOTE_MAX) -> str:
    """Words of `text` around `needle` (the whole text when short): a quote that is found in the record."""
    text = text.strip()
    if len(text) <= width:
        return text
    at = text.lower().find(needle.lower()) if needle else -1
    start = max(0, at - width // 3) if at >= 0 else 0
    return text[start : start + width].strip()


@dataclass(frozen=True)
class RoomThresholds:
    """The room-share keys of the `faults` section: when a session has stopped being a multi-party room."""

    silent_min_member_turns: int
    dominant_min_member_turns: int
    dominant_share: dict[str, float]  # group -> the largest share of speaking turns a member may hold
    exempt_perturbations: frozenset[str]


@functools.lru_cache(maxsize=1)
def room_thresholds() -> RoomThresholds:
    data = _faults_section()
    return RoomThresholds(
        silent_min_member_turns=int(data["silent_min_member_turns"]),
        dominant_min_member_turns=int(data["dominant_min_member_turns"]),
        dominant_share={str(g): float(v) for g, v in data["dominant_share"].items()},
        exempt_perturbations=frozenset(data.get("room_exempt_perturbations") or ()),
    )


def speaking_turns(speakers: Sequence[str], members: Sequence[str]) -> list[str]:
    """The members' speaking turns in a sequence of speakers (counsellor included): consecutive lines of one
    speaker with no one else between them count once, as one speech does in a RESCUE transcript."""
    runs = [s for i, s in enumerate(speakers) if i == 0 or speakers[i - 1] != s]
    return [s for s in runs if s in members]


def largest_share(turns: Sequence[str]) -> tuple[str, float] | None:
    """The member holding most of `turns` (the first to reach that count on a tie) and their share."""
    if not turns:
        return None
    counts = Counter(turns)
    top = max(counts.values())
    name = next(s for s in turns if counts[s] == top)
    return name, top / len(turns)


def _room_faults(record: SessionRecord, room: RoomThresholds) -> list[SimulatorFault]:
    """Session-wide: a member never heard from, or one member holding the floor (see the module docstring)."""
    if record.perturbation in room.exempt_perturbations:
        return []
    members = record.case.member_names
    lines = [t for t in record.turns if t.kind == "member" and t.text.strip()]
    out: list[SimulatorFault] = []
    if len(lines) >= room.silent_min_member_turns:
        heard = {t.speaker for t in lines}
        for m in members:
            if m not in heard:
                out.append(
                    SimulatorFault(
                        kind=FaultKind.MEMBER_SILENT,
                        member=m,
                        detail=f"{m} never spoke in {len(lines)} member turns: the room lost a member",
                    )
                )
    turns = speaking_turns([t.speaker for t in record.turns if t.text.strip()], members)
    # the room's size decides what a fair share is: a two-member family (a parent and a child) is read as a couple
    size = "couple" if len(members) == 2 else record.case.group
    share = room.dominant_share.get(size)
    top = largest_share(turns)
    if share is not None and top is not None and len(turns) >= room.dominant_min_member_turns and top[1] > share:
        name, held = top
        first = next(t for t in lines if t.speaker == name)
        out.append(
            SimulatorFault(
                kind=FaultKind.MEMBER_DOMINATES,
                member=name,
                quote=_around(first.text, ""),
                detail=f"{name} held {Counter(turns)[name]} of {len(turns)} member speaking turns ({held:.0%}; real "
                f"{size} sessions reach {share:.0%})",
            )
        )
    return out


def _field_value(turn: Turn, field: str) -> str:
    if field == "text":
        return turn.text
    if field == "cue":
        return turn.cue
    if turn.inner is not None and field in ("landed", "emotion", "reason"):
        return getattr(turn.inner, field)
    return turn.text


def _role_fault(turn: Turn, flag: FidelityFlag, members: list[str]) -> SimulatorFault:
    """A `speaking_as_other` flag as a fault: another member's tag is speaking for them; the counsellor's tag or
    voice, or naming oneself as a third person, is out of role."""
    other = tagged_speaker(flag.evidence, [m for m in members if m not in (turn.speaker, SUPPORTER_NAME)])
    if other is not None:
        kind, detail = FaultKind.SPEAKS_FOR_ANOTHER, f"{turn.speaker} wrote a line for {other}"
    else:
        kind, detail = FaultKind.OUT_OF_ROLE, f"{turn.speaker} spoke out of role: {flag.detail}"
    return SimulatorFault(
        kind=kind, turn=turn.index, member=turn.speaker, quote=_around(turn.text, flag.evidence), detail=detail
    )


def _turn_faults(turn: Turn, members: list[str]) -> list[SimulatorFault]:
    out: list[SimulatorFault] = []
    line_reasked = any(r.part == "line" for r in turn.reasks)
    for flag in turn.flags:
        if flag.check == FidelityCheck.SPEAKING_AS_OTHER:
            out.append(_role_fault(turn, flag, members))
        elif flag.check in (FidelityCheck.THIRD_PERSON, FidelityCheck.WRONG_ADDRESS, FidelityCheck.GIVEN_AWAY):
            out.append(
                SimulatorFault(
                    kind=FaultKind.OUT_OF_ROLE,
                    turn=turn.index,
                    member=turn.speaker,
                    quote=_around(turn.text, flag.evidence),
                    detail=f"{turn.speaker} spoke out of role: {flag.detail}",
                )
            )
        elif flag.check == FidelityCheck.LANGUAGE_SWITCH:
            value = _field_value(turn, flag.field)
            where = "line" if flag.field == "text" else f"self-report `{flag.field}`"
            out.append(
                SimulatorFault(
                    kind=FaultKind.LANGUAGE_SWITCH,
                    turn=turn.index,
                    member=turn.speaker,
                    quote=_around(value, ""),
                    detail=f"{turn.speaker}'s {where} left the session's language: {flag.detail}",
                )
            )
        elif flag.check in REPEATS and line_reasked:
            out.append(
                SimulatorFault(
                    kind=FaultKind.REPEAT_AFTER_REASK,
                    turn=turn.index,
                    member=turn.speaker,
                    quote=_around(turn.text, ""),
                    detail=f"{turn.speaker} was re-asked and still repeated turn {flag.turn}",
                )
            )
    return out


def _flag_share_faults(record: SessionRecord, limits: FaultThresholds) -> list[SimulatorFault]:
    """Per member: accepted turns still failing counted checks on more than the threshold share of their turns."""
    out: list[SimulatorFault] = []
    for member in record.case.member_names:
        turns = [t for t in record.turns if t.kind == "member" and t.speaker == member]
        flagged = [t for t in turns if any(f.check in limits.counted_checks for f in t.flags)]
        if len(turns) < limits.min_member_turns or len(flagged) <= limits.flagged_turn_share * len(turns):
            continue
        kinds = Counter(f.check.value for t in flagged for f in t.flags if f.check in limits.counted_checks)
        first = flagged[0]
        flag = next(f for f in first.flags if f.check in limits.counted_checks)
        out.append(
            SimulatorFault(
                kind=FaultKind.FIDELITY_FLAGS,
                turn=first.index,
                member=member,
                quote=_around(_field_value(first, flag.field), flag.evidence),
                detail=f"{member}'s accepted turns still failed checks on {len(flagged)} of {len(turns)} turns "
                f"(over {limits.flagged_turn_share:.0%}): " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()),
            )
        )
    return out


def _tracker_faults(record: SessionRecord) -> list[SimulatorFault]:
    out: list[SimulatorFault] = []
    m = _TRACKER_FAILURE.match(record.failure or "")
    if m:
        out.append(
            SimulatorFault(
                kind=FaultKind.TRACKER_FAILURE,
                turn=int(m[1]),
                member="tracker",
                quote=(record.failure or "")[:QUOTE_MAX],
                detail="the tracker's call failed, so the session could not go on",
            )
        )
    for t in record.turns:
        if t.tracker is not None and not t.tracker.emotions and not t.tracker.viewpoints:
            out.append(
                SimulatorFault(
                    kind=FaultKind.TRACKER_FAILURE,
                    turn=t.index,
                    member="tracker",
                    quote=f"pattern: {t.tracker.pattern}",
                    detail="the tracker returned no emotions and no viewpoints: the observer view did not move",
                )
            )
    return out


def _delivery_fault(record: SessionRecord) -> list[SimulatorFault]:
    d = record.delivery
    if d is None or d.status != DeliveryStatus.DIRECTED_NOT_SAID:
        return []
    said = next((t.text for t in record.turns if t.index == d.turn), "")
    return [
        SimulatorFault(
            kind=FaultKind.STRESSOR_NOT_SAID,
            turn=d.turn,
            member=d.member,
            quote=_around(said, d.quote),
            detail=f"directed to play the {d.perturbation} stressor but did not say it"
            + (f": {d.reason}" if d.reason else ""),
        )
    ]


def _grounding_fault(record: SessionRecord) -> list[SimulatorFault]:
    """Session-wide: members who kept off their own case (simulator.turn_checks.grounding) on too many lines."""
    lex = room_lexicon()
    lines = [t for t in record.turns if t.kind == "member" and t.text.strip()]
    # only rooms the director played: a record made before it keeps the faults it was scored with (its grounding
    # is still measured and shown by the fidelity audit)
    if not any(t.beat is not None for t in lines) or len(lines) < lex.ungrounded_min_member_turns:
        return []
    grounded = [t for t in lines if grounding(t.text, record.case)]
    share = len(grounded) / len(lines)
    if share >= lex.ungrounded_share:
        return []
    first = next(t for t in lines if t not in grounded)
    return [
        SimulatorFault(
            kind=FaultKind.UNGROUNDED_ROOM,
            quote=_around(first.text, ""),
            detail=f"{len(grounded)} of {len(lines)} member lines ({share:.0%}) bring anything of this case's own "
            f"material (at least {lex.ungrounded_share:.0%} needed): the room did not play its case",
        )
    ]


def detect_faults(
    record: SessionRecord, limits: FaultThresholds | None = None, room: RoomThresholds | None = None
) -> list[SimulatorFault]:
    """Every simulator fault the record shows, in turn order (see the module docstring)."""
    limits = limits or fault_thresholds()
    members = [*record.case.member_names, SUPPORTER_NAME]
    found: list[SimulatorFault] = []
    for t in record.turns:
        if t.kind == "member":
            found += _turn_faults(t, members)
    found += _flag_share_faults(record, limits)
    found += _tracker_faults(record)
    found += _delivery_fault(record)
    found += _room_faults(record, room or room_thresholds())
    found += _grounding_fault(record)
    return merge_faults([], found)


def merge_faults(*groups: Iterable[SimulatorFault]) -> list[SimulatorFault]:
    """The faults of all groups, the first of each (kind, turn, member) kept, in turn order (session-wide last)."""
    seen: dict[tuple[FaultKind, int | None, str | None], SimulatorFault] = {}
    for group in groups:
        for f in group:
            seen.setdefault((f.kind, f.turn, f.member), f)
    return sorted(seen.values(), key=lambda f: (f.turn is None, f.turn or 0))


def with_faults(record: SessionRecord) -> SessionRecord:
    """The record with what `detect_faults` finds added to the faults it already carries (e.g. from the delivery
    check)."""
    faults = merge_faults(record.simulator_faults, detect_faults(record))
    return record if faults == record.simulator_faults else record.model_copy(update={"simulator_faults": faults})
