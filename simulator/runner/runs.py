"""Running sessions into a run folder: many cases and seeds, resumable, saved after every step.

This is the app layer: it wires cases, the model client, the supporter, the engine and (optionally) the
judges together. The CLI's `run` and `play` are thin over `run_sessions`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from personas.case import Case
from simulator.engine import HumanInput, SessionConfig, run_session
from simulator.llm.types import ModelClient
from simulator.records import SessionRecord, SessionStatus
from simulator.redact import redact
from simulator.runfolder import RunFolder, config_hash
from simulator.supporters import Supporter

ROLES = ("member", "tracker", "judge")


class RunConfig(BaseModel):
    """Everything that changes a run's sessions; its hash names the default run folder and guards resumes."""

    model_config = ConfigDict(extra="forbid")

    cases: list[str] = Field(description="Case ids (or card paths) in run order.")
    supporter: str
    models: dict[str, str] = Field(description="Role -> model id (member, tracker, judge).")
    seeds: list[int] = Field(default_factory=lambda: [0])
    max_turns: int = 6
    tracker_every: int = 3
    window: int = 16
    judge: bool = True
    judges: list[str] = Field(default_factory=list, description="Judge panel; empty = the judge role's model.")

    def session_config(self, seed: int) -> SessionConfig:
        return SessionConfig(max_turns=self.max_turns, seed=seed, tracker_every=self.tracker_every, window=self.window)


def session_id_for(case: Case, seed: int) -> str:
    return f"{case.id}__s{seed}"


def default_run_dir(config: RunConfig, root: str | Path = "runs") -> Path:
    """`runs/<first case>-<supporter>-<config hash>`: the same command finds the same folder (resume)."""
    slug = re.sub(r"[^a-z0-9]+", "-", f"{config.cases[0]}-{redact(config.supporter)}".lower()).strip("-")[:60]
    return Path(root) / f"{slug}-{config_hash(config.model_dump())[:8]}"


@dataclass
class RunEvents:
    """Callbacks for a live view; every one is optional."""

    session_started: Callable[[str, Case, bool], None] | None = None  # (session id, case, resumed)
    session_skipped: Callable[[str], None] | None = None
    session_update: Callable[[SessionRecord], None] | None = None
    session_finished: Callable[[SessionRecord, Path], None] | None = None


@dataclass
class RunSummary:
    folder: RunFolder
    finished: list[SessionRecord] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    interrupted: SessionRecord | None = None

    @property
    def failed(self) -> list[SessionRecord]:
        return [r for r in self.finished if r.status == SessionStatus.FAILED]


JudgeHook = Callable[[SessionRecord, RunFolder], Awaitable[Any]]


async def run_sessions(
    config: RunConfig,
    cases: list[Case],
    client: ModelClient,
    supporter: Supporter,
    out_dir: str | Path,
    *,
    events: RunEvents | None = None,
    human_input: HumanInput | None = None,
    judge_hook: JudgeHook | None = None,
) -> RunSummary:
    """Run every (case, seed) session into `out_dir`, skipping completed ones; save after every step.

    Failed and incomplete sessions from an earlier attempt are run again (the call cache replays what
    already succeeded). On Ctrl-C the current session is saved as incomplete before the interrupt propagates.
    """
    events = events or RunEvents()
    folder = RunFolder(out_dir)
    folder.open(json.loads(redact(config.model_dump_json())))
    summary = RunSummary(folder=folder)
    for case in cases:
        for seed in config.seeds:
            sid = session_id_for(case, seed)
            previous = folder.status(sid)
            if previous == SessionStatus.COMPLETED:
                summary.skipped.append(sid)
                if events.session_skipped:
                    events.session_skipped(sid)
                continue
            if events.session_started:
                events.session_started(sid, case, previous is not None)
            last_saved = -1

            def save(record: SessionRecord) -> None:
                nonlocal last_saved
                key = len(record.turns) * 10 + (1 if record.finished_at else 0)
                if key != last_saved or record.end_reason:
                    folder.write_session(record)
                    last_saved = key
                if events.session_update:
                    events.session_update(record)

            try:
                record = await run_session(
                    case,
                    supporter,
                    client,
                    config.session_config(seed),
                    session_id=sid,
                    models=config.models,
                    on_update=save,
                    human_input=human_input,
                )
            except BaseException:
                if folder.status(sid) is not None:
                    summary.interrupted = folder.load_session(sid)
                    folder.append_result(summary.interrupted)
                raise
            path = folder.write_session(record)
            folder.append_result(record)
            summary.finished.append(record)
            if events.session_finished:
                events.session_finished(record, path)
            if judge_hook is not None and record.status == SessionStatus.COMPLETED:
                await judge_hook(record, folder)
    return summary
