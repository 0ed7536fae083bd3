"""Agreement statistics for judge panels: Cohen's kappa, Krippendorff's alpha, majority and median. Pure functions."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Literal

Weights = Literal["linear", "quadratic"] | None
AlphaLevel = Literal["interval", "nominal"]


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    categories: Sequence[Hashable] | None = None,
    weights: Weights = None,
) -> float | None:
    """Cohen's kappa between two raters who rated the same items (a[i] and b[i] rate item i).

    kappa = 1 - sum(w * observed) / sum(w * expected), with disagreement weights w: 0 on the diagonal and 1 off it
    (unweighted, i.e. (p_o - p_e) / (1 - p_e)), |i-j|/(k-1) (linear) or ((i-j)/(k-1))^2 (quadratic), where i, j are
    positions in `categories` (default: the sorted values seen). None when undefined: no items, or chance
    agreement is already perfect (e.g. both raters gave one and the same value throughout).
    """
    if len(a) != len(b):
        raise ValueError(f"raters rated different numbers of items ({len(a)} and {len(b)})")
    n = len(a)
    if n == 0:
        return None
    cats = list(categories) if categories is not None else sorted(set(a) | set(b), key=_sort_key)
    index = {c: i for i, c in enumerate(cats)}
    unknown = [v for v in (*a, *b) if v not in index]
    if unknown:
        raise ValueError(f"value {unknown[0]!r} is not among the categories")
    k = len(cats)
    observed = [[0.0] * k for _ in range(k)]
    for x, y in zip(a, b):
        observed[index[x]][index[y]] += 1 / n
    pa = [sum(row) for row in observed]
    pb = [sum(observed[i][j] for i in range(k)) for j in range(k)]

    def w(i: int, j: int) -> float:
        if weights is None:
            return 0.0 if i == j else 1.0
        if k < 2:
            return 0.0
        d = abs(i - j) / (k - 1)
        return d if weights == "linear" else d * d

    num = sum(w(i, j) * observed[i][j] for i in range(k) for j in range(k))
    den = sum(w(i, j) * pa[i] * pb[j] for i in range(k) for j in range(k))
    if den <= 1e-12:
        return None
    return 1 - num / den


def _sort_key(v: Hashable) -> tuple[int, object]:
    return (0, v) if isinstance(v, (int, float)) else (1, str(v))


def krippendorff_alpha(ratings: Sequence[Sequence[float | str | None]], level: AlphaLevel) -> float | None:
    """Krippendorff's alpha over a rater x item table (`ratings[r][i]`, None = rater r did not rate item i).

    Uses the `krippendorff` package (interval for scales, nominal for labels; labels are coded as integers).
    None when undefined: fewer than two raters, no item rated by two raters, or no variation among the pairable
    values (alpha = 1 - D_o/D_e has D_e = 0).
    """
    if len(ratings) < 2:
        return None
    width = len(ratings[0])
    if any(len(row) != width for row in ratings):
        raise ValueError("every rater row needs one entry per item")
    pairable = [i for i in range(width) if sum(row[i] is not None for row in ratings) >= 2]
    if not pairable:
        return None
    values = {row[i] for row in ratings for i in pairable if row[i] is not None}
    if len(values) < 2:
        return None
    import krippendorff
    import numpy as np

    if level == "nominal":
        seen = sorted({v for row in ratings for v in row if v is not None}, key=_sort_key)
        codes = {v: n for n, v in enumerate(seen)}
        table = [[np.nan if v is None else float(codes[v]) for v in row] for row in ratings]
    else:
        table = [[np.nan if v is None else float(v) for v in row] for row in ratings]
    with np.errstate(divide="ignore", invalid="ignore"):
        try:
            alpha = float(krippendorff.alpha(reliability_data=np.array(table, dtype=float), level_of_measurement=level))
        except ValueError:
            return None
    return alpha if math.isfinite(alpha) else None


def majority(labels: Sequence[str]) -> tuple[str | None, bool, dict[str, int]]:
    """(most frequent label, tie, counts). On a tie for the top count the label is None and tie is True."""
    counts = dict(Counter(labels).most_common())
    if not counts:
        return None, False, {}
    top = max(counts.values())
    leaders = [label for label, c in counts.items() if c == top]
    if len(leaders) > 1:
        return None, True, counts
    return leaders[0], False, counts


def median(values: Sequence[float]) -> float | None:
    xs = sorted(values)
    if not xs:
        return None
    mid = len(xs) // 2
    return float(xs[mid]) if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2
