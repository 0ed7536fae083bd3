"""Probability designs: selections in which every candidate unit has a known inclusion probability pi > 0, so the
ratings they bring can be weighted by 1/pi and still describe the whole run (judges.ratings._ppi).

The frame is the units still available when the strategy runs (not rated in an earlier import, not taken by an
earlier strategy of the same export); pi is the probability that a unit of the frame is drawn. Each design also
says what pi it would have given the units outside its frame; the export records both for every unit, so ratings
of several batches can be weighted by their union probability (judges.ratings._store.union_probabilities).

- `random`: a simple random sample of n from the frame's N units: pi = n / N.
- `stratified`: strata are (case, supporter, perturbation, judge-score bin); n is spread evenly over the strata
  (a stratum smaller than its share gives all its units, the rest goes to the others; the r items left after an
  even split go to r strata drawn at random), then a simple random sample within each: pi = E[n_h] / N_h.
- `active`: pi_i proportional to the square root of the unit's expected squared human-judge gap, BASE + judge
  uncertainty (BASE: what remains where the judges are sure, a rater's own spread; at least FLOOR times the
  frame's mean, so no unit has a pi near 0), scaled so the pi add up to n (a pi above 1 is set to 1 and the excess
  spread over the others), then each unit drawn independently with its pi (Poisson sampling, seeded).
  Sampling in proportion to the root of the expected squared judge error is what minimises the variance of the
  weighted estimate for a given expected number of ratings (cost-optimal active evaluation; Zrnic & Candes 2024).

The judge uncertainty of a unit (score points squared, averaged over its dimensions) is what the run records hold:
(panel spread / 2)^2 + (spread across repeated judgments / 2)^2 + p (1 - p), where p is the fractional part of the
panel mean (0.25 when the panel mean sits half-way between two scale points, the decision boundary; 0 on a point).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from judges.ratings._units import Unit

BASE = 0.25  # squared human-judge gap where the judges are sure: a rater's own spread, about half a scale point
FLOOR = 0.2  # least root uncertainty, as a share of the frame's mean root uncertainty
UNKNOWN = "unknown-probability"


def dimension_uncertainty(u: Unit, dim: str) -> float:
    """Expected squared judge error proxy on one dimension (score points squared)."""
    mean = u.judge.get(dim)
    if mean is None:
        return 0.0
    frac = mean - math.floor(mean)
    spread = u.spread.get(dim, 0) / 2
    repeat = u.repeat_spread.get(dim, 0) / 2
    return spread * spread + repeat * repeat + frac * (1 - frac)


def uncertainty(u: Unit, dims: Sequence[str] | None = None) -> float:
    """The unit's judge uncertainty: `dimension_uncertainty` averaged over its (or the given) dimensions."""
    ds = [d for d in (dims if dims is not None else u.dimensions) if d in u.judge]
    return sum(dimension_uncertainty(u, d) for d in ds) / len(ds) if ds else 0.0


def floor_level(roots: Sequence[float]) -> float:
    """The least root uncertainty a frame allows: FLOOR x the frame's mean (1 when all are 0: all equal)."""
    mean = sum(roots) / len(roots) if roots else 0.0
    return FLOOR * mean if mean > 0 else 1.0


def floored(roots: Sequence[float]) -> list[float]:
    """Root uncertainties raised to at least FLOOR x their mean (all equal when none is above 0)."""
    if not roots:
        return []
    if sum(roots) <= 0:
        return [1.0] * len(roots)
    level = floor_level(roots)
    return [max(r, level) for r in roots]


def proportional_scale(sizes: Sequence[float], n: float) -> float:
    """c such that sum of min(1, c x size_i) is min(n, count): capped units at 1, the excess spread over the others."""
    if n >= len(sizes):
        return math.inf
    free = list(sizes)
    budget = float(n)
    while True:
        total = sum(free)
        c = budget / total if total > 0 else 0.0
        over = [x for x in free if c * x >= 1]
        if not over:
            return c
        free = [x for x in free if c * x < 1]
        budget -= len(over)


def proportional_pi(sizes: Sequence[float], n: float) -> list[float]:
    """pi_i = min(1, c x size_i) with c chosen so the pi add up to min(n, count) (capped ones redistributed)."""
    c = proportional_scale(sizes, n)
    return [1.0 if c == math.inf else min(1.0, c * x) for x in sizes]


def sampling_sizes(uncertainties: Sequence[float]) -> list[float]:
    """What active pi is proportional to: the root of the expected squared human-judge gap, BASE + uncertainty,
    floored."""
    return floored([math.sqrt(BASE + x) for x in uncertainties])


def active_pi(units: Sequence[Unit], n: float, dims: Sequence[str] | None = None) -> list[float]:
    """Each unit's inclusion probability in an active draw of expected size n."""
    return proportional_pi(sampling_sizes([uncertainty(u, dims) for u in units]), n)


def active_design(frame: Sequence[Unit], n: float) -> tuple[list[float], Callable[[Unit], float]]:
    """(pi of each frame unit, the pi any unit would have had in this draw): the second gives units outside the
    frame (rated before, taken by an earlier strategy) the probability the same design would have given them."""
    roots = [math.sqrt(BASE + uncertainty(u)) for u in frame]
    level = floor_level(roots)
    sizes = [max(r, level) for r in roots]
    c = proportional_scale(sizes, n)

    def pi_of(u: Unit) -> float:
        return 1.0 if c == math.inf else min(1.0, c * max(math.sqrt(BASE + uncertainty(u)), level))

    return [1.0 if c == math.inf else min(1.0, c * x) for x in sizes], pi_of


def poisson_draw(pi: Sequence[float], rng: random.Random) -> list[int]:
    """Indices drawn, each independently with its probability."""
    return [i for i, p in enumerate(pi) if rng.random() < p]


def score_bin(u: Unit) -> int:
    return int(u.mean_score + 0.5)


def stratum(u: Unit) -> tuple:
    return (u.case_id, u.label, u.perturbation or "", score_bin(u))


def stratified_allocation(sizes: dict[tuple, int], n: int, rng: random.Random) -> tuple[dict, dict]:
    """(units drawn per stratum, expected units per stratum): an even split of n over the strata, a stratum
    giving all it has when that is less; the remainder goes to strata drawn at random among those with room."""
    keys = sorted(sizes)
    if n >= sum(sizes.values()):
        return dict(sizes), {k: float(v) for k, v in sizes.items()}
    level = 0
    while sum(min(sizes[k], level + 1) for k in keys) <= n:
        level += 1
    base = {k: min(sizes[k], level) for k in keys}
    left = n - sum(base.values())
    room = [k for k in keys if sizes[k] > level]
    lucky = set(rng.sample(room, left)) if left else set()
    drawn = {k: base[k] + (k in lucky) for k in keys}
    expected = {k: base[k] + (left / len(room) if k in room else 0.0) for k in keys}
    return drawn, expected
