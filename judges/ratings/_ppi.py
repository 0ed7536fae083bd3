"""Human-corrected supporter means: prediction-powered inference weighted by inverse inclusion probabilities
(IPW-PPI; Angelopoulos et al., Science 2023; PPI++ power tuning; active statistical inference, Zrnic & Candes 2024).

For one supporter and dimension the population is that supporter's N judged items on the dimension (sessions, or
supporter turns), each with the judge panel's mean f_i. A rated item counts in a mean only when the export that
sent it out knew its inclusion probability pi_i (a `random`, `stratified` or `active` batch): it gives the pair
(y_i = mean over raters, f_i) with weight w_i = 1/pi_i. Items picked deterministically (disagreement, extremes,
unstable, pairs) have no known probability: they count in judge-human agreement only, never in a mean here.
When several batches rated a run, pi_i is the probability that any of them would draw item i, 1 - prod(1 - pi_b,i)
(each batch records the probability its design gave every unit, drawn or not), so a pilot and a later active
batch are weighted as one sample from their mixture rather than as two samples each standing for the whole run.

- judge-only: the mean of f over all N items (classical CI);
- human-only: the weighted (Hajek) mean of y over the known-pi rated items, sum(w y) / sum(w);
- PPI: lambda x mean(f over all N items) + the Hajek mean of d = y - lambda f over the rated items.

Variance of a Hajek mean of x: sum_i (w_i / sum w)^2 (x_i - xbar_w)^2; the PPI variance adds lambda^2 var(f) / N.
Under Poisson or simple random sampling from a run that is itself a sample of sessions, this estimates the
variance around the supporter's expected human score (which is what the judge-only CI describes too). lambda
(PPI++ power tuning) is the value that minimises that estimated variance, sum (w/W)^2 (y - ybar)(f - fbar) /
(var(f) / N + sum (w/W)^2 (f - fbar)^2), clipped to [0, 1]; with equal weights it is ppi_py's choice up to how
var(f) is pooled. Intervals are normal (z), as ppi_py's. With every pi equal and the same lambda, all of this is
exactly ppi_py's `classical_mean_ci` and `ppi_mean_ci(Y, Yhat, Yhat_all, lam=lambda)` (tested). `ppi_py`'s own weights are not used: it rescales them to mean 1 and
takes the spread of w x (Y - Yhat) rather than of w x (d - dbar), which misstates a weighted mean's variance.

n_eff is Kish's effective number of ratings, (sum w)^2 / sum w^2. No estimate from fewer than 2 known-pi items.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from judges.ratings._import import ItemIndex, item_index
from judges.ratings._store import read_ratings, union_probabilities
from judges.stats._intervals import MeanCI

MIN_LABELED = 2


class PPIEstimate(BaseModel):
    """One supporter's mean on one dimension: judge-only, human-only and prediction-powered, with CIs."""

    model_config = ConfigDict(extra="forbid")

    supporter: str = Field(description="As the leaderboard names it (`<spec> [oracle]` for oracle runs).")
    dimension: str
    level: str = Field(description="`session` or `intervention`: what one unit is.")
    labeled: int = Field(description="Rated units of known inclusion probability (the ones in the means).")
    unknown_pi: int = Field(default=0, description="Rated units of unknown probability: agreement figures only.")
    unlabeled: int = Field(description="Units with judge scores only.")
    n_eff: float | None = Field(default=None, description="Kish effective number of ratings, (sum w)^2 / sum w^2.")
    designs: dict[str, int] = Field(default_factory=dict, description="Design -> rated units in the means.")
    lam: float | None = Field(default=None, description="PPI++ power-tuning weight used (0: human-only, 1: PPI).")
    judge: MeanCI = Field(description="Judge-only mean over all units.")
    human: MeanCI = Field(description="Human-only mean over the known-pi rated units, weighted by 1/pi.")
    ppi: MeanCI = Field(description="Prediction-powered mean, weighted by 1/pi.")


def normal_quantile(confidence: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - confidence) / 2))


def _classical(values: Sequence[float], confidence: float) -> MeanCI:
    if not values:
        return MeanCI(n=0, mean=None, confidence=confidence)
    mean = sum(values) / len(values)
    if len(values) < 2:
        return MeanCI(n=len(values), mean=mean, confidence=confidence)
    import numpy as np
    from ppi_py import classical_mean_ci

    lo, hi = classical_mean_ci(np.asarray(values, dtype=float), alpha=1 - confidence)
    return MeanCI(n=len(values), mean=mean, low=float(lo), high=float(hi), confidence=confidence)


def effective_n(pi: Sequence[float]) -> float:
    """Kish's effective sample size of weights 1/pi."""
    w = [1 / p for p in pi]
    return sum(w) ** 2 / sum(x * x for x in w)


def _weights(pi: Sequence[float]):
    import numpy as np

    p = np.asarray(pi, dtype=float)
    if p.size and (np.any(p <= 0) or np.any(p > 1)):
        raise ValueError("inclusion probabilities must lie in (0, 1]")
    w = 1 / p
    return w / w.sum()


def hajek_mean(values: Sequence[float], pi: Sequence[float], confidence: float = 0.95) -> MeanCI:
    """The 1/pi-weighted mean of `values` with its normal CI (none from one value); equal pi: the classical one."""
    n = len(values)
    if n == 0:
        return MeanCI(n=0, mean=None, confidence=confidence)
    import numpy as np

    x = np.asarray(values, dtype=float)
    w = _weights(pi)
    mean = float(w @ x)
    if n < MIN_LABELED:
        return MeanCI(n=n, mean=mean, confidence=confidence)
    se = float(np.sqrt(np.sum(w**2 * (x - mean) ** 2)))
    z = normal_quantile(confidence)
    return MeanCI(n=n, mean=mean, low=mean - z * se, high=mean + z * se, confidence=confidence)


def ipw_ppi_mean(
    human: Sequence[float],
    judge_rated: Sequence[float],
    pi: Sequence[float],
    judge_all: Sequence[float],
    confidence: float = 0.95,
    lam: float | None = None,
) -> tuple[MeanCI, float | None]:
    """(the IPW prediction-powered mean with its CI, the lambda used). `judge_all`: every item's judge score, the
    rated ones included. No estimate with fewer than 2 rated items. `lam=None`: PPI++ tuning (see module doc)."""
    n = len(human)
    if n < MIN_LABELED or not judge_all:
        return MeanCI(n=n, mean=None, confidence=confidence), None
    import numpy as np

    y, f, big = (np.asarray(v, dtype=float) for v in (human, judge_rated, judge_all))
    w = _weights(pi)
    N = big.size
    if lam is None:  # the lambda that minimises the estimated variance below
        w2 = w**2
        cov = float(np.sum(w2 * (y - w @ y) * (f - w @ f)))
        var = float(np.var(big)) / N + float(np.sum(w2 * (f - w @ f) ** 2))
        lam = float(np.clip(cov / var, 0, 1)) if var > 0 else 0.0
    d = y - lam * f
    dbar = float(w @ d)
    mean = lam * float(big.mean()) + dbar
    var = lam**2 * float(np.var(big)) / N + float(np.sum(w**2 * (d - dbar) ** 2))
    half = normal_quantile(confidence) * var**0.5
    return MeanCI(n=n, mean=mean, low=mean - half, high=mean + half, confidence=confidence), lam


def rated_items(
    run_dirs: Sequence[str | Path],
) -> tuple[dict[str, dict[str, list[int]]], dict[str, tuple[float | None, str]]]:
    """(item -> dimension -> human values, item -> (weighting probability, design)). An item drawn by a design
    is weighted by its union probability over every known-probability batch (`union_probabilities`); an item
    only ever picked deterministically has probability None."""
    union = union_probabilities(run_dirs)
    human: dict[str, dict[str, list[int]]] = {}
    pis: dict[str, tuple[float | None, str]] = {}
    for d in run_dirs:
        for r in read_ratings(d).ratings:
            human.setdefault(r.item_id, {}).setdefault(r.dimension, []).append(r.value)
            if r.pi is not None or r.item_id not in pis:
                pis[r.item_id] = (union.get(r.item_id, r.pi) if r.pi is not None else None, r.design)
    return human, pis


def ppi_estimates(
    run_dirs: Sequence[str | Path], *, confidence: float = 0.95, index: ItemIndex | None = None
) -> list[PPIEstimate]:
    """Per supporter and rated dimension: judge-only, human-only and IPW-PPI means (only where humans rated)."""
    index = index or item_index(run_dirs)
    human, pis = rated_items(run_dirs)
    rated_dims = list(dict.fromkeys(dim for by_dim in human.values() for dim in by_dim))
    supporters = list(dict.fromkeys(u.label for u in index.units.values()))
    out = []
    for supporter in supporters:
        for dim in [d for d in index.dimensions if d in rated_dims]:
            units = [u for u in index.units.values() if u.label == supporter and dim in u.judge]
            rated = [u for u in units if dim in human.get(u.item_id, {})]
            if not rated:
                continue
            known = [u for u in rated if pis[u.item_id][0] is not None]
            y = [sum(human[u.item_id][dim]) / len(human[u.item_id][dim]) for u in known]
            f = [u.judge[dim] for u in known]
            pi = [pis[u.item_id][0] for u in known]
            designs: dict[str, int] = {}
            for u in known:
                designs[pis[u.item_id][1]] = designs.get(pis[u.item_id][1], 0) + 1
            ppi, lam = ipw_ppi_mean(y, f, pi, [u.judge[dim] for u in units], confidence)  # type: ignore[arg-type]
            out.append(
                PPIEstimate(
                    supporter=supporter,
                    dimension=dim,
                    level=index.dimensions[dim].level,
                    labeled=len(known),
                    unknown_pi=len(rated) - len(known),
                    unlabeled=len(units) - len(rated),
                    n_eff=effective_n(pi) if known else None,  # type: ignore[arg-type]
                    designs=designs,
                    lam=lam,
                    judge=_classical([u.judge[dim] for u in units], confidence),
                    human=hajek_mean(y, pi, confidence),  # type: ignore[arg-type]
                    ppi=ppi,
                )
            )
    return out
