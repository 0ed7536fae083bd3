"""Fidelity of the simulated room, measured (not asserted), before and after a change to the member code.

    flock /tmp/rescue-embedded.lock python tests/benchmarks/fidelity_bench.py run --out /tmp/fid/after
    PYTHONPATH=/tmp/fid-before flock /tmp/rescue-embedded.lock \
        python tests/benchmarks/fidelity_bench.py run --out /tmp/fid/before      # the pre-change code
    python tests/benchmarks/fidelity_bench.py report /tmp/fid/before /tmp/fid/after

Side by side, one core each (`--threads 1` under `taskset`): both runs see the same machine at the same time,
so their wall times compare fairly even when each is slower than alone.

`run` plays 3 cases x 2 seeds x 6 member turns on the embedded model with the scripted supporter (no supporter
model calls) and no call cache, and saves each session record. It uses only APIs that existed before the
fidelity work, so it runs against an older checkout through PYTHONPATH.

`report` computes every figure from the saved records with the current fidelity audit (the same per-turn checks
the engine runs live, applied after the fact), so old and new records are measured the same way: verbatim and
near-duplicate repeats, flags per 100 member turns by kind, truncated fields, re-asks (new records only) and
wall time. Targets: no verbatim repeats, near-duplicates under 5% of member turns, no truncated fields, wall
time within 15% of before.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

CASES = ("arjun-and-meera", "kang-family", "dana-and-theo")
SEEDS = (1, 2)
MEMBER_TURNS = 6


async def _run(
    out: Path, threads: int | None = None, cases: tuple[str, ...] = CASES, seeds: tuple[int, ...] = SEEDS
) -> None:
    import simulator
    from personas.library import resolve_case
    from simulator.engine import run_session
    from simulator.llm.client import LiteLLMClient, ModelSettings
    from simulator.session_state import SessionConfig
    from simulator.supporters import ScriptedSupporter

    code = str(Path(simulator.__file__).resolve().parents[1])
    print(f"code under test: {code}", flush=True)
    (out / "sessions").mkdir(parents=True, exist_ok=True)
    client = LiteLLMClient(ModelSettings(cache=False, n_threads=threads))
    models = {r: client.model_for(r) for r in ("member", "tracker")}
    started, cpu0 = time.perf_counter(), time.process_time()
    for case_id in cases:
        case = resolve_case(case_id)
        for seed in seeds:
            sid = f"{case.id}__s{seed}"  # a card file's id is its stem
            path = out / "sessions" / f"{sid}.json"
            if path.exists():
                print(f"{sid}: already there", flush=True)
                continue
            t0 = time.perf_counter()
            rec = await run_session(
                case,
                ScriptedSupporter(),
                client,
                SessionConfig(max_turns=MEMBER_TURNS, seed=seed),
                session_id=sid,
                models=models,
            )
            path.write_text(rec.model_dump_json(indent=1))
            print(f"{sid}: {rec.status} in {time.perf_counter() - t0:.1f} s", flush=True)
    meta = {
        "code": code,
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(time.process_time() - cpu0, 1),  # all threads: less sensitive to other load than wall time
        "threads": threads,
    }
    (out / "bench.json").write_text(json.dumps(meta))


def _report(folders: list[Path]) -> None:
    from judges.room_audit._audit import audit_record
    from simulator.records import SessionRecord

    print(
        f"{'run':<34}{'sessions':>9}{'turns':>7}{'verbatim':>9}{'near-dup':>9}{'fields':>7}"
        f"{'flags/100':>10}{'re-ask%':>8}{'wall s':>8}{'s/turn':>8}{'member s/turn':>14}{'gen tok/turn':>13}"
    )
    kinds_all: dict[str, dict[str, float]] = {}
    for folder in folders:
        recs = [SessionRecord.model_validate_json(p.read_text()) for p in sorted((folder / "sessions").glob("*.json"))]
        audits = [audit_record(r) for r in recs]
        turns = sum(a.member_turns for a in audits)
        verbatim = sum(a.verbatim_repeats for a in audits)
        near = sum(a.near_duplicates for a in audits)
        cuts = [f for a in audits for fl in a.turn_flags.values() for f in fl if f.check == "cut_off"]
        trunc = sum(f.field != "text" for f in cuts)  # self-report fields cut off
        lines_cut = sum(f.field == "text" for f in cuts)
        flags = sum(sum(a.flag_counts.values()) for a in audits)
        reasked = sum(a.reasked_turns for a in audits)
        meta = json.loads((folder / "bench.json").read_text()) if (folder / "bench.json").exists() else {}
        wall = sum(r.wall_s for r in recs)
        member_calls = [c for r in recs for c in r.calls if c.role == "member"]
        member_s = sum(c.latency_s for c in member_calls)
        gen = sum(c.usage.completion_tokens for c in member_calls)
        per100 = 100 * flags / turns if turns else 0.0
        t = max(turns, 1)
        print(
            f"{folder.name:<34}{len(recs):>9}{turns:>7}{verbatim:>9}{near:>6}/{100 * near / t:.0f}%"
            f"{trunc:>7}{per100:>10.1f}{100 * reasked / t:>7.0f}%{wall:>8.0f}{wall / t:>8.1f}{member_s / t:>14.1f}"
            f"{gen / t:>13.1f}"
        )
        print(f"{'':<34}cut-off lines: {lines_cut}; truncated self-report fields: {trunc}")
        failed = [f"{r.session_id}: {r.failure}" for r in recs if r.failure]
        for line in failed:
            print(f"{'':<34}failed: {line[:150]}")
        kinds: dict[str, int] = {}
        for a in audits:
            for k, n in a.flag_counts.items():
                kinds[k] = kinds.get(k, 0) + n
        kinds_all[folder.name] = {k: round(100 * n / max(turns, 1), 1) for k, n in sorted(kinds.items())}
        if meta:
            print(f"{'':<34}script wall {meta.get('wall_s')} s, cpu {meta.get('cpu_s')} s; code {meta.get('code')}")
    print("\nflags per 100 member turns, by kind:")
    for name, kinds in kinds_all.items():
        print(f"  {name}: " + (", ".join(f"{k} {v:g}" for k, v in kinds.items()) or "none"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="simulate and save records")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--threads", type=int, help="llama.cpp threads (default: one per core, at most 8)")
    r.add_argument("--cases", default=",".join(CASES), help="comma-separated case ids or card files")
    r.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated seeds")
    p = sub.add_parser("report", help="measure saved records")
    p.add_argument("folders", type=Path, nargs="+")
    args = ap.parse_args()
    if args.cmd == "run":
        cases = tuple(c for c in args.cases.split(",") if c)
        asyncio.run(_run(args.out, args.threads, cases, tuple(int(x) for x in args.seeds.split(","))))
    else:
        _report(args.folders)


if __name__ == "__main__":
    sys.exit(main())
