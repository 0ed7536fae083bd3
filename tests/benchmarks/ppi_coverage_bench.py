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

The estimators are the library's (`ipw_ppi_mean`, `hajek_mean`, `proportional_pi`, `floored`); ppi_py only for
the naive row. Prints a markdown table: coverage, mean width, mean error, mean number of ratings.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from judges.ratings import hajek_mean, ipw_ppi_mean
from judges.ratings._designs import proportional_pi, sampling_sizes

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--u-scale", type=float, default=1.0, help="scale of the uncertainty's gamma distribution")
    parser.add_argument("--u-shape", type=float, default=0.6, help="shape of the uncertainty's gamma distribution")
    parser.add_argument("--human-noise", type=float, default=0.3, help="sd of one human rating around q")
    args = parser.parse_args()
    SCALE.update(u=args.u_scale, shape=args.u_shape, human=args.human_noise)
    rng = np.random.default_rng(args.seed)
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
