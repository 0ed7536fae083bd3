"""Prediction-powered inference: supporter means per dimension that use the few human ratings to debias the many
judge scores (Angelopoulos et al., Science 2023; PPI++ power tuning as `ppi_py` does by default).

For one supporter and dimension, the units are that dimension's items (sessions for session dimensions,
interventions for intervention dimensions). Rated units give pairs (human mean over raters, judge panel mean);
the rest give judge scores only. Three estimates of the mean per item, each with its CI:

- judge-only: the mean of the judge scores over all units (classical CI; biased if the judges are);
- human-only: the mean of the human scores over the rated units (classical CI; unbiased, wide);
- PPI: the judges' mean over the unrated units corrected by the human-judge gap on the rated ones
  (`ppi_py.ppi_mean_ci`, `ppi_py.ppi_mean_pointestimate`).

No estimate is made from fewer than 2 rated units.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from judges.ratings._import import ItemIndex, item_index
from judges.ratings._store import read_ratings
from judges.stats._intervals import MeanCI

MIN_LABELED = 2


class PPIEstimate(BaseModel):
    """One supporter's mean on one dimension: judge-only, human-only and prediction-powered, with CIs."""

    model_config = ConfigDict(extra="forbid")

    supporter: str = Field(description="As the leaderboard names it (`<spec> [oracle]` for oracle runs).")
    dimension: str
    level: str = Field(description="`session` or `intervention`: what one unit is.")
    labeled: int = Field(description="Units with human ratings.")
    unlabeled: int = Field(description="Units with judge scores only.")
    judge: MeanCI = Field(description="Judge-only mean over all units.")
    human: MeanCI = Field(description="Human-only mean over the rated units.")
    ppi: MeanCI = Field(description="Prediction-powered mean.")


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


def ppi_mean(
    human: Sequence[float], judge_rated: Sequence[float], judge_unrated: Sequence[float], confidence: float = 0.95
) -> MeanCI:
    """The prediction-powered mean with its CI (`ppi_py`); no estimate with fewer than 2 rated or 1 unrated unit."""
    n = len(human)
    if n < MIN_LABELED or not judge_unrated:
        return MeanCI(n=n, mean=None, confidence=confidence)
    import numpy as np
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    y, yhat, yu = (np.asarray(v, dtype=float) for v in (human, judge_rated, judge_unrated))
    point = float(np.ravel(ppi_mean_pointestimate(y, yhat, yu))[0])
    lo, hi = ppi_mean_ci(y, yhat, yu, alpha=1 - confidence)
    return MeanCI(n=n, mean=point, low=float(np.ravel(lo)[0]), high=float(np.ravel(hi)[0]), confidence=confidence)


def ppi_estimates(
    run_dirs: Sequence[str | Path], *, confidence: float = 0.95, index: ItemIndex | None = None
) -> list[PPIEstimate]:
    """Per supporter and rated dimension: judge-only, human-only and PPI means (only where humans rated)."""
    index = index or item_index(run_dirs)
    human: dict[str, dict[str, list[int]]] = {}  # item -> dimension -> values
    for d in run_dirs:
        for r in read_ratings(d).ratings:
            human.setdefault(r.item_id, {}).setdefault(r.dimension, []).append(r.value)
    rated_dims = list(dict.fromkeys(dim for by_dim in human.values() for dim in by_dim))
    supporters = list(dict.fromkeys(u.label for u in index.units.values()))
    out = []
    for supporter in supporters:
        for dim in [d for d in index.dimensions if d in rated_dims]:
            units = [u for u in index.units.values() if u.label == supporter and dim in u.judge]
            rated = [u for u in units if dim in human.get(u.item_id, {})]
            if not rated:
                continue
            unrated = [u for u in units if dim not in human.get(u.item_id, {})]
            y = [sum(human[u.item_id][dim]) / len(human[u.item_id][dim]) for u in rated]
            yhat = [u.judge[dim] for u in rated]
            yu = [u.judge[dim] for u in unrated]
            out.append(
                PPIEstimate(
                    supporter=supporter,
                    dimension=dim,
                    level=index.dimensions[dim].level,
                    labeled=len(rated),
                    unlabeled=len(unrated),
                    judge=_classical(yhat + yu, confidence),
                    human=_classical(y, confidence),
                    ppi=ppi_mean(y, yhat, yu, confidence),
                )
            )
    return out
