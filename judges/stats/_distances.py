"""Distances between a simulated and a real distribution: Jensen-Shannon over count tables, Wasserstein over
samples (scipy's, as published). Pure functions; None where a side has no data, never a made-up 0."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def js_distance(p: Counter[str] | dict[str, int], q: Counter[str] | dict[str, int]) -> float | None:
    """Jensen-Shannon distance (base 2, in 0-1) between two count tables over the union of their keys."""
    from scipy.spatial.distance import jensenshannon

    keys = sorted(set(p) | set(q))
    a, b = [float(p.get(k, 0)) for k in keys], [float(q.get(k, 0)) for k in keys]
    if not keys or sum(a) == 0 or sum(b) == 0:
        return None
    return round(float(jensenshannon(a, b, base=2)), 4)


def wasserstein(a: Sequence[float], b: Sequence[float]) -> float | None:
    from scipy.stats import wasserstein_distance

    if not a or not b:
        return None
    return round(float(wasserstein_distance(a, b)), 4)
