"""Stress runs: a matrix of supporters x cases x perturbations x seeds x trials, run, judged and checked.

The experiment and its matrix are in `simulator.runner.stress_config` (`StressConfig`, `build_matrix`), the
estimate in `simulator.runner.stress_estimate`. `run_stress` runs the specs with `run_specs` (concurrent,
kill-safe, resumable), judges each completed session and runs its perturbation's behavioural check. Everything
lands in the run folder: `sessions/`, `judgments/`, `checks/`, `manifest.json`. `check_rows` reads the pass rates
back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from simulator.llm.types import ModelClient
from simulator.perturbations import Perturbation
from simulator.records import SessionRecord, SessionStatus
from simulator.runfolder import RunFolder
from simulator.runner.ray_cluster import RayOptions
from simulator.runner.runs import RunEvents, RunSummary, run_specs
from simulator.runner.stress_config import (
    Matrix,
    StressConfig,
    stress_manifest,
)

__all__ = [
    "StressSummary",
    "check_rows",
    "post_session_hook",
    "record_delivery",
    "run_stress",
]


@dataclass
class StressSummary:
    run: RunSummary
    judged: int = 0
    checked: int = 0
    errors: dict[str, str] = field(default_factory=dict)  # session id -> judge/check error


def post_session_hook(
    config: StressConfig,
    perts: dict[str, Perturbation],
    client: ModelClient,
    panel: list[str],
    check_model: str,
    rubric_path: Path | None,
    on_judged: Callable[[Any], None] | None,
    on_checked: Callable[[Any], None] | None,
    summary: StressSummary,
):
    """The hook that judges a completed session and runs its perturbation's check (each skipped when done)."""
    from judges import (
        check_session,
        judge_session,
        judgment_path,
        load_rubric,
        read_check,
        read_judgment,
        write_check,
        write_judgment,
    )

    rubric = load_rubric(rubric_path) if config.judge or any(p.check.judge_probe for p in perts.values()) else None

    async def hook(record: SessionRecord, folder: RunFolder) -> None:
        p = perts.get(record.perturbation or "")
        if p is not None and p.inject is not None and record.delivery is None:
            record = await record_delivery(record, p, client, check_model, folder)
        judgment = (
            read_judgment(folder, record.session_id) if judgment_path(folder, record.session_id).is_file() else None
        )
        if config.judge and judgment is None:
            judgment = await judge_session(
                record, client, panel, rubric, config.per_intervention, judge_mode=config.judge_mode
            )
            write_judgment(folder, judgment)
            summary.judged += 1
            if on_judged:
                on_judged(judgment)
            failed = judging_failure(judgment)
            if failed is not None:  # as `run` counts it: a judgment that is not ok is judging that failed
                summary.errors[record.session_id] = failed
        if p is not None and read_check(folder, record.session_id) is None:
            result = await check_session(
                record,
                p,
                client,
                check_model,
                judgment=judgment,
                panel=panel if config.judge else (),
                rubric=rubric,
                per_intervention=config.per_intervention,
            )
            write_check(folder, result)
            summary.checked += 1
            if on_checked:
                on_checked(result)

    return hook


def judging_failure(judgment: Any) -> str | None:
    """Why a judgment is not ok (`partial`: some judge calls failed; `failed`: none answered), in one line; None
    when it is ok. `run`, `stress`, `sensitivity` and the Inspect scorer count such a session as failed."""
    if judgment.status.value == "ok":
        return None
    failures = [f for v in judgment.verdicts for f in v.failures]
    first = f"; first: {failures[0].unit}: {failures[0].reason}" if failures else ""
    return (
        f"judging {judgment.status.value}: {len(failures)} judge call(s) failed{first} "
        "(rerun `rescue-sim judge RUN_DIR` to retry)"
    )


async def record_delivery(
    record: SessionRecord, p: Perturbation, client: ModelClient, check_model: str, folder: RunFolder
) -> SessionRecord:
    """Decide whether the directed member said the stressor and save the verdict (and a `stressor_not_said`
    simulator fault) on the session record; a model failure leaves it undecided (the check records the error)."""
    from judges.stress_checks import verify_delivery, with_delivery
    from simulator.llm.types import ModelError
    from simulator.perturbations import plan_for

    plan = plan_for(p, record.case, record.max_turns, session_applied=True, strict=False)
    try:
        delivery = await verify_delivery(record, p, plan, client, check_model)
    except ModelError:
        return record
    record = with_delivery(record, delivery)
    folder.write_session(record, durable=True)
    return record


async def run_stress(
    config: StressConfig,
    matrix: Matrix,
    client: ModelClient,
    out_dir: str | Path,
    *,
    base: Path,
    concurrency: int | None = None,
    executor: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    ray_options: RayOptions | None = None,
    events: RunEvents | None = None,
    supporter_factory: Any = None,
    on_judged: Callable[[Any], None] | None = None,
    on_checked: Callable[[Any], None] | None = None,
    page_index: bool = True,
) -> StressSummary:
    """Run the matrix into `out_dir`, judging and checking each completed session as it finishes; a rerun
    resumes: finished sessions, judgments and checks are skipped, failed sessions run again.

    One metered client serves the sessions, the judges and the checks, so the budget caps count them all. The
    served page data is written at the end (`page_index`; `run_sensitivity` writes it after its report)."""
    from simulator.runner.session import MeteredClient

    client = client if isinstance(client, MeteredClient) else MeteredClient(client)
    panel = config.judges or [config.model_for("judge") or client.model_for("judge")]
    check_model = config.model_for("check") or panel[0]
    perts = {p.name: p for p in matrix.perturbations}
    rubric_path = None
    if config.rubric:
        rubric_path = Path(config.rubric) if Path(config.rubric).is_absolute() else base / config.rubric
    summary = StressSummary(run=RunSummary(folder=RunFolder(out_dir)))  # `run` is filled in when it ends
    hook = post_session_hook(config, perts, client, panel, check_model, rubric_path, on_judged, on_checked, summary)
    models = {r: (config.model_for(r) or client.model_for(r)) for r in ("member", "tracker", "judge")}  # type: ignore[arg-type]
    run = await run_specs(
        matrix.specs,
        client,
        out_dir,
        concurrency=concurrency or config.concurrency,
        executor=executor,
        ray_address=ray_address,
        ray_options=ray_options,
        budget=config.budget,
        manifest=stress_manifest(config, matrix),
        events=events,
        judge_hook=hook,
        supporter_factory=supporter_factory,
        models=models,
        page_index=False,  # written below, once the late checks are in
    )
    summary.run = run
    summary.errors.update(run.judge_errors)
    if run.stopped_by is None:  # sessions judged earlier but never checked (a kill between the two)
        from judges import read_check
        from simulator.llm.types import ModelError

        for spec in matrix.specs:
            if spec.perturbation is None or spec.session_id in summary.errors:
                continue
            if run.folder.status(spec.session_id) != SessionStatus.COMPLETED:
                continue
            if read_check(run.folder, spec.session_id) is None:
                try:
                    await hook(run.folder.load_session(spec.session_id), run.folder)
                except Exception as err:  # noqa: BLE001 - recorded with its reason, the rest goes on
                    reason = err.reason if isinstance(err, ModelError) else f"{type(err).__name__}: {err}"
                    summary.errors[spec.session_id] = reason
    if page_index:
        from simulator.runner.pageindex import refresh_index

        refresh_index(run.folder.path)
    return summary


def check_rows(folder: RunFolder, session_ids: Sequence[str]) -> list[Any]:
    """Pass rates and pass^k per supporter x perturbation over these sessions (judges.stress_checks.PerturbationBoard):
    sessions with a simulator fault are left out of them and counted."""
    from judges import PerturbationBoard, faulted, read_check, read_judgment

    board = PerturbationBoard()
    for sid in session_ids:
        record = folder.read_session(sid).record
        if record is None:
            continue
        fault = None
        if record.status == SessionStatus.COMPLETED:
            fault = faulted(record, read_judgment(folder, sid))
        board.add(record, read_check(folder, sid), record.supporter_knows, fault)
    return board.rows()
