"""`rescue-sim bench`: RESCUE-BENCH's six tasks for any model, on RESCUE data or simulated run folders.

Parses options, builds a plan with `judges.bench`, runs it (or only counts it with --dry-run) and renders the
report. All benchmark logic lives in `judges.bench`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from personas.common.errors import UserError
from simulator.cli._common import EXIT_FAILED, console, err_console, print_path, user_errors
from simulator.cli._models import make_client, model_settings
from simulator.llm.client import ModelSettings
from simulator.llm.types import ModelClient

ALL_TASKS = "itp,rpp,stp,ssp,er,vp"


def make_bench_client(settings: ModelSettings) -> ModelClient:
    """The model client the command uses; tests monkeypatch this factory to inject a fake."""
    return make_client(settings)


def _parse_tasks(text: str) -> list:
    from judges.bench import Task

    names = [t.strip().lower() for t in text.split(",") if t.strip()]
    allowed = [t.value for t in Task]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise UserError(f"--tasks: unknown task {', '.join(unknown) or '(none)'}; choose from {', '.join(allowed)}")
    return [Task(n) for n in names]


# -- options (one line each in the signature below) ------------------------------------------------------------

DataOpt = Annotated[Path | None, typer.Option("--data", help="RESCUE data: a .jsonl/.json file or a folder.")]
RunsOpt = Annotated[
    list[Path] | None,
    typer.Option("--runs", help="Simulator run folder(s) for probe mode; more may follow as arguments."),
]
MoreRunsArg = Annotated[
    list[Path] | None,
    typer.Argument(metavar="[RUN_DIR]...", show_default=False, help="Further run folders after --runs."),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model", "-m", help="Model under test (default: RESCUE_SIM_MODEL, else the embedded offline model)."
    ),
]
TasksOpt = Annotated[str, typer.Option("--tasks", help="Comma-separated tasks.")]
JudgeModelOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        envvar="RESCUE_SIM_JUDGE_MODEL",
        help="Judge for ER and VP (default: the model under test).",
    ),
]
ContextSizeOpt = Annotated[
    int, typer.Option("--context-size", min=0, help="Rows shown before each decision point; 0 = all.")
]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, help="At most N instances per task.")]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", help="JSON report (default runs/bench-<hash>.json); per-instance results go next to it."),
]
SubgroupsOpt = Annotated[
    str,
    typer.Option(
        "--subgroups",
        help="keep: subgroup targets are their own labels; collapse: scored as the group label (released scripts).",
    ),
]
BatchSizeOpt = Annotated[int, typer.Option("--batch-size", min=1, max=26, help="Instances per request.")]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight.")]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Seed for sampling and model calls.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Count instances and estimate calls; no model calls.")]
ComparePublishedOpt = Annotated[
    bool, typer.Option("--compare-published", help="Show the paper's Table 5 beside our row.")
]
BertscoreModelOpt = Annotated[
    str | None,
    typer.Option(
        "--bertscore-model",
        envvar="RESCUE_SIM_BERTSCORE_MODEL",
        help="Local model folder for BERTScore (never downloaded).",
    ),
]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Bypass the model-call disk cache.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


def _run_dirs(data: Path | None, runs: list[Path] | None, more_runs: list[Path] | None) -> list[Path]:
    """The run folders of probe mode (none with --data); a UserError unless exactly one input is given."""
    run_dirs = [*(runs or []), *(more_runs or [])]
    if more_runs and not runs:
        raise UserError(f"unexpected argument {more_runs[0]}; run folders follow --runs")
    if (data is None) == (not run_dirs):
        raise UserError("give either --data FILE (RESCUE data) or --runs RUN_DIR... (simulated sessions)")
    return run_dirs


def _plan(data: Path | None, run_dirs: list[Path], bench_settings, chosen: list, limit: int | None):
    """The benchmark plan over RESCUE data or run folders; a UserError when it has no instance."""
    from judges.bench import plan_probe, plan_rescue

    if data is not None:
        plan = plan_rescue(data, bench_settings, tasks=chosen, limit=limit)
    else:
        plan = plan_probe(run_dirs, bench_settings, tasks=chosen, limit=limit)
    if not plan.instances:
        raise UserError("no benchmark instances could be built from the input for the chosen tasks")
    return plan


def _print_dry_run(plan, as_json: bool) -> None:
    from judges.bench import dry_run as make_dry_run

    result = make_dry_run(plan)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        _render_dry_run(result)


@user_errors
def bench(
    data: DataOpt = None,
    runs: RunsOpt = None,
    more_runs: MoreRunsArg = None,
    model: ModelOpt = None,
    tasks: TasksOpt = ALL_TASKS,
    judge_model: JudgeModelOpt = None,
    context_size: ContextSizeOpt = 12,
    limit: LimitOpt = None,
    out: OutOpt = None,
    subgroups: SubgroupsOpt = "keep",
    batch_size: BatchSizeOpt = 1,
    concurrency: ConcurrencyOpt = 4,
    seed: SeedOpt = None,
    dry_run: DryRunOpt = False,
    compare_published: ComparePublishedOpt = False,
    bertscore_model: BertscoreModelOpt = None,
    no_cache: NoCacheOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Score a model on RESCUE-BENCH's six tasks (ITP, RPP, STP, SSP, ER, VP), on RESCUE data or simulated sessions."""
    from judges.bench import DEFAULT_SEED, BenchSettings

    run_dirs = _run_dirs(data, runs, more_runs)
    if subgroups not in ("keep", "collapse"):
        raise UserError(f"--subgroups: {subgroups!r} is not keep or collapse")
    chosen = _parse_tasks(tasks)
    if out is not None and out.is_dir():
        raise UserError(f"--out {out}: is a folder; give a file name such as {out / 'bench.json'}")

    settings = model_settings(model, roles={"judge": judge_model}, no_cache=no_cache)
    bench_settings = BenchSettings(
        model=settings.model_for("bench"),
        judge_model=settings.model_for("judge"),
        context_size=context_size,
        subgroups=subgroups,
        batch_size=batch_size,
        concurrency=concurrency,  # type: ignore[arg-type]
        seed=DEFAULT_SEED if seed is None else seed,
    )
    plan = _plan(data, run_dirs, bench_settings, chosen, limit)
    if dry_run:
        return _print_dry_run(plan, as_json)
    exit_code = asyncio.run(_run(plan, settings, out, bertscore_model, compare_published, as_json))
    if exit_code:
        raise typer.Exit(exit_code)


async def _run(
    plan, settings: ModelSettings, out: Path | None, bertscore_model: str | None, compare_published: bool, as_json: bool
) -> int:
    from judges.bench import Task, offline_bertscore, run_bench
    from judges.validity.card import with_bench_validity
    from simulator.llm.preflight import UnusableModels, preflight

    client = make_bench_client(settings)
    uses = [("bench", plan.settings.model)]
    if {Task.ER, Task.VP} & set(plan.tasks):
        uses.append(("judge", plan.settings.judge_model))
    try:  # a missing API key fails here, in one line, before any call
        await preflight(client, uses)
    except UnusableModels as err:
        raise UserError(err.problems[0].reason) from None
    similarity, status = offline_bertscore(bertscore_model)
    columns = (
        TextColumn("[bold]bench[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as progress:
        bar = progress.add_task("bench", total=len(plan.instances))
        report = await run_bench(
            plan,
            client,
            out=out,
            similarity=similarity,
            bertscore_status=status,
            on_progress=lambda n: progress.advance(bar, n),
            annotate=with_bench_validity,
        )
    if as_json:
        payload = json.loads(report.model_dump_json())
        if compare_published:
            from judges.bench import load_published, own_scale_row, published_row

            payload["published_comparison"] = {
                "ours": published_row(report),
                "ours_on_other_scales": own_scale_row(report),
                "published": load_published(),
            }
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        _render_report(report, out or plan.default_out())
        if compare_published:
            _render_comparison(report)
    return EXIT_FAILED if report.failed else 0


# ---- rendering -------------------------------------------------------------------------------------------------


# (label, attribute, digits) of the metrics shown per task; the JSON report has everything.
METRIC_ROWS: dict[str, tuple[tuple[str, str, int], ...]] = {
    "itp": (
        ("precision", "precision", 3),
        ("recall", "recall", 3),
        ("F1", "f1", 3),
        ("accuracy", "accuracy", 3),
        ("balanced acc", "balanced_accuracy", 3),
    ),
    "rpp": (
        ("accuracy", "accuracy", 3),
        ("R@2", "recall_at_2", 3),
        ("R@3", "recall_at_3", 3),
        ("MRR", "mrr", 3),
        ("macro F1", "macro_f1", 3),
    ),
    "stp": (("R@1", "recall_at_1", 3), ("R@2", "recall_at_2", 3), ("R@3", "recall_at_3", 3), ("MRR", "mrr", 3)),
    "ssp": (
        ("R@1", "recall_at_1", 3),
        ("R@2", "recall_at_2", 3),
        ("R@3", "recall_at_3", 3),
        ("MRR", "mrr", 3),
        ("macro F1", "macro_f1", 3),
    ),
    "er": (
        ("S_ER (1-5)", "er_score", 2),
        ("emotion, judge (1-5)", "emotion_score", 2),
        ("intensity match (1-5)", "intensity_match", 2),
    ),
    "vp": (
        ("source-target (0-2)", "source_target", 2),
        ("viewpoint (0-4)", "viewpoint", 2),
    ),
}


def _value(m, attr: str, digits: int) -> str:
    return "-" if m is None else f"{getattr(m, attr):.{digits}f}"


def _render_dry_run(result) -> None:
    table = Table(title=f"Dry run: {result.origin} ({', '.join(result.sources)})", title_justify="left", box=box.SIMPLE)
    for col in (
        "task",
        "couple",
        "family",
        "samples\nc/f",
        "requests",
        "judge\ncalls",
        "~prompt\ntokens",
        "~completion\ntokens",
    ):
        table.add_column(col, justify="left" if col == "task" else "right")
    totals = [0, 0, 0, 0]
    for est in result.estimates:
        c = result.counts[est.task.value]
        table.add_row(
            est.task.value,
            str(c["couple"]),
            str(c["family"]),
            f"{c['samples_couple']}/{c['samples_family']}",
            str(est.requests),
            str(est.judge_calls),
            str(est.prompt_tokens),
            str(est.completion_tokens),
        )
        for i, v in enumerate((est.requests, est.judge_calls, est.prompt_tokens, est.completion_tokens)):
            totals[i] += v
    table.add_row("total", "", "", "", *map(str, totals), style="bold")
    console.print(table)
    console.print(
        f"Calls: {totals[0] + totals[1]} ({totals[0]} requests, {totals[1]} judge calls); no model was called."
    )
    console.print(f"Estimate: {result.token_note}.", markup=False)
    console.print(f"Targets: {result.subgroups_note}.")
    b = result.build
    console.print(
        f"Dropped: RPP {b.rpp_no_dominant} no-dominant-pattern rows, {b.rpp_off_taxonomy} off-taxonomy; "
        f"STP {b.stp_unresolved} unresolved targets; SSP {b.ssp_off_taxonomy} off-taxonomy strategies; "
        f"ITP {b.itp_samples_dropped} samples lacking a class.",
        markup=False,
    )


def _render_report(report, out: Path) -> None:
    counts = Table(title=f"RESCUE-BENCH: {report.model} ({report.origin})", title_justify="left", box=box.SIMPLE)
    for col in ("task", "couple", "family", "scored", "missing", "failed", "off-tax", "dups"):
        counts.add_column(col, justify="left" if col == "task" else "right")
    for name, t in report.tasks.items():
        counts.add_row(
            name,
            str(t.couple),
            str(t.family),
            str(t.scored),
            str(t.missing),
            str(t.failed + t.not_run),
            str(t.off_taxonomy),
            str(t.duplicates),
        )
    console.print(counts)
    metrics = Table(box=box.SIMPLE)
    for col in ("task", "metric", "all", "couple", "family"):
        metrics.add_column(col, justify="left" if col in ("task", "metric") else "right")
    for name, t in report.tasks.items():
        for i, (label, attr, digits) in enumerate(METRIC_ROWS[name]):
            metrics.add_row(
                name if i == 0 else "",
                label,
                _value(t.metrics, attr, digits),
                _value(t.by_scenario.get("couple"), attr, digits),
                _value(t.by_scenario.get("family"), attr, digits),
                end_section=i == len(METRIC_ROWS[name]) - 1,
            )
    console.print(metrics)
    console.print(f"Targets: {report.subgroups_note}.", markup=False)
    console.print(f"Judge (ER, VP): {report.judge_model}. BERTScore: {report.bertscore}.", markup=False)
    tok = report.tokens
    console.print(
        f"Calls: {tok.requests} requests + {tok.judge_calls} judge calls; tokens {tok.prompt_tokens} prompt / "
        f"{tok.completion_tokens} completion; {report.wall_s:.1f}s.",
        markup=False,
    )
    for name, t in report.tasks.items():
        if t.failed or t.not_run:
            reason = f"; {t.failures[0]}" if t.failures else ""
            console.print(
                f"{name}: {t.failed + t.not_run} failed ({t.failed_judge} at the judge), excluded from metrics{reason}",
                style="yellow",
                markup=False,
            )
    for note in report.notes:
        console.print(f"Note: {note}.", markup=False)
    for name, t in report.tasks.items():
        for v in t.validity:
            who = f"{v.instrument} {v.model or '?'}" + (f" @ {v.digest}" if v.digest else "")
            console.print(f"Validity, {name} — {who}: {v.text}", markup=False, style="dim")
    print_path("Report:", out)
    print_path("per instance:", report.results_path)


def _render_comparison(report) -> None:
    from judges.bench import (
        COMPARISON_NOTES,
        NOT_SAME_SCALE,
        PUBLISHED_COLUMNS,
        PUBLISHED_SOURCE,
        load_published,
        own_scale_row,
        published_row,
    )

    published, ours = load_published(), published_row(report)
    console.print(f"Compared with {PUBLISHED_SOURCE}; ours = {report.model}", markup=False)
    for columns in (PUBLISHED_COLUMNS[:8], PUBLISHED_COLUMNS[8:]):  # two tables, so each fits 80 columns
        table = Table(box=box.SIMPLE, pad_edge=False, collapse_padding=True)
        table.add_column("model", no_wrap=True)
        for col in columns:
            table.add_column(col.replace("_", "\n"), justify="right", no_wrap=True, min_width=6 if "BERT" in col else 5)
        for row in published:
            table.add_row(row["Model"], *(row[c] for c in columns))
        cells = [
            "n/s"
            if c in NOT_SAME_SCALE
            else "n/c"
            if ours[c] is None
            else f"{ours[c]:.4f}"
            if c.endswith("BERT")
            else f"{ours[c]:.2f}"
            for c in columns
        ]
        table.add_row("ours", *cells, style="bold")
        console.print(table)
    console.print("n/c = not computed in this run; n/s = not the same scale (below).", markup=False)
    own = own_scale_row(report)
    if own["VP_source_target_0_2"] is not None:
        console.print(
            f"VP, ours on the released script's scales: source-target {own['VP_source_target_0_2']:.2f} / 2, "
            f"viewpoint {own['VP_viewpoint_0_4']:.2f} / 4 ({NOT_SAME_SCALE['VP_LLM']}).",
            markup=False,
        )
    for note in COMPARISON_NOTES:
        console.print(f"- {note}", markup=False)
    if report.origin == "probe":
        console.print("- Probe mode: gold from the simulator, not human annotation; not comparable.", markup=False)
