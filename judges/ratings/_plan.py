"""Where the next ratings pay most: per supporter and dimension, how many more `active` ratings would bring the
IPW-PPI interval to a target width (`rescue-sim ratings plan RUN... --target-width W`).

The interval's variance has a judge part, lambda^2 var(f) / N, that no rating shrinks, and a rating part. If the
judge part alone is wider than the target, no number of ratings reaches it, and the plan says so. Otherwise the
rating part must fall to R = (W / 2z)^2 - judge part. The rating part is modelled as 1 / N^2 x sum_i (a + b s_i^2)
/ pi_i: s_i the root of the expected squared human-judge gap (`_designs.sampling_sizes`), pi_i the item's union
probability over the batches so far and a new active batch of expected size m over the unrated items (pi
proportional to s), and a + b s^2 the squared gap d - dbar (d = human - lambda judge) fitted to the items already
rated (weighted least squares, weights 1/pi where the probability is known). The plan asks for the least m whose
projected rating part fits in R. With no ratings yet there is nothing to fit: the plan asks for a pilot batch.

A plan is approximate by nature (it trusts that error grows with the recorded uncertainty as it did so far); rerun
it after each import. `export --select active --plan PLAN` draws, per supporter, the largest number the plan asks
for over that supporter's dimensions at the export's unit level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from judges.ratings._designs import proportional_scale, sampling_sizes, uncertainty
from judges.ratings._import import item_index
from judges.ratings._ppi import ipw_ppi_mean, normal_quantile, rated_items
from judges.ratings._store import union_probabilities
from personas.common.errors import Param, ParameterError

PLAN_SCHEMA_VERSION = 1
PILOT = 30  # ratings to ask for when nothing is rated yet


class PlanError(ParameterError):
    """A plan that cannot be made or read."""


class PlanRow(BaseModel):
    """One supporter and dimension: where its interval stands and how many more active ratings it needs."""

    model_config = ConfigDict(extra="forbid")

    supporter: str = Field(description="As the leaderboard names it.")
    dimension: str
    level: str = Field(description="`session` or `intervention`: the export `--unit` these ratings need.")
    items: int = Field(description="Judged items (N).")
    rated: int = Field(description="Rated items of known inclusion probability.")
    unrated: int = Field(description="Items not rated yet (what an export can still draw).")
    width: float | None = Field(description="Current IPW-PPI interval width; None: no estimate yet.")
    judge_floor: float = Field(description="Width the judge part alone gives (no number of ratings goes below).")
    more: int | None = Field(description="More active ratings to reach the target; None: unreachable.")
    note: str = Field(description="What the number means, in words.")


class RatingsPlan(BaseModel):
    """`ratings plan` output; `export --select active --plan FILE` reads it."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = PLAN_SCHEMA_VERSION
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    runs: list[str]
    target_width: float
    confidence: float
    rows: list[PlanRow]

    def budgets(self, level: str) -> dict[str, int]:
        """Supporter -> active ratings to draw at `level`: the most any of its dimensions asks for."""
        out: dict[str, int] = {}
        for r in self.rows:
            if r.level == level and r.more is not None:
                out[r.supporter] = max(out.get(r.supporter, 0), min(r.more, r.unrated))
        return out


def residual_model(gaps: Sequence[float], weights: Sequence[float], sizes: Sequence[float]) -> tuple[float, float]:
    """(a, b) in E[(d - dbar)^2] = a + b x size^2, fitted to rated items by weighted least squares (both kept >= 0;
    with one of them at 0, the other is the weighted ratio)."""
    total = sum(weights)
    dbar = sum(w * d for w, d in zip(weights, gaps)) / total
    e2 = [(d - dbar) ** 2 for d in gaps]
    x = [v * v for v in sizes]
    mx = sum(w * v for w, v in zip(weights, x)) / total
    me = sum(w * v for w, v in zip(weights, e2)) / total
    sxx = sum(w * (v - mx) ** 2 for w, v in zip(weights, x))
    b = sum(w * (v - mx) * (e - me) for w, v, e in zip(weights, x, e2)) / sxx if sxx > 0 else 0.0
    a = me - b * mx
    if b < 0:
        return me, 0.0
    if a < 0:
        return 0.0, me / mx if mx > 0 else 0.0
    return a, b


def projected_variance(
    model: tuple[float, float], sizes: Sequence[float], existing: Sequence[float], frame: Sequence[int], m: float
) -> float:
    """The rating part of the IPW-PPI variance after an active batch of expected size m over `frame` (indices):
    1 / N^2 x sum_i (a + b size_i^2) / pi_i, pi_i the union of the `existing` probability and the new batch's."""
    scale = proportional_scale([sizes[i] for i in frame], m) if m > 0 else 0.0
    total = 0.0
    for x, q in zip(sizes, existing):
        p = 1.0 if scale == math.inf else min(1.0, scale * x)
        pi = 1 - (1 - q) * (1 - p)
        if pi <= 0:
            return math.inf
        total += (model[0] + model[1] * x * x) / pi
    return total / len(sizes) ** 2


def ratings_needed(
    model: tuple[float, float], sizes: Sequence[float], existing: Sequence[float], frame: Sequence[int], room: float
) -> int:
    """The least expected size of an active batch over `frame` whose projected rating variance fits in `room`
    (len(frame) when even rating them all does not)."""
    if projected_variance(model, sizes, existing, frame, 0) <= room:
        return 0
    lo, hi = 0, len(frame)
    if projected_variance(model, sizes, existing, frame, hi) > room:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if projected_variance(model, sizes, existing, frame, mid) <= room:
            hi = mid
        else:
            lo = mid
    return hi


def plan_ratings(run_dirs: Sequence[str | Path], target_width: float, confidence: float = 0.95) -> RatingsPlan:
    """Per supporter and dimension of the runs: more active ratings needed for an IPW-PPI CI of `target_width`."""
    if not target_width > 0:
        raise PlanError(Param("target_width"), f" {target_width}: must be a positive width in score points, e.g. 0.5")
    index = item_index(run_dirs)
    if not index.units:
        raise PlanError(f"{', '.join(map(str, run_dirs))}: no judged items to plan ratings for; run and judge first")
    human, designs = rated_items(run_dirs)
    union = union_probabilities(run_dirs)
    pis = {item: pi for item, (pi, _) in designs.items()}
    z = normal_quantile(confidence)
    rows = []
    for supporter in dict.fromkeys(u.label for u in index.units.values()):
        for dim, rubric_dim in index.dimensions.items():
            units = [u for u in index.units.values() if u.label == supporter and dim in u.judge]
            if not units:
                continue
            f_all = [u.judge[dim] for u in units]
            n_all = len(units)
            rated = [u for u in units if dim in human.get(u.item_id, {})]
            known = [u for u in rated if pis.get(u.item_id) is not None]
            frame = [u for u in units if u.item_id not in human]
            y = {u.item_id: sum(human[u.item_id][dim]) / len(human[u.item_id][dim]) for u in rated}
            est, lam = ipw_ppi_mean(
                [y[u.item_id] for u in known],
                [u.judge[dim] for u in known],
                [pis[u.item_id] for u in known],  # type: ignore[misc]
                f_all,
                confidence,
            )
            lam = 1.0 if lam is None else lam
            mean_f = sum(f_all) / n_all
            judge_var = lam**2 * sum((x - mean_f) ** 2 for x in f_all) / n_all / n_all
            floor_width = 2 * z * math.sqrt(judge_var)
            width = est.high - est.low if est.low is not None and est.high is not None else None
            s = dict(zip((u.item_id for u in units), sampling_sizes([uncertainty(u) for u in units])))
            row = dict(
                supporter=supporter,
                dimension=dim,
                level=rubric_dim.level,
                items=n_all,
                rated=len(known),
                unrated=len(frame),
                width=width,
                judge_floor=floor_width,
            )
            target_var = (target_width / (2 * z)) ** 2
            room = target_var - judge_var
            if room <= 0:
                rows.append(
                    PlanRow(**row, more=None, note=f"unreachable: the judge part alone is {floor_width:.2f} wide")
                )
                continue
            if width is not None and width <= target_width:
                rows.append(PlanRow(**row, more=0, note=f"reached ({width:.2f} <= {target_width:g})"))
                continue
            if not rated:
                rows.append(PlanRow(**row, more=PILOT, note=f"nothing rated yet: a pilot of {PILOT} to size the plan"))
                continue
            model = residual_model(
                [y[u.item_id] - lam * u.judge[dim] for u in rated],
                [1 / pis[u.item_id] if pis.get(u.item_id) is not None else 1.0 for u in rated],  # type: ignore[operator]
                [s[u.item_id] for u in rated],
            )
            framed = {u.item_id for u in frame}
            more = ratings_needed(
                model,
                [s[u.item_id] for u in units],
                [union.get(u.item_id, 0.0) for u in units],
                [i for i, u in enumerate(units) if u.item_id in framed],
                room,
            )
            note = f"about {more} more active rating(s)"
            if model == (0.0, 0.0):
                note = "humans and judges differ by a constant so far: rate a few more to see their spread"
                more = max(more, 2)
            elif more >= len(frame) and more > 0:
                note = f"even all {len(frame)} unrated item(s) may not reach it; rate them all, or widen the target"
            rows.append(PlanRow(**row, more=more, note=note))
    return RatingsPlan(runs=[str(d) for d in run_dirs], target_width=target_width, confidence=confidence, rows=rows)


def read_plan(path: str | Path) -> RatingsPlan:
    """A plan file written by `ratings plan --out`; a PlanError naming the file otherwise."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanError(f"{path}: no such file; write one with `rescue-sim ratings plan RUN --out {path}`") from None
    try:
        return RatingsPlan.model_validate_json(text)
    except ValueError as err:
        raise PlanError(
            f"{path}: not a ratings plan ({str(err).splitlines()[0]}); write one with `rescue-sim ratings plan`"
        ) from None
