"""Fidelity of the simulated room, measured from saved sessions (no model calls).

Per session and per run: repetition rate, re-ask rate, flags per 100 member turns by kind, language drift, move
distribution per member, the insider-vs-tracker gap, and the null-supporter drift: with the `silent`
supporter, how far members soften on their own. A room that heals itself inflates every supporter's score, so a
case whose mean self-softening over its silent sessions exceeds NULL_DRIFT_THRESHOLD is flagged.

Flags are counted by re-running the per-turn checks of simulator.turn_checks over each member turn (an audit), so
records made before the checks existed are measured exactly like new ones; the flags a record itself carries
(what was still failing when the engine accepted a turn) are counted separately.

The fault rate per member model is the share of sessions with a simulator fault (judges.scoring._faults: the
record's faults or the judges' simulator_failure flag), the sessions every supporter score leaves out.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import Field

from judges.room_audit._responsiveness import (
    ResponsivenessReport,
    default_pairs,
    responsiveness,
    session_responsiveness,
)
from judges.room_audit._sim_vs_real import SimVsReal, compare_runs_with_rescue, load_golds, missing_samples
from judges.room_audit._turn_taking import FloorComparison, floor_by_group
from judges.scoring._faults import faulted
from judges.scoring._store import read_judgment
from judges.scoring._trajectory import distress, insider_outsider_gap, relation_change
from personas.common.records import Record
from simulator.members import state_word_caps
from simulator.records import FidelityCheck, FidelityFlag, SessionRecord, Turn
from simulator.runfolder import RunFolder, RunFolderError
from simulator.supporters import SilentSupporter
from simulator.turn_checks import (
    LEGACY_CHAR_CAPS,
    REPEATS,
    check_line,
    check_state,
    read_line,
    session_language,
    whole_line,
)

FIDELITY_SCHEMA_VERSION = 2  # 2: turn-taking beside RESCUE (fields added; version-1 reports still load)
# Self-softening (mean of the drop in intensity and the drop in tension, in 0-10 points, first to last
# self-report) that a room may show on its own with a silent supporter before its case is flagged.
NULL_DRIFT_THRESHOLD = 1.0
NULL_SUPPORTER = SilentSupporter.spec  # the room on its own


class SelfSoftening(Record):
    """How far the room softened from the first to the last self-report (positive = softer)."""

    member_turns: int = Field(description="Member turns the change spans.")
    intensity_drop: float | None = Field(default=None, description="Mean over members of initial - final intensity.")
    tension_drop: float | None = Field(default=None, description="Mean over directed pairs of initial - final tension.")
    warmth_gain: float | None = Field(default=None, description="Mean over directed pairs of final - initial warmth.")
    softening: float | None = Field(default=None, description="Mean of intensity_drop and tension_drop.")


class RoomTurn(Record):
    """The room measures of one member turn (simulator.turn_checks.read_line), each the words that show it, or None."""

    grounded: str | None = Field(default=None, description="What of this case the line brings; None: nothing.")
    counsellor_voice: str | None = Field(default=None, description="The counsellor's phrase it uses, if any.")
    third_person: str | None = Field(
        default=None, description="Words speaking of the addressee (or the speaker, by name) as absent, if any."
    )
    echo: str | None = Field(default=None, description="Which other speaker's line it re-says, and how, if any.")
    wrong_address: str | None = Field(
        default=None, description="The member it speaks to by name though the line is not to them, if any."
    )
    given_away: str | None = Field(
        default=None, description="The clause telling the speaker's own card fact as someone else's, and whose, if any."
    )
    invented_figure: str | None = Field(
        default=None, description="A figure (year, amount, age, count) the card and the room never gave, if any."
    )
    claimed: str | None = Field(
        default=None, description="The clause telling another member's card fact as the speaker's own, whose, if any."
    )
    echo_recorded: bool = Field(
        default=True, description="The turn's own flags record it as a repeat or an echo (re-asked, then kept)."
    )
    beat: str | None = Field(default=None, description="What the director gave the member to bring up (kind: text).")


class RoomFigures(Record):
    """The room measures counted over member turns: does the room play its case, in its own voice."""

    member_turns: int = Field(default=0, description="Member turns read.")
    grounded_turns: int = Field(default=0, description="Turns bringing something of this case.")
    counsellor_voice_turns: int = Field(default=0, description="Turns in the counsellor's voice.")
    third_person_turns: int = Field(
        default=0, description="Turns speaking of their addressee (or the speaker) in the third person."
    )
    echo_turns: int = Field(default=0, description="Turns re-saying another speaker's line.")
    wrong_address_turns: int = Field(default=0, description="Turns speaking by name to a member not addressed.")
    given_away_turns: int = Field(default=0, description="Turns telling the speaker's own fact as someone else's.")
    invented_figure_turns: int = Field(default=0, description="Turns stating a figure the card and room never gave.")
    claimed_turns: int = Field(default=0, description="Turns telling another member's fact as the speaker's own.")
    echo_unrecorded: int = Field(default=0, description="Echoes the record's flags do not carry.")
    directed_turns: int = Field(default=0, description="Turns the director gave something to bring up.")

    def share(self, measure: str) -> float | None:
        """`measure`_turns / member_turns (None without member turns)."""
        return getattr(self, f"{measure}_turns") / self.member_turns if self.member_turns else None

    def plus(self, other: RoomFigures) -> RoomFigures:
        return RoomFigures(**{k: getattr(self, k) + getattr(other, k) for k in RoomFigures.model_fields})


def room_turns(record: SessionRecord) -> dict[int, RoomTurn]:
    """The room measures of every member turn of a record, by turn index."""
    out: dict[int, RoomTurn] = {}
    for i, t in enumerate(record.turns):
        if t.kind != "member" or not t.text.strip():
            continue
        r = read_line(t.text, t.speaker, t.addressees, record.case, record.turns[:i], (t.directive or "",))
        out[t.index] = RoomTurn(
            grounded=r.grounded,
            counsellor_voice=r.counsellor_voice,
            third_person=r.third_person,
            echo=r.echo,
            wrong_address=r.wrong_address,
            given_away=r.given_away,
            invented_figure=r.invented_figure,
            claimed=r.claimed,
            echo_recorded=r.echo is None or any(f.check in REPEATS for f in t.flags),
            beat=f"{t.beat.kind}: {t.beat.text}" if t.beat is not None else None,
        )
    return out


def room_figures(turns: dict[int, RoomTurn]) -> RoomFigures:
    rows = list(turns.values())
    return RoomFigures(
        member_turns=len(rows),
        grounded_turns=sum(r.grounded is not None for r in rows),
        counsellor_voice_turns=sum(r.counsellor_voice is not None for r in rows),
        third_person_turns=sum(r.third_person is not None for r in rows),
        echo_turns=sum(r.echo is not None for r in rows),
        wrong_address_turns=sum(r.wrong_address is not None for r in rows),
        given_away_turns=sum(r.given_away is not None for r in rows),
        invented_figure_turns=sum(r.invented_figure is not None for r in rows),
        claimed_turns=sum(r.claimed is not None for r in rows),
        echo_unrecorded=sum(r.echo is not None and not r.echo_recorded for r in rows),
        directed_turns=sum(r.beat is not None for r in rows),
    )


class SessionFidelity(Record):
    """Every fidelity figure of one session."""

    session_id: str = Field(description="Session id.")
    case_id: str = Field(description="Case id.")
    supporter: str = Field(description="Supporter spec as recorded.")
    status: str = Field(description="Session status.")
    member_turns: int = Field(description="Member turns in the session.")
    verbatim_repeats: int = Field(description="Member turns with the same words as an earlier turn.")
    near_duplicates: int = Field(description="Member turns above the near-duplicate overlap (not verbatim).")
    repetition_rate: float | None = Field(description="(verbatim + near-duplicate) / member turns.")
    reasked_turns: int = Field(description="Member turns with at least one re-asked part (0 on old records).")
    reasks: int = Field(description="Re-asked attempts in all.")
    reask_rate: float | None = Field(description="reasked_turns / member turns.")
    flag_counts: dict[str, int] = Field(description="Audit: failed checks per kind over the member turns.")
    recorded_flag_counts: dict[str, int] = Field(description="Flags the record carries (accepted still failing).")
    flagged_turns: int = Field(description="Member turns with at least one audit flag.")
    language_drift: float | None = Field(description="Share of member turns leaving the session's language.")
    moves: dict[str, dict[str, int]] = Field(description="Member -> move -> count (moves recorded by the engine).")
    intensity_gap: float | None = Field(description="Mean |self-reported - tracker intensity| (insider vs outsider).")
    tension_gap: float | None = Field(description="Mean |self-reported - tracker tension| per directed pair.")
    self_softening: SelfSoftening = Field(description="How far the room softened, first to last self-report.")
    turn_flags: dict[int, list[FidelityFlag]] = Field(default_factory=dict, description="Audit flags by turn index.")
    member_model: str = Field(default="-", description="Model that played the members.")
    fault_kinds: list[str] = Field(default_factory=list, description="Simulator fault kinds; empty if not faulted.")
    faults: list[str] = Field(
        default_factory=list, description="Why the session is faulted (left out of supporter scores); empty if not."
    )
    room: RoomFigures = Field(default_factory=RoomFigures, description="The room measures over its member turns.")
    room_turns: dict[int, RoomTurn] = Field(default_factory=dict, description="The room measures by turn index.")


class CaseDrift(Record):
    """Null-supporter drift of one case: its silent sessions' self-softening."""

    case_id: str = Field(description="Case id.")
    sessions: int = Field(description="Silent-supporter sessions of the case.")
    member_turns: float = Field(description="Mean member turns per session.")
    softening: float | None = Field(description="Mean self-softening over the sessions.")
    intensity_drop: float | None = Field(description="Mean over sessions of the members' mean intensity drop.")
    tension_drop: float | None = Field(description="Mean over sessions of the pairs' mean tension drop.")
    flagged: bool = Field(description="softening > threshold: the room heals itself; supporter scores are inflated.")


class FidelitySummary(Record):
    """Figures pooled over every member turn of a set of sessions."""

    sessions: int = Field(description="Sessions pooled.")
    member_turns: int = Field(description="Member turns pooled.")
    repetition_rate: float | None = Field(description="(verbatim + near-duplicate) / member turns.")
    verbatim_repeats: int = Field(description="Member turns with the same words as an earlier turn.")
    near_duplicates: int = Field(description="Member turns above the near-duplicate overlap (not verbatim).")
    reask_rate: float | None = Field(description="Share of member turns with a re-asked part.")
    flags_per_100: dict[str, float] = Field(description="Audit flags per 100 member turns, by kind.")
    recorded_flags_per_100: dict[str, float] = Field(description="Recorded flags per 100 member turns, by kind.")
    language_drift: float | None = Field(description="Share of member turns leaving the session's language.")
    intensity_gap: float | None = Field(description="Insider vs tracker intensity gap, mean over sessions with one.")
    tension_gap: float | None = Field(description="Insider vs tracker tension gap, mean over sessions with one.")
    moves: dict[str, dict[str, int]] = Field(description="`case_id/member` -> move -> count.")
    room: RoomFigures = Field(default_factory=RoomFigures, description="The room measures, pooled.")


class FaultRate(Record):
    """How often one member model's rooms malfunctioned."""

    sessions: int = Field(description="Sessions played by this member model.")
    faulted: int = Field(description="Sessions with a simulator fault (left out of supporter scores).")
    rate: float | None = Field(description="faulted / sessions.")
    kinds: dict[str, int] = Field(description="Fault kind -> faulted sessions showing it.")


class FidelityReport(Record):
    """`rescue-sim fidelity`: per session, per run folder, null-supporter drift and simulated vs real."""

    schema_version: int = Field(default=FIDELITY_SCHEMA_VERSION, description="Version of this record's layout.")
    runs: list[str] = Field(description="Run folders read, as given.")
    threshold: float = Field(description="Null-supporter drift threshold (points of self-softening).")
    sessions: list[SessionFidelity] = Field(description="One per readable session file.")
    by_run: dict[str, FidelitySummary] = Field(description="Run folder -> its sessions pooled.")
    overall: FidelitySummary = Field(description="Every session pooled.")
    null_drift: list[CaseDrift] = Field(description="Per case with silent-supporter sessions.")
    fault_rate: dict[str, FaultRate] = Field(
        default_factory=dict, description="Member model -> share of its sessions with a simulator fault."
    )
    unreadable: list[str] = Field(default_factory=list, description="Session files that could not be read.")
    sim_vs_real: list[SimVsReal] = Field(default_factory=list, description="Per RESCUE-derived case, when asked.")
    turn_taking: list[FloorComparison] = Field(
        default_factory=list,
        description="With a RESCUE source, per group: every session of the group beside the source's samples of "
        "that group and RESCUE-BENCH's published figures.",
    )
    rescue_source: str | None = Field(default=None, description="Where the RESCUE samples were read from.")
    rescue_missing: list[str] = Field(
        default_factory=list, description="Samples of RESCUE-derived sessions not found in the RESCUE source."
    )
    responsiveness: ResponsivenessReport | None = Field(
        default=None, description="Per supporter: how members' states and moves changed after its turns vs null."
    )


# ---- one session --------------------------------------------------------------------------------------------


def audit_turn(turn: Turn, earlier: Sequence[Turn], record: SessionRecord, language: str) -> list[FidelityFlag]:
    """The per-turn checks, applied after the fact to one saved member turn."""
    case = record.case
    finish = turn.calls[-1].finish_reason if turn.calls else None
    _, dropped, whole = whole_line(turn.text, finish)
    if not dropped:  # the saved line is its full sentences, as the engine keeps a line the limit stopped
        finish = whole
    flags = check_line(
        turn.text,
        speaker=turn.speaker,
        case=case,
        turns=earlier,
        addressees=turn.addressees,
        language=language,
        finish_reason=finish,
    )
    if turn.inner is not None:
        modern = turn.move is not None
        flags += check_state(
            {"landed": turn.inner.landed, "cue": turn.cue, "emotion": turn.inner.emotion, "reason": turn.inner.reason},
            intensity=turn.inner.intensity,
            move=turn.move,
            speaker=turn.speaker,
            turns=earlier,
            language=language,
            word_caps=state_word_caps() if modern else None,
            char_caps=None if modern else LEGACY_CHAR_CAPS,
            reading=turn.reading,
        )
    return flags


def self_softening(record: SessionRecord) -> SelfSoftening:
    n = sum(t.kind == "member" for t in record.turns)
    members = distress(record.self_report)
    change = relation_change(record.self_report)
    drops = [m.initial - m.final for m in members]
    intensity = sum(drops) / len(drops) if drops else None
    tension = -change.delta_tension if change.delta_tension is not None else None
    parts = [v for v in (intensity, tension) if v is not None]
    return SelfSoftening(
        member_turns=n,
        intensity_drop=intensity,
        tension_drop=tension,
        warmth_gain=change.delta_warmth,
        softening=sum(parts) / len(parts) if parts else None,
    )


def audit_record(record: SessionRecord) -> SessionFidelity:
    """Every fidelity figure of one session."""
    language = session_language(record.case)
    counts: Counter[str] = Counter()
    recorded: Counter[str] = Counter()
    moves: dict[str, Counter[str]] = {m: Counter() for m in record.case.member_names}
    by_turn: dict[int, list[FidelityFlag]] = {}
    verbatim = near = reasked = reasks = flagged = drift = n = 0
    for i, t in enumerate(record.turns):
        if t.kind != "member":
            continue
        n += 1
        flags = audit_turn(t, record.turns[:i], record, language)
        kinds = {f.check for f in flags}
        verbatim += FidelityCheck.DUPLICATE in kinds
        near += FidelityCheck.NEAR_DUPLICATE in kinds
        drift += FidelityCheck.LANGUAGE_SWITCH in kinds
        flagged += bool(flags)
        counts.update(f.check.value for f in flags)
        recorded.update(f.check.value for f in t.flags)
        reasked += bool(t.reasks)
        reasks += len(t.reasks)
        if t.move is not None:
            moves.setdefault(t.speaker, Counter())[t.move] += 1
        if flags:
            by_turn[t.index] = flags
    gap = insider_outsider_gap(record.turns, record.case.member_names)
    room = room_turns(record)
    return SessionFidelity(
        session_id=record.session_id,
        case_id=record.case.id,
        supporter=record.supporter,
        status=str(record.status),
        member_turns=n,
        verbatim_repeats=verbatim,
        near_duplicates=near,
        repetition_rate=(verbatim + near) / n if n else None,
        reasked_turns=reasked,
        reasks=reasks,
        reask_rate=reasked / n if n else None,
        flag_counts=dict(sorted(counts.items())),
        recorded_flag_counts=dict(sorted(recorded.items())),
        flagged_turns=flagged,
        language_drift=drift / n if n else None,
        moves={m: dict(c.most_common()) for m, c in moves.items()},
        intensity_gap=gap.mean_intensity_gap,
        tension_gap=gap.mean_tension_gap,
        self_softening=self_softening(record),
        turn_flags=by_turn,
        room=room_figures(room),
        room_turns=room,
    )


# ---- many sessions ------------------------------------------------------------------------------------------


def _mean(values: Iterable[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return sum(vs) / len(vs) if vs else None


def summarise(sessions: Sequence[SessionFidelity]) -> FidelitySummary:
    turns = sum(s.member_turns for s in sessions)
    flags: Counter[str] = Counter()
    recorded: Counter[str] = Counter()
    moves: dict[str, Counter[str]] = {}
    for s in sessions:
        flags.update(s.flag_counts)
        recorded.update(s.recorded_flag_counts)
        for member, c in s.moves.items():
            moves.setdefault(f"{s.case_id}/{member}", Counter()).update(c)
    verbatim = sum(s.verbatim_repeats for s in sessions)
    near = sum(s.near_duplicates for s in sessions)

    def per100(c: Counter[str]) -> dict[str, float]:
        return {k: round(100 * v / turns, 1) for k, v in sorted(c.items())} if turns else {}

    return FidelitySummary(
        sessions=len(sessions),
        member_turns=turns,
        repetition_rate=(verbatim + near) / turns if turns else None,
        verbatim_repeats=verbatim,
        near_duplicates=near,
        reask_rate=sum(s.reasked_turns for s in sessions) / turns if turns else None,
        flags_per_100=per100(flags),
        recorded_flags_per_100=per100(recorded),
        language_drift=(sum((s.language_drift or 0) * s.member_turns for s in sessions) / turns) if turns else None,
        intensity_gap=_mean(s.intensity_gap for s in sessions),
        tension_gap=_mean(s.tension_gap for s in sessions),
        moves={k: dict(c.most_common()) for k, c in sorted(moves.items())},
        room=functools.reduce(RoomFigures.plus, (s.room for s in sessions), RoomFigures()),
    )


def null_drift(sessions: Sequence[SessionFidelity], threshold: float = NULL_DRIFT_THRESHOLD) -> list[CaseDrift]:
    """Per case, the self-softening of its silent-supporter sessions (the room on its own)."""
    by_case: dict[str, list[SessionFidelity]] = {}
    for s in sessions:
        if s.supporter == NULL_SUPPORTER and s.member_turns:
            by_case.setdefault(s.case_id, []).append(s)
    out = []
    for case_id, group in sorted(by_case.items()):
        soft = _mean(s.self_softening.softening for s in group)
        out.append(
            CaseDrift(
                case_id=case_id,
                sessions=len(group),
                member_turns=sum(s.member_turns for s in group) / len(group),
                softening=soft,
                intensity_drop=_mean(s.self_softening.intensity_drop for s in group),
                tension_drop=_mean(s.self_softening.tension_drop for s in group),
                flagged=soft is not None and soft > threshold,
            )
        )
    return out


def fault_rates(sessions: Sequence[SessionFidelity]) -> dict[str, FaultRate]:
    """Per member model: how many of its sessions had a simulator fault, and of which kinds."""
    groups: dict[str, list[SessionFidelity]] = {}
    for s in sessions:
        groups.setdefault(s.member_model, []).append(s)
    out = {}
    for model, group in sorted(groups.items()):
        kinds: Counter[str] = Counter()
        for s in group:
            kinds.update(s.fault_kinds)
        n = sum(bool(s.fault_kinds) for s in group)
        out[model] = FaultRate(
            sessions=len(group), faulted=n, rate=n / len(group) if group else None, kinds=dict(kinds.most_common())
        )
    return out


def fidelity_report(
    run_dirs: Sequence[str | Path],
    *,
    rescue: str | Path | None = None,
    threshold: float = NULL_DRIFT_THRESHOLD,
    pairs: Sequence[tuple[str, str]] = (),
) -> FidelityReport:
    """Read every session in `run_dirs` and measure it; with `rescue` (RESCUE samples, or a folder of
    `import-rescue` gold files) also compare RESCUE-derived cases with the samples they came from. Trajectory
    separations are reported for `pairs` of supporters and for every M run beside `sides:M`."""
    sessions: list[SessionFidelity] = []
    records: list[SessionRecord] = []
    by_run: dict[str, FidelitySummary] = {}
    unreadable: list[str] = []
    for run in run_dirs:
        folder = RunFolder(run)
        if not folder.exists() and not folder.sessions_dir.is_dir():
            raise RunFolderError(f"{run}: not a run folder (no manifest.json or sessions/); pass a folder `run` wrote")
        mine = []
        for stored in folder.read_sessions():
            sid, rec = stored.session_id, stored.record
            if rec is None:
                unreadable.append(str(stored.error))
                continue
            records.append(rec)
            fault = faulted(rec, read_judgment(folder, sid))
            mine.append(
                audit_record(rec).model_copy(
                    update={
                        "member_model": rec.models.get("member") or "-",
                        "fault_kinds": fault.kinds if fault is not None else [],
                        "faults": fault.reasons if fault is not None else [],
                    }
                )
            )
        sessions += mine
        by_run[str(run)] = summarise(mine)
    golds = load_golds(rescue) if rescue is not None else {}
    comparisons = compare_runs_with_rescue(records, rescue, golds) if rescue is not None else []
    steps = [session_responsiveness(r) for r in records]
    asked = list(dict.fromkeys([*pairs, *default_pairs(s.supporter for s in steps)]))
    return FidelityReport(
        runs=[str(r) for r in run_dirs],
        threshold=threshold,
        sessions=sessions,
        by_run=by_run,
        overall=summarise(sessions),
        null_drift=null_drift(sessions, threshold),
        fault_rate=fault_rates(sessions),
        unreadable=unreadable,
        sim_vs_real=comparisons,
        turn_taking=floor_by_group(records, golds) if rescue is not None else [],
        rescue_source=str(rescue) if rescue is not None else None,
        rescue_missing=missing_samples(records, comparisons) if rescue is not None else [],
        responsiveness=responsiveness(steps, pairs=asked) if steps else None,
    )


def fidelity_by_supporter(run_dirs: Sequence[str | Path]) -> dict[str, FidelitySummary]:
    """The fidelity summary of each supporter's sessions (the leaderboard's fidelity section).

    Rows are labelled as the leaderboard labels them: an oracle supporter is its own row."""
    groups: dict[str, list[SessionFidelity]] = {}
    for run in run_dirs:
        folder = RunFolder(run)
        for stored in folder.read_sessions():
            rec = stored.record
            if rec is None:
                continue
            label = rec.supporter if rec.supporter_knows == "intake" else f"{rec.supporter} [oracle]"
            groups.setdefault(label, []).append(audit_record(rec))
    return {label: summarise(group) for label, group in sorted(groups.items())}
