"""Running sessions into a run folder: many cases, seeds, trials and perturbations, concurrently, kill-safe.

This is the app layer: it wires cases, the model client, the supporter, the engine and (optionally) the
judges together. `run_specs` is the one entry point (the stress runner, `run` and `play` all go through it);
`run_sessions` is the thin form `run` and `play` use.

What a run promises (and the tests check):
- **Bounded concurrency**: at most `concurrency` sessions in flight, on top of the client's own per-provider
  limits (the embedded `local` provider takes at most MAX_BATCH calls at once, which it decodes together).
- **Kill-safety**: every file is written atomically; `results.jsonl` is append-only, one line per finished
  session, and is repaired when a run folder is reopened (a half-written last line is dropped, a session whose
  final record was written but whose line was not gets its line). SIGKILL at any point, then the same command:
  completed sessions are skipped, everything else runs again (the call cache replays the calls that had
  succeeded), and no session is lost or listed twice.
- **Failures**: a session whose model calls failed after their retries is saved as `failed` with its reason,
  listed in the summary, never judged, and run again on the next attempt.
- **Budget caps** (calls, tokens, cost; counted over calls that reached a provider, cache hits are free): when a
  cap is reached no new session starts and the sessions in flight are cancelled; each is saved as `incomplete`
  with end reason `interrupted` (it is not in results.jsonl and is rerun next time). The summary names the cap.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from personas.case import Case
from simulator.engine import HumanInput
from simulator.llm.types import ModelClient, ModelError
from simulator.records import EndReason, SessionRecord, SessionStatus
from simulator.redact import redact
from simulator.runfolder import RunFolder, config_hash
from simulator.runner.ray_cluster import RayOptions, record_node
from simulator.runner.session import (
    Hooks,
    MeteredClient,
    SessionSpec,
    SupporterFactory,
    default_supporter_factory,
    session_id_for,
)
from simulator.session_state import SessionConfig
from simulator.supporters import Supporter
from simulator.view import SupporterKnows

ROLES = ("member", "tracker", "judge")
CHECKPOINT_EVERY_S = 5.0  # unfinished sessions are saved at most this often (and always when they end)


# -- what to run -------------------------------------------------------------------------------------------------


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
    supporter_knows: SupporterKnows = Field(
        default="intake", description="What the supporter is shown: `intake` (default) or `oracle` (ablations)."
    )

    def session_config(self, seed: int) -> SessionConfig:
        return SessionConfig(
            max_turns=self.max_turns,
            seed=seed,
            tracker_every=self.tracker_every,
            window=self.window,
            supporter_knows=self.supporter_knows,
        )


def default_run_dir(config: RunConfig, root: str | Path = "runs") -> Path:
    """`runs/<first case>-<supporter>-<config hash>`: the same command finds the same folder (resume)."""
    slug = re.sub(r"[^a-z0-9]+", "-", f"{config.cases[0]}-{redact(config.supporter)}".lower()).strip("-")[:60]
    return Path(root) / f"{slug}-{config_hash(config.model_dump())[:8]}"


class Budget(BaseModel):
    """Caps over the calls that reached a provider (cache hits are free). None = no cap."""

    model_config = ConfigDict(extra="forbid")

    max_calls: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0, description="Prompt + completion tokens.")
    max_cost_usd: float | None = Field(default=None, ge=0)

    def exceeded(self, calls: int, tokens: int, cost_usd: float) -> str | None:
        """Which cap is reached (`calls`, `tokens` or `cost`), or None."""
        if self.max_calls is not None and calls >= self.max_calls:
            return f"calls ({calls} >= {self.max_calls})"
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return f"tokens ({tokens} >= {self.max_tokens})"
        if self.max_cost_usd is not None and cost_usd >= self.max_cost_usd:
            return f"cost (${cost_usd:.4f} >= ${self.max_cost_usd:.4f})"
        return None


# -- what a run reports ------------------------------------------------------------------------------------------


@dataclass
class Progress:
    """Live totals of a run, handed to `RunEvents.progress` whenever they change."""

    total: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0
    interrupted: int = 0
    calls: int = 0
    cache_hits: int = 0
    failed_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    stopped_by: str | None = None

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.skipped - self.done - self.failed - self.interrupted)

    @property
    def eta_s(self) -> float | None:
        """Remaining sessions at this run's finishing rate so far; None before the first one finishes."""
        finished = self.done + self.failed
        if not finished:
            return None
        return self.remaining * self.elapsed_s / finished


@dataclass
class RunEvents:
    """Callbacks for a live view; every one is optional. They run in the event loop: keep them cheap."""

    session_started: Callable[[str, Case, bool], None] | None = None  # (session id, case, resumed)
    session_skipped: Callable[[str], None] | None = None
    session_update: Callable[[SessionRecord], None] | None = None
    session_finished: Callable[[SessionRecord, Path], None] | None = None
    progress: Callable[[Progress], None] | None = None
    note: Callable[[str], None] | None = None  # a line about the run itself (what the Ray preflight found)


@dataclass
class RunSummary:
    folder: RunFolder
    finished: list[SessionRecord] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    interrupted: SessionRecord | None = None  # the last session saved as incomplete (Ctrl-C, budget stop)
    incomplete: list[str] = field(default_factory=list)  # sessions cancelled by a budget stop
    not_started: list[str] = field(default_factory=list)
    judge_errors: dict[str, str] = field(default_factory=dict)
    stopped_by: str | None = None  # the budget cap that stopped the run, if one did
    progress: Progress | None = None

    @property
    def failed(self) -> list[SessionRecord]:
        return [r for r in self.finished if r.status == SessionStatus.FAILED]

    @property
    def completed(self) -> list[SessionRecord]:
        return [r for r in self.finished if r.status == SessionStatus.COMPLETED]


JudgeHook = Callable[[SessionRecord, RunFolder], Awaitable[Any]]


# -- metering --------------------------------------------------------------------------------------------------


# -- running ---------------------------------------------------------------------------------------------------


def specs_manifest(specs: list[SessionSpec]) -> dict[str, Any]:
    """The manifest config of a bare list of specs: their ids and a hash of everything in them."""
    digest = hashlib.sha256()
    for s in specs:
        digest.update(s.model_dump_json().encode())
    return {"kind": "specs", "sessions": len(specs), "specs_hash": digest.hexdigest()[:16]}


def _check_specs(specs: list[SessionSpec], concurrency: int, human_input: HumanInput | None) -> None:
    """Refuse what cannot run before a folder is touched: no concurrency, two specs with one id, a human in parallel."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    ids = [s.session_id for s in specs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"two specs share the session id {dup!r}")
    if human_input is not None and concurrency != 1:
        raise ValueError("a human supporter runs one session at a time (concurrency 1)")


@dataclass
class _RunLedger:
    """One run's moving parts, kept while it runs: the folder, the metered client, the live totals, the summary and
    the stop signal. Its methods are the hooks the executors call back (`hooks()`); each keeps these in step."""

    folder: RunFolder
    metered: MeteredClient
    events: RunEvents
    budget: Budget | None
    judge_hook: JudgeHook | None
    statuses: dict[str, SessionStatus]  # each saved session's status when the run began
    summary: RunSummary
    progress: Progress
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    baseline: tuple[int, int, float, int, int] = (0, 0, 0.0, 0, 0)  # the client's totals before this run

    @classmethod
    def begin(cls, folder: RunFolder, metered: MeteredClient, events: RunEvents, budget, judge_hook, total: int):
        """Reconcile the opened folder and start counting from the client's totals now."""
        statuses = folder.reconcile()
        summary = RunSummary(folder=folder)
        summary.progress = Progress(total=total)
        baseline = (metered.calls, metered.tokens, metered.cost_usd, metered.cache_hits, metered.failed_calls)
        return cls(folder, metered, events, budget, judge_hook, statuses, summary, summary.progress, baseline=baseline)

    def changed(self) -> None:
        """The client's totals moved: update the progress, stop at a budget cap, tell the live view."""
        progress, metered, baseline = self.progress, self.metered, self.baseline
        progress.calls = metered.calls - baseline[0]
        progress.tokens = metered.tokens - baseline[1]
        progress.cost_usd = metered.cost_usd - baseline[2]
        progress.cache_hits = metered.cache_hits - baseline[3]
        progress.failed_calls = metered.failed_calls - baseline[4]
        if self.budget is not None and not self.stop.is_set():
            cap = self.budget.exceeded(progress.calls, progress.tokens, progress.cost_usd)
            if cap is not None:
                self.summary.stopped_by = progress.stopped_by = cap
                self.stop.set()
        if self.events.progress:
            self.events.progress(progress)

    def sort(self, specs: list[SessionSpec]) -> tuple[list[SessionSpec], list[SessionSpec]]:
        """(to run, completed earlier but not judged yet); completed sessions are skipped."""
        pending: list[SessionSpec] = []
        to_judge: list[SessionSpec] = []
        for spec in specs:
            if self.statuses.get(spec.session_id) == SessionStatus.COMPLETED:
                self.summary.skipped.append(spec.session_id)
                self.progress.skipped += 1
                if self.events.session_skipped:
                    self.events.session_skipped(spec.session_id)
                if self.judge_hook is not None and not self.folder.has_judgment(spec.session_id):
                    to_judge.append(spec)
            else:
                pending.append(spec)
        return pending, to_judge

    def stop_if_no_budget(self) -> None:
        """A cap of zero stops the run before anything starts."""
        if self.budget is not None and self.budget.exceeded(0, 0, 0.0):
            self.summary.stopped_by = self.progress.stopped_by = self.budget.exceeded(0, 0, 0.0)
            self.stop.set()

    async def judge(self, record: SessionRecord) -> None:
        try:
            await self.judge_hook(record, self.folder)  # type: ignore[misc]
        except ModelError as err:
            self.summary.judge_errors[record.session_id] = err.reason
        except Exception as err:  # noqa: BLE001 - a judge crash must not lose the other sessions
            self.summary.judge_errors[record.session_id] = redact(f"{type(err).__name__}: {err}")

    async def judge_earlier(self, to_judge: list[SessionSpec]) -> None:
        """Judge the sessions an earlier attempt completed but did not judge (until a budget stop)."""
        for spec in to_judge:
            if self.stop.is_set():
                break
            await self.judge(self.folder.load_session(spec.session_id))

    def started(self, spec: SessionSpec) -> None:
        self.progress.running += 1
        if self.events.session_started:
            self.events.session_started(spec.session_id, spec.case, self.statuses.get(spec.session_id) is not None)
        if self.events.progress:
            self.events.progress(self.progress)

    def checkpoint(self, record: SessionRecord, state: dict[str, Any]) -> None:
        """Save an unfinished session now and then (always when it ends or is interrupted)."""
        now = time.perf_counter()
        key = (len(record.turns), record.finished_at is not None)
        due = key != state.get("key") and now - state.setdefault("at", now) >= CHECKPOINT_EVERY_S
        if record.end_reason == EndReason.INTERRUPTED or due:  # a finished record is written by `finished`
            self.folder.write_session(record, durable=False)
            state["key"], state["at"] = key, now
        if self.events.session_update:
            self.events.session_update(record)

    async def finished(self, spec: SessionSpec, record: SessionRecord) -> None:
        progress, summary, events = self.progress, self.summary, self.events
        progress.running -= 1
        if record.status == SessionStatus.INCOMPLETE:  # cancelled by a budget stop or Ctrl-C
            self.folder.write_session(record, durable=False)
            progress.interrupted += 1
            summary.incomplete.append(record.session_id)
            summary.interrupted = record
            if events.progress:
                events.progress(progress)
            return
        path = self.folder.write_session(record, durable=True)
        self.folder.append_result(record)
        summary.finished.append(record)
        if record.status == SessionStatus.FAILED:
            progress.failed += 1
        else:
            progress.done += 1
        if events.session_finished:
            events.session_finished(record, path)
        if events.progress:
            events.progress(progress)
        if self.judge_hook is not None and record.status == SessionStatus.COMPLETED and not self.stop.is_set():
            await self.judge(record)

    def abandoned(self, spec: SessionSpec) -> None:
        """Cancelled by a budget stop before anything was recorded: it simply runs next time."""
        self.progress.running -= 1
        self.progress.interrupted += 1
        self.summary.incomplete.append(spec.session_id)

    def placed(self, spec: SessionSpec, node: str | None) -> None:
        if node:
            record_node(self.folder.path, spec.session_id, node)

    def hooks(self) -> Hooks:
        # a live view of each session wants every step; otherwise a record per checkpoint is all that is needed
        every = 0.0 if self.events.session_update else CHECKPOINT_EVERY_S
        return Hooks(
            started=self.started,
            checkpoint=self.checkpoint,
            finished=self.finished,
            abandoned=self.abandoned,
            stop=self.stop,
            update_every_s=every,
            placed=self.placed,
            note=self.events.note or (lambda text: None),
        )


async def _execute(
    executor: Literal["local", "ray"],
    pending: list[SessionSpec],
    metered: MeteredClient,
    factory: SupporterFactory,
    models: dict[str, str],
    hooks: Hooks,
    *,
    concurrency: int,
    human_input: HumanInput | None,
    ray_options: RayOptions | None,
    ray_address: str | None,
) -> list[str]:
    """Hand the pending sessions to the chosen executor; the ids it never started."""
    from simulator.runner.executors import execute_local, execute_ray

    if executor == "local":
        return await execute_local(
            pending, metered, factory, models, hooks, concurrency=concurrency, human_input=human_input
        )
    if executor == "ray":
        if human_input is not None:
            raise ValueError("a human supporter cannot run on Ray")
        options = ray_options or RayOptions(address=ray_address)
        return await execute_ray(pending, metered, factory, models, hooks, concurrency=concurrency, options=options)
    raise ValueError(f"unknown executor {executor!r}; use local or ray")


async def run_specs(
    specs: list[SessionSpec],
    client: ModelClient,
    out_dir: str | Path,
    *,
    concurrency: int = 1,
    executor: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    ray_options: RayOptions | None = None,
    budget: Budget | None = None,
    manifest: dict | None = None,
    events: RunEvents | None = None,
    judge_hook: JudgeHook | None = None,
    supporter_factory: SupporterFactory | None = None,
    models: dict[str, str] | None = None,
    human_input: HumanInput | None = None,
    page_index: bool = True,
) -> RunSummary:
    """Run every spec into `out_dir` with at most `concurrency` sessions in flight; resume what is there.

    `manifest` is the config recorded in manifest.json (a different one in an existing folder is refused);
    default: a hash of the specs. `models` (role -> model id, recorded on each session) defaults to the
    client's. `ray_options` (forwarded variables, shipped code, the address) are used with `executor="ray"`;
    `ray_address` alone is the short form. `supporter_factory(spec, client)` builds each session's supporter (default: from `spec.supporter`).
    `judge_hook(record, folder)` runs after each completed session, and for completed sessions of an earlier
    attempt that have no judgment yet. See the module docstring for what happens on kill, failure and budget.
    With `page_index` the run's served page data is written when it ends (`simulator.runner.pageindex`, best-effort); a
    caller that writes more into the folder afterwards (`run_stress`) passes False and refreshes it itself.
    """
    _check_specs(specs, concurrency, human_input)
    events = events or RunEvents()
    metered = client if isinstance(client, MeteredClient) else MeteredClient(client)
    models = models or {r: metered.model_for(r) for r in ROLES}  # type: ignore[arg-type]
    factory = supporter_factory or default_supporter_factory
    folder = RunFolder(out_dir)
    lock = folder.lock()
    try:
        folder.open(json.loads(redact(json.dumps(manifest or specs_manifest(specs), default=str))))
        ledger = _RunLedger.begin(folder, metered, events, budget, judge_hook, total=len(specs))
        metered.on_change = ledger.changed
        pending, to_judge = ledger.sort(specs)
        ledger.changed()
        ledger.stop_if_no_budget()
        await ledger.judge_earlier(to_judge)
        ledger.summary.not_started = await _execute(
            executor,
            pending,
            metered,
            factory,
            models,
            ledger.hooks(),
            concurrency=concurrency,
            human_input=human_input,
            ray_options=ray_options,
            ray_address=ray_address,
        )
        folder.reconcile()  # a retried session's earlier line goes: one line per session in the file itself
        if page_index:
            from simulator.runner.pageindex import refresh_index

            refresh_index(folder.path)
        if events.progress:
            events.progress(ledger.progress)
        return ledger.summary
    finally:
        metered.on_change = None
        lock.release()


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
    concurrency: int = 1,
    budget: Budget | None = None,
) -> RunSummary:
    """Run every (case, seed) session of a `RunConfig` into `out_dir` with one supporter (`run`, `play`).

    Completed sessions are skipped; failed and incomplete ones run again (the call cache replays what already
    succeeded). On Ctrl-C the sessions in flight are saved as incomplete before the interrupt propagates.
    """
    metered = client if isinstance(client, MeteredClient) else MeteredClient(client)
    if dataclasses.is_dataclass(supporter) and isinstance(getattr(supporter, "client", None), ModelClient):
        supporter = dataclasses.replace(supporter, client=metered)  # its calls count in progress and budgets too
    specs = [
        SessionSpec(
            session_id=session_id_for(case, seed),
            case=case,
            supporter=config.supporter,
            seed=seed,
            config=config.session_config(seed),
        )
        for case in cases
        for seed in config.seeds
    ]
    return await run_specs(
        specs,
        metered,
        out_dir,
        concurrency=concurrency,
        budget=budget,
        manifest=config.model_dump(),
        events=events,
        judge_hook=judge_hook,
        supporter_factory=lambda spec, c: supporter,
        models=config.models,
        human_input=human_input,
    )
