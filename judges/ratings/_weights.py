"""Checklist item weights learned from human ratings already imported (`ratings import`), with held-out agreement.

A checklist dimension's score is the weighted mean of its items' yes-shares mapped onto the scale, so weights are
fitted where the score is made: for each rated (session, item, dimension), the features are the checklist
judgment's per-item mean yes-shares (direction applied) and the target is the human rating rescaled to 0-1.
Weights are non-negative and sum to one (non-negative least squares with a sum-to-one row), fitted on the rated
runs only: the result is a user rubric to judge *other* runs with, never the rated ones. Agreement is measured on
held-out sessions (k folds by session): mean absolute error on the scale and Spearman's rho, equal weights
beside fitted ones.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from judges.ratings._store import read_ratings
from judges.scoring._records import DimensionScore
from judges.scoring._store import read_judgment

SUM_TO_ONE = 100.0  # weight of the sum-to-one row in the least-squares fit
MIN_RATINGS = 6  # fewer rated items on a dimension: nothing is fitted for it


class FittedDimension(BaseModel):
    """Weights for one scale dimension's items, and how they do on sessions held out of the fit."""

    model_config = ConfigDict(extra="forbid")

    dimension: str
    ratings: int = Field(description="Rated items with a checklist score (averaged over raters per item).")
    sessions: int
    weights: dict[str, float] = Field(description="Item id -> fitted weight (sum 1); empty when not fitted.")
    folds: int = Field(description="Folds by session the held-out figures come from.")
    equal_mae: float | None = Field(default=None, description="Held-out mean absolute error, equal weights.")
    fitted_mae: float | None = Field(default=None, description="Held-out mean absolute error, fitted weights.")
    equal_rho: float | None = Field(default=None, description="Held-out Spearman rho with the ratings, equal weights.")
    fitted_rho: float | None = Field(default=None, description="The same with fitted weights.")
    note: str = Field(default="", description="Why nothing was fitted, if so.")


def _score_of(judgment: Any, item: str, dimension: str) -> DimensionScore | None:
    for v in judgment.verdicts:
        for s in v.scores:
            if s.item == item and s.dimension == dimension and s.answers:
                return s
    return None


def _features(score: DimensionScore) -> dict[str, float]:
    by_item: dict[str, list[float]] = {}
    for a in score.answers:
        by_item.setdefault(a.item, []).append(a.p_yes if a.direction == "yes_good" else 1.0 - a.p_yes)
    return {k: sum(v) / len(v) for k, v in by_item.items()}


def _fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from scipy.optimize import nnls

    a = np.vstack([x, np.full(x.shape[1], SUM_TO_ONE)])
    b = np.concatenate([y, [SUM_TO_ONE]])
    w, _ = nnls(a, b)
    return w / w.sum() if w.sum() > 0 else np.full(x.shape[1], 1.0 / x.shape[1])


def _rho(a: Sequence[float], b: Sequence[float]) -> float | None:
    from scipy.stats import spearmanr

    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    return float(spearmanr(a, b).statistic)


def fit_item_weights(run_dirs: Sequence[str | Path], *, folds: int = 5, seed: int = 0) -> list[FittedDimension]:
    """Per scale dimension with checklist judgments and enough ratings: fitted item weights and held-out agreement."""
    rows: dict[str, list[tuple[str, dict[str, float], float]]] = {}  # dim -> (session, features, target 0-1)
    scales: dict[str, tuple[int, int]] = {}
    for run in run_dirs:
        targets: dict[tuple[str, str, str], list[int]] = {}
        for r in read_ratings(run).ratings:
            item = "session" if r.unit == "session" else f"t{r.turn}"
            targets.setdefault((r.session_id, item, r.dimension), []).append(r.value)
        judgments: dict[str, Any] = {}
        for (sid, item, dim_id), values in targets.items():
            if sid not in judgments:
                judgments[sid] = read_judgment(run, sid)
            judgment = judgments[sid]
            if judgment is None or judgment.judge_mode != "checklist":
                continue
            dim = next((d for d in judgment.rubric.active if d.id == dim_id and d.kind == "scale"), None)
            score = _score_of(judgment, item, dim_id)
            if dim is None or score is None or dim.min is None or dim.max is None:
                continue
            scales.setdefault(dim_id, (dim.min, dim.max))
            human = (sum(values) / len(values) - dim.min) / (dim.max - dim.min)
            rows.setdefault(dim_id, []).append((f"{run}:{sid}", _features(score), human))
    out = []
    for dim_id, data in rows.items():
        items = sorted({k for _, f, _ in data for k in f})
        sessions = sorted({s for s, _, _ in data})
        lo, hi = scales[dim_id]
        base = {"dimension": dim_id, "ratings": len(data), "sessions": len(sessions)}
        k = min(folds, len(sessions))
        if len(data) < MIN_RATINGS or k < 2:
            out.append(
                FittedDimension(**base, weights={}, folds=0, note=f"needs {MIN_RATINGS}+ rated items over 2+ sessions")
            )
            continue
        x = np.array([[f.get(i, 0.5) for i in items] for _, f, _ in data])
        y = np.array([t for _, _, t in data])
        order = sessions[:]
        random.Random(seed).shuffle(order)
        fold_of = {s: i % k for i, s in enumerate(order)}
        held = np.array([fold_of[s] for s, _, _ in data])
        equal_pred, fitted_pred = np.zeros(len(y)), np.zeros(len(y))
        for f in range(k):
            train, test = held != f, held == f
            equal_pred[test] = x[test].mean(axis=1)
            fitted_pred[test] = x[test] @ _fit(x[train], y[train])
        span = hi - lo
        weights = _fit(x, y)
        out.append(
            FittedDimension(
                **base,
                weights={i: round(float(w), 4) for i, w in zip(items, weights, strict=True)},
                folds=k,
                equal_mae=round(float(np.abs(equal_pred - y).mean() * span), 4),
                fitted_mae=round(float(np.abs(fitted_pred - y).mean() * span), 4),
                equal_rho=_rho(list(equal_pred), list(y)),
                fitted_rho=_rho(list(fitted_pred), list(y)),
            )
        )
    return out


def weights_rubric(fitted: Sequence[FittedDimension]) -> dict[str, Any]:
    """A user rubric (for `judge --rubric`) that sets the fitted weights on the built-in items."""
    return {
        "dimensions": [
            {"id": f.dimension, "checklist": [{"id": i, "weight": w} for i, w in f.weights.items()]}
            for f in fitted
            if f.weights
        ]
    }
