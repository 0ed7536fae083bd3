"""Report benchmark: a synthetic 1,000-session run (4 supporters, 10 cases, 25 seeds, 18 turns per session, two
judges), the time to build the report file, its size, and in headless chromium the time from navigation to
usable (leaderboard, filters and the first page of the session list drawn) and to open one session.

    python -m tests.benchmarks.report_bench [--sessions 1000] [--keep DIR]

Prints figures; asserts nothing (speed targets are checked by reading them, not by a unit test).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from judges import write_judgment
from judges.report import build_report_data, render_html
from personas.graph import RelationSnapshot
from simulator.records import SessionRecord, SupporterDecision, Turn
from simulator.runfolder import RunFolder
from tests._browser import Browser, chromium_missing, open_report
from tests._rating_fixtures import SessionSpec, judge_record, session_for

SUPPORTERS = ["openai/gpt-4o-mini", "anthropic/claude-3-5-haiku", "ollama/llama3.1:8b", "scripted"]
JUDGES = ("judge/alpha-1", "judge/beta-2")
REPEAT = 3  # the 6-turn fixture session, three times over: 18 turns
FILLER = " I keep thinking about what happened last week, and how neither of us said what we meant when it mattered."


def long_session(spec: SessionSpec, supporter: str) -> SessionRecord:
    base = session_for(spec, supporter, JUDGES)
    n = len(base.turns)
    turns: list[Turn] = []
    decisions: list[SupporterDecision] = []
    sr: list[RelationSnapshot] = [base.self_report[0]]
    ob: list[RelationSnapshot] = [base.observer[0]]
    for k in range(REPEAT):
        off = k * n
        for t in base.turns:
            dec = t.decision.model_copy(update={"after_turn": t.decision.after_turn + off}) if t.decision else None
            turns.append(t.model_copy(update={"index": t.index + off, "text": t.text + FILLER, "decision": dec}))
        for d in base.decisions:
            decisions.append(d.model_copy(update={"after_turn": d.after_turn + off}))
        sr += [s.model_copy(update={"turn": s.turn + off}) for s in base.self_report[1:]]
        ob += [s.model_copy(update={"turn": s.turn + off}) for s in base.observer[1:]]
    return base.model_copy(update={"turns": turns, "decisions": decisions, "self_report": sr, "observer": ob})


def score(judge: str, sid: str, item: str, dim: str) -> int:
    return 1 + (hash((judge, sid, item, dim)) % 5)


def make_run(root: Path, sessions: int) -> list[Path]:
    per = sessions // len(SUPPORTERS)
    dirs = []
    for s_i, supporter in enumerate(SUPPORTERS):
        folder = RunFolder(root / f"run-{s_i}")
        folder.open({"supporter": supporter, "models": {"member": "member/model-x"}, "judges": list(JUDGES)})
        for k in range(per):
            spec = SessionSpec(
                f"c{k % 10}__s{k // 10}",
                case_id=f"c{k % 10}",
                seed=k // 10,
                perturbation=["none", "crisis_disclosure", "interruptions"][k % 3],
            )
            record = long_session(spec, supporter)
            folder.write_session(record)
            write_judgment(folder, judge_record(record, JUDGES, score))
        dirs.append(folder.path)
    return dirs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--keep", type=Path, default=None, help="Write the run and report here and keep them.")
    ap.add_argument("--loads", type=int, default=3, help="Page loads to time.")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="report-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    dirs = make_run(root, args.sessions)
    t1 = time.perf_counter()
    data = build_report_data(dirs)
    html = render_html(data)
    out = root / "report.html"
    out.write_text(html, encoding="utf-8")
    t2 = time.perf_counter()
    print(f"synthetic run: {len(data.sessions)} sessions, {REPEAT * 6} turns each, written in {t1 - t0:.1f} s")
    print(f"report built in {t2 - t1:.1f} s: {out.stat().st_size / 1e6:.1f} MB")
    why = chromium_missing()
    if why:
        print(f"browser timing skipped: {why}")
    else:
        with Browser(root / "profile") as browser:
            page = browser.page()
            ready = [open_report(page, out, timeout=120) for _ in range(args.loads)]
            start = time.perf_counter()
            page.eval("document.querySelector('#session-table tr.row').click()")
            page.wait_for("document.querySelectorAll('#transcript .turn').length > 0")
            open_ms = (time.perf_counter() - start) * 1000
            nodes = page.eval("document.getElementsByTagName('*').length")
            errors = page.errors()
            page.close()
        print(
            f"navigation -> usable (median of {args.loads} loads): {statistics.median(ready):.0f} ms "
            f"(all: {', '.join(f'{r:.0f}' for r in ready)})"
        )
        print(f"open one session (click -> transcript drawn, incl. CDP round trips): {open_ms:.0f} ms")
        print(f"DOM elements with one session open: {nodes}; console errors: {len(errors)}")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
