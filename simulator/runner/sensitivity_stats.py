"""Observed against declared order of each headline metric over the ladder's rungs, and the report that holds it.

Statistics are over units, one unit being a case x seed (its value: the mean over that unit's sessions, one per
listed perturbation, `none` meaning unperturbed), never over turns: each rung's
mean with a percentile-bootstrap 95% CI over its units; Kendall's tau between the declared and observed order;
for each adjacent declared pair, a 95% CI of the paired difference over the units both rungs share (the pair
separates when it excludes 0), and the units per rung a paired test needs for 80% power at the observed variance of
the differences and their mean (None when the difference is 0), counted in case x seed units (`sessions_per_unit`
sessions each). The difference CI is the hull of the percentile bootstrap and the paired Student-t interval: a
run has a handful of units, and a bootstrap over four of them excludes 0 whenever all four differences are
positive, however they scatter; the t interval does not. Nothing is claimed from fewer than two shared units,
identical values never separate (their difference CI is [0, 0]), and the same non-zero difference on every unit
(a zero-width CI: integer judge scores tie often) separates only when a sign test can, from 6 units at 95%.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from judges import FaultTally, MeanCI, difference_separates, mean_ci, paired_difference_ci, units_for_sign_test
from judges.room_audit import ResponsivenessReport
from simulator.runner.sensitivity_ladder import Ladder, LadderMetric
from simulator.runner.stress_config import StressConfig

SENSITIVITY_SCHEMA_VERSION = 1
CONFIDENCE = 0.95
POWER = 0.80
Z_ALPHA = 1.959963984540054  # two-sided 5%
Z_POWER = 0.8416212335729143  # 80% power
MIN_SHARED = 2  # fewer shared units than this separate nothing

Values = dict[str, dict[str, dict[str, float]]]  # metric -> rung -> unit -> value


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


class HumanDistance(BaseModel):
    """The `human` reference against one rung, paired over the case x seed x perturbation units both played."""

    model_config = ConfigDict(extra="forbid")

    rung: str
    shared_units: int
    difference: float | None = Field(description="Mean of human - rung, oriented so > 0 is the human doing better.")
    low: float | None = None
    high: float | None = None
    separates: bool = Field(description="The CI of the paired difference excludes 0 (from >= 2 shared units).")
    note: str = ""


class HumanMetric(BaseModel):
    """Where the `human` reference sits on one metric: its mean and its distance to each rung (no order check)."""

    model_config = ConfigDict(extra="forbid")

    ci: MeanCI = Field(description="Mean over the human's matched units with its bootstrap CI (raw scale).")
    distances: list[HumanDistance]


class HumanReference(BaseModel):
    """The human sessions read beside the ladder (`sensitivity --human`): never simulated, judged like the rungs."""

    model_config = ConfigDict(extra="forbid")

    beside: str = Field(description="The rung the ladder data places the reference beside (unranked).")
    folders: list[str]
    sessions: int = Field(description="Human sessions read from the folders.")
    units: list[str] = Field(description="Case x seed x perturbation units a human session was paired on.")
    unmatched: list[str] = Field(description="Human sessions and ladder units that could not be paired, and why.")
    simulator_faults: FaultTally | None = Field(
        default=None, description="Human sessions in which the simulated room malfunctioned (as for the rungs)."
    )


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
    human: HumanMetric | None = Field(
        default=None, description="The `human` reference's mean and distances (None: no --human, or no value)."
    )


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
    human: HumanReference | None = Field(default=None, description="The `human` reference (--human), if given.")

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


SIGN_TEST_UNITS = units_for_sign_test(CONFIDENCE)  # same-signed units a sign test needs (6 at 95%)


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
    separates = difference_separates(diffs, ci, confidence=CONFIDENCE)
    no_spread = len(set(diffs)) == 1 and diffs[0] != 0
    return PairStat(
        better=better,
        worse=worse,
        shared_units=len(shared),
        difference=mean,
        low=ci[0],
        high=ci[1],
        separates=separates,
        as_declared=separates and mean > 0,
        sessions_for_power=max(SIGN_TEST_UNITS, len(diffs)) if no_spread else sessions_for_power(diffs, mean),
        note="" if separates else _unseparated_note(diffs, no_spread),
    )


def _unseparated_note(diffs: Sequence[float], no_spread: bool) -> str:
    """Why a pair that does not separate could not, where that is more than a wide interval."""
    if all(d == 0 for d in diffs):
        return "identical on every shared unit"
    if no_spread:
        return (
            f"the same difference on all {len(diffs)} units: no spread to estimate; a sign test needs {SIGN_TEST_UNITS}"
        )
    return ""


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
    ran = {
        "judge": config.judge,
        "trajectory": True,
        "room": True,
        "stress": bool(config.perturbations),
        "safety": True,
    }
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
