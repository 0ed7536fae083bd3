"""Panels of judge models: aggregate their scores per item and dimension, measure their agreement, flag splits."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from judges.scoring._records import (
    AggregateScore,
    DimensionAgreement,
    DimensionScore,
    JudgeVerdict,
    PairKappa,
    SessionJudgment,
)
from judges.scoring._rubric import Dimension, Rubric
from judges.stats._agreement import cohen_kappa, krippendorff_alpha, majority, median

DISAGREEMENT_POINTS = 2  # judges this many points apart (or more) on a scale or strength are flagged
# A checklist label read at P(label) under this is near a coin toss: the label stands (it is the measurement the
# rubric and validity cards describe), but every display of a labelled share says how sure its turns were.
SURE_P = 0.65


def _scores_by_item(verdicts: Sequence[JudgeVerdict]) -> dict[tuple[str, str], dict[str, DimensionScore]]:
    """(item, dimension) -> judge -> score, in first-seen order."""
    table: dict[tuple[str, str], dict[str, DimensionScore]] = {}
    for v in verdicts:
        for s in v.scores:
            table.setdefault((s.item, s.dimension), {})[v.judge] = s
    return table


def _value(dim: Dimension, s: DimensionScore) -> int | str | None:
    return s.score if dim.kind == "scale" else s.label


def not_neutral(dim: Dimension, score: DimensionScore) -> float:
    """P(the label is not the neutral one) from a checklist score's value (the probability of its own label)."""
    assert score.value is not None
    return score.value if score.label != dim.neutral else 1.0 - score.value


def aggregate_scores(verdicts: Sequence[JudgeVerdict], rubric: Rubric) -> list[AggregateScore]:
    """Mean and median per scale item, majority (tie reported) per label item, and ≥2-point disagreements."""
    dims = {d.id: d for d in rubric.active}
    out = []
    for (item, dim_id), by_judge in _scores_by_item(verdicts).items():
        dim = dims.get(dim_id)
        if dim is None:
            continue
        first = next(iter(by_judge.values()))
        values = {j: v for j, s in by_judge.items() if (v := _value(dim, s)) is not None}
        agg = AggregateScore(
            item=item,
            dimension=dim_id,
            level=dim.level,
            kind=dim.kind,
            turn=first.turn,
            member=first.member,
            values=values,
            n=len(values),
        )
        if dim.kind == "scale":  # a checklist score's unrounded value where there is one
            exact = {j: s.value for j, s in by_judge.items() if s.value is not None and s.score is not None}
            nums = [float(exact.get(j, v)) for j, v in values.items()]
            agg.mean = sum(nums) / len(nums) if nums else None
            agg.median = median(nums)
            agg.spread = int(round(max(nums) - min(nums))) if nums else None
        else:
            label, tie, counts = majority([str(v) for v in values.values()])
            agg.majority, agg.tie, agg.counts = label, tie, counts
            strengths = [s.strength for s in by_judge.values() if s.strength is not None]
            if strengths:
                agg.strength_mean = sum(strengths) / len(strengths)
                agg.spread = max(strengths) - min(strengths)
            if dim.neutral is not None:  # a checklist judge's reading before its 0.5 threshold
                probs = [not_neutral(dim, s) for s in by_judge.values() if s.answers and s.value is not None]
                agg.p_not_neutral = round(sum(probs) / len(probs), 6) if probs else None
            if dim.kind == "taxonomy_strategy":
                agg.supporter_label = first.supporter_label
                if first.supporter_label and label is not None:
                    agg.agrees_with_supporter = label == first.supporter_label
        agg.disagreement = agg.spread is not None and agg.spread >= DISAGREEMENT_POINTS
        out.append(agg)
    return out


def dimension_agreement(
    dim: Dimension, ratings: Mapping[Hashable, Mapping[str, int | str]], judges: Sequence[str]
) -> DimensionAgreement:
    """Krippendorff's alpha (interval for scales, nominal for labels) and pairwise Cohen's kappa on one dimension.

    `ratings` maps an item key to judge -> value. Kappa for scales is also given quadratic-weighted over the
    scale's points.
    """
    items = list(ratings)
    table = [[ratings[i].get(j) for i in items] for j in judges]
    level = "interval" if dim.kind == "scale" else "nominal"
    categories = list(range(dim.min, dim.max + 1)) if dim.kind == "scale" else None  # type: ignore[arg-type]
    pairs = []
    for a, b in combinations(judges, 2):
        both = [(ratings[i][a], ratings[i][b]) for i in items if a in ratings[i] and b in ratings[i]]
        xs, ys = [x for x, _ in both], [y for _, y in both]
        pairs.append(
            PairKappa(
                judge_a=a,
                judge_b=b,
                n=len(both),
                kappa=cohen_kappa(xs, ys, categories=categories),
                weighted_kappa=cohen_kappa(xs, ys, categories=categories, weights="quadratic") if categories else None,
            )
        )
    return DimensionAgreement(
        dimension=dim.id,
        metric=level,
        n_items=sum(1 for i in items if len(ratings[i]) >= 2),
        alpha=krippendorff_alpha(table, level),
        pairs=pairs,
    )


def panel_agreement(verdicts: Sequence[JudgeVerdict], rubric: Rubric) -> list[DimensionAgreement]:
    """Agreement per active dimension over this session's items; empty for a single judge."""
    judges = [v.judge for v in verdicts]
    if len(judges) < 2:
        return []
    table = _scores_by_item(verdicts)
    out = []
    for dim in rubric.active:
        ratings = {
            item: {j: v for j, s in by_judge.items() if (v := _value(dim, s)) is not None}
            for (item, dim_id), by_judge in table.items()
            if dim_id == dim.id
        }
        if ratings:
            out.append(dimension_agreement(dim, ratings, judges))
    return out


def simulator_check(aggregates: Sequence[AggregateScore], rubric: Rubric) -> str | None:
    """Why the session is a simulator failure (a simulator scale at or below its `fail_at`), or None.

    A panel decides by its median score for the item.
    """
    reasons = []
    for dim in rubric.active:
        if dim.about != "simulator" or dim.fail_at is None:
            continue
        for a in aggregates:
            if a.dimension == dim.id and a.median is not None and a.median <= dim.fail_at:
                who = f" of {a.member}" if a.member else ""
                reasons.append(f"{dim.id}{who} is {a.median:g} (at or below {dim.fail_at})")
    return "; ".join(reasons) or None


def session_values(judgment: SessionJudgment) -> dict[str, tuple[Dimension, float]]:
    """One value per supporter-facing dimension for one session (see `DimensionSummary.measure`)."""
    out: dict[str, tuple[Dimension, float]] = {}
    for dim in judgment.rubric.active:
        if dim.about != "supporter":
            continue
        aggs = [a for a in judgment.aggregates if a.dimension == dim.id]
        if dim.kind == "scale":
            vals = [a.mean for a in aggs if a.mean is not None]
        elif dim.kind == "taxonomy_strategy":
            vals = [1.0 if a.agrees_with_supporter else 0.0 for a in aggs if a.agrees_with_supporter is not None]
        elif dim.neutral is not None:  # `rate: expected` and a checklist: the expected share; else the labelled one
            expected = dim.rate == "expected"
            vals = [
                a.p_not_neutral if expected and a.p_not_neutral is not None else float(a.majority != dim.neutral)
                for a in aggs
                if a.majority is not None
            ]
        else:
            vals = []
        if vals:
            out[dim.id] = (dim, sum(vals) / len(vals))
    return out


@dataclass(frozen=True)
class LabelledShare:
    """How sure a label dimension's labelled share (`session_values`, `rate: labelled`) is: of `turns` items with a
    label, `labelled` carry a non-neutral one, read by checklist judges at mean probability `p_mean` (lowest
    `p_min`); None for verdict judges, which give no probability."""

    labelled: int
    turns: int
    p_mean: float | None
    p_min: float | None

    @property
    def unsure(self) -> bool:
        """The labelled turns were read at a mean probability under SURE_P: the share rests on near coin tosses."""
        return self.labelled > 0 and self.p_mean is not None and self.p_mean < SURE_P

    def note(self) -> str:
        """`4/4, P 0.55 unsure` (how many turns, the mean probability behind them), `0/4`."""
        text = f"{self.labelled}/{self.turns}"
        if self.labelled and self.p_mean is not None:
            text += f", P {self.p_mean:.2f}" + (" unsure" if self.unsure else "")
        return text


def labelled_shares(judgment: SessionJudgment) -> dict[str, LabelledShare]:
    """Per supporter-facing label dimension measured as a labelled share: how many turns carry a label, and how
    sure the judges were of them (the mean of the panel's P(not neutral) over the labelled turns)."""
    out: dict[str, LabelledShare] = {}
    for dim in judgment.rubric.active:
        if dim.about != "supporter" or dim.kind != "label" or dim.neutral is None or dim.rate == "expected":
            continue
        aggs = [a for a in judgment.aggregates if a.dimension == dim.id and a.majority is not None]
        if not aggs:
            continue
        hit = [a for a in aggs if a.majority != dim.neutral]
        ps = [a.p_not_neutral for a in hit if a.p_not_neutral is not None]
        mean = sum(ps) / len(ps) if ps and len(ps) == len(hit) else None
        out[dim.id] = LabelledShare(len(hit), len(aggs), mean, min(ps) if mean is not None else None)
    return out
