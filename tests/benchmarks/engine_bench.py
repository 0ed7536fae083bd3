"""Engine speed, measured (not asserted): run with `python tests/benchmarks/engine_bench.py [--embedded]`.

1. Engine overhead per turn with a zero-latency fake model, against a baseline measured in the same run:
   the same model calls made directly, without the graph. Target: under 5 ms per turn.
2. With `--embedded`: one short session (6 member turns, the embedded model as personas, tracker and
   supporter; no disk cache) — wall time, calls, tokens, and the share of prompt tokens llama.cpp served from
   its prefix cache. Target: under 4 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from personas.library import resolve_case  # noqa: E402
from simulator.engine import run_session  # noqa: E402
from simulator.llm.fake import FakeModelClient  # noqa: E402
from simulator.session_state import SessionConfig  # noqa: E402
from simulator.supporters import ModelSupporter  # noqa: E402
from tests._sim_fakes import RoomScript  # noqa: E402


async def fake_sessions(case, n_sessions: int, turns: int) -> tuple[float, int, int]:
    script = RoomScript(case)
    client = FakeModelClient(default=script)
    started = time.perf_counter()
    total_turns = 0
    for seed in range(n_sessions):
        sup = ModelSupporter(client=client, model="fake/s", spec="fake/s")
        rec = await run_session(case, sup, client, SessionConfig(max_turns=turns, seed=seed), session_id=f"b{seed}")
        total_turns += len(rec.turns)
    return time.perf_counter() - started, total_turns, len(client.calls)


async def direct_calls(case, calls: list) -> float:
    """Baseline: the same prompts answered by the same fake, called in a plain loop."""
    client = FakeModelClient(default=RoomScript(case))
    started = time.perf_counter()
    for c in calls:
        await client.complete(c.prompt, role=c.role, schema=c.schema, seed=c.seed)
    return time.perf_counter() - started


def bench_overhead(case_id: str, sessions: int, turns: int) -> None:
    case = resolve_case(case_id)
    asyncio.run(fake_sessions(case, 1, 2))  # warm imports and graph compilation paths
    runs = []
    for _ in range(3):
        wall, n_turns, n_calls = asyncio.run(fake_sessions(case, sessions, turns))
        runs.append((wall, n_turns, n_calls))
    wall, n_turns, n_calls = min(runs)
    script = RoomScript(case)
    probe = FakeModelClient(default=script)
    asyncio.run(
        run_session(
            case,
            ModelSupporter(client=probe, model="fake/s", spec="fake/s"),
            probe,
            SessionConfig(max_turns=turns, seed=0),
            session_id="p",
        )
    )
    base = min(asyncio.run(direct_calls(case, probe.calls)) for _ in range(3)) * sessions
    per_turn = wall / n_turns * 1000
    base_per_turn = base / n_turns * 1000
    print(f"case {case_id}: {sessions} sessions x {turns} member turns = {n_turns} turns, {n_calls} fake calls")
    print(f"  engine + fake model : {per_turn:7.2f} ms/turn")
    print(f"  fake model alone    : {base_per_turn:7.2f} ms/turn   (baseline, same calls, no graph)")
    print(
        f"  engine overhead     : {per_turn - base_per_turn:7.2f} ms/turn   (target < 5 ms)"
        f"   ratio {per_turn / max(base_per_turn, 1e-9):.1f}x baseline"
    )


def embedded_session(case_id: str, turns: int):
    """One session of `case_id` on the embedded model (personas, tracker and supporter; seed 0; no disk cache):
    the record and its wall time."""
    from simulator.llm.client import LiteLLMClient, ModelSettings
    from simulator.llm.embedded import DEFAULT_LOCAL_MODEL

    client = LiteLLMClient(ModelSettings(cache=False))
    sup = ModelSupporter(client=client, model=DEFAULT_LOCAL_MODEL, spec=DEFAULT_LOCAL_MODEL)
    started = time.perf_counter()
    config = SessionConfig(max_turns=turns, seed=0)
    rec = asyncio.run(run_session(resolve_case(case_id), sup, client, config, session_id="bench"))
    return rec, time.perf_counter() - started


def bench_embedded(case_id: str, turns: int) -> None:
    rec, wall = embedded_session(case_id, turns)
    totals = rec.totals()
    by_role: dict[str, list[float]] = {}
    for c in rec.calls:
        by_role.setdefault(c.role, []).append(c.latency_s)
    n_member = sum(t.kind == "member" for t in rec.turns)
    print(
        f"embedded session on {case_id}: status {rec.status.value} ({rec.end_reason}), {len(rec.turns)} turns "
        f"({n_member} member, {len(rec.turns) - n_member} supporter)"
    )
    print(f"  wall time           : {wall:7.1f} s   (target < 240 s)")
    print(f"  model calls         : {int(totals['calls'])}")
    share = totals["cached_prompt_tokens"] / max(1, totals["prompt_tokens"])
    print(
        f"  prompt tokens       : {int(totals['prompt_tokens'])}, of which from prefix cache "
        f"{int(totals['cached_prompt_tokens'])} ({share:.0%})"
    )
    print(f"  generated tokens    : {int(totals['completion_tokens'])}")
    for role, lat in sorted(by_role.items()):
        print(f"  {role:<9} calls     : {len(lat):3d}  total {sum(lat):6.1f} s  median {statistics.median(lat):5.1f} s")
    if rec.failure:
        print(f"  failure: {rec.failure}")


def bench_prefix_states(case_id: str, turns: int, capacities: list[int]) -> None:
    """The same embedded session (seed 0, no disk cache) once per number of KV snapshots kept, in one process:
    wall time and the prompt share served from cache, each against the first capacity as the baseline."""
    from simulator.llm.embedded import get_embedded_model
    from simulator.llm.kvstate import PrefixStates

    model = get_embedded_model()
    results = []
    for capacity in capacities:
        model.prefix_states = capacity
        model._states = PrefixStates(capacity=capacity)
        model._llm.reset()  # nothing left in llama.cpp's cache from the run before
        rec, wall = embedded_session(case_id, turns)
        totals = rec.totals()
        share = totals["cached_prompt_tokens"] / max(1, totals["prompt_tokens"])
        results.append((capacity, wall, share, [t.text for t in rec.turns], model._states.nbytes, rec.status.value))
    base = results[0]
    print(f"KV snapshots kept, one {case_id} session ({turns} member turns, seed 0) each; baseline {base[0]}:")
    for capacity, wall, share, texts, nbytes, status in results:
        same = "same transcript" if texts == base[3] else "transcript differs"
        print(
            f"  {capacity:2d} snapshots: {wall:6.1f} s ({wall / base[1]:.2f}x), prompt from cache {share:.0%}, "
            f"snapshots {nbytes / 2**20:.0f} MiB at the end, {status}, {same}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="herrera-family")
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--embedded", action="store_true", help="also time a real session on the embedded model")
    ap.add_argument("--embedded-only", action="store_true", help="only the embedded-model session")
    ap.add_argument(
        "--prefix-states", default="", help="e.g. 4,8: the embedded session once per number of KV snapshots kept"
    )
    args = ap.parse_args()
    if args.prefix_states:
        bench_prefix_states("dana-and-theo", args.turns, [int(n) for n in args.prefix_states.split(",")])
        return
    if not args.embedded_only:
        bench_overhead(args.case, args.sessions, args.turns)
    if args.embedded or args.embedded_only:
        bench_embedded("dana-and-theo", args.turns)


if __name__ == "__main__":
    main()
