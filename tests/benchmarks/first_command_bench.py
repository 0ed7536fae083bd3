"""Where the README's first command spends its time, measured (not asserted).

    python tests/benchmarks/first_command_bench.py RUN_DIR [RUN_DIR ...]     # breakdown of finished runs
    flock /tmp/rescue-embedded.lock python tests/benchmarks/first_command_bench.py --rates   # this machine's
                                                                               # llama.cpp prompt/generation speed

For each run folder (a session of `rescue-sim run --case dana-and-theo --turns 4`, plus its judgment): model
calls per role, prompt tokens read (and how many llama.cpp's prefix cache served), tokens generated, model
seconds, and the tokens per second these imply. On a shared machine the seconds are inflated by other load;
`--rates` measures the embedded model's prompt and generation speed now, and `--prompt-tps/--gen-tps` turn the
token counts into the time the same work takes at those speeds (e.g. on two uncontended cores). Target: session
plus judging under 6 minutes on 2 uncontended cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def breakdown(run_dir: Path) -> dict[str, dict[str, float]]:
    """role -> calls, prompt, cached, generated, seconds (session calls by role, plus `judge`)."""
    from judges import read_judgment
    from simulator.runfolder import RunFolder

    folder = RunFolder(run_dir)
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for sid in folder.session_ids():
        record = folder.load_session(sid)
        calls = list(record.calls)
        judgment = read_judgment(folder, sid)
        if judgment is not None:
            calls += [c for v in judgment.verdicts for c in v.calls]
        for c in calls:
            row = out[c.role]
            row["calls"] += 1
            row["prompt"] += c.usage.prompt_tokens
            row["cached"] += c.usage.cached_prompt_tokens
            row["generated"] += c.usage.completion_tokens
            row["seconds"] += c.latency_s
    return out


def print_breakdown(run_dir: Path, prompt_tps: float | None, gen_tps: float | None) -> None:
    rows = breakdown(run_dir)
    print(f"\n{run_dir}")
    print(f"{'role':<10}{'calls':>6}{'prompt':>8}{'cached':>8}{'read':>8}{'written':>9}{'seconds':>9}{'at rates':>10}")
    total = defaultdict(float)
    for role in sorted(rows, key=lambda r: (r == "judge", r)):
        r = rows[role]
        read = r["prompt"] - r["cached"]
        est = read / prompt_tps + r["generated"] / gen_tps if prompt_tps and gen_tps else None
        print(
            f"{role:<10}{int(r['calls']):>6}{int(r['prompt']):>8}{int(r['cached']):>8}{int(read):>8}"
            f"{int(r['generated']):>9}{r['seconds']:>9.1f}{'' if est is None else f'{est:>10.1f}'}"
        )
        for k in ("calls", "prompt", "cached", "generated", "seconds"):
            total[k] += r[k]
        total["estimate"] += est or 0.0
        if role != "judge":
            total["session_seconds"] += r["seconds"]
            total["session_estimate"] += est or 0.0
    read = total["prompt"] - total["cached"]
    print(
        f"{'total':<10}{int(total['calls']):>6}{int(total['prompt']):>8}{int(total['cached']):>8}{int(read):>8}"
        f"{int(total['generated']):>9}{total['seconds']:>9.1f}"
        + (f"{total['estimate']:>10.1f}" if prompt_tps and gen_tps else "")
    )
    judging = total["seconds"] - total["session_seconds"]
    print(f"session model seconds {total['session_seconds']:.0f}, judging {judging:.0f}")
    if prompt_tps and gen_tps:
        print(
            f"at {prompt_tps:g} prompt tok/s and {gen_tps:g} generated tok/s: session "
            f"{total['session_estimate']:.0f}s, judging {total['estimate'] - total['session_estimate']:.0f}s, "
            f"together {total['estimate']:.0f}s"
        )


def measure_rates(repeats: int = 3) -> tuple[float, float]:
    """Prompt and generation tokens per second of the embedded model now (fresh prompts, no cache reuse)."""
    from simulator.llm.embedded import get_embedded_model

    model = get_embedded_model()
    prompt_rates, gen_rates = [], []
    for i in range(repeats):
        words = " ".join(f"w{i}x{j}" for j in range(300))
        messages = [{"role": "user", "content": f"{words}\n\nCount the words above, then tell a long story."}]
        model._llm.reset()
        model._states._snaps.clear()
        started = time.perf_counter()
        out = model.generate(messages, max_tokens=1, temperature=0.0, seed=0)
        prompt_rates.append(out.prompt_tokens / (time.perf_counter() - started))
        started = time.perf_counter()
        out = model.generate(messages, max_tokens=96, temperature=0.0, seed=0)
        gen_rates.append(out.completion_tokens / (time.perf_counter() - started))
    return max(prompt_rates), max(gen_rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--rates", action="store_true", help="Measure the embedded model's speed now.")
    parser.add_argument("--prompt-tps", type=float, help="Prompt tokens per second to estimate times at.")
    parser.add_argument("--gen-tps", type=float, help="Generated tokens per second to estimate times at.")
    args = parser.parse_args()
    prompt_tps, gen_tps = args.prompt_tps, args.gen_tps
    if args.rates:
        prompt_tps, gen_tps = measure_rates()
        print(f"embedded model now: {prompt_tps:.1f} prompt tok/s, {gen_tps:.1f} generated tok/s")
    for run in args.runs:
        print_breakdown(run, prompt_tps, gen_tps)


if __name__ == "__main__":
    main()
