"""The figures of `rescue-sim sensitivity` runs: per headline metric Kendall tau, separated pairs and units for
power (from sensitivity.json), and per run the stressor delivery rate, the simulator-fault rate and wall time (from
the session records). Nothing is recomputed or assumed: every figure is read from what the run wrote.

    rescue-sim sensitivity --model openai/gpt-4o-mini --seeds 0-4 --out runs/sens-mini     # run the ladder first
    python tests/benchmarks/sensitivity_bench.py runs/sens-mini [runs/sens-other ...]
    python tests/benchmarks/sensitivity_bench.py --fake-server runs/sens-fake    # run it against the fake server

`--fake-server` starts the shipped OpenAI-compatible fake server (`simulator.testing.fake_openai`, replies made up
from a hash of each request: they carry no information about the supporter) and runs the ladder against it with
`openai/fake` as M and as the room, then prints the same figures. A sound metric separates nothing there.

Per metric: Kendall tau between declared and observed order, adjacent declared pairs that separate (the paired
difference CI over shared case x seed units excludes 0, in the declared direction) out of all adjacent pairs,
whether the top and bottom rung separate, and the largest number of units per rung an adjacent pair needs for
80% power ("n/a" when some pair's observed difference is 0).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from judges import faulted, read_judgment
from simulator.records import DeliveryStatus, SessionStatus
from simulator.runfolder import RunFolder
from simulator.runner.sensitivity import REPORT_NAME
from simulator.runner.sensitivity_stats import SensitivityReport


def summary_lines(report: SensitivityReport) -> list[str]:
    lines = [
        f"{report.model}: {report.units} units x {report.sessions_per_unit} sessions per rung, "
        f"{report.completed}/{report.sessions} sessions completed, perturbations: "
        f"{', '.join(report.perturbations) or 'none'}"
    ]
    for m in report.metrics:
        if not m.run:
            lines.append(f"  {m.id:30s} not run")
            continue
        tau = "  n/a" if m.kendall_tau is None else f"{m.kendall_tau:+.2f}"
        sep = sum(p.as_declared for p in m.adjacent)
        needs = [p.sessions_for_power for p in m.adjacent]
        power = "n/a" if not needs or any(n is None for n in needs) else str(max(n for n in needs if n is not None))
        top = "yes" if m.separates_top_bottom else "no"
        lines.append(
            f"  {m.id:30s} tau {tau}  adjacent separating {sep}/{len(m.adjacent)}  top-bottom {top:3s}  "
            f"units/rung for 80% power {power}"
        )
    lines.append("  fails: " + ("; ".join(report.failures) or "none"))
    return lines


def run_lines(run: Path) -> list[str]:
    """Stressor delivery, simulator faults and wall time, read from the run's session records."""
    folder = RunFolder(run)
    records = [folder.load_session(s) for s in folder.session_ids()]
    done = [r for r in records if r.status == SessionStatus.COMPLETED]
    directed = [r for r in done if r.delivery is not None]
    by_status = {s.value: sum(r.delivery.status == s for r in directed) for s in DeliveryStatus}
    delivered = by_status[DeliveryStatus.DELIVERED.value]
    faults = [
        f
        for r in done
        if (f := faulted(r, read_judgment(folder, r.session_id) if folder.has_judgment(r.session_id) else None))
    ]
    kinds: dict[str, int] = {}
    for f in faults:
        for k in f.kinds:
            kinds[k] = kinds.get(k, 0) + 1
    starts = [r.started_at for r in records]
    ends = [r.finished_at for r in records if r.finished_at is not None]
    span = (max(ends) - min(starts)).total_seconds() if starts and ends else 0.0
    delivery = (
        f"{delivered}/{len(directed)} ({delivered / len(directed):.0%}); "
        + ", ".join(f"{k} {n}" for k, n in by_status.items() if n)
        if directed
        else "no stressor directed"
    )
    return [
        f"  sessions: {len(done)}/{len(records)} completed",
        f"  stressor delivered: {delivery}",
        f"  simulator faults: {len(faults)}/{len(done)} sessions"
        + (f" ({len(faults) / len(done):.0%}): " if done else ": ")
        + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])),
        f"  wall time: {span / 60:.1f} min first start to last finish; "
        f"{sum(r.wall_s for r in records) / 60:.1f} session-minutes",
    ]


def run_fake_server(out: Path, extra: list[str]) -> float:
    """Run the ladder against the fake OpenAI-compatible server; returns the command's wall seconds."""
    from simulator.testing.fake_openai import spawn_server

    with spawn_server(latency_s=0.0) as server:
        env = {**os.environ, "OPENAI_API_BASE": server.url, "OPENAI_API_KEY": "fake-key-not-secret"}
        cmd = [sys.executable, "-m", "simulator.cli.app", "sensitivity", "--model", "openai/fake"]
        cmd += ["--room-model", "openai/fake", "--out", str(out), "--concurrency", "8", *extra]
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
    if not (out / REPORT_NAME).exists():
        sys.exit(f"sensitivity against the fake server wrote no report (exit {proc.returncode}): {proc.stderr[-2000:]}")
    print(f"fake server run: exit {proc.returncode}, {wall:.0f} s")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="Run folders written by rescue-sim sensitivity.")
    parser.add_argument("--fake-server", action="store_true", help="First run the ladder against the fake server.")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []  # after --: options for `rescue-sim sensitivity`
    args = parser.parse_args(argv[: len(argv) - len(extra) - (1 if "--" in argv else 0)])
    if args.fake_server:
        run_fake_server(args.runs[0], extra)
    for run in args.runs:
        path = run / REPORT_NAME if run.is_dir() else run
        report = SensitivityReport.model_validate(json.loads(path.read_text(encoding="utf-8")))
        print("\n".join(summary_lines(report)))
        if run.is_dir():
            print("\n".join(run_lines(run)))


if __name__ == "__main__":
    main()
