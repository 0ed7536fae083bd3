"""Agreement statistics and bootstrap CIs against values computed by hand or published."""

from __future__ import annotations

import math

import pytest

from judges import (
    DimensionScore,
    Evidence,
    JudgeVerdict,
    JudgmentStatus,
    aggregate_scores,
    bootstrap_ci,
    cohen_kappa,
    dimension_agreement,
    gini,
    krippendorff_alpha,
    load_rubric,
    majority,
    mean_ci,
    median,
)

# ---- Cohen's kappa ---------------------------------------------------------------------------------------------


def test_kappa_hand_computed_binary() -> None:
    # 10 items: both yes 4, a yes/b no 2, a no/b yes 1, both no 3.
    a = ["y"] * 4 + ["y"] * 2 + ["n"] * 1 + ["n"] * 3
    b = ["y"] * 4 + ["n"] * 2 + ["y"] * 1 + ["n"] * 3
    # p_o = 7/10; p_a(yes) = .6, p_b(yes) = .5; p_e = .6*.5 + .4*.5 = .5; kappa = (.7 - .5) / (1 - .5) = .4
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(b, a) == pytest.approx(0.4)


def test_kappa_hand_computed_weighted() -> None:
    a, b = [1, 2, 3], [1, 3, 3]
    # unweighted: p_o = 2/3, p_e = 1/3*1/3 + 1/3*0 + 1/3*2/3 = 1/3 -> (2/3 - 1/3) / (2/3) = 0.5
    assert cohen_kappa(a, b, categories=[1, 2, 3]) == pytest.approx(0.5)
    # quadratic weights (|i-j|/2)^2: observed disagreement 0.25 * 1/3 = 1/12; expected = 1/3 * (2/3 + 1/4 + 1/3)
    # = 5/12; kappa = 1 - (1/12) / (5/12) = 0.8
    assert cohen_kappa(a, b, categories=[1, 2, 3], weights="quadratic") == pytest.approx(0.8)
    # linear weights |i-j|/2: observed 0.5 * 1/3 = 1/6; expected 1/3 * (2/3 + (1/6 + 1/3) + 1/3) = 1/2; 1 - 1/3
    assert cohen_kappa(a, b, categories=[1, 2, 3], weights="linear") == pytest.approx(2 / 3)


def test_kappa_edges() -> None:
    assert cohen_kappa([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert cohen_kappa([4, 4], [4, 4]) is None  # chance agreement already perfect: undefined
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 2])
    with pytest.raises(ValueError):
        cohen_kappa([1, 9], [1, 2], categories=[1, 2])


# ---- Krippendorff's alpha --------------------------------------------------------------------------------------

# Krippendorff's reliability-data example (4 coders, 12 units; blanks missing): alpha nominal 0.743, interval 0.849.
_KRIPP = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def test_krippendorff_known_example() -> None:
    assert krippendorff_alpha(_KRIPP, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(_KRIPP, "interval") == pytest.approx(0.849, abs=5e-4)
    letters = [[None if v is None else "abcde"[v - 1] for v in row] for row in _KRIPP]
    assert krippendorff_alpha(letters, "nominal") == pytest.approx(0.743, abs=5e-4)  # labels coded as integers


def test_krippendorff_small_hand_example() -> None:
    # 2 coders, 3 units, interval: (1,1), (2,2), (3,4); pairable values 1,1,2,2,3,4 (n = 6).
    # D_o = (1/n) * sum over units of (ordered within-unit pairs' squared differences) / (m_u - 1) = (0 + 0 + 2) / 6.
    # D_e = squared differences over all ordered pairs of pairable values / (n (n - 1)).
    values = [1, 1, 2, 2, 3, 4]
    d_e = sum((x - y) ** 2 for i, x in enumerate(values) for j, y in enumerate(values) if i != j) / (6 * 5)
    expected = 1 - (1 / 3) / d_e
    assert krippendorff_alpha([[1, 2, 3], [1, 2, 4]], "interval") == pytest.approx(expected)


def test_krippendorff_undefined_cases() -> None:
    assert krippendorff_alpha([[1, 2, 3]], "interval") is None  # one rater
    assert krippendorff_alpha([[1, None], [None, 2]], "interval") is None  # nothing pairable
    assert krippendorff_alpha([[3, 3], [3, 3]], "interval") is None  # no variation
    assert krippendorff_alpha([[3, 3, 1], [3, 3, None]], "interval") is None  # no variation among pairable values
    with pytest.raises(ValueError):
        krippendorff_alpha([[1, 2], [1]], "nominal")


def test_majority_and_median() -> None:
    assert majority(["a", "b", "a"]) == ("a", False, {"a": 2, "b": 1})
    assert majority(["a", "b"]) == (None, True, {"a": 1, "b": 1})
    assert majority([]) == (None, False, {})
    assert median([3, 1, 2]) == 2 and median([1, 2, 3, 5]) == 2.5 and median([]) is None


# ---- panels over hand-built verdicts ---------------------------------------------------------------------------


def _score(item: str, dim: str, **kw) -> DimensionScore:
    level = "session" if item == "session" else "intervention"
    evidence = [Evidence(turn=1, quote="q", quote_found=True)]
    return DimensionScore(item=item, dimension=dim, level=level, evidence=evidence, reasoning="r", **kw)


def test_panel_aggregation_and_agreement_by_hand() -> None:
    rubric = load_rubric()
    a = JudgeVerdict(
        judge="a",
        status=JudgmentStatus.OK,
        scores=[_score("t3", "timing", score=4), _score("t5", "timing", score=2), _score("t3", "safety", label="ok")],
    )
    b = JudgeVerdict(
        judge="b",
        status=JudgmentStatus.OK,
        scores=[
            _score("t3", "timing", score=4),
            _score("t5", "timing", score=4),
            _score("t3", "safety", label="concern"),
        ],
    )
    aggs = {(x.item, x.dimension): x for x in aggregate_scores([a, b], rubric)}
    assert aggs["t3", "timing"].mean == 4 and not aggs["t3", "timing"].disagreement
    assert aggs["t5", "timing"].mean == 3 and aggs["t5", "timing"].median == 3 and aggs["t5", "timing"].disagreement
    assert aggs["t3", "safety"].tie and aggs["t3", "safety"].majority is None
    agreement = dimension_agreement(rubric.get("timing"), {"t3": {"a": 4, "b": 4}, "t5": {"a": 2, "b": 4}}, ["a", "b"])
    (pair,) = agreement.pairs
    # unweighted over categories 1..5: p_o = 1/2; a = (4, 2), b = (4, 4): p_e = 1/2*1 (for 4) = 1/2 -> 0
    assert pair.n == 2 and pair.kappa == pytest.approx(0.0)
    assert agreement.n_items == 2 and agreement.alpha == pytest.approx(krippendorff_alpha([[4, 2], [4, 4]], "interval"))


# ---- bootstrap -------------------------------------------------------------------------------------------------


def test_bootstrap_constant_data_has_zero_width() -> None:
    assert bootstrap_ci([3.0] * 10) == (3.0, 3.0)
    assert bootstrap_ci([2.5]) == (2.5, 2.5)
    assert bootstrap_ci([]) is None


def test_bootstrap_contains_the_mean_and_is_reproducible() -> None:
    data = [1, 2, 2, 3, 5, 8, 4, 4, 3, 1]
    low, high = bootstrap_ci(data, seed=7)
    mean = sum(data) / len(data)
    assert low < mean < high
    assert bootstrap_ci(data, seed=7) == (low, high)
    assert bootstrap_ci(data, seed=8) != (low, high)
    narrow = bootstrap_ci(data, confidence=0.5, seed=7)
    assert low <= narrow[0] <= narrow[1] <= high
    assert min(data) <= low and high <= max(data)
    with pytest.raises(ValueError):
        bootstrap_ci(data, confidence=1.0)


def test_bootstrap_two_points_percentiles() -> None:
    # resampled means of [0, 10] can only be 0, 5 or 10 (p = 1/4, 1/2, 1/4): the 95% interval is [0, 10]
    assert bootstrap_ci([0, 10], seed=1) == (0.0, 10.0)


def test_mean_ci() -> None:
    ci = mean_ci([1, 2, 3])
    assert ci.n == 3 and ci.mean == 2 and ci.low <= 2 <= ci.high and ci.render().startswith("2.00 [")
    assert mean_ci([]).mean is None and mean_ci([]).render() == "-"


def test_gini() -> None:
    assert gini([1, 1, 1]) == 0
    assert gini([0, 0, 3]) == pytest.approx(2 / 3)
    assert gini([2, 1]) == pytest.approx(1 / 6)  # (|2-1| + |1-2|) / (2 * 4 * 1.5)
    assert gini([]) is None and gini([0, 0]) is None
    assert math.isclose(gini([5]), 0)
    with pytest.raises(ValueError):
        gini([-1, 2])
