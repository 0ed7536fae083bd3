"""Coverage of the 95% CI and mean width of human-corrected means under each way of choosing items to rate
(issue 21), on simulated data whose answer is known.

    python tests/benchmarks/ppi_coverage_bench.py [--reps 500] [--items 1000] [--n 100] [--seed 0]

Each repetition draws a fresh run of N judged items: a latent quality q ~ N(3, 0.8^2), a judge uncertainty
u ~ Gamma(0.6, 1) that the selection can see (in real runs: panel spread, repeat flips, closeness to a scale
boundary), a human score y = q + N(0, 0.3^2), and a judge score f = q - 0.5 u + sqrt(u) N(0, 1): the judge is
biased, and noisy, in proportion to its own uncertainty. The target is the expected human score, 3.0. With a
budget of n ratings:

- naive PPI on disagreement picks: the n most uncertain items, ppi_py's PPI++ over the rest as if they were a
  random sample (what rescue-sim did before issue 21);
- naive PPI on active picks: the active draw below, but unweighted;
- IPW-PPI on active picks: pi proportional to sqrt(u) (floored), Poisson draw, weights 1/pi (judges.ratings);
- PPI on random picks, human-only on random picks: a simple random sample of n (every pi = n/N);
- human-only on active picks: the 1/pi-weighted (Hajek) mean.

The estimators are the library's (`ipw_ppi_mean`, `hajek_mean`, `proportional_pi`, `sampling_sizes`); ppi_py
only for the naive row. Prints a markdown table: coverage, mean width, mean error, mean number of ratings.

`--plan-check W` checks `ratings plan` instead: a random pilot of 40, the plan's number m of active ratings for a
CI of width W (`residual_model`, `ratings_needed`: the projected variance of the union-weighted estimate), an
active batch of expected size m over the unrated items,
then IPW-PPI over both batches weighted by their union probability; prints m, the width reached and coverage.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from judges.ratings import hajek_mean, ipw_ppi_mean
from judges.ratings._designs import BASE, floor_level, proportional_pi, proportional_scale, sampling_sizes
from judges.ratings._plan import ratings_needed, residual_model
from judges.ratings._ppi import normal_quantile

TRUTH = 3.0


SCALE = {"u": 1.0, "shape": 0.6, "human": 0.3}


def simulate(rng: np.random.Generator, n_items: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q = rng.normal(TRUTH, 0.8, n_items)
    u = rng.gamma(SCALE["shape"], SCALE["u"], n_items)
    y = q + rng.normal(0, SCALE["human"], n_items)
    f = q - 0.5 * u + np.sqrt(u) * rng.normal(0, 1, n_items)
    return y, f, 0.25 * u**2 + u  # what the selection sees: the expected squared judge error, as rescue-sim's proxy


def one_rep(rng: np.random.Generator, n_items: int, n: int) -> dict[str, tuple[float, float, float, int]]:
    """Design -> (low, high, estimate, ratings)."""
    import ppi_py

    y, f, u = simulate(rng, n_items)
    out = {}
    top = np.argsort(-u)[:n]
    rest = np.setdiff1d(np.arange(n_items), top)
    lo, hi = ppi_py.ppi_mean_ci(y[top], f[top], f[rest], alpha=0.05)
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y[top], f[top], f[rest]))[0])
    out["naive PPI, disagreement picks"] = (float(lo[0]), float(hi[0]), point, n)
    pi = np.asarray(proportional_pi(sampling_sizes(list(u)), n))
    s = np.flatnonzero(rng.random(n_items) < pi)
    est, _ = ipw_ppi_mean(list(y[s]), list(f[s]), [0.5] * len(s), list(f))
    out["naive PPI, active picks (unweighted)"] = (est.low, est.high, est.mean, len(s))
    est, _ = ipw_ppi_mean(list(y[s]), list(f[s]), list(pi[s]), list(f))
    out["IPW-PPI, active picks"] = (est.low, est.high, est.mean, len(s))
    est = hajek_mean(list(y[s]), list(pi[s]))
    out["human-only (1/pi), active picks"] = (est.low, est.high, est.mean, len(s))
    r = rng.choice(n_items, n, replace=False)
    even = [n / n_items] * n
    est, _ = ipw_ppi_mean(list(y[r]), list(f[r]), even, list(f))
    out["PPI, random picks"] = (est.low, est.high, est.mean, n)
    est = hajek_mean(list(y[r]), even)
    out["human-only, random picks"] = (est.low, est.high, est.mean, n)
    return out


PILOT = 40


def plan_rep(rng: np.random.Generator, n_items: int, target: float) -> tuple[int, float, bool]:
    """(active ratings the plan asked for, width reached, whether the CI covered the truth)."""
    y, f, v = simulate(rng, n_items)
    z = normal_quantile(0.95)
    pilot = rng.choice(n_items, PILOT, replace=False)
    p0 = PILOT / n_items
    est, lam = ipw_ppi_mean(list(y[pilot]), list(f[pilot]), [p0] * PILOT, list(f))
    judge_var = lam**2 * float(np.var(f)) / n_items
    room = (target / (2 * z)) ** 2 - judge_var
    frame = np.setdiff1d(np.arange(n_items), pilot)
    roots = np.sqrt(BASE + v)
    level = floor_level(list(roots[frame]))
    sizes = np.maximum(roots, level)
    model = residual_model(list(y[pilot] - lam * f[pilot]), [1 / p0] * PILOT, list(sizes[pilot]))
    m = ratings_needed(model, list(sizes), [p0] * n_items, list(frame), room) if room > 0 else len(frame)
    scale = proportional_scale(list(sizes[frame]), m)
    p1 = np.minimum(1.0, scale * sizes)  # what the active design gives every item (pilot ones: had they been left)
    drawn = frame[rng.random(frame.size) < p1[frame]]
    both = np.concatenate([pilot, drawn])
    union = 1 - (1 - p0) * (1 - p1[both])
    est, _ = ipw_ppi_mean(list(y[both]), list(f[both]), list(union), list(f))
    return m, est.high - est.low, est.low <= TRUTH <= est.high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--u-scale", type=float, default=1.0, help="scale of the uncertainty's gamma distribution")
    parser.add_argument("--u-shape", type=float, default=0.6, help="shape of the uncertainty's gamma distribution")
    parser.add_argument("--human-noise", type=float, default=0.3, help="sd of one human rating around q")
    parser.add_argument("--plan-check", type=float, default=None, metavar="W", help="check ratings plan at width W")
    args = parser.parse_args()
    SCALE.update(u=args.u_scale, shape=args.u_shape, human=args.human_noise)
    rng = np.random.default_rng(args.seed)
    if args.plan_check is not None:
        runs = [plan_rep(rng, args.items, args.plan_check) for _ in range(args.reps)]
        m = np.array([r[0] for r in runs], dtype=float)
        width = np.array([r[1] for r in runs])
        print(f"{args.reps} repetitions, N = {args.items}, pilot {PILOT} random, target width {args.plan_check}")
        print(
            f"active ratings asked: median {np.median(m):.0f} (IQR {np.percentile(m, 25):.0f}-{np.percentile(m, 75):.0f}); "
            f"width reached: median {np.median(width):.3f}, mean {width.mean():.3f}, within 10% of the target "
            f"{np.mean(width <= 1.1 * args.plan_check):.0%}; coverage {np.mean([r[2] for r in runs]):.1%}"
        )
        return
    rows: dict[str, list[tuple[float, float, float, int]]] = {}
    start = time.perf_counter()
    for _ in range(args.reps):
        for design, result in one_rep(rng, args.items, args.n).items():
            rows.setdefault(design, []).append(result)
    print(
        f"{args.reps} repetitions, N = {args.items} items, budget n = {args.n}, seed {args.seed}, "
        f"{time.perf_counter() - start:.1f} s"
    )
    print("| design | coverage of the 95% CI | mean width | mean error | mean ratings |")
    print("|---|---|---|---|---|")
    for design, results in rows.items():
        a = np.asarray(results, dtype=float)
        cover = np.mean((a[:, 0] <= TRUTH) & (TRUTH <= a[:, 1]))
        print(
            f"| {design} | {cover:.1%} | {np.mean(a[:, 1] - a[:, 0]):.3f} | {np.mean(a[:, 2] - TRUTH):+.3f} | "
            f"{np.mean(a[:, 3]):.1f} |"
        )


if __name__ == "__main__":
    main()
