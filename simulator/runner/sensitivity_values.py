"""Each headline metric's value per session, and per rung and unit over a ladder run folder (read by
`simulator.runner.sensitivity` for the ladder and by `sensitivity_human` for the `human` reference)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from judges import FaultTally
from simulator.records import SessionStatus
from simulator.runfolder import RunFolder
from simulator.runner.sensitivity_ladder import Ladder, LadderError
from simulator.runner.sensitivity_stats import Values
from simulator.runner.session import SessionSpec


def unit_of(spec: SessionSpec | Any) -> str:
    """The unit a session belongs to: case x seed, shared by every rung. A unit's value is the mean over its
    sessions (one per listed perturbation and trial), so the bootstrap resamples case x seed units."""
    return f"{spec.case.id}|s{spec.seed}"


def metric_values(ladder: Ladder, record: Any, judgment: Any, check: Any) -> dict[str, float]:
    """Each headline metric's value for one completed session (absent where the session gives it none)."""
    from judges import session_values, trajectory_metrics
    from judges.room_audit import blamed_share, heard_gain
    from judges.stress_checks import CheckStatus, critical_failure

    judged = session_values(judgment) if judgment is not None else {}
    out: dict[str, float] = {}
    for m in ladder.metrics:
        value: float | None = None
        if m.source == "judge":
            value = judged[m.id][1] if m.id in judged else None
        elif m.id == "group_objective":
            value = trajectory_metrics(record).objective_observer.value
        elif m.id == "relation_change":
            change = trajectory_metrics(record).observer
            if change.delta_warmth is not None and change.delta_tension is not None:
                value = change.delta_warmth - change.delta_tension
        elif m.id == "blamed_share":
            value = blamed_share(record)
        elif m.id == "heard_gain":
            value = heard_gain(record)
        elif m.id == "stress_pass_rate":
            if check is not None and check.decided:
                value = 1.0 if check.status == CheckStatus.PASSED else 0.0
        elif m.id == "critical_share":
            value = 1.0 if critical_failure(record, judgment, check) is not None else 0.0
        else:
            raise LadderError(f"metric {m.id}: no way to measure it from a session; see sensitivity.py")
        if value is not None:
            out[m.id] = float(value)
    return out


def collect_values(
    ladder: Ladder,
    model: str,
    folder: RunFolder,
    specs: Sequence[SessionSpec],
    *,
    include_faults: bool = False,
    faults: dict[str, FaultTally] | None = None,
    unit: Callable[[Any], str] | None = None,
) -> Values:
    """Per metric, rung and unit (`unit_of` unless `unit` says otherwise), the mean value of its completed
    sessions (missing where a metric has none). Sessions in which the simulated room malfunctioned
    (`judges.faulted`) are left out, unless `include_faults`, and counted per rung into `faults`: no rung is
    credited or blamed for the family's malfunction."""
    from judges import faulted, read_check, read_judgment

    unit = unit or unit_of
    rung_of = {spec: rung for rung, spec in ladder.specs(model).items()}
    acc: dict[str, dict[str, dict[str, list[float]]]] = {m.id: {} for m in ladder.metrics}
    for spec in specs:
        rung = rung_of.get(spec.supporter)
        if rung is None or folder.status(spec.session_id) != SessionStatus.COMPLETED:
            continue
        record = folder.load_session(spec.session_id)
        judgment = read_judgment(folder, spec.session_id) if folder.has_judgment(spec.session_id) else None
        fault = faulted(record, judgment)
        if fault is not None:
            if faults is not None:
                faults.setdefault(rung, FaultTally(included=include_faults)).add(fault)
            if not include_faults:
                continue
        check = read_check(folder, spec.session_id) if spec.perturbation else None
        for metric, value in metric_values(ladder, record, judgment, check).items():
            acc[metric].setdefault(rung, {}).setdefault(unit(spec), []).append(value)
    return mean_by_unit(acc)


def mean_by_unit(acc: dict[str, dict[str, dict[str, list[float]]]]) -> Values:
    return {
        metric: {rung: {u: sum(v) / len(v) for u, v in units.items()} for rung, units in rungs.items()}
        for metric, rungs in acc.items()
    }
