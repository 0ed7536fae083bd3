"""What the HTML report shows, read from run folders into one versioned model (embedded in the page as JSON).

Sessions come in two parts: a small summary per session (the list, the filters and the score distributions
use it) and the detail (transcript, decisions, inner states, both relation views, the judgment), which the page
only turns into DOM when the session is opened.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from judges.boards._leaderboard import Leaderboard, SessionFacts, leaderboard_from_facts, session_facts
from judges.ratings._store import read_ratings
from judges.room_audit._audit import RoomTurn, room_turns
from judges.scoring._facts import copied_lines, repeated_lines, voiced_lines
from judges.scoring._faults import faulted
from judges.scoring._panel import session_values
from judges.scoring._records import SessionJudgment
from judges.scoring._store import read_judgment
from personas.common.records import Record
from personas.graph import RelationSnapshot
from simulator.records import SessionRecord, SessionStatus
from simulator.runfolder import RunFolder, RunFolderError

REPORT_SCHEMA_VERSION = 1


class DimensionInfo(Record):
    id: str
    level: str
    kind: str
    question: str
    min: int | None = None
    max: int | None = None
    about: str = "supporter"


class SessionSummary(Record):
    """One row of the session list."""

    run: str
    id: str
    case: str
    title: str
    group: str
    supporter: str
    knows: str
    perturbation: str | None
    trial: int
    seed: int
    status: str = Field(
        description="The record's status (completed, failed, incomplete), or `running`: incomplete in a run folder "
        "a process is writing when the page was made (see `with_running`)."
    )
    end: str | None
    failure: str | None
    turns: int
    judged: bool
    judgment_status: str | None
    simulator_failure: bool = Field(
        default=False, description="A simulator fault (record or judges): left out of the leaderboard by default."
    )
    faults: list[str] = Field(default_factory=list, description="Why the session is faulted, one line per fault.")
    scores: dict[str, float] = Field(default_factory=dict, description="Dimension -> the session's value.")
    rated: int = Field(default=0, description="Human ratings stored for this session.")


class SnapView(Record):
    t: int
    pattern: str
    m: dict[str, float] = Field(description="Member -> intensity.")
    e: list[tuple[str, str, float, float]] = Field(description="(source, target, warmth, tension).")


class SessionDetail(Record):
    members: list[str]
    case: dict[str, Any]
    turns: list[dict[str, Any]]
    passes: list[int] = Field(description="Turns after which the supporter chose to stay silent.")
    self_report: list[SnapView]
    observer: list[SnapView]
    safety: list[dict[str, Any]]
    judgment: dict[str, Any] | None
    ratings: list[dict[str, Any]] = Field(default_factory=list)
    lines: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Supporter turns measured from the record as copied from members' lines, repeating its own or "
        "said in a member's voice (judges.scoring.copied_lines, repeated_lines, voiced_lines), in turn order: "
        "{turn, kind: copied | repeated | voiced, text}.",
    )


class ReportData(Record):
    schema_version: int = REPORT_SCHEMA_VERSION
    generated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    runs: list[str]
    leaderboard: Leaderboard
    dimensions: list[DimensionInfo]
    sessions: list[SessionSummary]
    details: list[SessionDetail] = Field(description="Same order as `sessions`; empty when `detail_url` is set.")
    detail_url: str | None = Field(
        default=None,
        description="Served pages (`rescue-sim serve`) fetch a session's detail from this URL plus its id instead "
        "of carrying every detail in the page; None: the details are embedded.",
    )
    live_url: str | None = Field(
        default=None,
        description="Served pages: server-sent events of a session still running, at this URL plus its id.",
    )
    unreadable: list[str] = Field(default_factory=list, description="Session files that could not be read.")


def _snaps(snaps: Sequence[RelationSnapshot]) -> list[SnapView]:
    by_turn: dict[int, RelationSnapshot] = {}
    for s in snaps:
        by_turn[s.turn] = s
    return [
        SnapView(
            t=s.turn,
            pattern=s.pattern,
            m={m.name: m.intensity for m in s.members},
            e=[(e.source, e.target, e.warmth, e.tension) for e in s.edges],
        )
        for s in (by_turn[t] for t in sorted(by_turn))
    ]


def _turn(t, room: RoomTurn | None = None) -> dict[str, Any]:  # simulator.records.Turn
    out: dict[str, Any] = {"i": t.index, "sp": t.speaker, "kind": t.kind, "to": list(t.addressees), "text": t.text}
    if room is not None:
        out["room"] = {
            "grounded": room.grounded,
            "voice": room.counsellor_voice,
            "third": room.third_person,
            "address": room.wrong_address,
            "given": room.given_away,
            "figure": room.invented_figure,
            "claimed": room.claimed,
            "echo": room.echo,
            "echo_recorded": room.echo_recorded,
        }
    if t.beat is not None:
        out["beat"] = f"{t.beat.kind}: {t.beat.text}"
    if t.dropped:
        out["dropped"] = t.dropped
    if t.inner is not None:
        out["inner"] = {
            "emotion": t.inner.emotion,
            "intensity": t.inner.intensity,
            "heard": t.inner.felt_heard,
            "landed": t.inner.landed,
            "reason": t.inner.reason,
            "toward": [(f.member, f.warmth, f.tension) for f in t.inner.toward],
        }
    if t.decision is not None:
        d = t.decision
        out["dec"] = {
            "after": d.after_turn,
            "targets": list(d.targets),
            "kind": d.target_kind.value if d.target_kind is not None else None,
            "strategy": d.strategy,
            "close": d.close_session,
            "why": d.rationale,
            "valid": getattr(d, "valid", True),
        }
    if t.directive:
        out["directive"] = t.directive
    if t.tracker is not None:
        out["pattern"] = t.tracker.pattern
    return out


def _judgment(j: SessionJudgment) -> dict[str, Any]:
    return {
        "judges": j.judges,
        "status": j.status.value,
        "mode": j.mode,
        "flagged": j.flagged,
        "simulator_failure": j.simulator_failure_reason,
        "scores": [
            {
                "judge": v.judge,
                "item": s.item,
                "dim": s.dimension,
                "score": s.score,
                "label": s.label,
                "strength": s.strength,
                "why": s.reasoning,
                "ev": [(e.turn, e.quote, e.quote_found) for e in s.evidence],
                # a checklist score's evidence: each yes/no item with the turn it asks about and P(yes)
                "answers": [(a.turn, a.question, round(a.p_yes, 3), a.direction == "yes_good") for a in s.answers],
            }
            for v in j.verdicts
            for s in v.scores
        ],
        "failures": [{"judge": v.judge, "unit": f.unit, "reason": f.reason} for v in j.verdicts for f in v.failures],
        "aggregates": [
            {"item": a.item, "dim": a.dimension, "mean": a.mean, "majority": a.majority, "spread": a.spread, "n": a.n}
            for a in j.aggregates
        ],
    }


def _detail(record: SessionRecord, judgment: SessionJudgment | None, ratings: list[dict]) -> SessionDetail:
    case = record.case
    rooms = room_turns(record)
    return SessionDetail(
        members=case.member_names,
        case={
            "title": case.title,
            "group": case.group,
            "setting": case.setting,
            "problem": case.presenting_problem,
            "pattern": case.relation_pattern,
            "members": [{"name": m.name, "role": m.role, "age": m.age} for m in case.members],
        },
        turns=[_turn(t, rooms.get(t.index)) for t in record.turns],
        passes=[d.after_turn for d in record.decisions if not d.speak],
        self_report=_snaps(record.self_report),
        observer=_snaps(record.observer),
        safety=[
            {"member": e.member, "at": e.signalled_at, "source": e.source, "addressed": e.addressed, "note": e.note}
            for e in record.safety
        ],
        judgment=_judgment(judgment) if judgment is not None else None,
        ratings=ratings,
        lines=_lines(record),
    )


def _lines(record: SessionRecord) -> list[dict[str, Any]]:
    """Copied, repeated and voiced supporter turns, as the session view names them beside the turn."""
    out = [
        {
            "turn": c.turn,
            "kind": "copied",
            "text": f"{c.coverage:.0%} of its words from "
            + " + ".join(f"{s.member}'s turn {s.turn}" for s in c.sources),
        }
        for c in copied_lines(record)
    ]
    out += [
        {
            "turn": r.turn,
            "kind": "repeated",
            "text": f"its own turn {r.repeats_turn} again ({r.coverage:.0%} of its words)",
        }
        for r in repeated_lines(record)
    ]
    out += [{"turn": v.turn, "kind": "voiced", "text": f'said as a member ("{v.said}")'} for v in voiced_lines(record)]
    return sorted(out, key=lambda x: (x["turn"], x["kind"]))


def _ratings_by_session(folder: RunFolder) -> dict[str, list[dict]]:
    by_session: dict[str, list[dict]] = {}
    for r in read_ratings(folder).ratings:
        by_session.setdefault(r.session_id, []).append(
            {
                "item": "session" if r.turn is None else f"t{r.turn}",
                "dim": r.dimension,
                "rater": r.rater,
                "value": r.value,
            }
        )
    return by_session


def record_detail(
    record: SessionRecord, judgment: SessionJudgment | None = None, ratings: Sequence[dict] = ()
) -> SessionDetail:
    """One session's detail from a record in hand (a session still running has no judgment or ratings yet)."""
    return _detail(record, judgment, list(ratings))


def session_detail(run_dir: str | Path, session_id: str) -> SessionDetail:
    """One session's detail (what the viewer draws when the session is opened); a RunFolderError when the
    session is not there or cannot be read."""
    folder = RunFolder(run_dir)
    folder.read_manifest()
    if session_id not in folder.session_ids():
        raise RunFolderError(f"{run_dir}: no session {session_id!r}")
    record = folder.load_session(session_id)
    return _detail(record, read_judgment(folder, session_id), _ratings_by_session(folder).get(session_id, []))


class SessionEntry(Record):
    """One session as the report's list and leaderboard need it, read once from its files (`read_entry`): its row
    (run and ratings filled in when the report is put together), its rubric's dimensions and its leaderboard facts.
    A served run's index keeps one per session, so only a session changed since is read again."""

    summary: SessionSummary | None = Field(description="None: the session file could not be read.")
    dimensions: list[DimensionInfo] = Field(default_factory=list, description="Its judgment's active rubric.")
    facts: SessionFacts


def read_entry(folder: RunFolder, sid: str) -> tuple[SessionEntry, SessionRecord | None, SessionJudgment | None]:
    """Session `sid`'s entry, with the record and judgment it was read from (None when unreadable/absent)."""
    record = folder.read_session(sid).record
    if record is None:
        return SessionEntry(summary=None, facts=SessionFacts(session_id=sid, readable=False)), None, None
    judgment = read_judgment(folder, sid)
    completed = record.status == SessionStatus.COMPLETED
    dims = [
        DimensionInfo(id=d.id, level=d.level, kind=d.kind, question=d.question, min=d.min, max=d.max, about=d.about)
        for d in (judgment.rubric.active if judgment is not None else [])
    ]
    values = {k: v for k, (_, v) in session_values(judgment).items()} if judgment is not None else {}
    facts = session_facts(folder, sid, record, judgment if completed else None)
    fault = facts.fault if completed else faulted(record, judgment)  # the facts hold it for a completed session
    summary = SessionSummary(
        run="",
        id=sid,
        case=record.case.id,
        title=record.case.title,
        group=record.case.group,
        supporter=record.supporter,
        knows=record.supporter_knows,
        perturbation=record.perturbation,
        trial=record.trial,
        seed=record.seed,
        status=record.status.value,
        end=record.end_reason.value if record.end_reason is not None else None,
        failure=record.failure,
        turns=len(record.turns),
        judged=judgment is not None,
        judgment_status=judgment.status.value if judgment is not None else None,
        simulator_failure=fault is not None,
        faults=fault.reasons if fault is not None else [],
        scores=values,
    )
    return SessionEntry(summary=summary, dimensions=dims, facts=facts), record, judgment


EntrySource = Callable[[RunFolder, str], SessionEntry]

RUNNING = "running"


def with_running(data: ReportData, writing: set[str]) -> ReportData:
    """The page data with the unfinished sessions of the runs in `writing` (labels as in `SessionSummary.run`)
    shown as running: a process holds their folder's writer lock now (`RunFolder.being_written`), so they are
    being played, not stopped. Applied when a page is made, never kept in a run's index: a writer that dies leaves
    its sessions incomplete."""
    if not writing:
        return data
    sessions = [
        s.model_copy(update={"status": RUNNING}) if s.run in writing and s.status == SessionStatus.INCOMPLETE else s
        for s in data.sessions
    ]
    return data.model_copy(update={"sessions": sessions})


def build_report_data(
    run_dirs: Sequence[str | Path],
    *,
    include_faults: bool = False,
    details: bool = True,
    entries: EntrySource | None = None,
    running: bool = True,
) -> ReportData:
    """Everything the report shows, from the run folders (sessions, judgments, ratings). No model calls.
    Sessions with simulator faults are marked with why, and left out of the leaderboard unless `include_faults`.
    `details=False` leaves the per-session details out (a served page fetches each one when it is opened); then
    `entries(folder, sid)` may supply each session's entry (a served run's index reuses those of unchanged
    sessions), else each is read. `running`: unfinished sessions of a folder being written now show as running
    (`with_running`); a served run's index is built without, and the server marks them when it serves a page."""
    stores = [read_ratings(d) for d in run_dirs]
    dims: dict[str, DimensionInfo] = {}
    sessions: list[SessionSummary] = []
    details_out: list[SessionDetail] = []
    unreadable: list[str] = []
    facts: list[tuple[str, SessionFacts]] = []
    for run_dir in run_dirs:
        folder = RunFolder(run_dir)
        folder.read_manifest()
        by_session = _ratings_by_session(folder)
        for sid in folder.session_ids():
            if details or entries is None:
                entry, record, judgment = read_entry(folder, sid)
                if details and record is not None:
                    details_out.append(_detail(record, judgment, by_session.get(sid, [])))
            else:
                entry = entries(folder, sid)
            facts.append((str(run_dir), entry.facts))
            if entry.summary is None:
                unreadable.append(str(folder.session_path(sid)))
                continue
            for d in entry.dimensions:
                dims.setdefault(d.id, d)
            sessions.append(
                entry.summary.model_copy(update={"run": str(run_dir), "rated": len(by_session.get(sid, []))})
            )
    board = leaderboard_from_facts(
        run_dirs, facts, ratings=any(rf.ratings or rf.batches for rf in stores), include_faults=include_faults
    )
    data = ReportData(
        runs=[str(d) for d in run_dirs],
        leaderboard=board,
        dimensions=list(dims.values()),
        sessions=sessions,
        details=details_out,
        unreadable=unreadable,
    )
    writing = {str(d) for d in run_dirs if RunFolder(d).being_written()} if running else set()
    return with_running(data, writing)
