"""Where the next ratings pay most: per supporter and dimension, how many more `active` ratings would bring the
IPW-PPI interval to a target width (`rescue-sim ratings plan RUN... --target-width W`).

The interval's variance has a judge part, lambda^2 var(f) / N, that no rating shrinks, and a rating part. If the
judge part alone is wider than the target, no number of ratings reaches it, and the plan says so. Otherwise the
rating part must fall to R = (W / 2z)^2 - judge part. An active batch of expected size m over the F unrated items,
pi_i proportional to s_i (`_designs.sampling_sizes`), adds a rating part of about c (sum_F s_i)^2 / (N^2 m),
where c scales squared judge error to uncertainty: it is estimated from the items already rated (weighted by 1/pi
where the probability is known), as sum w (d - dbar)^2 / sum w s^2, d = human - lambda judge. The current
estimate (variance V0) and the new batch combine by inverse variance, so m = c (sum s)^2 / N^2 x (1/R - 1/V0).
With no ratings yet there is nothing to estimate c from: the plan asks for a pilot batch.

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

from judges.ratings._designs import sampling_sizes, uncertainty
from judges.ratings._import import item_index
from judges.ratings._ppi import ipw_ppi_mean, normal_quantile, rated_items
from personas.common.errors import UserError

PLAN_SCHEMA_VERSION = 1
PILOT = 30  # ratings to ask for when nothing is rated yet


class PlanError(UserError):
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


def plan_ratings(run_dirs: Sequence[str | Path], target_width: float, confidence: float = 0.95) -> RatingsPlan:
    """Per supporter and dimension of the runs: more active ratings needed for an IPW-PPI CI of `target_width`."""
    if not target_width > 0:
        raise PlanError(f"--target-width {target_width}: must be a positive width in score points, e.g. 0.5")
    index = item_index(run_dirs)
    if not index.units:
        raise PlanError(f"{', '.join(map(str, run_dirs))}: no judged items to plan ratings for; run and judge first")
    human, designs = rated_items(run_dirs)
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
            w = {u.item_id: 1 / pis[u.item_id] if pis.get(u.item_id) is not None else 1.0 for u in rated}  # type: ignore[operator]
            d = {u.item_id: y[u.item_id] - lam * u.judge[dim] for u in rated}
            total_w = sum(w.values())
            dbar = sum(w[i] * d[i] for i in d) / total_w
            c = sum(w[i] * (d[i] - dbar) ** 2 for i in d) / sum(w[i] * s[i] ** 2 for i in d)
            v0 = (width / (2 * z)) ** 2 - judge_var if width is not None else math.inf
            need = 1 / room - (1 / v0 if v0 > 0 else 0.0)
            more = math.ceil(c * sum(s[u.item_id] for u in frame) ** 2 / n_all**2 * need) if frame else 0
            note = f"about {more} more active rating(s)"
            if c == 0:
                note = "humans and judges differ by a constant so far: rate a few more to see their spread"
                more = max(more, 2)
            if more > len(frame):
                note += f"; only {len(frame)} unrated item(s) left"
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
