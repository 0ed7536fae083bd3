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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from judges.report import record_detail, session_detail
from simulator.cli._render import call_line
from simulator.llm.progress import CallProgress, watching
from simulator.llm.types import ModelClient
from simulator.records import SessionRecord, SessionStatus
from simulator.runfolder import RunFolder, RunFolderError
from simulator.runner.runs import RunConfig, RunEvents, run_sessions
from simulator.runner.session import session_id_for
from simulator.serve._play import MoveRefused, library_case
from simulator.serve._runs import RunsRoot
from simulator.supporters import HUMAN, SupporterSpecError, parse_supporter_spec, supporter_model

TICK_S = 0.5
START_WAIT_S = 10.0  # how long a start waits for the session's first record before answering


class LiveStart(BaseModel):
    """The "start a session" form."""

    model_config = ConfigDict(extra="forbid")

    case: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.-]+$", description="Library case id.")
    supporter: str = Field(min_length=1, max_length=200, description="A model id, a ladder rung or a baseline.")
    turns: int = Field(default=6, ge=1, le=60)
    seed: int = Field(default=0, ge=0, le=1_000_000)


@dataclass
class LiveRun:
    """A session started from the page: the latest record and the model calls in flight."""

    run: str
    session_id: str
    record: SessionRecord | None = None
    calls: dict[int, CallProgress] = field(default_factory=dict)
    version: int = 0
    error: str = ""
    task: asyncio.Task | None = None


def _browser_spec(spec: str) -> str:
    """Supporters a page may start: model ids, ladder rungs and baselines; not code or URLs (those are for the
    command line), nor the human supporter (the play page)."""
    spec = spec.strip()
    if spec == HUMAN or spec.startswith(f"{HUMAN}:"):
        raise MoveRefused("supporter human: play the counsellor on the Play page")
    if spec not in ("silent", "scripted") and supporter_model(spec) is None:
        raise MoveRefused(f"supporter {spec!r}: from the page, give a model id, a ladder rung, silent or scripted")
    return spec


class LiveRuns:
    def __init__(self, runs: RunsRoot, client_factory: Callable[[], ModelClient]):
        self.runs = runs
        self.client_factory = client_factory
        self.started: dict[tuple[str, str], LiveRun] = {}
        self._client: ModelClient | None = None

    async def start(self, form: LiveStart) -> LiveRun:
        case = library_case(form.case)
        spec = _browser_spec(form.supporter)
        if self._client is None:
            self._client = self.client_factory()
        client = self._client
        try:
            supporter = parse_supporter_spec(spec, client, seed=form.seed)
        except SupporterSpecError as err:
            raise MoveRefused(str(err)) from None
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        out = self.runs.root / f"web-{case.id}-{stamp}-{secrets.token_hex(3)}"
        live = LiveRun(run=self.runs.name_of(out), session_id=session_id_for(case, form.seed))
        config = RunConfig(
            cases=[case.id],
            supporter=spec,
            models={r: client.model_for(r) for r in ("member", "tracker")},
            seeds=[form.seed],
            max_turns=form.turns,
            judge=False,
        )

        folder = RunFolder(out)

        def update(record: SessionRecord) -> None:
            if live.record is None:  # the runner's first checkpoint comes seconds later: list the session now
                folder.write_session(record, durable=False)
            live.record = record
            live.version += 1

        def hook(p: CallProgress) -> None:  # may run in a worker thread: only record
            if p.finished:
                live.calls.pop(id(p), None)
            else:
                live.calls[id(p)] = p

        async def drive() -> None:
            try:
                with watching(hook):
                    summary = await run_sessions(
                        config, [case], client, supporter, out, events=RunEvents(session_update=update)
                    )
                if summary.finished:
                    live.record = summary.finished[0]
            except Exception as err:  # noqa: BLE001 - shown to the watcher as one line; the runner saved the record
                live.error = f"{type(err).__name__}: {err}".splitlines()[0]
            finally:
                live.calls.clear()
                live.version += 1

        self.started[(live.run, live.session_id)] = live
        live.task = asyncio.create_task(drive())
        for _ in range(int(START_WAIT_S / 0.02)):  # the run page lists sessions from their files
            if folder.session_path(live.session_id).is_file() or live.task.done():
                break
            await asyncio.sleep(0.02)
        if live.error:
            raise MoveRefused(live.error)
        return live

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
                if record.status != SessionStatus.INCOMPLETE or (live is not None and live.task and live.task.done()):
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
