"""Running a model on benchmark instances: batching, bounded concurrency, judging, incremental results.

A request holds one instance, or up to `batch_size` instances of the same task and sample (one schema and one
label list per request). A request that fails after the client's retries (`ModelError`) fails every instance in
it: they are recorded as failed, excluded from metrics and counted, never filled with a guess. In a batch, an
id answered zero or several times fails that instance only. ER and VP answers then go to the judge model, one
call per instance; a failed judge call fails the instance (stage `judge`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judges.bench.instance_format import INSTANCE_VERSION, Instance, SubgroupMode, Task, ViewpointTriple
from judges.bench.instance_rules import DEFAULT_CONTEXT_SIZE, DEFAULT_SEED, label_kind
from judges.bench.metrics import intensity_match, rank_of
from judges.bench.render import build_prompt, er_judge_prompt, prompt_chars, prompts_version, vp_judge_prompt
from judges.bench.schemas import (
    LIST_FIELD,
    ErJudgement,
    VpJudgement,
    answer_schema,
    batch_schema,
    clean_ranking,
    label_key,
    target_key,
)
from judges.bench.store import CallUsage, InstanceResult, ResultStore
from simulator.llm.types import Completion, ModelClient, ModelError, Prompt
from simulator.runfolder import config_hash as _hash

BENCH_VERSION = 1
MAX_BATCH = 26
MAX_TOKENS: dict[Task, int] = {Task.ITP: 48, Task.RPP: 72, Task.STP: 64, Task.SSP: 72, Task.ER: 72, Task.VP: 256}
JUDGE_MAX_TOKENS = 128
# Dry-run estimates of completion tokens per answer (typical JSON replies; an estimate, not a measurement).
EST_COMPLETION: dict[str, int] = {"itp": 14, "rpp": 28, "stp": 22, "ssp": 28, "er": 26, "vp": 70, "judge": 50}
CHARS_PER_TOKEN = 4
JUDGED_TASKS = frozenset({Task.ER, Task.VP})


class BenchSettings(BaseModel):
    """What changes the answers (hashed into the config) plus how to run (not hashed)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Model under test.")
    judge_model: str = Field(description="Judge for ER and VP (the paper used GPT-5.4).")
    context_size: int = Field(default=DEFAULT_CONTEXT_SIZE, ge=0, description="Rows shown; 0 = every earlier row.")
    subgroups: SubgroupMode = "keep"
    batch_size: int = Field(default=1, ge=1, le=MAX_BATCH)
    seed: int = DEFAULT_SEED
    temperature: float = 0.0
    concurrency: int = Field(default=4, ge=1, description="Requests in flight at once (not hashed).")

    def config(self, *, origin: str, sources: Sequence[str]) -> dict[str, Any]:
        """The hashed config: everything that changes an answer, nothing that only changes what is run."""
        return {
            "bench_version": BENCH_VERSION,
            "instance_version": INSTANCE_VERSION,
            "prompts": prompts_version(),
            "origin": origin,
            "sources": list(sources),
            "model": self.model,
            "judge_model": self.judge_model,
            "context_size": self.context_size,
            "subgroups": self.subgroups,
            "batch_size": self.batch_size,
            "seed": self.seed,
            "temperature": self.temperature,
        }


def config_hash(config: dict[str, Any]) -> str:
    return _hash(config)


@dataclass(frozen=True)
class Request:
    """Instances answered by one model call."""

    instances: tuple[Instance, ...]

    @property
    def task(self) -> Task:
        return self.instances[0].task

    def schema(self, ids: Sequence[str]) -> type[BaseModel]:
        first = self.instances[0]
        labels = tuple(first.candidates) if first.task in LIST_FIELD else ()
        names = (first.speaker,) if first.task is Task.VP else ()
        targets = tuple(first.candidates) if first.task is Task.VP else ()
        if ids:
            return batch_schema(first.task, tuple(ids), labels, names, targets)
        return answer_schema(first.task, labels, names, targets)

    def max_tokens(self) -> int:
        per = MAX_TOKENS[self.task]
        return per if len(self.instances) == 1 else per * len(self.instances) + 16


def make_requests(instances: Sequence[Instance], batch_size: int) -> list[Request]:
    """Chunks of at most `batch_size` instances sharing task, sample, label list and (VP) speaker.

    Groups keep the order in which they first appear, and instances keep their order within a group. A VP
    request shares one speaker because its schema fixes the source to the speaker.
    """
    groups: dict[tuple, list[Instance]] = {}
    for inst in instances:
        key = (inst.task, inst.sample_id, tuple(inst.candidates), inst.speaker if inst.task is Task.VP else "")
        groups.setdefault(key, []).append(inst)
    return [
        Request(tuple(items[k : k + batch_size])) for items in groups.values() for k in range(0, len(items), batch_size)
    ]


# ---- reading answers -------------------------------------------------------------------------------------------


def _usage(completion: Completion, request_id: str) -> CallUsage:
    c = completion.call
    return CallUsage(
        request_id=request_id,
        model=c.model,
        prompt_tokens=c.usage.prompt_tokens,
        completion_tokens=c.usage.completion_tokens,
        cost_usd=c.cost_usd,
        latency_s=c.latency_s,
        attempts=c.attempts,
        cache_hit=c.cache_hit,
    )


def read_answer(inst: Instance, answer: Any) -> dict[str, Any]:
    """A validated answer -> result fields: status, prediction, cleaning counts, task scores (judges aside)."""
    off = list(getattr(answer, "off_taxonomy", []) or [])
    fields: dict[str, Any] = {"off_taxonomy": off}
    if inst.task is Task.ITP:
        if answer.intervene is None:
            return {**fields, "status": "missing", "scores": {"correct": 0.0}}
        correct = float(answer.intervene == inst.gold_label)
        pred = {"intervene": answer.intervene, "confidence": answer.confidence}
        return {**fields, "status": "scored", "prediction": pred, "scores": {"correct": correct}}
    if inst.task in LIST_FIELD:
        key = target_key if inst.task is Task.STP else label_key
        cleaned = clean_ranking(getattr(answer, LIST_FIELD[inst.task]), inst.candidates, key=key)
        fields.update(
            off_taxonomy=off + cleaned.off_taxonomy, duplicates=cleaned.duplicates, truncated=cleaned.truncated
        )
        rank = rank_of(inst.gold_label, cleaned.labels)
        if cleaned.missing:
            return {**fields, "status": "missing", "prediction": {"ranking": []}, "scores": {"rank": 0.0}}
        pred: dict[str, Any] = {"ranking": cleaned.labels}
        if inst.task is Task.STP:
            pred["kind"] = label_kind(cleaned.labels[0], inst.group).value
        return {**fields, "status": "scored", "prediction": pred, "scores": {"rank": float(rank)}}
    if inst.task is Task.ER:
        emotion = " ".join((answer.emotion or "").split())
        if not emotion:
            return {**fields, "status": "missing", "scores": {"emotion": 1.0, "intensity": 1.0, "er": 1.0}}
        s_int = intensity_match(answer.intensity, inst.gold_intensity or 0.0)
        pred = {"emotion": emotion, "intensity": answer.intensity}
        return {**fields, "status": "scored", "prediction": pred, "scores": {"intensity": s_int}}
    if inst.task is Task.VP:
        triples: list[ViewpointTriple] = []
        seen: set[tuple[str, str, str]] = set()
        duplicates = 0
        for t in answer.viewpoints:
            text = " ".join(t.viewpoint.split())
            if not text:
                off.append(f"{t.source} -> {t.target}: (empty viewpoint)")
                continue
            k = (t.source, t.target, text.lower())
            if k in seen:
                duplicates += 1
                continue
            seen.add(k)
            triples.append(ViewpointTriple(source=t.source, target=t.target, viewpoint=text))
        fields.update(off_taxonomy=off, duplicates=duplicates)
        if not triples:
            return {**fields, "status": "missing", "scores": {"source_target": 0.0, "viewpoint": 0.0}}
        return {**fields, "status": "scored", "prediction": {"viewpoints": [t.model_dump() for t in triples]}}
    raise ValueError(inst.task)


# ---- running ---------------------------------------------------------------------------------------------------

ProgressFn = Callable[[int], None]


@dataclass
class Runner:
    """Runs requests against a ModelClient and appends each finished instance to the store."""

    client: ModelClient
    settings: BenchSettings
    store: ResultStore
    config_hash: str
    on_progress: ProgressFn | None = None

    def _result(self, inst: Instance, **fields: Any) -> InstanceResult:
        return InstanceResult(
            instance_id=inst.id,
            config_hash=self.config_hash,
            fingerprint=inst.fingerprint(),
            task=inst.task,
            sample_id=inst.sample_id,
            group=inst.group,
            **fields,
        )

    async def run(self, instances: Sequence[Instance]) -> dict[str, InstanceResult]:
        """Answer every instance not finished under this config; returns the latest result per instance id."""
        done = self.store.load(self.config_hash)
        pending = [i for i in instances if not ResultStore.is_done(done.get(i.id), i)]
        if self.on_progress and len(pending) < len(instances):
            self.on_progress(len(instances) - len(pending))
        semaphore = asyncio.Semaphore(self.settings.concurrency)
        try:
            async with asyncio.TaskGroup() as tg:
                for request in make_requests(pending, self.settings.batch_size):
                    tg.create_task(self._run_request(request, semaphore, done))
        except BaseExceptionGroup as group:  # a config error or a bug: stop everything, raise it as itself
            raise group.exceptions[0] from None
        return done

    async def _run_request(
        self, request: Request, semaphore: asyncio.Semaphore, done: dict[str, InstanceResult]
    ) -> None:
        async with semaphore:
            results = await self._predict(request)
        if request.task in JUDGED_TASKS:
            results = list(
                await asyncio.gather(*(self._judge(inst, r, semaphore) for inst, r in zip(request.instances, results)))
            )
        self.store.append(results)
        for r in results:
            done[r.instance_id] = r
        if self.on_progress:
            self.on_progress(len(results))

    async def _predict(self, request: Request) -> list[InstanceResult]:
        prompt, ids = build_prompt(request.instances)
        request_id = uuid.uuid4().hex[:12]
        try:
            completion = await self.client.complete(
                prompt,
                role="bench",
                model=self.settings.model,
                schema=request.schema(ids),
                max_tokens=request.max_tokens(),
                temperature=self.settings.temperature,
                seed=self.settings.seed,
            )
        except ModelError as err:
            return [self._result(i, status="failed", stage="predict", failure=err.reason) for i in request.instances]
        usage = _usage(completion, request_id)
        if not ids:
            return [
                self._result(request.instances[0], usage=usage, **read_answer(request.instances[0], completion.parsed))
            ]
        answers: dict[str, list[Any]] = {}
        for item in completion.parsed.answers:
            answers.setdefault(item.id, []).append(item)
        unknown = list(getattr(completion.parsed, "unknown_ids", []) or [])
        out = []
        for short, inst in zip(ids, request.instances):
            got = answers.get(short, [])
            if len(got) != 1:
                why = "no answer for its id" if not got else f"its id was answered {len(got)} times"
                out.append(
                    self._result(inst, status="failed", stage="predict", failure=f"batch reply: {why}", usage=usage)
                )
                continue
            fields = read_answer(inst, got[0])
            if unknown:
                fields["off_taxonomy"] = [*fields["off_taxonomy"], *(f"unknown id {u!r}" for u in unknown)]
                unknown = []  # counted once per request
            out.append(self._result(inst, usage=usage, **fields))
        return out

    async def _judge(self, inst: Instance, result: InstanceResult, semaphore: asyncio.Semaphore) -> InstanceResult:
        if result.status != "scored":
            return result
        pred = result.prediction or {}
        if inst.task is Task.ER:
            prompt: Prompt = er_judge_prompt(inst, pred["emotion"])
            schema: type[BaseModel] = ErJudgement
        else:
            prompt = vp_judge_prompt(inst, [ViewpointTriple(**t) for t in pred["viewpoints"]])
            schema = VpJudgement
        async with semaphore:
            try:
                completion = await self.client.complete(
                    prompt,
                    role="judge",
                    model=self.settings.judge_model,
                    schema=schema,
                    max_tokens=JUDGE_MAX_TOKENS,
                    temperature=0.0,
                    seed=self.settings.seed,
                )
            except ModelError as err:
                return result.model_copy(update={"status": "failed", "stage": "judge", "failure": err.reason})
        verdict = completion.parsed
        scores = dict(result.scores)
        if inst.task is Task.ER:
            scores["emotion"] = float(verdict.score)
            scores["er"] = (scores["emotion"] + scores["intensity"]) / 2
        else:
            scores.update(source_target=float(verdict.source_target), viewpoint=float(verdict.viewpoint))
        return result.model_copy(
            update={
                "scores": scores,
                "judge_reason": verdict.reason,
                "judge_usage": _usage(completion, uuid.uuid4().hex[:12]),
            }
        )


async def run_instances(
    instances: Sequence[Instance],
    client: ModelClient,
    settings: BenchSettings,
    store: ResultStore,
    *,
    config_hash: str,
    on_progress: ProgressFn | None = None,
) -> dict[str, InstanceResult]:
    """Run (or resume) a benchmark: the latest result per instance id under `config_hash`."""
    runner = Runner(client=client, settings=settings, store=store, config_hash=config_hash, on_progress=on_progress)
    return await runner.run(instances)


# ---- dry run ---------------------------------------------------------------------------------------------------


class TaskEstimate(BaseModel):
    task: Task
    instances: int
    requests: int
    judge_calls: int
    prompt_tokens: int = Field(description="Prompt characters / 4 (an estimate), prediction and judge calls.")
    completion_tokens: int = Field(description="Typical answer sizes (EST_COMPLETION), an estimate.")


def estimate(instances: Sequence[Instance], batch_size: int) -> list[TaskEstimate]:
    """Calls and tokens a run would take, without calling anything. Tokens are estimated as characters / 4."""
    out: dict[Task, TaskEstimate] = {}
    for request in make_requests(instances, batch_size):
        prompt, _ = build_prompt(request.instances)
        est = out.setdefault(
            request.task,
            TaskEstimate(
                task=request.task, instances=0, requests=0, judge_calls=0, prompt_tokens=0, completion_tokens=0
            ),
        )
        n = len(request.instances)
        est.instances += n
        est.requests += 1
        est.prompt_tokens += prompt_chars(prompt) // CHARS_PER_TOKEN
        est.completion_tokens += EST_COMPLETION[request.task.value] * n
        if request.task in JUDGED_TASKS:
            for inst in request.instances:  # the judge prompt with the gold as a stand-in for the prediction
                judge = (
                    er_judge_prompt(inst, inst.gold_emotion)
                    if inst.task is Task.ER
                    else vp_judge_prompt(inst, inst.gold_viewpoints)
                )
                est.judge_calls += 1
                est.prompt_tokens += prompt_chars(judge) // CHARS_PER_TOKEN
                est.completion_tokens += EST_COMPLETION["judge"]
    return [out[t] for t in Task if t in out]
