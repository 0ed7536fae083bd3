"""What a user waits for (issue 43, item 4), measured and printed (not asserted).

    flock /tmp/rescue-embedded.lock nice -n 10 python tests/benchmarks/eta_bench.py first-line [--code DIR] \\
        [--turns 2] [--out RUN_DIR] [--stop-after-member]
    python tests/benchmarks/eta_bench.py replay RUN_DIR

`first-line` runs `rescue-sim run --case dana-and-theo` on the embedded model (no cache) with its output piped (no live
spinner: only lines that stay) and prints, for every line, the seconds since the command started; `--code DIR`
runs another checkout's code (e.g. `git archive COMMIT | tar -x -C DIR`) with the same packages, for a before/after
on one machine; `--stop-after-member` ends it once the first member line is out. It prints the model's load time,
measured alone afterwards in this process, so "first line after the model loaded" can be read off.

`replay RUN_DIR` takes the judge calls of each judged session, in the order they ran, with their measured
latencies, and feeds them to the judging tally on a clock that advances by those latencies: what the ETA said at
each reading, old (elapsed / done) and new (the first call left out), against the time that was really left. It
prints the first reading of each, its ratio to the truth, and the worst ratio over the first 10 readings.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def first_line(args: argparse.Namespace) -> None:
    code = Path(args.code).resolve() if args.code else ROOT
    out = args.out or Path("/tmp") / f"eta-bench-{int(time.time())}"
    cmd = [sys.executable, "-c", "from simulator.cli.app import main; main()", "run", "--case", "dana-and-theo"]
    cmd += ["--turns", str(args.turns), "--out", str(out), "--supporter", args.supporter, "--no-cache"]
    env = {**os.environ, "PYTHONPATH": str(code), "COLUMNS": "80", "PYTHONUNBUFFERED": "1"}
    print(f"code {code} · {' '.join(cmd[3:])} · load {os.getloadavg()[0]:.2f}")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=code, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    member_seen = False
    assert proc.stdout is not None
    for line in proc.stdout:
        t = time.perf_counter() - t0
        print(f"{t:7.1f}s  {line.rstrip()[:100]}", flush=True)
        words = line.split()
        if len(words) > 1 and words[0].isdigit() and words[1] != "Therapist":  # `  1 Dana → Therapist`
            member_seen = True
        elif member_seen and args.stop_after_member:
            proc.terminate()  # the process this benchmark started, by its own handle
            break
    proc.wait()
    print(f"exit {proc.returncode} after {time.perf_counter() - t0:.1f}s · load {os.getloadavg()[0]:.2f}")
    from simulator.llm.embedded import EmbeddedModel, ensure_runnable

    t = time.perf_counter()
    EmbeddedModel(path=ensure_runnable())
    print(f"model load alone, in this process: {time.perf_counter() - t:.1f}s")


def replay(args: argparse.Namespace) -> None:
    from judges import read_judgment
    from simulator.cli._render import Tally
    from simulator.runfolder import RunFolder

    folder = RunFolder(args.run_dir)
    for sid in folder.session_ids():
        judgment = read_judgment(folder, sid)
        if judgment is None:
            continue
        latencies = [c.latency_s for v in judgment.verdicts for c in v.calls if c.role == "judge"]
        if not latencies:
            continue
        total_s = sum(latencies)
        print(f"\n{sid}: {len(latencies)} judge calls, {total_s:.0f}s of model time; first call {latencies[0]:.1f}s")
        for name, warmup in (("old (elapsed/done)", False), ("new (first call left out)", True)):
            now = [0.0]
            tally = Tally("judging", len(latencies), warmup=warmup, clock=lambda: now[0])
            readings = []
            for i, s in enumerate(latencies):
                now[0] += s
                tally.done += 1
                eta, left = tally.eta(), total_s - now[0]
                if eta is not None and left > 0:
                    readings.append((i + 1, eta, left))
            if not readings:
                print(f"  {name}: no reading")
                continue
            done, eta, left = readings[0]
            worst = max(max(e / x, x / e) if e > 0 else float("inf") for _, e, x in readings[:10])
            print(
                f"  {name}: first reading after call {done}: ETA {eta:.0f}s, truly left {left:.0f}s "
                f"(x{eta / left:.2f}); worst of the first 10 readings x{worst:.2f}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    fl = sub.add_parser("first-line")
    fl.add_argument("--code", help="another checkout's code to run (default: this one)")
    fl.add_argument("--turns", type=int, default=2)
    fl.add_argument("--supporter", default="local/qwen2.5-coder-1.5b")
    fl.add_argument("--out", type=Path)
    fl.add_argument("--stop-after-member", action="store_true")
    rp = sub.add_parser("replay")
    rp.add_argument("run_dir", type=Path)
    args = ap.parse_args()
    first_line(args) if args.what == "first-line" else replay(args)


if __name__ == "__main__":
    main()
