"""Choosing which units go to human raters: strategies, quotas, caps, and no item twice.

Each strategy ranks the units still available; the driver takes them in rank order until the strategy's quota
is met, skipping units already taken (by an earlier strategy), already rated (an earlier ratings import) or over
a cap (at most N per case, supporter, ...). Strategies are deterministic for a given seed.

- `disagreement`: the judge panel's largest spread (max - min score) first; needs a panel of 2+ judges.
- `unstable`: the largest spread of the panel mean across repeated judgments (`judge --repeat K`) first.
- `extremes`: best and worst by the judges' mean score, alternating (best, worst, 2nd best, 2nd worst, ...).
- `pairs`: two supporters on the same case, seed, trial and perturbation whose judge means are nearest
  (gap at most PAIR_GAP points), taken two at a time; session units only.
- `stratified`: greedy balance over case, group, supporter, perturbation and judge-score bin: each pick is the
  unit whose values are least represented so far.
- `random`: a seeded shuffle.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import combinations

from pydantic import BaseModel, ConfigDict, Field

from judges.ratings._units import Unit
from personas.common.errors import UserError

PAIR_GAP = 1.0  # judge-mean points: pairs further apart than this are no near-tie
CAP_KEYS = ("case", "group", "supporter", "perturbation", "session")


class SelectionError(UserError):
    """A selection that cannot be made as asked (unknown strategy, a strategy without the data it needs)."""


class Quota(BaseModel):
    model_config = ConfigDict(extra="forbid")

    strategy: str
    n: int = Field(ge=1)


class Pick(BaseModel):
    """One selected unit, why it was picked, and its pair (pairs strategy)."""

    model_config = ConfigDict(extra="forbid")

    unit: Unit
    strategy: str
    reason: str = Field(description="Human-readable reason, e.g. `judges differ by 3 on timing`.")
    pair: str | None = Field(default=None, description="Pair id `p<k>` for the pairs strategy.")
    position: str | None = Field(default=None, description="`A` or `B` within the pair.")


class Selection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    picks: list[Pick]
    shortfall: dict[str, int] = Field(default_factory=dict, description="Strategy -> items it could not find.")
    already_rated: int = Field(default=0, description="Units skipped because they were rated in an earlier import.")
    capped: int = Field(default=0, description="Units skipped because a cap was full.")


Ranked = list[tuple[list[Unit], str]]  # groups (one unit, or a pair) with the reason, best first
Strategy = Callable[[list[Unit], random.Random], Ranked]


def _shuffled(units: Sequence[Unit], rng: random.Random) -> list[Unit]:
    out = list(units)
    rng.shuffle(out)
    return out


def _disagreement(units: list[Unit], rng: random.Random) -> Ranked:
    if not any(u.judges >= 2 for u in units):
        raise SelectionError(
            "disagreement: every unit was scored by one judge; judge with a panel "
            "(`rescue-sim judge RUN --judges a,b`) or choose another strategy"
        )

    def top(u: Unit) -> tuple[int, str]:
        dim = max(u.dimensions, key=lambda d: (u.spread.get(d, 0), d))
        return u.spread.get(dim, 0), dim

    scored = [(u, *top(u)) for u in _shuffled(units, rng) if u.judges >= 2]
    scored = [s for s in scored if s[1] > 0]
    scored.sort(key=lambda s: (-s[1], -sum(s[0].spread.values())))
    return [([u], f"judges differ by {spread} on {dim}") for u, spread, dim in scored]


def _unstable(units: list[Unit], rng: random.Random) -> Ranked:
    if not any(u.repeats for u in units):
        raise SelectionError(
            "unstable: no repeated judgments exist in these runs (each session was judged once); "
            "run `rescue-sim judge RUN_DIR --repeat K` first, or choose another strategy"
        )
    scored = []
    for u in _shuffled(units, rng):
        if not u.repeat_spread:
            continue
        dim = max(u.repeat_spread, key=lambda d: (u.repeat_spread[d], d))
        if u.repeat_spread[dim] > 0:
            scored.append((u, u.repeat_spread[dim], dim))
    scored.sort(key=lambda s: (-s[1], -sum(s[0].repeat_spread.values())))
    return [([u], f"repeated judgments differ by {spread} on {dim}") for u, spread, dim in scored]


def _extremes(units: list[Unit], rng: random.Random) -> Ranked:
    order = sorted(_shuffled(units, rng), key=lambda u: -u.mean_score)
    out: Ranked = []
    lo, hi = 0, len(order) - 1
    while lo <= hi:
        out.append(([order[lo]], f"among the best (judge mean {order[lo].mean_score:.2f})"))
        if hi != lo:
            out.append(([order[hi]], f"among the worst (judge mean {order[hi].mean_score:.2f})"))
        lo, hi = lo + 1, hi - 1
    return out


def _pairs(units: list[Unit], rng: random.Random) -> Ranked:
    if any(u.unit != "session" for u in units):
        raise SelectionError("pairs: compares whole sessions; use `--unit session`")
    groups: dict[tuple, list[Unit]] = {}
    for u in _shuffled(units, rng):
        groups.setdefault((u.case_id, u.seed, u.trial, u.perturbation), []).append(u)
    candidates = []
    for members in groups.values():
        for a, b in combinations(members, 2):
            if a.supporter == b.supporter:
                continue
            gap = abs(a.mean_score - b.mean_score)
            if gap <= PAIR_GAP:
                candidates.append((gap, a, b))
    if not candidates and len({u.supporter for u in units}) < 2:
        raise SelectionError("pairs: needs sessions of at least two supporters on the same case and seed")
    candidates.sort(key=lambda c: c[0])
    return [([a, b], f"near tie on case and seed (judge means {gap:.2f} apart)") for gap, a, b in candidates]


def _bin(u: Unit) -> int:
    return int(u.mean_score + 0.5)


def _attrs(u: Unit) -> tuple:
    return (
        ("case", u.case_id),
        ("group", u.group),
        ("supporter", u.supporter),
        ("perturbation", u.perturbation),
        ("bin", _bin(u)),
    )


def _stratified(units: list[Unit], rng: random.Random) -> Ranked:
    pool = _shuffled(units, rng)
    counts: Counter = Counter()
    out: Ranked = []
    while pool:
        best = min(range(len(pool)), key=lambda i: (sum(counts[a] for a in _attrs(pool[i])), i))
        u = pool.pop(best)
        counts.update(_attrs(u))
        out.append(
            ([u], f"balance: case={u.case_id} supporter={u.supporter} perturbation={u.perturbation} bin={_bin(u)}")
        )
    return out


def _random(units: list[Unit], rng: random.Random) -> Ranked:
    return [([u], "random draw") for u in _shuffled(units, rng)]


STRATEGIES: dict[str, Strategy] = {
    "disagreement": _disagreement,
    "unstable": _unstable,
    "extremes": _extremes,
    "pairs": _pairs,
    "stratified": _stratified,
    "random": _random,
}


def parse_quotas(specs: Sequence[str], n: int | None) -> list[Quota]:
    """`["disagreement:40", "random"]` with `n=100` -> disagreement 40, random 60.

    Strategies without a count share what `n` leaves (the first ones get the remainder). Raises SelectionError.
    """
    if not specs:
        raise SelectionError("--select: name at least one strategy (" + ", ".join(STRATEGIES) + ")")
    parsed: list[tuple[str, int | None]] = []
    for spec in specs:
        name, _, count = spec.partition(":")
        name = name.strip()
        if name not in STRATEGIES:
            raise SelectionError(f"--select {spec}: unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}")
        if any(p[0] == name for p in parsed):
            raise SelectionError(f"--select {spec}: strategy {name!r} given twice")
        if count:
            if not count.strip().isdigit() or int(count) < 1:
                raise SelectionError(f"--select {spec}: the count after ':' must be a positive whole number")
            parsed.append((name, int(count)))
        else:
            parsed.append((name, None))
    fixed = sum(c for _, c in parsed if c is not None)
    open_ = [name for name, c in parsed if c is None]
    if open_:
        if n is None:
            raise SelectionError(f"--n: say how many items {', '.join(open_)} should pick (or give NAME:COUNT)")
        left = n - fixed
        if left < len(open_):
            raise SelectionError(f"--n {n}: leaves {max(left, 0)} item(s) for {', '.join(open_)} after fixed counts")
        share, extra = divmod(left, len(open_))
        counts = {name: share + (1 if i < extra else 0) for i, name in enumerate(open_)}
        parsed = [(name, c if c is not None else counts[name]) for name, c in parsed]
    elif n is not None and n != fixed:
        raise SelectionError(f"--n {n}: the strategy counts add up to {fixed}; drop --n or make them agree")
    return [Quota(strategy=name, n=c) for name, c in parsed if c is not None]


def parse_caps(specs: Sequence[str]) -> dict[str, int]:
    """`["case=5", "supporter=50"]` -> {"case": 5, "supporter": 50}. Raises SelectionError."""
    caps: dict[str, int] = {}
    for spec in specs:
        key, _, value = spec.partition("=")
        key = key.strip()
        if key not in CAP_KEYS:
            raise SelectionError(f"--cap {spec}: unknown key {key!r}; choose from {', '.join(CAP_KEYS)}")
        if not value.strip().isdigit() or int(value) < 1:
            raise SelectionError(f"--cap {spec}: the value after '=' must be a positive whole number")
        caps[key] = int(value)
    return caps


def _cap_values(u: Unit) -> dict[str, object]:
    return {
        "case": u.case_id,
        "group": u.group,
        "supporter": u.supporter,
        "perturbation": u.perturbation,
        "session": (u.run, u.session_id),
    }


def select_units(
    units: Sequence[Unit],
    quotas: Sequence[Quota],
    *,
    seed: int = 0,
    exclude: set[str] | frozenset[str] = frozenset(),
    caps: dict[str, int] | None = None,
) -> Selection:
    """Fill each quota in order from its strategy's ranking. `exclude`: item ids already rated."""
    caps = caps or {}
    taken: set[str] = set()
    used: Counter = Counter()
    picks: list[Pick] = []
    shortfall: dict[str, int] = {}
    already = {u.item_id for u in units if u.item_id in exclude}
    capped: set[str] = set()
    pair_no = 0
    for quota in quotas:
        available = [u for u in units if u.item_id not in taken and u.item_id not in exclude]
        ranked = STRATEGIES[quota.strategy](available, random.Random(f"{seed}:{quota.strategy}"))
        got = 0
        for group, reason in ranked:
            if got + len(group) > quota.n:
                continue
            if any(u.item_id in taken for u in group):
                continue
            need = Counter((k, v) for u in group for k, v in _cap_values(u).items() if k in caps)
            if any(used[kv] + c > caps[kv[0]] for kv, c in need.items()):
                capped.update(u.item_id for u in group)
                continue
            used.update(need)
            pair = None
            if len(group) == 2:
                pair_no += 1
                pair = f"p{pair_no}"
            for pos, u in zip("AB", group):
                taken.add(u.item_id)
                picks.append(
                    Pick(unit=u, strategy=quota.strategy, reason=reason, pair=pair, position=pos if pair else None)
                )
            got += len(group)
            if got >= quota.n:
                break
        if got < quota.n:
            shortfall[quota.strategy] = quota.n - got
    return Selection(picks=picks, shortfall=shortfall, already_rated=len(already), capped=len(capped - taken))
