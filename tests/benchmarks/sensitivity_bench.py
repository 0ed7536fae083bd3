"""The figures of one or more `rescue-sim sensitivity` runs, one line per headline metric, from sensitivity.json.

    rescue-sim sensitivity --model openai/gpt-4o-mini --seeds 0-4 --out runs/sens-mini     # run the ladder first
    python tests/benchmarks/sensitivity_bench.py runs/sens-mini [runs/sens-other ...]

Per metric: Kendall tau between declared and observed order, adjacent declared pairs that separate (paired
difference CI over shared case x seed units excludes 0, in the declared direction) out of all adjacent pairs,
whether the top and bottom rung separate, and the largest number of units per rung an adjacent pair needs for
80% power ("n/a" when some pair's observed difference is 0). Every figure is read from the report; nothing is
recomputed or assumed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from simulator.runner.sensitivity import REPORT_NAME, SensitivityReport


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="Run folders written by rescue-sim sensitivity.")
    args = parser.parse_args()
    for run in args.runs:
        path = run / REPORT_NAME if run.is_dir() else run
        report = SensitivityReport.model_validate(json.loads(path.read_text(encoding="utf-8")))
        print("\n".join(summary_lines(report)))


if __name__ == "__main__":
    main()
