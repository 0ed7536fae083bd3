"""`rescue-sim sensitivity --model M`: run the supporter ladder for MODEL, judge it and say whether each headline
metric orders the rungs as declared. The logic lives in `simulator.runner.sensitivity`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from simulator.cli._common import (
    EXIT_FAILED,
    JudgeModeChoice,
    JudgeModeOpt,
    console,
    err_console,
    flag_names,
    print_path,
    user_errors,
)
from simulator.llm.embedded import DEFAULT_LOCAL_MODEL

if TYPE_CHECKING:
    from simulator.runner.sensitivity_stats import MetricResult, SensitivityReport
    from simulator.runner.stress_setup import SensitivityPlan


def _split(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _ci(stat) -> str:
    ci = stat.ci
    if ci.mean is None:
        return "-"
    return f"{ci.mean:.2f} [{ci.low:.2f}, {ci.high:.2f}] n={ci.n}"


def render_metric(m: MetricResult) -> Table:
    arrow = "higher is better" if m.higher_is_better else "lower is better"
    tau = "n/a" if m.kendall_tau is None else f"{m.kendall_tau:+.2f}"
    title = f"{m.id} ({m.source}, {arrow}): Kendall tau {tau}"
    if not m.run:
        title += " — not run (no perturbations)"
    table = Table(title=escape(title), title_justify="left")
    for col in ("declared", "observed (mean [95% CI] over units)", "next pair: paired diff [95% CI]", "units for 80%"):
        table.add_column(col)
    means = {s.rung: s for s in m.rungs}
    for i, rung in enumerate(m.declared):
        obs = m.observed[i] if i < len(m.observed) else ""
        pair = m.adjacent[i] if i < len(m.adjacent) else None
        if pair is None:
            diff, power = "", ""
        elif pair.difference is None:
            diff, power = f"{pair.better} vs {pair.worse}: {pair.note}", "n/a"
        else:
            verdict = "separates" if pair.as_declared else ("reversed" if pair.separates else "does not separate")
            diff = (
                f"{pair.better} vs {pair.worse}: {pair.difference:+.2f} [{pair.low:+.2f}, {pair.high:+.2f}] {verdict}"
            )
            power = "n/a" if pair.sessions_for_power is None else str(pair.sessions_for_power)
        observed = f"{obs}: {_ci(means[obs])}" if obs else ""
        table.add_row(escape(rung), escape(observed), escape(diff), power)
    return table


def human_line(m: MetricResult) -> str:
    """The `human` reference on one metric: its mean and, per rung, the paired distance (> 0: the human better)."""
    assert m.human is not None
    parts = []
    for d in m.human.distances:
        if d.difference is None:
            parts.append(f"vs {d.rung}: {d.note}")
        else:
            verdict = "separates" if d.separates else "does not separate"
            parts.append(f"vs {d.rung}: {d.difference:+.2f} [{d.low:+.2f}, {d.high:+.2f}] {verdict}")
    ci = m.human.ci
    mean = "-" if ci.mean is None else f"{ci.mean:.2f} [{ci.low:.2f}, {ci.high:.2f}] n={ci.n}"
    return f"human: {mean}; " + "; ".join(parts)


def render_report(report: SensitivityReport) -> None:
    console.print(
        f"[bold]{report.units} case x seed units[/] ({report.sessions_per_unit} sessions per rung each), "
        f"{report.completed}/{report.sessions} sessions completed; rung CIs are 95% bootstraps over units, pair "
        "CIs the hull of the bootstrap and the paired t interval"
    )
    for rung, tally in report.simulator_faults.items():
        how = "put back (--include-simulator-faults)" if tally.included else "left out of every metric"
        console.print(f"[yellow]simulator faults[/] {escape(rung)}: {escape(tally.summary())}; {how}", soft_wrap=True)
    if report.human is not None:
        h = report.human
        console.print(
            f"[bold]human[/] (beside {escape(h.beside)}, unranked: distances, not an order check): {h.sessions} "
            f"session(s) from {escape(', '.join(h.folders))}, paired on {len(h.units)} case x seed x perturbation "
            f"unit(s)",
            soft_wrap=True,
        )
        for line in h.unmatched:
            console.print(f"[yellow]unmatched[/] {escape(line)}", soft_wrap=True)
    for m in report.metrics:
        console.print(render_metric(m))
        if m.human is not None:
            console.print(escape(human_line(m)), soft_wrap=True)
        if m.unordered:
            console.print(
                "[dim]not ordered: " + "; ".join(f"{escape(r)} ({escape(w)})" for r, w in m.unordered.items()) + "[/]"
            )
    if report.responsiveness is not None:
        from simulator.cli._responsiveness import render_responsiveness

        rungs = {spec: rung for rung, spec in report.rungs.items()}
        for part in render_responsiveness(
            report.responsiveness, console.width, labels=rungs, units="case x seed units"
        ):
            console.print(part)


ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        metavar="MODEL",
        help="Model id M whose ladder is run (e.g. openai/gpt-4o): the supporter rungs only, not the room "
        "(--room-model).",
    ),
]
RungsOpt = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated rung ids, or `all` (default: the ladder's default_rungs: model, sides, silent)."
    ),
]
PerturbationsOpt = Annotated[
    str,
    typer.Option(
        help="Comma-separated perturbations (built-in names or YAML files); `none` adds unperturbed sessions."
    ),
]
RoomModelOpt = Annotated[
    str | None,
    typer.Option(
        "--room-model",
        help="Model for members, tracker and judge (default: RESCUE_SIM_MODEL, else the embedded "
        f"{DEFAULT_LOCAL_MODEL}; --model does not set it).",
    ),
]
ConcurrencyOpt = Annotated[
    int,
    typer.Option(
        min=1,
        max=1024,
        help="Sessions in flight (1 suits the embedded model: one session at a time re-reads only its new turns).",
    ),
]
ReportOnlyOpt = Annotated[
    bool,
    typer.Option(
        "--report-only",
        help="Report on the sessions the run folder holds now (an interrupted run: fewer units); run nothing.",
    ),
]
IncludeFaultsOpt = Annotated[
    bool,
    typer.Option(
        "--include-simulator-faults",
        help="Score sessions in which the simulated room malfunctioned too (left out by default).",
    ),
]
HumanOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--human",
        metavar="RUN_DIR[,RUN_DIR...]",
        help="Folders of sessions a person played (`play`, serve's play page; judged with `rescue-sim judge` "
        "first), read as the unranked `human` reference beside M: paired by case x seed x perturbation (play "
        "is unperturbed: add `none` to --perturbations), never simulated.",
    ),
]


@user_errors
@flag_names(out_dir="--out", dirs="--human", humans="--human")
def sensitivity(
    model: ModelOpt,
    rungs: RungsOpt = None,
    cases: Annotated[
        str, typer.Option(help="Comma-separated case ids, globs, tag:<t> or group:<g>.")
    ] = "dana-and-theo",
    seeds: Annotated[str, typer.Option(help="Seeds: a list 0,1,2 or a range 0-4.")] = "0-1",
    perturbations: PerturbationsOpt = "crisis_disclosure",
    turns: Annotated[int, typer.Option(min=1, max=200, help="Member turns per session.")] = 6,
    room_model: RoomModelOpt = None,
    judge: Annotated[list[str] | None, typer.Option(help="Judge model (repeat for a panel).")] = None,
    tracker_every: Annotated[int, typer.Option(min=0, help="Tracker every N member turns and at the end.")] = 3,
    out: Annotated[Path | None, typer.Option(help="Run folder (default: runs/sensitivity-<model>-<hash>).")] = None,
    concurrency: ConcurrencyOpt = 1,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the matrix and a call estimate; run nothing.")
    ] = False,
    report_only: ReportOnlyOpt = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the model call cache.")] = False,
    include_faults: IncludeFaultsOpt = False,
    human: HumanOpt = None,
    judge_mode: JudgeModeOpt = JudgeModeChoice.checklist,
) -> None:
    """Run the supporter ladder (M, scripted, generic:M, lecture:M, sides:M, silent; by default M, sides:M and
    silent, which fit the embedded model in under an hour) on cases x seeds x perturbations, judge it, and print per headline metric the declared and observed order with 95% CIs over
    case x seed units, Kendall tau, which adjacent rungs separate and the sessions needed for 80% power.
    Writes sensitivity.json into the run folder. Exit 1 when a headline metric does not separate its top and
    bottom rung, or when sessions, their judging or checks failed; 2 for bad input. Sessions with simulator
    faults are left out of the metrics (and listed), not counted as failed."""
    from simulator.cli._models import make_client, model_settings
    from simulator.cli.stress_cmd import check_models
    from simulator.runner.stress_setup import human_reference, matrix_roles, plan_sensitivity, sensitivity_models

    plan = plan_sensitivity(
        model,
        rungs=None if rungs is None else _split(rungs),
        cases=_split(cases),
        seeds=seeds,
        perturbations=_split(perturbations),
        turns=turns,
        room_model=room_model,
        judges=judge or (),
        tracker_every=tracker_every,
        concurrency=concurrency,
        judge_mode=judge_mode.value,
        out_dir=out,
    )
    settings = model_settings(plan.config.model, roles=matrix_roles(plan.config), no_cache=no_cache)
    human_dirs = [d for given in human or () for d in _split(given)]
    humans = human_reference(plan, settings, human_dirs)
    _models_line(plan, settings)
    if dry_run:
        _show_matrix(plan)
        return
    if report_only:
        _report_only(plan, include_faults, humans, human_dirs)
        return
    client = make_client(settings)
    check_models(client, sensitivity_models(model, plan.config, plan.matrix, settings))  # each once, before any run
    print_path(f"[bold]{len(plan.matrix.specs)} sessions[/] →", plan.out_dir)
    report, summary = _run_ladder(plan, client, include_faults, humans, human_dirs)
    for r in summary.run.failed:
        err_console.print(f"[red]failed[/] {escape(r.session_id)}: {escape(r.failure or '')}")
    for sid, reason in summary.errors.items():
        err_console.print(f"[red]judge/check error[/] {escape(sid)}: {escape(reason)}")
    conclude(report, plan.out_dir, failed=bool(summary.run.failed or summary.errors))


def _models_line(plan: SensitivityPlan, settings) -> None:
    from simulator.cli._models import models_line

    rung_models = "supporter rungs " + ", ".join(f"{r.id}={r.spec_for(plan.model)}" for r in plan.ladder.rungs)
    checks = any(p.check.rubric for p in plan.matrix.perturbations)
    console.print(escape(models_line(rung_models, settings, judges=plan.config.judges, check=checks)))


def _show_matrix(plan: SensitivityPlan) -> None:
    """`--dry-run`: the ladder matrix, its estimate, and the run folder it would write."""
    from simulator.cli.stress_cmd import plays_at_lines, render_estimate
    from simulator.runner.stress_estimate import estimate

    ladder, matrix, config, variants = plan.ladder, plan.matrix, plan.config, plan.variants
    console.print(
        f"[bold]ladder matrix[/]: {len(ladder.rungs)} rungs x {len(matrix.cases)} cases x {len(config.seeds)} "
        f"seeds x {len(variants)} perturbations = {len(matrix.specs)} sessions"
    )
    console.print("rungs: " + ", ".join(f"{r.id}={escape(r.spec_for(plan.model))}" for r in ladder.rungs))
    console.print("cases: " + ", ".join(escape(c.id) for c in matrix.cases))
    console.print("seeds: " + ", ".join(str(s) for s in config.seeds))
    console.print("perturbations: " + ", ".join(escape(v) for v in variants))
    for line in matrix.skipped:
        console.print(f"[dim]skipped (group does not fit): {escape(line)}[/]")
    est = estimate(config, matrix)
    console.print(render_estimate(est))
    for line in plays_at_lines(est):
        console.print(escape(line))
    print_path("run folder would be:", plan.out_dir)


def _report_only(plan: SensitivityPlan, include_faults: bool, humans, human_dirs: list[str]) -> None:
    """`--report-only`: the report on the sessions the run folder holds now."""
    from personas.common.errors import UserError
    from simulator.runfolder import RunFolder
    from simulator.runner.sensitivity import report_from_folder, write_report

    out_dir = plan.out_dir
    if not (Path(out_dir) / "manifest.json").is_file():
        raise UserError(f"{out_dir}: no run folder there; run the ladder first (drop --report-only) or give --out")
    report = report_from_folder(
        plan.model,
        plan.ladder,
        plan.config,
        plan.matrix,
        RunFolder(out_dir),
        include_faults=include_faults,
        human=humans,
        human_folders=human_dirs,
    )
    write_report(out_dir, report)
    conclude(report, out_dir)


def _run_ladder(plan: SensitivityPlan, client, include_faults: bool, humans, human_dirs: list[str]):
    """`run_sensitivity` with a line per finished session; the report and the run's summary."""
    from simulator.runner.runs import RunEvents
    from simulator.runner.sensitivity import run_sensitivity

    def finished(record, path) -> None:
        why = f": {escape(record.failure)}" if record.failure else ""
        console.print(f"[dim]{escape(record.session_id)} {record.status.value}{why}[/]")

    try:
        return asyncio.run(
            run_sensitivity(
                plan.model,
                plan.ladder,
                plan.config,
                plan.matrix,
                client,
                plan.out_dir,
                base=plan.base,
                events=RunEvents(session_finished=finished),
                include_faults=include_faults,
                human=humans,
                human_folders=human_dirs,
            )
        )
    except KeyboardInterrupt:
        print_path("[yellow]interrupted[/]: rerun the same command to resume:", plan.out_dir, to=err_console)
        raise typer.Exit(130) from None


def conclude(report: SensitivityReport, out_dir: Path, *, failed: bool = False) -> None:
    """Print the report and where it is; exit 1 when a headline metric does not separate (or sessions, their
    judging or checks failed)."""
    render_report(report)
    print_path("sensitivity.json:", Path(out_dir) / "sensitivity.json", style="bold")
    if report.failures:
        err_console.print(
            f"[red]not sensitive[/]: {len(report.failures)} of {sum(m.run for m in report.metrics)} headline metrics "
            "do not separate their top and bottom rung: " + escape("; ".join(report.failures)),
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_FAILED)
    if failed:
        raise typer.Exit(EXIT_FAILED)
