"""Metric sensitivity: do the headline metrics order a ladder of supporters of known quality as declared?

The ladder (`simulator/data/ladder.yaml`) lists rungs best to worst (`silent`, `scripted`, and degradations of a
model M: `sides:M`, `lecture:M`, `generic:M`, and M itself) and, per headline metric, the rungs that metric is
expected to order. `sensitivity_config` turns a model, cases, seeds and perturbations into a stress experiment
with one supporter per rung; `run_sensitivity` runs and judges it with the stress runner (`run_stress`, so
`run_specs`: concurrent, resumable) and `analyse` compares observed and declared orders.

Statistics are over units, one unit being a case x seed (its value: the mean over that unit's sessions, one per
listed perturbation, `none` meaning unperturbed), never over turns: each rung's
mean with a percentile-bootstrap 95% CI over its units; Kendall's tau between the declared and observed order;
for each adjacent declared pair, a 95% CI of the paired difference over the units both rungs share (the pair
separates when it excludes 0), and the units per rung a paired test needs for 80% power at the observed variance of
the differences and their mean (None when the difference is 0), counted in case x seed units (`sessions_per_unit`
sessions each). The difference CI is the hull of the percentile bootstrap and the paired Student-t interval: a
run has a handful of units, and a bootstrap over four of them excludes 0 whenever all four differences are
positive, however they scatter; the t interval does not. Nothing is claimed from fewer than two shared units,
and identical values never separate (their difference CI is [0, 0]).

Beside the metrics, whether the room answered each rung (`judges.fidelity.responsiveness`: members' state
changes and moves after the rung's turns against the silent rung's null drift, over the same units) and the
trajectory separation of the top rung from `sides` (final self-reported state, paired over units).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judges import FaultTally, MeanCI, mean_ci, paired_difference_ci
from judges.fidelity import ResponsivenessReport
from personas.common.errors import UserError
from simulator.records import SessionStatus
from simulator.runfolder import RunFolder, config_hash
from simulator.runner.session import SessionSpec
from simulator.runner.stress import StressConfig

LADDER_PATH = Path(__file__).resolve().parent.parent / "data" / "ladder.yaml"
SENSITIVITY_SCHEMA_VERSION = 1
REPORT_NAME = "sensitivity.json"
DEFAULT_CASES = ("dana-and-theo", "nguyen-family")
DEFAULT_SEEDS = (0, 1)
DEFAULT_PERTURBATIONS = ("crisis_disclosure",)
DEFAULT_TURNS = 6
CONFIDENCE = 0.95
POWER = 0.80
Z_ALPHA = 1.959963984540054  # two-sided 5%
Z_POWER = 0.8416212335729143  # 80% power
MIN_SHARED = 2  # fewer shared units than this separate nothing


class LadderError(ValueError):
    pass


class SensitivityError(UserError):
    pass


class Rung(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    spec: str = Field(min_length=1, description="Supporter spec; `{model}` is replaced by the model under test.")
    description: str = ""

    def spec_for(self, model: str) -> str:
        return self.spec.replace("{model}", model)


class LadderMetric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    source: Literal["judge", "trajectory", "stress", "safety"]
    order: list[str] = Field(min_length=2, description="Rungs this metric is expected to order, best first.")
    higher_is_better: bool = True
    unordered: dict[str, str] = Field(default_factory=dict, description="Rung -> why this metric does not order it.")


class Ladder(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    rungs: list[Rung] = Field(min_length=2)
    metrics: list[LadderMetric] = Field(min_length=1)

    @model_validator(mode="after")
    def _known_rungs(self) -> Ladder:
        ids = [r.id for r in self.rungs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"rung ids repeat: {ids}")
        for m in self.metrics:
            unknown = [r for r in [*m.order, *m.unordered] if r not in ids]
            if unknown:
                raise ValueError(f"metric {m.id}: unknown rung(s) {unknown}; rungs are {ids}")
            if len(set(m.order)) != len(m.order) or set(m.order) & set(m.unordered):
                raise ValueError(f"metric {m.id}: a rung is listed twice in order/unordered")
        return self

    def specs(self, model: str) -> dict[str, str]:
        """Rung id -> supporter spec for the model under test."""
        return {r.id: r.spec_for(model) for r in self.rungs}


def load_ladder(path: str | Path = LADDER_PATH) -> Ladder:
    try:
        return Ladder.model_validate(yaml.safe_load(Path(path).read_text(encoding="utf-8")))
    except ValueError as err:
        raise LadderError(f"{path}: {err}") from None


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
) -> StressConfig:
    """A stress experiment with one supporter per rung and one session per case, seed and listed perturbation
    (`none` in the list: the case unperturbed); `seeds` may be a list or a string (`0,1,2`, `0-4`). Bad values are
    a one-line SensitivityError."""
    try:
        return _config(
            model, ladder, cases, seeds, perturbations, turns, room_model, judges, judge, tracker_every, concurrency
        )
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise SensitivityError(f"{where}: {first['msg'].removeprefix('Value error, ')}") from None


def _config(model, ladder, cases, seeds, perturbations, turns, room_model, judges, judge, tracker_every, concurrency):
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
        turns=turns,
        tracker_every=tracker_every,
        concurrency=concurrency,
    )


def default_out_dir(model: str, config: StressConfig, specs: Sequence[SessionSpec], root: str | Path = "runs") -> Path:
    slug = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in model.lower())[:40]
    key = {"config": config.model_dump(mode="json"), "ids": [s.session_id for s in specs]}
    return Path(root) / f"sensitivity-{slug}-{config_hash(key)[:8]}"


def unit_of(spec: SessionSpec | Any) -> str:
    """The unit a session belongs to: case x seed, shared by every rung. A unit's value is the mean over its
    sessions (one per listed perturbation and trial), so the bootstrap resamples case x seed units."""
    return f"{spec.case.id}|s{spec.seed}"


Values = dict[str, dict[str, dict[str, float]]]  # metric -> rung -> unit -> value


def collect_values(
    ladder: Ladder,
    model: str,
    folder: RunFolder,
    specs: Sequence[SessionSpec],
    *,
    include_faults: bool = False,
    faults: dict[str, FaultTally] | None = None,
) -> Values:
    """Per metric, rung and unit, the value of each completed session (missing where a metric has none).
    Sessions in which the simulated room malfunctioned (`judges.faulted`) are left out, unless `include_faults`,
    and counted per rung into `faults`: no rung is credited or blamed for the family's malfunction."""
    from judges import faulted, read_check, read_judgment, session_values, trajectory_metrics
    from judges.stress import CheckStatus, critical_failure

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
        judged = session_values(judgment) if judgment is not None else {}
        unit = unit_of(spec)
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
            elif m.id == "stress_pass_rate":
                if check is not None and check.decided:
                    value = 1.0 if check.status == CheckStatus.PASSED else 0.0
            elif m.id == "critical_share":
                value = 1.0 if critical_failure(record, judgment, check) is not None else 0.0
            else:
                raise LadderError(f"metric {m.id}: no way to measure it from a session; see sensitivity.py")
            if value is not None:
                acc[m.id].setdefault(rung, {}).setdefault(unit, []).append(float(value))
    return {
        metric: {rung: {u: sum(v) / len(v) for u, v in units.items()} for rung, units in rungs.items()}
        for metric, rungs in acc.items()
    }


# -- the statistics -----------------------------------------------------------------------------------------------


class RungStat(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rung: str
    ci: MeanCI = Field(description="Mean over units with its bootstrap CI (raw scale, not oriented).")


class PairStat(BaseModel):
    """A declared-better rung against a declared-worse one, over the units both have."""

    model_config = ConfigDict(extra="forbid")

    better: str = Field(description="Declared better rung.")
    worse: str = Field(description="Declared worse rung.")
    shared_units: int
    difference: float | None = Field(description="Mean of better - worse, oriented so > 0 is as declared.")
    low: float | None = None
    high: float | None = None
    separates: bool = Field(description="The CI of the paired difference excludes 0 (from >= 2 shared units).")
    as_declared: bool = Field(description="Separates, in the declared direction.")
    sessions_for_power: int | None = Field(
        description="Case x seed units per rung for 80% power (paired normal approximation; each unit is "
        "`sessions_per_unit` sessions); None: the difference is 0."
    )
    note: str = ""


class MetricResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    source: str
    higher_is_better: bool
    declared: list[str] = Field(description="Declared order, best first.")
    unordered: dict[str, str] = Field(default_factory=dict)
    observed: list[str] = Field(description="Declared rungs with data, sorted by observed mean (best first).")
    rungs: list[RungStat]
    kendall_tau: float | None = Field(description="Declared vs observed; None with < 2 rungs or all tied.")
    adjacent: list[PairStat]
    top_bottom: PairStat
    measured: bool = Field(description="Top and bottom rung both have data.")
    run: bool = Field(default=True, description="False when this metric's source was not run (no perturbations).")
    separates_top_bottom: bool


class SensitivityReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SENSITIVITY_SCHEMA_VERSION
    model: str
    rungs: dict[str, str] = Field(description="Rung id -> supporter spec.")
    cases: list[str]
    seeds: list[int]
    perturbations: list[str]
    turns: int
    sessions: int = Field(description="Sessions in the matrix.")
    completed: int = Field(description="Completed sessions the metrics were read from.")
    units: int = Field(description="Case x seed units (the bootstrap's resampling unit).")
    sessions_per_unit: int = Field(description="Sessions per rung in one unit: listed perturbations x trials.")
    confidence: float = CONFIDENCE
    power: float = POWER
    metrics: list[MetricResult]
    failures: list[str] = Field(description="Headline metrics that did not separate their top and bottom rung.")
    simulator_faults: dict[str, FaultTally] = Field(
        default_factory=dict,
        description="Rung -> sessions in which the simulated room malfunctioned: left out of every metric unless "
        "--include-simulator-faults (then `included`).",
    )
    responsiveness: ResponsivenessReport | None = Field(
        default=None, description="How the room answered each rung vs the null drift; top rung vs sides."
    )

    @property
    def ok(self) -> bool:
        return not self.failures


def _var(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def sessions_for_power(differences: Sequence[float], difference: float) -> int | None:
    """Units per rung for 80% power at 5% two-sided with a paired test (every rung runs on the same case x seed
    units, as here): n = (z_a + z_b)^2 s_d^2 / d^2, s_d^2 the variance of the paired differences."""
    if difference == 0 or not math.isfinite(difference):
        return None
    return max(2, math.ceil((Z_ALPHA + Z_POWER) ** 2 * _var(differences) / difference**2))


def pair_stat(better: str, worse: str, values: dict[str, dict[str, float]], sign: float) -> PairStat:
    a, b = values.get(better, {}), values.get(worse, {})
    shared = sorted(set(a) & set(b))
    if len(shared) < MIN_SHARED:
        return PairStat(
            better=better,
            worse=worse,
            shared_units=len(shared),
            difference=None,
            separates=False,
            as_declared=False,
            sessions_for_power=None,
            note=f"{len(shared)} shared unit(s); at least {MIN_SHARED} are needed",
        )
    diffs = [sign * (a[u] - b[u]) + 0.0 for u in shared]  # + 0.0: no -0.0
    mean = sum(diffs) / len(diffs)
    ci = paired_difference_ci(diffs, confidence=CONFIDENCE)
    assert ci is not None
    separates = ci[0] > 0 or ci[1] < 0
    return PairStat(
        better=better,
        worse=worse,
        shared_units=len(shared),
        difference=mean,
        low=ci[0],
        high=ci[1],
        separates=separates,
        as_declared=separates and mean > 0,
        sessions_for_power=sessions_for_power(diffs, mean),
        note="" if separates else ("identical on every shared unit" if all(d == 0 for d in diffs) else ""),
    )


def kendall_tau(declared: Sequence[str], means: dict[str, float]) -> float | None:
    from scipy.stats import kendalltau

    rungs = [r for r in declared if r in means]
    if len(rungs) < 2 or len({means[r] for r in rungs}) < 2:
        return None
    tau = kendalltau([-i for i, _ in enumerate(rungs)], [means[r] for r in rungs]).statistic
    return None if tau is None or math.isnan(tau) else float(tau)


def analyse_metric(metric: LadderMetric, values: dict[str, dict[str, float]], *, run: bool = True) -> MetricResult:
    """Observed vs declared order of one metric from its per-rung, per-unit values."""
    sign = 1.0 if metric.higher_is_better else -1.0
    stats = {r: mean_ci(list(values[r].values()), confidence=CONFIDENCE) for r in metric.order if values.get(r)}
    oriented = {r: sign * s.mean + 0.0 for r, s in stats.items() if s.mean is not None}
    observed = sorted(oriented, key=lambda r: -oriented[r])
    adjacent = [pair_stat(hi, lo, values, sign) for hi, lo in zip(metric.order, metric.order[1:], strict=False)]
    top_bottom = pair_stat(metric.order[0], metric.order[-1], values, sign)
    return MetricResult(
        id=metric.id,
        source=metric.source,
        higher_is_better=metric.higher_is_better,
        declared=list(metric.order),
        unordered=dict(metric.unordered),
        observed=observed,
        rungs=[RungStat(rung=r, ci=stats[r]) for r in metric.order if r in stats],
        kendall_tau=kendall_tau(metric.order, oriented),
        adjacent=adjacent,
        top_bottom=top_bottom,
        measured=metric.order[0] in stats and metric.order[-1] in stats,
        run=run,
        separates_top_bottom=top_bottom.as_declared,
    )


def failures_of(metrics: Sequence[MetricResult]) -> list[str]:
    """One phrase per headline metric that was run and did not separate its top and bottom rung as declared."""
    out = []
    for m in metrics:
        if not m.run or m.separates_top_bottom:
            continue
        tb = m.top_bottom
        if not m.measured:
            why = "not measured"
        elif tb.separates:
            why = "separated the wrong way"
        elif tb.note:
            why = tb.note
        else:
            why = f"difference CI [{tb.low:.2f}, {tb.high:.2f}] includes 0"
        out.append(f"{m.id} ({tb.better} vs {tb.worse}: {why})")
    return out


def analyse(
    ladder: Ladder,
    model: str,
    values: Values,
    *,
    config: StressConfig,
    sessions: int,
    completed: int,
    units: Sequence[str],
    faults: dict[str, FaultTally] | None = None,
) -> SensitivityReport:
    ran = {"judge": config.judge, "trajectory": True, "stress": bool(config.perturbations), "safety": True}
    metrics = [analyse_metric(m, values.get(m.id, {}), run=ran[m.source]) for m in ladder.metrics]
    return SensitivityReport(
        model=model,
        rungs=ladder.specs(model),
        cases=list(config.cases),
        seeds=list(config.seeds),
        perturbations=list(config.perturbations),
        turns=config.turns,
        sessions=sessions,
        completed=completed,
        units=len(units),
        sessions_per_unit=max(1, sessions // max(1, len(units) * len(ladder.rungs))),
        metrics=metrics,
        failures=failures_of(metrics),
        simulator_faults=dict(faults or {}),
    )


def room_responsiveness(
    ladder: Ladder, model: str, folder: RunFolder, specs: Sequence[SessionSpec]
) -> ResponsivenessReport | None:
    """Did the members answer each rung? Completed sessions, case x seed units, top rung vs `sides` separated."""
    from judges.fidelity import responsiveness, session_responsiveness

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
) -> SensitivityReport:
    """The sensitivity report of what the run folder holds now: the completed sessions of the ladder matrix (an
    interrupted run gives a report over fewer units, and says how many sessions completed)."""
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
) -> tuple[SensitivityReport, Any]:
    """Run (or resume) the ladder matrix with the stress runner, judge it, and write `sensitivity.json`."""
    from simulator.runner.stress import run_stress

    summary = await run_stress(config, matrix, client, out_dir, base=base, events=events)
    report = report_from_folder(model, ladder, config, matrix, summary.run.folder, include_faults=include_faults)
    write_report(out_dir, report)
    return report, summary
