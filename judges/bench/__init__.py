"""RESCUE-BENCH's six tasks (ITP, RPP, STP, SSP, ER, VP) for any model, on RESCUE data or simulated sessions.

Build instances (`plan_rescue`, `plan_probe`, or the lower-level `build_rescue_instances` /
`build_probe_instances`), run them (`run_bench`, resumable, failures excluded and counted), read the
`BenchReport`; `dry_run` counts and estimates without calling a model. Metrics are pure functions in
`judges.bench.metrics`. Prompts are data in `judges/bench/prompts/*.md`; the paper's Table 5 ships in
`judges/bench/data/published_table5.tsv`.
"""

from judges.bench.instance_format import (
    SUBGROUP_MODES,
    TASKS,
    BuildResult,
    BuildStats,
    Instance,
    Row,
    SubgroupMode,
    Task,
    ViewpointTriple,
    count_instances,
    limit_instances,
)
from judges.bench.instance_rules import (
    CHECKPOINTS_PER_SAMPLE,
    DEFAULT_CONTEXT_SIZE,
    DEFAULT_SEED,
    EARLY_ROWS,
    MIN_DIALOGUE_WORDS,
    is_very_short,
    target_label,
)
from judges.bench.instances import build_rescue_instances
from judges.bench.metrics import (
    BinaryMetrics,
    ErMetrics,
    LabelStats,
    RankingMetrics,
    VpMetrics,
    binary_metrics,
    er_metrics,
    intensity_match,
    rank_of,
    ranking_metrics,
    vp_metrics,
)
from judges.bench.pipeline import BenchPlan, DryRun, dry_run, plan_probe, plan_rescue, results_path_for, run_bench
from judges.bench.probe import PROBE_GOLD_SOURCES, RESCUE_GOLD_SOURCES, build_probe_instances, load_run_sessions
from judges.bench.report import (
    COMPARISON_NOTES,
    NOT_SAME_SCALE,
    PUBLISHED_COLUMNS,
    PUBLISHED_SOURCE,
    BenchReport,
    TaskReport,
    load_published,
    own_scale_row,
    published_row,
    summarize,
)
from judges.bench.runner import BenchSettings, TaskEstimate, estimate, make_requests, run_instances
from judges.bench.schemas import Cleaned, answer_schema, batch_schema, clean_ranking
from judges.bench.similarity import BERTSCORE_ENV, NOT_CONFIGURED, offline_bertscore
from judges.bench.store import InstanceResult, ResultStore

__all__ = [
    "BERTSCORE_ENV",
    "CHECKPOINTS_PER_SAMPLE",
    "COMPARISON_NOTES",
    "DEFAULT_CONTEXT_SIZE",
    "DEFAULT_SEED",
    "EARLY_ROWS",
    "MIN_DIALOGUE_WORDS",
    "NOT_CONFIGURED",
    "NOT_SAME_SCALE",
    "PROBE_GOLD_SOURCES",
    "PUBLISHED_COLUMNS",
    "PUBLISHED_SOURCE",
    "RESCUE_GOLD_SOURCES",
    "SUBGROUP_MODES",
    "TASKS",
    "BenchPlan",
    "BenchReport",
    "BenchSettings",
    "BinaryMetrics",
    "BuildResult",
    "BuildStats",
    "Cleaned",
    "DryRun",
    "ErMetrics",
    "Instance",
    "InstanceResult",
    "LabelStats",
    "RankingMetrics",
    "ResultStore",
    "Row",
    "SubgroupMode",
    "Task",
    "TaskEstimate",
    "TaskReport",
    "ViewpointTriple",
    "VpMetrics",
    "answer_schema",
    "batch_schema",
    "binary_metrics",
    "build_probe_instances",
    "build_rescue_instances",
    "clean_ranking",
    "count_instances",
    "dry_run",
    "er_metrics",
    "estimate",
    "intensity_match",
    "is_very_short",
    "limit_instances",
    "load_published",
    "load_run_sessions",
    "make_requests",
    "offline_bertscore",
    "own_scale_row",
    "plan_probe",
    "plan_rescue",
    "published_row",
    "rank_of",
    "ranking_metrics",
    "results_path_for",
    "run_bench",
    "run_instances",
    "summarize",
    "target_label",
    "vp_metrics",
]
