"""Watching sessions as they happen: sessions started from the page (run in the server's event loop, through the
same runner as `rescue-sim run`) and sessions another process is writing (their file is tailed).

A watcher gets server-sent events: `session` (the report's SessionDetail of the record so far, the same data the
report page draws, plus its status) whenever the record grows, and `calls` (one line per model call in flight, the
lines the terminal shows) for sessions started here. A session from another process is seen at its checkpoints
(the runner writes one at most every few seconds, and always at the end).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from judges.report import record_detail, session_detail
from judges.scoring import judge_hook
from personas.case import Case
from simulator.llm.preflight import check_models
from simulator.llm.progress import CallProgress, call_line, watching
from simulator.llm.roles import RoleBoundClient
from simulator.llm.types import ModelClient
from simulator.perturbations import Perturbation, applies_to, builtin_perturbations, resolve_perturbation
from simulator.records import SessionRecord, SessionStatus
from simulator.redact import redact
from simulator.runfolder import RunFolder, RunFolderError
from simulator.runner.runs import RunConfig, RunEvents, run_sessions
from simulator.runner.session import session_id_for
from simulator.runner.stress import run_stress
from simulator.runner.stress_config import BASELINE, StressConfig, StressConfigError, build_matrix
from simulator.serve._play import MoveRefused, library_case
from simulator.serve._runs import RunsRoot
from simulator.supporters import HUMAN, Supporter, SupporterSpecError, parse_supporter_spec, supporter_model

MODEL_ROLES = ("member", "tracker", "judge")
TICK_S = 0.5
START_WAIT_S = 10.0  # how long a start waits for the session's first record before answering


class LiveStart(BaseModel):
    """The "start a session" form."""

    model_config = ConfigDict(extra="forbid")

    case: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.-]+$", description="Library case id.")
    supporter: str = Field(min_length=1, max_length=200, description="A model id, a ladder rung or a baseline.")
    turns: int = Field(default=6, ge=1, le=60)
    seed: int = Field(default=0, ge=0, le=1_000_000)
    stressor: str = Field(
        default="", max_length=60, description="A built-in perturbation's name (as `stress` takes); empty or none."
    )
    member_model: str = Field(default="", max_length=200, description="Empty: the server's model (--model).")
    tracker_model: str = Field(default="", max_length=200, description="Empty: the server's model (--model).")
    judge_model: str = Field(default="", max_length=200, description="Empty: the server's model (--model).")
    judge: bool = Field(default=False, description="Judge the session when it ends (with the judge model).")
    judge_mode: Literal["checklist", "verdict"] = Field(
        default="checklist", description="How the judge scores, as `run --judge-mode`: checklist items or verdicts."
    )


@dataclass
class LiveRun:
    """A session started from the page: the latest record and the model calls in flight."""

    run: str
    session_id: str
    record: SessionRecord | None = None
    calls: dict[int, CallProgress] = field(default_factory=dict)
    version: int = 0
    error: str = ""
    saved: bool = False  # the runner wrote the final record (completed or failed)
    task: asyncio.Task | None = None


def _browser_model(field: str, value: str) -> str:
    """A role's model from the page: empty (the server's model) or a plain model id; endpoint URLs and code, which
    may carry keys or run anything, are for the command line (`run --member-model`)."""
    value = value.strip()
    if value and supporter_model(value) != value:
        raise MoveRefused(
            f"{field} {redact(value)!r}: give a model id such as provider/model, or leave it empty for the server's"
        )
    return value


async def _check_models(client: ModelClient, roles: dict[str, str]) -> None:
    """The chosen models through the preflight `run` uses (provider known, key present, weights there), in a
    thread: the embedded model's first check probes its build in a child process."""
    uses = [(r, client.model_for(r)) for r in MODEL_ROLES]
    problems = await asyncio.to_thread(asyncio.run, check_models(client, uses))
    for problem in problems:
        role = next((r for r in problem.roles if roles.get(r)), problem.roles[0])
        reason = problem.reason.removeprefix(f"model {problem.model!r}: ")
        reason = reason.replace(f"unknown model {problem.model!r}", "unknown model")
        fix = "choose another model" if roles.get(role) else "set it, or restart the server with another --model"
        raise MoveRefused(f"{role}_model {redact(problem.model)!r}: {reason}; {fix}")


def _browser_stressor(name: str, case: Case) -> Perturbation | None:
    """A built-in stressor by name (a page cannot name a YAML file on the server), resolved as `stress` resolves
    one; None for no stressor."""
    name = name.strip()
    if not name or name == BASELINE:
        return None
    known = builtin_perturbations()
    if name not in known:
        raise MoveRefused(f"stressor {name!r}: not a built-in stressor; choose one of {', '.join(known)} or none")
    stressor = resolve_perturbation(name)
    if not applies_to(stressor, case):
        raise MoveRefused(
            f"stressor {name}: for {' and '.join(stressor.groups)} cases only, and {case.id} is a {case.group} case; "
            "choose another stressor or case"
        )
    return stressor


def _browser_spec(spec: str) -> str:
    """Supporters a page may start: model ids, ladder rungs and baselines; not code or URLs (those are for the
    command line), nor the human supporter (the play page)."""
    spec = spec.strip()
    if spec == HUMAN or spec.startswith(f"{HUMAN}:"):
        raise MoveRefused("supporter human: play the counsellor on the Play page")
    if spec not in ("silent", "scripted") and supporter_model(spec) is None:
        raise MoveRefused(f"supporter {spec!r}: from the page, give a model id, a ladder rung, silent or scripted")
    return spec


@dataclass
class _Plan:
    """A start form checked and resolved: what the session runs with and the folder it runs into."""

    form: LiveStart
    case: Case
    spec: str
    client: ModelClient
    supporter: Supporter
    out: Path

    @property
    def models(self) -> dict[str, str]:
        return {r: self.client.model_for(r) for r in MODEL_ROLES}


def _live_events(live: LiveRun, folder: RunFolder) -> RunEvents:
    """The runner's events kept on `live`: every record as it grows, and the final one once it is saved."""

    def update(record: SessionRecord) -> None:
        if live.record is None:  # the runner's first checkpoint comes seconds later: list the session now
            folder.write_session(record, durable=False)
        live.record = record
        live.version += 1

    def saved(record: SessionRecord, path) -> None:  # the runner has written the final record
        live.record, live.saved = record, True
        live.version += 1

    return RunEvents(session_update=update, session_finished=saved)


async def _drive(live: LiveRun, run: Callable[[RunEvents], Awaitable[list[SessionRecord]]], events: RunEvents) -> None:
    """Run the session with its model calls in flight kept on `live`; an error becomes one line for the watcher."""

    def hook(p: CallProgress) -> None:  # may run in a worker thread: only record
        if p.finished:
            live.calls.pop(id(p), None)
        else:
            live.calls[id(p)] = p

    try:
        with watching(hook):
            finished = await run(events)
        if finished:
            live.record = finished[0]
    except Exception as err:  # noqa: BLE001 - shown to the watcher as one line; the runner saved the record
        live.error = redact(f"{type(err).__name__}: {err}".splitlines()[0])
    finally:
        live.calls.clear()
        live.version += 1


class LiveRuns:
    def __init__(self, runs: RunsRoot, client_factory: Callable[[], ModelClient]):
        self.runs = runs
        self.client_factory = client_factory
        self.started: dict[tuple[str, str], LiveRun] = {}
        self._client: ModelClient | None = None

    def client(self) -> ModelClient:
        """The server's one client (made on first use): every session shares its cache and provider limits."""
        if self._client is None:
            self._client = self.client_factory()
        return self._client

    def options(self) -> dict:
        """What the start form offers: the built-in stressors and the models each role takes by default."""
        client = self.client()
        return {
            "stressors": [
                {"name": p.name, "title": p.title, "groups": list(p.groups)} for p in builtin_perturbations().values()
            ],
            "models": {r: redact(client.model_for(r)) for r in MODEL_ROLES},
        }

    async def start(self, form: LiveStart) -> LiveRun:
        case = library_case(form.case)
        spec = _browser_spec(form.supporter)
        roles = {r: _browser_model(f"{r}_model", getattr(form, f"{r}_model")) for r in MODEL_ROLES}
        client = RoleBoundClient(self.client(), {r: m for r, m in roles.items() if m})
        await _check_models(client, roles)
        stressor = _browser_stressor(form.stressor, case)
        try:
            supporter = parse_supporter_spec(spec, client, seed=form.seed)
        except SupporterSpecError as err:
            raise MoveRefused(str(err)) from None
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        slug = f"{case.id}-{stressor.name}" if stressor is not None else case.id
        out = self.runs.root / f"web-{slug}-{stamp}-{secrets.token_hex(3)}"
        plan = _Plan(form, case, spec, client, supporter, out)
        live, run = self._one_session(plan) if stressor is None else self._one_stress_cell(plan, stressor)
        folder = RunFolder(out)
        self.started[(live.run, live.session_id)] = live
        live.task = asyncio.create_task(_drive(live, run, _live_events(live, folder)))
        for _ in range(int(START_WAIT_S / 0.02)):  # the run page lists sessions from their files
            if folder.session_path(live.session_id).is_file() or live.task.done():
                break
            await asyncio.sleep(0.02)
        if live.error and live.record is None:
            raise MoveRefused(live.error)
        return live

    def _one_session(self, plan: _Plan) -> tuple[LiveRun, Callable[[RunEvents], Awaitable[list[SessionRecord]]]]:
        """A plain session, run as `rescue-sim run` runs one (judged with the page's judge model when asked)."""
        form, models = plan.form, plan.models
        live = LiveRun(run=self.runs.name_of(plan.out), session_id=session_id_for(plan.case, form.seed))
        config = RunConfig(
            cases=[plan.case.id],
            supporter=plan.spec,
            models=models,
            seeds=[form.seed],
            max_turns=form.turns,
            judge=form.judge,
            judges=[models["judge"]],
        )
        judging = judge_hook(plan.client, [models["judge"]], form.judge_mode) if form.judge else None

        async def run(events: RunEvents) -> list[SessionRecord]:
            summary = await run_sessions(
                config, [plan.case], plan.client, plan.supporter, plan.out, events=events, judge_hook=judging
            )
            if summary.judge_errors:
                live.error = "judging failed: " + next(iter(summary.judge_errors.values()))
            return summary.finished

        return live, run

    def _one_stress_cell(
        self, plan: _Plan, stressor: Perturbation
    ) -> tuple[LiveRun, Callable[[RunEvents], Awaitable[list[SessionRecord]]]]:
        """A one-cell stress run: the matrix, the perturbed card, the check after the session, all as `stress`."""
        form, case = plan.form, plan.case
        stress = StressConfig(
            name=f"web-{case.id}",
            supporters=[plan.spec],
            cases=[case.id],
            seeds=[form.seed],
            perturbations=[stressor.name],
            models=plan.models,
            judge=form.judge,
            judge_mode=form.judge_mode,
            turns=form.turns,
        )
        try:
            matrix = build_matrix(stress, self.runs.root, source="stressor")
        except StressConfigError as err:
            raise MoveRefused(str(err).replace("stressor: perturbations[0]: ", "stressor: ", 1)) from None
        live = LiveRun(run=self.runs.name_of(plan.out), session_id=matrix.specs[0].session_id)

        async def run(events: RunEvents) -> list[SessionRecord]:
            summary = await run_stress(
                stress,
                matrix,
                plan.client,
                plan.out,
                base=self.runs.root,
                events=events,
                supporter_factory=lambda spec, c: plan.supporter,
            )
            if summary.errors:
                live.error = "judging or the stressor's check failed: " + next(iter(summary.errors.values()))
            return summary.run.finished

        return live, run

    async def close(self) -> None:
        for live in self.started.values():
            if live.task is not None and not live.task.done():
                live.task.cancel()
        await asyncio.gather(*(lv.task for lv in self.started.values() if lv.task), return_exceptions=True)

    async def events(
        self, name: str, session_id: str, disconnected: Callable, stopping: Callable[[], bool] = lambda: False
    ) -> AsyncIterator[str]:
        """Server-sent events for one session until it ends (or the watcher leaves, or the server stops)."""
        run = self.runs.resolve(name)  # PathRefused before anything streams
        folder = RunFolder(run)
        path = folder.session_path(session_id)
        live = self.started.get((self.runs.name_of(run), session_id))
        seen: object = None
        calls_seen: list[str] | None = None
        while not stopping() and not await disconnected():
            if live is not None:
                key: object = live.version
                record = live.record if key != seen else None
                # read with the record, before the yield below: the runner may save the final record while the
                # event is being sent, and an end sent then would carry the stale checkpoint's status
                ended = live.saved or bool(live.task and live.task.done())
            else:
                try:
                    key = path.stat().st_mtime_ns
                except FileNotFoundError:
                    key = None
                record = None
                if key is not None and key != seen:
                    try:
                        record = folder.load_session(session_id)
                    except RunFolderError:
                        record = None  # mid-rename on some filesystems: try again next tick
                        key = seen
            if record is not None:
                seen = key
                yield _event("session", _payload(folder, record, live.error if live else ""))
                if live is None:  # a live session ends once the runner saved it (read above)
                    ended = record.status != SessionStatus.INCOMPLETE
                if ended:
                    yield _event("end", {"status": record.status.value})
                    return
            elif live is not None and live.task is not None and live.task.done() and live.record is None:
                yield _event("end", {"status": "failed", "error": live.error})
                return
            if live is not None:
                lines = [call_line(p) for p in list(live.calls.values())]
                if lines != calls_seen:
                    calls_seen = lines
                    yield _event("calls", {"lines": lines})
            await asyncio.sleep(TICK_S)


def _payload(folder: RunFolder, record: SessionRecord, error: str) -> dict:
    judged = record.status == SessionStatus.COMPLETED and folder.has_judgment(record.session_id)
    detail = session_detail(folder.path, record.session_id) if judged else record_detail(record)
    return {
        "status": record.status.value,
        "end": record.end_reason.value if record.end_reason is not None else None,
        "turns": len(record.turns),
        "error": error,
        "detail": detail.model_dump(mode="json"),
    }


def _event(kind: str, data: dict) -> str:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
