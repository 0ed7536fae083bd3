"""Metric sensitivity: do the headline metrics order a ladder of supporters of known quality as declared?

The ladder (`simulator/data/ladder.yaml`) lists rungs best to worst (`silent`, `scripted`, and degradations of a
model M: `sides:M`, `lecture:M`, `generic:M`, and M itself) and, per headline metric, the rungs that metric is
expected to order. `sensitivity_config` turns a model, cases, seeds and perturbations into a stress experiment
with one supporter per rung; `run_sensitivity` runs and judges it with the stress runner (`run_stress`, so
`run_specs`: concurrent, resumable) and `analyse` compares observed and declared orders.

Beside the metrics, whether the room answered each rung (`judges.room_audit.responsiveness`: members' state
changes and moves after the rung's turns against the silent rung's null drift, over the same units) and the
trajectory separation of the top rung from `sides` (final self-reported state, paired over units).

The ladder lives in `simulator.runner.sensitivity_ladder`, the statistics and the report model in
`simulator.runner.sensitivity_stats`, each session's metric values in `simulator.runner.sensitivity_values`;
`--human` folders (the unranked `human` reference beside M) are read by `simulator.runner.sensitivity_human`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from judges import FaultTally
from judges.room_audit import ResponsivenessReport
from personas.common.errors import UserError
from simulator.records import SessionStatus
from simulator.runfolder import RunFolder, config_hash
from simulator.runner.sensitivity_ladder import Ladder
from simulator.runner.sensitivity_stats import (
    SensitivityReport,
    analyse,
)
from simulator.runner.sensitivity_values import collect_values, unit_of
from simulator.runner.session import SessionSpec
from simulator.runner.stress_config import StressConfig, unrecorded

__all__ = [
    "DEFAULT_CASES",
    "DEFAULT_PERTURBATIONS",
    "DEFAULT_SEEDS",
    "DEFAULT_TURNS",
    "REPORT_NAME",
    "SensitivityError",
    "default_out_dir",
    "report_from_folder",
    "room_responsiveness",
    "run_sensitivity",
    "sensitivity_config",
    "write_report",
]

REPORT_NAME = "sensitivity.json"
DEFAULT_CASES = ("dana-and-theo",)
DEFAULT_SEEDS = (0, 1)
DEFAULT_PERTURBATIONS = ("crisis_disclosure",)
DEFAULT_TURNS = 6


class SensitivityError(UserError):
    pass


# -- the experiment -----------------------------------------------------------------------------------------------


def sensitivity_config(
    model: str,
    *,
    ladder: Ladder,
    cases: Sequence[str] = DEFAULT_CASES,
    seeds: Sequence[int] | str = DEFAULT_SEEDS,
    perturbations: Sequence[str] = DEFAULT_PERTURBATIONS,
    turns: int = DEFAULT_TURNS,
    room_model: str | None = None,
    judges: Sequence[str] = (),
    judge: bool = True,
    tracker_every: int = 3,
    concurrency: int = 1,
    judge_mode: Literal["checklist", "verdict"] = "checklist",
) -> StressConfig:
    """A stress experiment with one supporter per rung and one session per case, seed and listed perturbation
    (`none` in the list: the case unperturbed); `seeds` may be a list or a string (`0,1,2`, `0-4`). Bad values are
    a one-line SensitivityError."""
    try:
        return _config(
            model,
            ladder,
            cases,
            seeds,
            perturbations,
            turns,
            room_model,
            judges,
            judge,
            tracker_every,
            concurrency,
            judge_mode,
        )
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise SensitivityError(f"{where}: {first['msg'].removeprefix('Value error, ')}") from None


def _config(
    model, ladder, cases, seeds, perturbations, turns, room_model, judges, judge, tracker_every, concurrency, judge_mode
):
    named = [p for p in perturbations if p != "none"]
    if not named and "none" not in perturbations:
        raise SensitivityError("perturbations: none given; list some, or `none` for unperturbed sessions")
    return StressConfig(
        name=f"sensitivity-{model}",
        supporters=list(ladder.specs(model).values()),
        cases=list(cases),
        seeds=seeds if isinstance(seeds, str) else list(seeds),
        perturbations=named,
        baseline="none" in perturbations,
        model=room_model,
        judges=list(judges),
        judge=judge,
        judge_mode=judge_mode,
        turns=turns,
        tracker_every=tracker_every,
        concurrency=concurrency,
    )


def default_out_dir(model: str, config: StressConfig, specs: Sequence[SessionSpec], root: str | Path = "runs") -> Path:
    slug = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in model.lower())[:40]
    key = {"config": config.model_dump(mode="json", exclude=unrecorded(config)), "ids": [s.session_id for s in specs]}
    return Path(root) / f"sensitivity-{slug}-{config_hash(key)[:8]}"


def room_responsiveness(
    ladder: Ladder, model: str, folder: RunFolder, specs: Sequence[SessionSpec]
) -> ResponsivenessReport | None:
    """Did the members answer each rung? Completed sessions, case x seed units, top rung vs `sides` separated."""
    from judges.room_audit import responsiveness, session_responsiveness

    rungs = ladder.specs(model)
    sessions = [
        session_responsiveness(folder.load_session(s.session_id))
        for s in specs
        if s.supporter in rungs.values() and folder.status(s.session_id) == SessionStatus.COMPLETED
    ]
    if not sessions:
        return None
    pairs = [(rungs[ladder.rungs[0].id], rungs["sides"])] if "sides" in rungs else []
    return responsiveness(sessions, unit_of=lambda s: f"{s.case_id}|s{s.seed}", pairs=pairs)


def write_report(out_dir: str | Path, report: SensitivityReport) -> Path:
    path = Path(out_dir) / REPORT_NAME
    path.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return path


def report_from_folder(
    model: str,
    ladder: Ladder,
    config: StressConfig,
    matrix: Any,
    folder: RunFolder,
    *,
    include_faults: bool = False,
    human: Sequence[Any] = (),
    human_folders: Sequence[str] = (),
) -> SensitivityReport:
    """The sensitivity report of what the run folder holds now: the completed sessions of the ladder matrix (an
    interrupted run gives a report over fewer units, and says how many sessions completed). `human`: sessions
    from `load_human_sessions`, placed beside the ladder as the unranked `human` reference."""
    faults: dict[str, FaultTally] = {}
    values = collect_values(ladder, model, folder, matrix.specs, include_faults=include_faults, faults=faults)
    completed = sum(folder.status(s.session_id) == SessionStatus.COMPLETED for s in matrix.specs)
    units = sorted({unit_of(s) for s in matrix.specs})
    report = analyse(
        ladder,
        model,
        values,
        config=config,
        sessions=len(matrix.specs),
        completed=completed,
        units=units,
        faults=faults,
    )
    report.responsiveness = room_responsiveness(ladder, model, folder, matrix.specs)
    if human:
        from simulator.runner.sensitivity_human import HUMAN, place_human

        placed, by_metric = place_human(
            ladder,
            model,
            config,
            matrix,
            folder,
            human,
            reference=ladder.reference(HUMAN),
            folders=human_folders,
            include_faults=include_faults,
        )
        report.human = placed
        for m in report.metrics:
            m.human = by_metric.get(m.id)
    return report


async def run_sensitivity(
    model: str,
    ladder: Ladder,
    config: StressConfig,
    matrix: Any,
    client: Any,
    out_dir: str | Path,
    *,
    base: Path,
    events: Any = None,
    include_faults: bool = False,
    human: Sequence[Any] = (),
    human_folders: Sequence[str] = (),
) -> tuple[SensitivityReport, Any]:
    """Run (or resume) the ladder matrix with the stress runner, judge it, and write `sensitivity.json`; `human`
    sessions are read beside it, never run."""
    from simulator.runner.stress import run_stress

    summary = await run_stress(config, matrix, client, out_dir, base=base, events=events, page_index=False)
    report = report_from_folder(
        model,
        ladder,
        config,
        matrix,
        summary.run.folder,
        include_faults=include_faults,
        human=human,
        human_folders=human_folders,
    )
    write_report(out_dir, report)
    from simulator.runner.pageindex import refresh_index

    refresh_index(out_dir)  # once, with the report in: the served page data (best-effort)
    return report, summary
