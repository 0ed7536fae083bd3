"""Small statistics used across judges: bootstrap confidence intervals and the Gini coefficient. Pure functions."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0


class MeanCI(BaseModel):
    """A mean with its percentile-bootstrap confidence interval (over independent units, e.g. sessions)."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(description="Number of values.")
    mean: float | None = Field(description="Arithmetic mean; None when there are no values.")
    low: float | None = Field(default=None, description="Lower bound of the interval.")
    high: float | None = Field(default=None, description="Upper bound of the interval.")
    confidence: float = Field(default=0.95, description="Coverage of the interval.")

    def render(self, digits: int = 2) -> str:
        if self.mean is None:
            return "-"
        if self.low is None or self.high is None or self.n < 2:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def bootstrap_ci(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval for the mean: resample with replacement `n_resamples` times (seeded numpy
    generator, so the same input and seed give the same interval), take the (1-c)/2 and (1+c)/2 percentiles of the
    resampled means. None for no values; a single value gives a zero-width interval at that value.
    """
    import numpy as np

    if not 0 < confidence < 1:
        raise ValueError("confidence must lie strictly between 0 and 1")
    data = np.asarray(list(values), dtype=float)
    if data.size == 0:
        return None
    if data.size == 1 or np.all(data == data[0]):
        return float(data[0]), float(data[0])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.size, size=(n_resamples, data.size))
    means = data[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def t_interval(values: Sequence[float], *, confidence: float = 0.95) -> tuple[float, float] | None:
    """Student-t interval for the mean of `values`. With a handful of units (a sensitivity run has 4-10) the
    percentile bootstrap is too narrow: it excludes 0 whenever every value is positive, however they scatter;
    the t interval widens with the few degrees of freedom. None for fewer than two values."""
    import numpy as np
    from scipy.stats import t

    data = np.asarray(list(values), dtype=float)
    if data.size < 2:
        return None
    mean = float(data.mean())
    half = float(t.ppf((1 + confidence) / 2, data.size - 1) * data.std(ddof=1) / np.sqrt(data.size))
    return mean - half, mean + half


def paired_difference_ci(differences: Sequence[float], *, confidence: float = 0.95) -> tuple[float, float] | None:
    """CI of the mean paired difference: the hull of the percentile bootstrap and the Student-t interval. With the
    few units a comparison of supporters has, the bootstrap alone excludes 0 whenever every difference has the same
    sign, however they scatter; the t interval does not. Identical differences give a zero-width interval at that
    value (a single one too); None for none."""
    boot = bootstrap_ci(differences, confidence=confidence)
    if boot is None:
        return None
    t = t_interval(differences, confidence=confidence)
    if t is None or boot[0] == boot[1]:
        return boot
    return min(boot[0], t[0]), max(boot[1], t[1])


def sign_test_p(n: int) -> float:
    """Two-sided exact sign test p-value when all `n` paired differences have the same sign."""
    return min(1.0, 2 * 0.5**n)


def units_for_sign_test(confidence: float = 0.95) -> int:
    """The fewest same-signed differences a sign test needs to exclude 0 at `confidence` (6 at 95%)."""
    return next(n for n in range(1, 64) if sign_test_p(n) < 1 - confidence)


def difference_separates(differences: Sequence[float], ci: tuple[float, float], *, confidence: float = 0.95) -> bool:
    """Does the paired difference exclude 0? Its CI must, and when every difference is the same non-zero value
    (a zero-width CI: the spread is unknown, not zero; integer judge scores often tie) a sign test must too."""
    if not (ci[0] > 0 or ci[1] < 0):
        return False
    if len(set(differences)) == 1:
        return sign_test_p(len(differences)) < 1 - confidence
    return True


def mean_ci(values: Sequence[float], *, confidence: float = 0.95, seed: int = DEFAULT_SEED) -> MeanCI:
    """`MeanCI` of `values` (bootstrap over them)."""
    vals = [float(v) for v in values]
    if not vals:
        return MeanCI(n=0, mean=None, confidence=confidence)
    ci = bootstrap_ci(vals, confidence=confidence, seed=seed)
    assert ci is not None
    return MeanCI(n=len(vals), mean=sum(vals) / len(vals), low=ci[0], high=ci[1], confidence=confidence)


def gini(values: Sequence[float]) -> float | None:
    """Gini coefficient: sum_i sum_j |x_i - x_j| / (2 n^2 mean). 0 = perfectly even; (n-1)/n = all on one.

    None for no values or a zero total (nothing to distribute). Values must be non-negative.
    """
    xs = [float(v) for v in values]
    if not xs:
        return None
    if any(x < 0 for x in xs):
        raise ValueError("gini needs non-negative values")
    total = sum(xs)
    if total == 0:
        return None
    n = len(xs)
    diff = sum(abs(a - b) for a in xs for b in xs)
    return diff / (2 * n * n * (total / n))
