"""A whole benchmark run, as the CLI (and any other caller) uses it: plan -> dry run or run -> report.

`plan_rescue` / `plan_probe` build the instances and the config (and its hash, which names the default output
and keys the results JSONL); `run_bench` runs or resumes the plan and writes the JSON report atomically;
`dry_run` counts instances and estimates calls and tokens without calling a model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from judges.bench.instance_format import (
    SUBGROUP_NOTES,
    TASKS,
    BuildStats,
    Instance,
    SubgroupMode,
    Task,
    count_instances,
    limit_instances,
)
from judges.bench.instances import build_rescue_instances
from judges.bench.probe import PROBE_GOLD_SOURCES, RESCUE_GOLD_SOURCES, build_probe_instances, load_run_sessions
from judges.bench.released import load_released, looks_released
from judges.bench.report import BenchReport, summarize
from judges.bench.runner import (
    CHARS_PER_TOKEN,
    BenchSettings,
    ProgressFn,
    TaskEstimate,
    config_hash,
    estimate,
    run_instances,
)
from judges.bench.similarity import NOT_CONFIGURED, Similarity
from judges.bench.store import ResultStore
from personas.common.files import atomic_write_text
from personas.rescue import load_rescue
from simulator.llm.types import ModelClient

DEFAULT_RUNS_DIR = Path("runs")


@dataclass
class BenchPlan:
    """What a run will do: its instances, where the gold comes from, and the hashed config."""

    origin: Literal["rescue", "probe"]
    sources: list[str]
    settings: BenchSettings
    tasks: list[Task]
    instances: list[Instance]
    build: BuildStats
    gold_sources: dict[str, str]
    limit: int | None = None
    tracker_sources: list[tuple[str | None, str | None]] = field(default_factory=list)  # probe: (model, digest)

    @property
    def config(self) -> dict[str, Any]:
        return self.settings.config(origin=self.origin, sources=self.sources)

    @property
    def config_hash(self) -> str:
        return config_hash(self.config)

    def default_out(self, runs_dir: Path = DEFAULT_RUNS_DIR) -> Path:
        return runs_dir / f"bench-{self.config_hash}.json"


def results_path_for(out: Path) -> Path:
    """The per-instance JSONL that sits next to the report: `x.json` -> `x.instances.jsonl`."""
    return out.with_name(out.stem + ".instances.jsonl") if out.suffix else out.with_name(out.name + ".instances.jsonl")


def _select(tasks: Iterable[Task]) -> list[Task]:
    wanted = set(tasks)
    return [t for t in TASKS if t in wanted]


def plan_rescue(
    data: str | Path, settings: BenchSettings, *, tasks: Iterable[Task] = TASKS, limit: int | None = None
) -> BenchPlan:
    """Instances from RESCUE data (a .jsonl/.json file or a folder; bad input raises a one-line UserError).

    A released ER/VP instance file (RESCUE-bench's `data/er.jsonl`, `data/vp.jsonl`) is scored exactly as given:
    its instances, no others, and only the tasks it holds.
    """
    if looks_released(data):
        built = load_released(data, context_size=settings.context_size)
        present = {i.task for i in built.instances}
        chosen = [t for t in _select(tasks) if t in present]
        built = built.model_copy(update={"instances": [i for i in built.instances if i.task in chosen]})
    else:
        samples = load_rescue(data)
        chosen = _select(tasks)
        built = build_rescue_instances(
            samples, tasks=chosen, context_size=settings.context_size, subgroups=settings.subgroups, seed=settings.seed
        )
    return BenchPlan(
        origin="rescue",
        sources=[str(Path(data).resolve())],
        settings=settings,
        tasks=chosen,
        instances=limit_instances(built.instances, limit, settings.seed),
        build=built.stats,
        gold_sources=RESCUE_GOLD_SOURCES,
        limit=limit,
    )


def plan_probe(
    run_dirs: Sequence[str | Path], settings: BenchSettings, *, tasks: Iterable[Task] = TASKS, limit: int | None = None
) -> BenchPlan:
    """Instances from the completed sessions of simulator run folders."""
    sessions = load_run_sessions(run_dirs)
    chosen = _select(tasks)
    built = build_probe_instances(
        sessions, tasks=chosen, context_size=settings.context_size, subgroups=settings.subgroups, seed=settings.seed
    )
    return BenchPlan(
        origin="probe",
        sources=[str(Path(d).resolve()) for d in run_dirs],
        settings=settings,
        tasks=chosen,
        instances=limit_instances(built.instances, limit, settings.seed),
        build=built.stats,
        gold_sources=PROBE_GOLD_SOURCES,
        limit=limit,
        tracker_sources=sorted(
            {(r.models.get("tracker"), r.prompt_digests.get("tracker")) for _, r in sessions},
            key=lambda s: (s[0] or "", s[1] or ""),
        ),
    )


class DryRun(BaseModel):
    """`--dry-run`: what a run would do. No model is called."""

    model_config = ConfigDict(extra="forbid")

    origin: Literal["rescue", "probe"]
    sources: list[str]
    subgroups: SubgroupMode
    subgroups_note: str
    counts: dict[str, dict[str, int]] = Field(description="task -> couple/family instances and samples.")
    estimates: list[TaskEstimate]
    build: BuildStats
    gold_sources: dict[str, str]
    token_note: str = (
        f"tokens are estimated as characters / {CHARS_PER_TOKEN}; completion tokens from typical answer sizes"
    )
    config_hash: str


def dry_run(plan: BenchPlan) -> DryRun:
    return DryRun(
        origin=plan.origin,
        sources=plan.sources,
        subgroups=plan.settings.subgroups,
        subgroups_note=SUBGROUP_NOTES[plan.settings.subgroups],
        counts=count_instances(plan.instances),
        estimates=estimate(plan.instances, plan.settings.batch_size),
        build=plan.build,
        gold_sources={t.value: plan.gold_sources[t.value] for t in plan.tasks},
        config_hash=plan.config_hash,
    )


async def run_bench(
    plan: BenchPlan,
    client: ModelClient,
    *,
    out: Path | None = None,
    on_progress: ProgressFn | None = None,
    similarity: Similarity | None = None,
    bertscore_status: str = NOT_CONFIGURED,
    annotate: Callable[[BenchReport, BenchPlan], BenchReport] | None = None,
) -> BenchReport:
    """Run or resume the plan; write the per-instance JSONL as it goes and the JSON report at the end.

    `annotate` adds what the bench does not know before the report is written (the CLI passes
    `judges.validity.with_bench_validity`, which puts the validity of the instruments behind each task's gold)."""
    out = out or plan.default_out()
    results_path = results_path_for(out)
    started, clock = datetime.now(timezone.utc), time.perf_counter()
    results = await run_instances(
        plan.instances,
        client,
        plan.settings,
        ResultStore(results_path),
        config_hash=plan.config_hash,
        on_progress=on_progress,
    )
    report = summarize(
        plan.instances,
        results,
        origin=plan.origin,
        sources=plan.sources,
        model=plan.settings.model,
        judge_model=plan.settings.judge_model,
        subgroups=plan.settings.subgroups,
        config={
            **plan.config,
            "tasks": [t.value for t in plan.tasks],
            "limit": plan.limit,
            "concurrency": plan.settings.concurrency,
        },
        config_hash=plan.config_hash,
        results_path=str(results_path),
        gold_sources=plan.gold_sources,
        started_at=started,
        wall_s=time.perf_counter() - clock,
        build=plan.build,
        similarity=similarity,
        bertscore_status=bertscore_status,
    )
    judged = {Task.ER, Task.VP} & set(plan.tasks)
    if judged and plan.settings.judge_model == plan.settings.model:
        report.notes.append(
            "the ER/VP judge is the model under test (self-grading); pass --judge-model for an independent judge"
        )
    if plan.origin == "probe":
        report.notes.append(
            "probe mode: gold comes from the simulator (see gold_source per task), "
            "not from human annotation; not comparable with the paper's numbers"
        )
    if annotate is not None:
        report = annotate(report, plan)
    atomic_write_text(out, report.model_dump_json(indent=2) + "\n")
    return report
