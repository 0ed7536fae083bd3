"""Choosing which units go to human raters: strategies, quotas, caps, and no item twice.

Each strategy ranks the units still available; the driver takes them in rank order until the strategy's quota
is met, skipping units already taken (by an earlier strategy), already rated (an earlier ratings import) or over
a cap (at most N per case, supporter, ...). Strategies are deterministic for a given seed.

- `disagreement`: the judge panel's largest spread (max - min score) first; needs a panel of 2+ judges.
- `unstable`: the largest spread of the panel mean across repeated judgments (`judge --repeat K`) first.
- `extremes`: best and worst by the judges' mean score, alternating (best, worst, 2nd best, 2nd worst, ...).
- `pairs`: two supporters on the same case, seed, trial and perturbation whose judge means are nearest
  (gap at most PAIR_GAP points), taken two at a time; session units only.
- `stratified`: strata by case, supporter, perturbation and judge-score bin, n spread evenly over them, a random
  sample within each (judges.ratings._designs).
- `random`: a simple random sample (a seeded shuffle).
- `active`: each unit drawn independently with a probability proportional to the root of its judge uncertainty
  (judges.ratings._designs); `Quota.budgets` gives each supporter its own expected count (`ratings plan`).

`random`, `stratified` and `active` are probability designs: each pick carries its inclusion probability `pi`, and
their ratings can correct means (weighted by 1/pi). The other strategies pick deterministically from the judges'
scores: their picks carry `pi=None` (unknown probability) and serve agreement studies and finding judge failures.
A cap that turns a design's draw away makes its probabilities unknown too (the picks say so).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import combinations

from pydantic import BaseModel, ConfigDict, Field

from judges.ratings._designs import UNKNOWN, active_design, poisson_draw, stratified_allocation, stratum
from judges.ratings._units import Unit
from personas.common.errors import Param, ParameterError

PAIR_GAP = 1.0  # judge-mean points: pairs further apart than this are no near-tie
CAP_KEYS = ("case", "group", "supporter", "perturbation", "session")


class SelectionError(ParameterError):
    """A selection that cannot be made as asked (unknown strategy, a strategy without the data it needs)."""


class Quota(BaseModel):
    model_config = ConfigDict(extra="forbid")

    strategy: str
    n: int = Field(ge=1)
    budgets: dict[str, int] | None = Field(
        default=None, description="`active` only: supporter (leaderboard label) -> expected picks, from a plan."
    )


class Pick(BaseModel):
    """One selected unit, why it was picked, and its pair (pairs strategy)."""

    model_config = ConfigDict(extra="forbid")

    unit: Unit
    strategy: str
    reason: str = Field(description="Human-readable reason, e.g. `judges differ by 3 on timing`.")
    pair: str | None = Field(default=None, description="Pair id `p<k>` for the pairs strategy.")
    position: str | None = Field(default=None, description="`A` or `B` within the pair.")
    pi: float | None = Field(
        default=None, description="Inclusion probability under the strategy's design; None: unknown (deterministic)."
    )

    @property
    def design(self) -> str:
        """`random`, `stratified`, `active`, or `unknown-probability`."""
        return self.strategy if self.pi is not None else UNKNOWN


class Selection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    picks: list[Pick]
    shortfall: dict[str, int] = Field(default_factory=dict, description="Strategy -> items it could not find.")
    already_rated: int = Field(default=0, description="Units skipped because they were rated in an earlier import.")
    capped: int = Field(default=0, description="Units skipped because a cap was full.")
    unknown_pi: dict[str, str] = Field(
        default_factory=dict, description="Design strategy -> why its picks lost their known probability."
    )
    probabilities: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Design strategy -> item id -> the probability its design gave (or would have given) every "
        "unit offered, drawn or not, in the frame or not (rated before, taken earlier): what lets ratings of "
        "several batches be weighted together.",
    )


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
        raise SelectionError("pairs: compares whole sessions; use `", Param("unit"), " session`")
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


Drawn = list[tuple[Unit, str, float]]  # (unit, reason, inclusion probability)
Design = tuple[Drawn, dict[str, float]]  # the draw, and every pool unit's probability under the same design


def _draw_random(units: list[Unit], pool: Sequence[Unit], quota: Quota, rng: random.Random) -> Design:
    """The whole frame shuffled: its first n are the sample (the rest serve only when a cap turns units away)."""
    pi = min(quota.n, len(units)) / len(units) if units else 0.0
    return [(u, f"random draw (pi {pi:.3f})", pi) for u in _shuffled(units, rng)], {u.item_id: pi for u in pool}


def _draw_stratified(units: list[Unit], pool: Sequence[Unit], quota: Quota, rng: random.Random) -> Design:
    strata: dict[tuple, list[Unit]] = {}
    for u in sorted(units, key=lambda x: x.item_id):
        strata.setdefault(stratum(u), []).append(u)
    drawn, expected = stratified_allocation({k: len(v) for k, v in strata.items()}, quota.n, rng)
    out: Drawn = []
    rounds: list[list[tuple[Unit, str, float]]] = []
    for key in sorted(strata):
        members = strata[key]
        pick = rng.sample(members, drawn[key])
        reason = f"stratum case={key[0]} supporter={key[1]} perturbation={key[2] or '-'} bin={key[3]}"
        rounds.append([(u, f"{reason} ({drawn[key]} of {len(members)})", expected[key] / len(members)) for u in pick])
    for i in range(max((len(r) for r in rounds), default=0)):  # interleave: one per stratum in turn
        out += [r[i] for r in rounds if i < len(r)]
    share = max(expected.values(), default=0.0)  # what a stratum with room gets
    pool_sizes: dict[tuple, int] = {}
    for u in pool:
        pool_sizes[stratum(u)] = pool_sizes.get(stratum(u), 0) + 1
    probs = {}
    for u in pool:
        key = stratum(u)
        probs[u.item_id] = expected[key] / len(strata[key]) if key in strata else min(1.0, share / pool_sizes[key])
    return out, probs


def _draw_active(units: list[Unit], pool: Sequence[Unit], quota: Quota, rng: random.Random) -> Design:
    frame = sorted(units, key=lambda x: x.item_id)
    groups: list[tuple[str | None, float]] = [(None, float(quota.n))]
    if quota.budgets is not None:
        groups = [(label, float(n)) for label, n in quota.budgets.items() if n > 0]
    out: Drawn = []
    probs: dict[str, float] = {}
    for label, n in groups:
        members = [u for u in frame if label is None or u.label == label]
        pi, pi_of = active_design(members, n)
        probs.update({u.item_id: pi_of(u) for u in pool if label is None or u.label == label})
        for i in poisson_draw(pi, rng):
            out.append((members[i], f"active draw (pi {pi[i]:.3f}, judge uncertainty)", pi[i]))
    return out, probs


RANKED: dict[str, Strategy] = {
    "disagreement": _disagreement,
    "unstable": _unstable,
    "extremes": _extremes,
    "pairs": _pairs,
}
DRAWS: dict[str, Callable[[list[Unit], Sequence[Unit], Quota, random.Random], Design]] = {
    "stratified": _draw_stratified,
    "random": _draw_random,
    "active": _draw_active,
}
STRATEGIES: tuple[str, ...] = (*RANKED, *DRAWS)


def parse_quotas(specs: Sequence[str], n: int | None) -> list[Quota]:
    """`["disagreement:40", "random"]` with `n=100` -> disagreement 40, random 60.

    Strategies without a count share what `n` leaves (the first ones get the remainder). Raises SelectionError,
    naming `specs` as `export_items` calls them: `select`.
    """
    if not specs:
        raise SelectionError(Param("select"), ": name at least one strategy (" + ", ".join(STRATEGIES) + ")")
    parsed: list[tuple[str, int | None]] = []
    for spec in specs:
        name, _, count = spec.partition(":")
        name = name.strip()
        if name not in STRATEGIES:
            raise SelectionError(
                Param("select"), f" {spec}: unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}"
            )
        if any(p[0] == name for p in parsed):
            raise SelectionError(Param("select"), f" {spec}: strategy {name!r} given twice")
        if count:
            if not count.strip().isdigit() or int(count) < 1:
                raise SelectionError(Param("select"), f" {spec}: the count after ':' must be a positive whole number")
            parsed.append((name, int(count)))
        else:
            parsed.append((name, None))
    fixed = sum(c for _, c in parsed if c is not None)
    open_ = [name for name, c in parsed if c is None]
    if open_:
        if n is None:
            raise SelectionError(
                Param("n"), f": say how many items {', '.join(open_)} should pick (or give NAME:COUNT)"
            )
        left = n - fixed
        if left < len(open_):
            raise SelectionError(
                Param("n"), f" {n}: leaves {max(left, 0)} item(s) for {', '.join(open_)} after fixed counts"
            )
        share, extra = divmod(left, len(open_))
        counts = {name: share + (1 if i < extra else 0) for i, name in enumerate(open_)}
        parsed = [(name, c if c is not None else counts[name]) for name, c in parsed]
    elif n is not None and n != fixed:
        raise SelectionError(
            Param("n"), f" {n}: the strategy counts add up to {fixed}; drop ", Param("n"), " or make them agree"
        )
    return [Quota(strategy=name, n=c) for name, c in parsed if c is not None]


def parse_caps(specs: Sequence[str]) -> dict[str, int]:
    """`["case=5", "supporter=50"]` -> {"case": 5, "supporter": 50}. Raises SelectionError (naming `caps`)."""
    caps: dict[str, int] = {}
    for spec in specs:
        key, _, value = spec.partition("=")
        key = key.strip()
        if key not in CAP_KEYS:
            raise SelectionError(Param("caps"), f" {spec}: unknown key {key!r}; choose from {', '.join(CAP_KEYS)}")
        if not value.strip().isdigit() or int(value) < 1:
            raise SelectionError(Param("caps"), f" {spec}: the value after '=' must be a positive whole number")
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
    """Fill each quota in order: a ranked strategy from its ranking, a design by its draw (each pick with its
    inclusion probability). `exclude`: item ids already rated."""
    caps = caps or {}
    taken: set[str] = set()
    used: Counter = Counter()
    picks: list[Pick] = []
    shortfall: dict[str, int] = {}
    already = {u.item_id for u in units if u.item_id in exclude}
    capped: set[str] = set()
    pair_no = 0
    unknown_pi: dict[str, str] = {}
    probabilities: dict[str, dict[str, float]] = {}

    def fits(group: list[Unit]) -> bool:
        need = Counter((k, v) for u in group for k, v in _cap_values(u).items() if k in caps)
        if any(used[kv] + c > caps[kv[0]] for kv, c in need.items()):
            capped.update(u.item_id for u in group)
            return False
        used.update(need)
        return True

    for quota in quotas:
        available = [u for u in units if u.item_id not in taken and u.item_id not in exclude]
        rng = random.Random(f"{seed}:{quota.strategy}")
        got = 0
        if quota.strategy in DRAWS:
            mine: list[Pick] = []
            turned_away = False
            drawn, probabilities[quota.strategy] = DRAWS[quota.strategy](available, units, quota, rng)
            for u, reason, pi in drawn:
                if quota.strategy != "active" and got >= quota.n:
                    break
                if not fits([u]):
                    turned_away = True
                    continue
                taken.add(u.item_id)
                mine.append(Pick(unit=u, strategy=quota.strategy, reason=reason, pi=pi))
                got += 1
            if turned_away:
                unknown_pi[quota.strategy] = (
                    "a --cap turned drawn units away, so the inclusion probabilities are unknown"
                )
                mine = [p.model_copy(update={"pi": None}) for p in mine]
                del probabilities[quota.strategy]
            picks += mine
            want = quota.n if quota.budgets is None else sum(quota.budgets.values())
            if quota.strategy == "active":
                got = want if len(available) >= want else len(available)  # a Poisson draw's size varies by design
            if got < want:
                shortfall[quota.strategy] = want - got
            continue
        ranked = RANKED[quota.strategy](available, rng)
        for group, reason in ranked:
            if got + len(group) > quota.n:
                continue
            if any(u.item_id in taken for u in group):
                continue
            if not fits(group):
                continue
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
    return Selection(
        picks=picks,
        shortfall=shortfall,
        already_rated=len(already),
        capped=len(capped - taken),
        unknown_pi=unknown_pi,
        probabilities=probabilities,
    )
