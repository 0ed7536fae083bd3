"""Judge-human agreement per dimension, and agreement among the human raters. Pure functions over lists.

The unit of comparison is one human rating against the judge panel's score for the same item and dimension
(the panel mean; for the categorical statistics, that mean rounded half up to a scale point). So an item rated
by three people counts three times, once per rating.

- exact: share of ratings equal to the judge's (rounded) score; within_one: share at most one point away;
- mae: mean absolute difference from the judge's mean score;
- spearman: rank correlation (scipy.stats.spearmanr) between the judge's mean and the human score;
- weighted_kappa: Cohen's kappa with quadratic weights over the dimension's scale
  (sklearn.metrics.cohen_kappa_score);
- alpha: Krippendorff's alpha (interval) with the judge panel as one rater and each human as another, over items;
- human_exact / human_alpha: among humans only, over items two or more of them rated (pairwise exact match;
  Krippendorff's alpha, interval).

A statistic that is undefined (no variation, too few items) is None, never a made-up number.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from itertools import combinations

from pydantic import BaseModel, ConfigDict, Field

from judges.stats._agreement import krippendorff_alpha


class RatingPair(BaseModel):
    """One human rating with the judge panel's score for the same item and dimension."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    dimension: str
    rater: str
    human: int
    judge: float = Field(description="The judge panel's mean score.")


class HumanAgreement(BaseModel):
    """Judge-human agreement on one dimension (or `all`, pooled)."""

    model_config = ConfigDict(extra="forbid")

    dimension: str
    items: int = Field(description="Items with at least one human rating.")
    ratings: int = Field(description="Human ratings compared with the judges.")
    raters: int = Field(description="Distinct human raters.")
    exact: float | None = Field(description="Share of ratings equal to the judges' rounded score.")
    within_one: float | None = Field(description="Share of ratings at most 1 point from the judges' rounded score.")
    mae: float | None = Field(description="Mean absolute difference from the judges' mean score.")
    spearman: float | None = Field(description="Spearman rank correlation, judges' mean vs human score.")
    weighted_kappa: float | None = Field(description="Cohen's kappa, quadratic weights, over the scale's points.")
    alpha: float | None = Field(description="Krippendorff's alpha (interval), judge panel + each human as raters.")
    human_items: int = Field(description="Items rated by two or more humans.")
    human_exact: float | None = Field(description="Pairwise exact match among humans on those items.")
    human_alpha: float | None = Field(description="Krippendorff's alpha (interval) among humans only.")


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    from scipy.stats import spearmanr

    return _finite(spearmanr(a, b).statistic)


def _kappa(human: Sequence[int], judge: Sequence[int], scale: tuple[int, int]) -> float | None:
    if not human:
        return None
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    labels = list(range(scale[0], scale[1] + 1))
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(human, judge, labels=labels, weights="quadratic")
    return _finite(value)


def agreement(dimension: str, pairs: Sequence[RatingPair], scale: tuple[int, int] | None) -> HumanAgreement:
    """Agreement statistics for `pairs` (one dimension, or several sharing `scale`; `scale` None: no kappa)."""
    human = [p.human for p in pairs]
    judge_mean = [p.judge for p in pairs]
    judge_int = [round_half_up(p.judge) for p in pairs]
    n = len(pairs)
    items = sorted({(p.dimension, p.item_id) for p in pairs})
    raters = sorted({p.rater for p in pairs})
    # Krippendorff: rows = judge panel + each rater; columns = (dimension, item)
    col = {it: i for i, it in enumerate(items)}
    judge_row: list[float | None] = [None] * len(items)
    rows: dict[str, list[float | None]] = {r: [None] * len(items) for r in raters}
    for p in pairs:
        judge_row[col[(p.dimension, p.item_id)]] = p.judge
        rows[p.rater][col[(p.dimension, p.item_id)]] = p.human
    alpha = krippendorff_alpha([judge_row, *rows.values()], "interval") if n else None
    by_item: dict[tuple[str, str], list[int]] = {}
    for p in pairs:
        by_item.setdefault((p.dimension, p.item_id), []).append(p.human)
    shared = {k: v for k, v in by_item.items() if len(v) >= 2}
    same = [a == b for vals in shared.values() for a, b in combinations(vals, 2)]
    return HumanAgreement(
        dimension=dimension,
        items=len(items),
        ratings=n,
        raters=len(raters),
        exact=sum(h == j for h, j in zip(human, judge_int)) / n if n else None,
        within_one=sum(abs(h - j) <= 1 for h, j in zip(human, judge_int)) / n if n else None,
        mae=sum(abs(h - j) for h, j in zip(human, judge_mean)) / n if n else None,
        spearman=_spearman(judge_mean, human),
        weighted_kappa=_kappa(human, judge_int, scale) if scale is not None else None,
        alpha=alpha,
        human_items=len(shared),
        human_exact=sum(same) / len(same) if same else None,
        human_alpha=krippendorff_alpha(list(rows.values()), "interval") if len(raters) >= 2 and shared else None,
    )


def agreement_by_dimension(
    pairs: Sequence[RatingPair], scales: dict[str, tuple[int, int]], order: Sequence[str] | None = None
) -> list[HumanAgreement]:
    """One row per dimension (in `order`, else first seen), then `all` pooled over every dimension."""
    dims = list(order) if order is not None else list(dict.fromkeys(p.dimension for p in pairs))
    out = [agreement(d, [p for p in pairs if p.dimension == d], scales.get(d)) for d in dims]
    out = [a for a in out if a.ratings]
    if len(out) > 1:
        used = {scales.get(a.dimension) for a in out}
        out.append(agreement("all", list(pairs), used.pop() if len(used) == 1 else None))
    return out
