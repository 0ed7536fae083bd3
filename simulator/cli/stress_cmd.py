"""`rescue-sim stress CONFIG.yaml`: run a stress matrix (supporters x cases x perturbations x seeds x trials),
judge it and run each perturbation's behavioural check. The logic lives in `simulator.runner.stress`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from simulator.cli._aio import run_sync
from simulator.cli._common import (
    EXIT_FAILED,
    JUDGE_MODE_HELP,
    JudgeModeChoice,
    console,
    err_console,
    flag_names,
    print_path,
    user_errors,
)

if TYPE_CHECKING:
    from simulator.runner.stress_estimate import Estimate
    from simulator.runner.stress_setup import StressPlan


def render_estimate(est: Estimate) -> Table:
    table = Table(title=f"stress matrix: {est.sessions} sessions", title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("how many", justify="right")
    for sup, n in est.by_supporter.items():
        table.add_row(f"supporter {escape(sup)}", str(n))
    for pert, n in est.by_perturbation.items():
        table.add_row(f"perturbation {escape(pert)}", str(n))
    for role, n in est.calls.items():
        mode = f" ({est.judge_mode})" if role == "judge" and est.judge_mode else ""
        table.add_row(f"model calls: {role}{mode}", str(n))
    table.add_row("model calls: total", str(est.total_calls))
    table.add_row("prompt tokens (no cache)", f"{est.prompt_tokens:,}")
    table.add_row("completion tokens", f"{est.completion_tokens:,}")
    if est.local_minutes is not None:
        cache = "checklist prefixes cached" if est.judge_mode == "checklist" else "no cache"
        table.add_row(f"embedded model, {cache}", f"≈ {est.local_minutes:g} min")
    return table


def plays_at_lines(est: Estimate) -> list[str]:
    """Per perturbation, the member turn its stressor plays at (per case where the cases differ)."""
    lines = []
    for pert, by_case in est.plays_at.items():
        if len(set(by_case.values())) == 1:
            at, turns = next(iter(by_case.values()))
            lines.append(f"{pert} plays at member turn {at} of {turns}")
        else:
            lines.append(f"{pert} plays at " + ", ".join(f"{c}: turn {a} of {t}" for c, (a, t) in by_case.items()))
    return lines


def render_checks(rows: list) -> Table:
    """Per supporter x perturbation (judges.stress_checks.PerturbationRow): passed / decided, pass^k over trials, what
    was not decided, and the sessions left out for a simulator fault."""
    table = Table(title="behavioural checks", title_justify="left")
    for col in ("supporter", "perturbation", "passed", "pass^k", "not decided", "simulator faults"):
        table.add_column(col, justify="left" if col in ("supporter", "perturbation") else "right")
    for r in sorted(rows, key=lambda x: (x.supporter, x.perturbation)):
        other = {
            "unsupported": r.unsupported,
            "error": r.errors,
            "not_delivered": r.not_delivered,
            "simulator_fault (not said)": r.not_said,
        }
        table.add_row(
            escape(r.supporter),
            escape(r.perturbation),
            f"{r.passed}/{r.passed + r.failed}",
            "-" if r.pass_hat_k is None else f"{r.pass_hat_k:.2f} (k={r.k})",
            ", ".join(f"{n} {s}" for s, n in other.items() if n) or "-",
            escape(r.faults.summary()) if r.simulator_faults else "-",
        )
    return table


ConcurrencyOpt = Annotated[
    int | None, typer.Option(min=1, max=1024, help="Sessions in flight (default: the config's, else 1).")
]
RayEnvOpt = Annotated[
    str | None,
    typer.Option(
        metavar="NAME[,NAME...]",
        help="Forward these variables from this shell to the Ray workers (e.g. OPENAI_API_KEY,OPENAI_API_BASE); "
        "added to the config's ray_env. Values are never written anywhere.",
    ),
]
RayShipOpt = Annotated[
    bool, typer.Option("--ray-ship-code", help="Send this rescue-sim to the Ray workers (runtime_env py_modules).")
]
DebugOpt = Annotated[
    bool, typer.Option("--debug", help="Show Ray worker logs and the tracebacks of sessions that crashed there.")
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print the matrix size and an estimate of calls and tokens; run nothing.")
]
StressJudgeModeOpt = Annotated[
    JudgeModeChoice | None,
    typer.Option("--judge-mode", help=f"{JUDGE_MODE_HELP} Unset: the config's judge_mode (default checklist)."),
]


@user_errors
@flag_names(out_dir="--out", env="--ray-env", ship_code="--ray-ship-code")
def stress(
    config_path: Annotated[Path, typer.Argument(metavar="CONFIG.yaml", help="Stress config (see the README).")],
    out: Annotated[Path | None, typer.Option(help="Run folder (default: runs/stress-<name>-<hash>).")] = None,
    concurrency: ConcurrencyOpt = None,
    executor: Annotated[str, typer.Option(help="local (asyncio) or ray (Ray tasks; needs the `ray` extra).")] = "local",
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster address (default: start a local Ray instance).")
    ] = None,
    ray_env: RayEnvOpt = None,
    ray_ship_code: RayShipOpt = False,
    debug: DebugOpt = False,
    dry_run: DryRunOpt = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the model call cache.")] = False,
    judge_mode: StressJudgeModeOpt = None,
) -> None:
    """Run a stress experiment: every supporter on every case, perturbation, seed and trial; then judge each
    session and run its perturbation's check. Re-running the same command resumes. Exit 1 when sessions,
    judgments or checks failed (a judgment with any failed judge call counts); 2 for a bad config. Sessions with
    simulator faults are left out of supporter scores (and listed), not counted as failed."""
    from personas.common.errors import UserError
    from simulator.cli._models import make_client, model_settings, models_line
    from simulator.runner.ray_cluster import RayOptions, forwarded_env, parse_env_names
    from simulator.runner.stress_config import load_stress_config
    from simulator.runner.stress_setup import matrix_roles, plan_stress, stress_models

    if executor not in ("local", "ray"):
        raise UserError(f"--executor {executor!r}: use local or ray")
    config = load_stress_config(config_path)
    if judge_mode is not None:
        config = config.model_copy(update={"judge_mode": judge_mode.value})
    env_names = (*parse_env_names(ray_env), *config.ray_env)
    ray_options = RayOptions(
        address=ray_address, env=tuple(dict.fromkeys(env_names)), ship_code=ray_ship_code, debug=debug
    )
    if executor == "ray":
        forwarded_env(ray_options.env, "--ray-env" if ray_env else f"{config_path}: ray_env")  # set here? (names only)
    plan = plan_stress(config, config_path, out)
    if dry_run:
        show_estimate(plan.estimate)
        print_path("run folder would be:", plan.out_dir)
        return
    settings = model_settings(config.model, roles=matrix_roles(config), no_cache=no_cache)
    client = make_client(settings)
    check_models(client, stress_models(config, plan.matrix, settings))
    checks = any(p.check.rubric for p in plan.matrix.perturbations)
    supporters = "supporters " + ", ".join(config.supporters)
    line = models_line(supporters, settings, judges=config.judges, judge=config.judge, check=checks)
    console.print(escape(line))
    print_path(f"[bold]{plan.estimate.sessions} sessions[/] →", plan.out_dir)
    summary = _run_matrix(plan, client, concurrency, executor, ray_options)
    _conclude(plan, summary)


def check_models(client, uses: list[tuple[str, str]]) -> None:
    """The library's pre-check (`simulator.llm.preflight.preflight`); the first unusable model, in model-id order,
    is the one line said."""
    from personas.common.errors import UserError
    from simulator.llm.preflight import UnusableModels, preflight

    try:
        asyncio.run(preflight(client, uses))
    except UnusableModels as err:
        raise UserError(err.problems[0].reason) from None


def show_estimate(est: Estimate) -> None:
    """`--dry-run`: the matrix, where each stressor plays, what did not fit, and why the estimate is an upper bound."""
    console.print(render_estimate(est))
    for line in plays_at_lines(est):
        console.print(escape(line))
    for line in est.skipped:
        console.print(f"[dim]skipped (group does not fit): {escape(line)}[/]")
    console.print(
        "[dim]an upper bound: sessions that differ only in the supporter share their members' calls until "
        "the supporter first speaks (the call cache), so silent baselines cost almost nothing[/]"
    )


def _run_matrix(plan: StressPlan, client, concurrency: int | None, executor: str, ray_options):
    """`run_stress` with a line per finished session and check, under a progress board."""
    from simulator.cli._progress import RunProgress
    from simulator.runner.runs import RunEvents
    from simulator.runner.stress import run_stress

    done = 0

    def finished(record, path) -> None:
        nonlocal done
        done += 1
        why = f": {escape(record.failure)}" if record.failure else ""
        console.print(f"[dim]{done}/{plan.estimate.sessions}[/] {escape(record.session_id)} {record.status.value}{why}")

    def checked(result) -> None:
        console.print(f"[dim]  check {escape(result.perturbation)}: {result.status.value} — {escape(result.reason)}[/]")

    board = RunProgress(console)  # sessions done / failed / running, calls, tokens, cost, ETA

    def note(text: str) -> None:
        console.print(f"[dim]{escape(text)}[/]", soft_wrap=True)

    events = RunEvents(session_finished=finished, progress=board.update, note=note)
    try:
        with board:
            return run_sync(  # not asyncio.run: it would repr every record at exit
                run_stress(
                    plan.config,
                    plan.matrix,
                    client,
                    plan.out_dir,
                    base=plan.base,
                    concurrency=concurrency,
                    executor=executor,  # type: ignore[arg-type]
                    ray_options=ray_options,
                    events=events,
                    on_checked=checked,
                )
            )
    except KeyboardInterrupt:
        print_path("[yellow]interrupted[/]: rerun the same command to resume:", plan.out_dir, to=err_console)
        raise typer.Exit(130) from None


def _conclude(plan: StressPlan, summary) -> None:
    """The checks table, what failed, and the next command; exit 1 when sessions, judgments or checks failed."""
    from simulator.runner.stress import check_rows

    rows = check_rows(summary.run.folder, [s.session_id for s in plan.matrix.specs])
    if rows:
        console.print(render_checks(rows))
    failed = summary.run.failed
    for r in failed:
        err_console.print(f"[red]failed[/] {escape(r.session_id)}: {escape(r.failure or '')}")
    for sid, reason in summary.errors.items():
        err_console.print(f"[red]judge/check error[/] {escape(sid)}: {escape(reason)}")
    if summary.run.stopped_by:
        err_console.print(f"[yellow]stopped at the budget cap[/]: {escape(summary.run.stopped_by)}; rerun to go on")
    print_path("run folder:", plan.out_dir, style="bold")
    print_path("next:", f"rescue-sim leaderboard {plan.out_dir}")
    if failed or summary.errors:
        raise typer.Exit(EXIT_FAILED)
