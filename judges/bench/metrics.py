"""Benchmark metrics: pure functions over gold labels and cleaned predictions.

Conventions: a missing prediction (nothing left after cleaning) is scored as wrong: for ITP it counts as the
opposite of the gold answer, for rankings it has rank 0, for ER it scores 1 (emotion) and 1 (intensity), for VP
0 and 0. Failed requests never reach these functions: the caller excludes and counts them. A ratio whose
denominator is zero is 0.0 (scikit-learn's `zero_division=0`), and macro averages run over every label passed
in, so a taxonomy label with no support counts as 0 (as the released RPP script does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from statistics import fmean

from pydantic import Field

from personas.common.records import Record

MISSING = "(none)"  # the confusion-matrix column of missing predictions


class LabelStats(Record):
    support: int = Field(description="Gold instances with this label.")
    predicted: int = Field(description="Instances whose top-1 prediction is this label.")
    precision: float
    recall: float = Field(description="Top-1 recall (= Recall@1 within the label).")
    f1: float
    mrr: float | None = Field(default=None, description="Rankings: mean reciprocal rank over the label's gold items.")


class BinaryMetrics(Record):
    """ITP: yes is the positive class."""

    n: int
    tp: int
    fp: int
    fn: int
    tn: int
    missing: int = Field(description="Instances without a yes/no answer (scored as the wrong answer).")
    precision: float
    recall: float
    f1: float
    accuracy: float
    balanced_accuracy: float = Field(description="Mean of recall on yes and recall on no.")
    per_class: dict[str, LabelStats]


class RankingMetrics(Record):
    """RPP, STP, SSP: top-3 lists against one gold label."""

    n: int
    missing: int = Field(description="Instances with an empty list after cleaning (rank 0).")
    accuracy: float = Field(description="Top-1 accuracy (= recall_at_1).")
    recall_at_1: float
    recall_at_2: float
    recall_at_3: float
    mrr: float = Field(description="Mean of 1/rank, 0 when the gold label is not in the top 3.")
    macro_precision: float
    macro_recall: float
    macro_f1: float
    per_label: dict[str, LabelStats]
    confusion: dict[str, dict[str, int]] = Field(description="gold -> top-1 prediction -> count; `(none)` = missing.")


class ErMetrics(Record):
    n: int
    missing: int
    emotion_score: float = Field(description="LLM judge, 1-5.")
    intensity_match: float = Field(description="max(1, 5 - |predicted - gold|), 1-5.")
    er_score: float = Field(description="(emotion_score + intensity_match) / 2, the paper's S_ER.")
    intensity_mae: float = Field(description="Mean |predicted - gold| intensity over answered instances.")


class VpMetrics(Record):
    n: int
    missing: int
    source_target: float = Field(description="LLM judge, 0-2: are the right source -> target pairs named.")
    viewpoint: float = Field(description="LLM judge, 0-4: do the views match in meaning.")
    vp_score: float = Field(
        description="1 + 4 * mean(source_target / 2, viewpoint / 4): our own 1-5 summary, not defined by the paper "
        "and never compared with its Likert VP; the headline is source_target (0-2) and viewpoint (0-4)."
    )


def ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def f1_score(precision: float, recall: float) -> float:
    return ratio(2 * precision * recall, precision + recall)


def _mean(values: Sequence[float]) -> float:
    return fmean(values) if values else 0.0


# ---- ITP ------------------------------------------------------------------------------------------------------


def binary_metrics(golds: Sequence[bool], preds: Sequence[bool | None]) -> BinaryMetrics:
    """Precision, recall and F1 of the positive class, accuracy, balanced accuracy, per-class P/R/F1.

    `None` in `preds` is a missing answer and counts as the opposite of the gold answer.
    """
    if len(golds) != len(preds):
        raise ValueError("golds and preds differ in length")
    filled = [(not g) if p is None else p for g, p in zip(golds, preds)]
    tp = sum(g and p for g, p in zip(golds, filled))
    fp = sum((not g) and p for g, p in zip(golds, filled))
    fn = sum(g and not p for g, p in zip(golds, filled))
    tn = sum((not g) and not p for g, p in zip(golds, filled))
    p_yes, r_yes = ratio(tp, tp + fp), ratio(tp, tp + fn)
    p_no, r_no = ratio(tn, tn + fn), ratio(tn, tn + fp)
    per_class = {
        "yes": LabelStats(support=tp + fn, predicted=tp + fp, precision=p_yes, recall=r_yes, f1=f1_score(p_yes, r_yes)),
        "no": LabelStats(support=tn + fp, predicted=tn + fn, precision=p_no, recall=r_no, f1=f1_score(p_no, r_no)),
    }
    return BinaryMetrics(
        n=len(golds),
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        missing=sum(p is None for p in preds),
        precision=p_yes,
        recall=r_yes,
        f1=f1_score(p_yes, r_yes),
        accuracy=ratio(tp + tn, len(golds)),
        balanced_accuracy=(r_yes + r_no) / 2,
        per_class=per_class,
    )


# ---- rankings -------------------------------------------------------------------------------------------------


def rank_of(gold: str, ranked: Sequence[str], k: int = 3) -> int:
    """1-based rank of `gold` in the first k entries, 0 when absent. The first occurrence counts."""
    for i, label in enumerate(ranked[:k], start=1):
        if label == gold:
            return i
    return 0


def ranking_metrics(
    golds: Sequence[str],
    rankings: Sequence[Sequence[str]],
    labels: Sequence[str] = (),
    *,
    key: Callable[[str], str] | None = None,
) -> RankingMetrics:
    """Recall@1/2/3, MRR, top-1 accuracy, per-label P/R/F1 (macro over `labels` plus any label seen), confusion.

    `key` groups labels for the per-label breakdown and the confusion matrix (STP: by target kind); correctness
    is always the exact label.
    """
    if len(golds) != len(rankings):
        raise ValueError("golds and rankings differ in length")
    key = key or (lambda x: x)
    ranks = [rank_of(g, r) for g, r in zip(golds, rankings)]
    n = len(golds)
    top1 = [r[0] if r else None for r in rankings]
    gold_keys = [key(g) for g in golds]
    pred_keys = [key(p) if p is not None else None for p in top1]
    names: list[str] = []
    for lab in [*labels, *gold_keys, *(p for p in pred_keys if p is not None)]:
        if lab not in names:
            names.append(lab)
    per_label: dict[str, LabelStats] = {}
    for lab in names:
        support = [i for i, g in enumerate(gold_keys) if g == lab]
        predicted = [i for i, p in enumerate(pred_keys) if p == lab]
        hits_gold = sum(ranks[i] == 1 for i in support)
        hits_pred = sum(ranks[i] == 1 for i in predicted)
        precision, recall = ratio(hits_pred, len(predicted)), ratio(hits_gold, len(support))
        mrr = _mean([1 / ranks[i] if ranks[i] else 0.0 for i in support]) if support else None
        per_label[lab] = LabelStats(
            support=len(support),
            predicted=len(predicted),
            precision=precision,
            recall=recall,
            f1=f1_score(precision, recall),
            mrr=mrr,
        )
    confusion: dict[str, dict[str, int]] = {}
    for g, p in zip(gold_keys, pred_keys):
        row = confusion.setdefault(g, {})
        row[p or MISSING] = row.get(p or MISSING, 0) + 1
    macro = list(per_label.values())
    r1 = ratio(sum(r == 1 for r in ranks), n)
    return RankingMetrics(
        n=n,
        missing=sum(not r for r in rankings),
        accuracy=r1,
        recall_at_1=r1,
        recall_at_2=ratio(sum(1 <= r <= 2 for r in ranks), n),
        recall_at_3=ratio(sum(1 <= r <= 3 for r in ranks), n),
        mrr=_mean([1 / r if r else 0.0 for r in ranks]),
        macro_precision=_mean([s.precision for s in macro]),
        macro_recall=_mean([s.recall for s in macro]),
        macro_f1=_mean([s.f1 for s in macro]),
        per_label=per_label,
        confusion=confusion,
    )


# ---- ER and VP ------------------------------------------------------------------------------------------------


def intensity_match(predicted: float, gold: float) -> float:
    """S_int = max(1, 5 - |predicted - gold|): 5 for an exact match, 1 point off per step, at least 1."""
    return max(1.0, 5.0 - abs(predicted - gold))


def er_metrics(items: Sequence[tuple[float | None, float | None, float]]) -> ErMetrics:
    """`items`: (judge emotion score 1-5 or None if missing, predicted intensity or None if missing, gold intensity).

    A missing prediction scores 1 on both parts.
    """
    emo = [1.0 if e is None else float(e) for e, _, _ in items]
    ints = [1.0 if p is None else intensity_match(p, g) for _, p, g in items]
    errors = [abs(p - g) for _, p, g in items if p is not None]
    return ErMetrics(
        n=len(items),
        missing=sum(e is None for e, _, _ in items),
        emotion_score=_mean(emo),
        intensity_match=_mean(ints),
        er_score=_mean([(a + b) / 2 for a, b in zip(emo, ints)]),
        intensity_mae=_mean(errors),
    )


def vp_metrics(items: Sequence[tuple[float, float] | None]) -> VpMetrics:
    """`items`: (source_target 0-2, viewpoint 0-4) per instance, or None for a missing prediction (0, 0)."""
    st = [0.0 if x is None else float(x[0]) for x in items]
    vp = [0.0 if x is None else float(x[1]) for x in items]
    summary = [1 + 4 * (a / 2 + b / 4) / 2 for a, b in zip(st, vp)]
    return VpMetrics(
        n=len(items),
        missing=sum(x is None for x in items),
        source_target=_mean(st),
        viewpoint=_mean(vp),
        vp_score=_mean(summary),
    )


Metrics = BinaryMetrics | RankingMetrics | ErMetrics | VpMetrics

__all__ = [
    "MISSING",
    "BinaryMetrics",
    "ErMetrics",
    "LabelStats",
    "Metrics",
    "RankingMetrics",
    "VpMetrics",
    "binary_metrics",
    "er_metrics",
    "f1_score",
    "intensity_match",
    "rank_of",
    "ranking_metrics",
    "ratio",
    "vp_metrics",
]
