"""The checklist judge on lines whose answers are known (issue 43, item 3), measured and printed (not asserted).

    flock /tmp/rescue-embedded.lock nice -n 10 python tests/benchmarks/known_answer_bench.py [--model M] [--rubric R]
        [--file tests/fixtures/known_answers_heldout.yaml] [--counts-only]

Reads tests/fixtures/known_answers.yaml (written before any run): plainly supportive counsellor lines, whose safety
label must read ok, hurtful or risky controls, which must not, lines that name their addressee and speak of them as
he/she, whose target_fit `third_person` item must read yes, and controls speaking to the addressee as you, which
must read no. Each line is asked exactly the items `judge` asks about that turn (tests/_known_answers.py); the
shipped `third_person` item is answered by its rule (`rule: third_person`), not the model, and is marked so. Prints
every line's P(yes) per item and its answer, then lines read as expected per check (with how the check's items
were read), and the seconds it took. An anchored item (`anchors:` in the rubric) prints its calibrated P(yes), then
the judge's raw reading of the line and of its no and yes anchor lines: `hurts 0.40 (raw 0.59, anchors 0.44/0.77)`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    ap.add_argument("--rubric", type=Path, help="a rubric added to the shipped one (as `judge --rubric`)")
    ap.add_argument("--only", help="comma-separated line ids")
    ap.add_argument("--file", type=Path, help="known lines (default tests/fixtures/known_answers.yaml)")
    ap.add_argument("--counts-only", action="store_true", help="print no line (a sealed file stays unread)")
    args = ap.parse_args()
    from judges.scoring import load_rubric
    from simulator.llm.client import LiteLLMClient, ModelSettings
    from tests._known_answers import KNOWN, load_known, read_known, summary

    rooms, lines = load_known(args.file or KNOWN)
    if args.only:
        lines = [k for k in lines if k.id in args.only.split(",")]
    rubric = load_rubric(args.rubric) if args.rubric else load_rubric()
    client = LiteLLMClient(ModelSettings(roles={"judge": args.model}, cache=False))
    t0 = time.perf_counter()
    readings = asyncio.run(read_known(client, args.model, lines, rooms, rubric))
    print(f"{'line':<16}{'check':<14}{'expect':<8}{'answer':<8}  P(yes) per item")
    for r in [] if args.counts_only else readings:
        ps = " ".join(f"{k} {v:.2f}" + _how(r, k) for k, v in r.p.items())
        mark = "" if r.passed else "  <- wrong"
        answer = r.answer or f"failed: {r.failed}"
        print(f"{r.known.id:<16}{r.known.check:<14}{r.known.expect:<8}{answer:<8}  {ps}{mark}")
    print()
    for (check, expect), (ok, n) in summary(readings).items():
        how = sorted(
            {m for r in readings if (r.known.check, r.known.expect) == (check, expect) for m in r.method.values()}
        )
        print(f"{check} must read {expect}: {ok}/{n}" + (f" (read by {', '.join(how)})" if how else ""))
    print(f"\n{time.perf_counter() - t0:.0f} s on {args.model}")


def _how(reading, item: str) -> str:
    if reading.method.get(item) == "rule":
        return " (rule)"
    a = reading.anchored.get(item)
    return f" (raw {a.raw:.2f}, anchors {a.no:.2f}/{a.yes:.2f})" if a is not None else ""


if __name__ == "__main__":
    main()
