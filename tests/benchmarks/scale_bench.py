"""Scale, measured (not asserted): `python tests/benchmarks/scale_bench.py [--quick] [--litellm]`.

Everything runs against the shipped fake OpenAI-compatible server (`simulator.testing.fake_openai`) in its own
process, so its CPU is not counted as the runner's. Four parts, printed side by side:

a. Throughput of the runner (`run_specs`, sessions of 4 member turns, supporter = a structured model) at
   concurrency 1, 8, 32 and 64 with 200 ms model latency, next to a bare aiohttp client replaying the very same
   request bodies: (1) session by session, each session's requests in order, the same number of sessions in
   flight (the runner's own workload minus everything but HTTP: the ratio against it is the target,
   >= 0.8), and (2) all requests at once, `concurrency` in flight, no order (an upper bound: no session has to
   wait for its previous reply).
b. CPU per model call, all-in, broken down by subtraction over the same calls: I/O (the bare client's CPU per
   request), validation (parsing and validating the replies), client (the model client's own work: prompt
   rendering, cache keys, retries, accounting) and graph (everything above the client: LangGraph, the engine,
   supporters, records, run-folder writes). Target: <= 8 ms all-in. `--litellm` adds, at concurrency 8 and 32,
   a row for the litellm path (the providers that need litellm; for `hosted_vllm/` and `openai/` that is litellm's
   translation over the pooled session, `simulator/llm/translated.py`) right after the lean row and its bare
   client, on the same requests, so both paths are compared with a bare client in one run. `--model openai/gpt-4o-mini`
   runs every role on that model at the fake server: the litellm rows are then litellm's openai route, what
   a user of api.openai.com gets, with litellm's cost map (the default `hosted_vllm/fake` has no price).
c. 20% injected faults (429, 500, hang, malformed body, bad content; 4% each) at concurrency 32, sessions
   judged: every session completes or is recorded failed with its reason, failed sessions are never judged,
   and no score comes from a failed judge call.
d. SIGKILL of a run at concurrency 32 once half its sessions are in results.jsonl, then the same run again:
   the results equal those of an uninterrupted run, with no session lost or listed twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simulator.cli._aio import run_sync  # noqa: E402
from simulator.llm.client import LiteLLMClient, ModelSettings  # noqa: E402
from simulator.llm.structured import check_reply  # noqa: E402
from simulator.runfolder import RunFolder  # noqa: E402
from simulator.runner.runs import run_specs  # noqa: E402
from simulator.runner.session import SessionSpec, make_session_id  # noqa: E402
from simulator.testing.fake_openai import FaultRates, spawn_server  # noqa: E402
from tests._runner_child import MODEL, specs  # noqa: E402

TURNS = 4


def specs_for(n: int, turns: int = TURNS, model: str = MODEL) -> list[SessionSpec]:
    """The same matrix the kill/resume tests run (tests/_runner_child.py), with `model` as the supporter."""
    out = specs(n, turns)
    if model == MODEL:
        return out
    return [
        s.model_copy(update={"supporter": model, "session_id": make_session_id(s.case.id, model, None, s.seed)})
        for s in out
    ]


def settings_for(
    url: str, *, cache_path: Path | None = None, litellm: bool = False, model: str = MODEL, **kw: Any
) -> ModelSettings:
    return ModelSettings(
        default=model,
        api_bases={model: url},
        cache=cache_path is not None,
        cache_path=cache_path,
        default_concurrency=256,
        direct_http=not litellm,
        **kw,
    )


class Recorder:
    """Wraps a client and keeps every call (prompt, options, reply) for the client-only replay."""

    def __init__(self, inner: Any):
        self.inner, self.calls = inner, []

    def model_for(self, role: str) -> str:
        return self.inner.model_for(role)

    async def complete(self, prompt, *, role, **kw):
        out = await self.inner.complete(prompt, role=role, **kw)
        self.calls.append((prompt, role, kw, out.text))
        return out


async def bare_replay(url: str, sessions: list[list[str]], concurrency: int, ordered: bool) -> tuple[float, float]:
    """POST the recorded bodies with a plain aiohttp session; returns (wall s, CPU s).

    `ordered`: `concurrency` workers each take the next session and send its requests one after another (as
    the runner does); else every request is independent, `concurrency` in flight."""
    import aiohttp

    headers = {"Content-Type": "application/json", "Authorization": "Bearer none"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def post(body: str) -> None:
            async with session.post(url + "/chat/completions", data=body, headers=headers) as resp:
                json.loads(await resp.read())

        queue = list(reversed(sessions)) if ordered else [[b] for s in reversed(sessions) for b in reversed(s)]

        async def worker() -> None:
            while queue:
                for body in queue.pop():
                    await post(body)

        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - t0, time.process_time() - c0


def record_bodies(client: Any) -> dict[str, list[str]]:
    """Keep every HTTP body the client's lean path sends, per session (benchmark instrumentation)."""
    from collections import defaultdict

    from simulator.llm.direct import chat_body
    from simulator.runner.session import CURRENT_SESSION

    bodies: dict[str, list[str]] = defaultdict(list)
    send = client._http.acompletion

    async def recording(**kw: Any) -> Any:
        body = chat_body(
            kw["model"],
            kw["messages"],
            kw["max_tokens"],
            kw["temperature"],
            kw.get("seed"),
            kw.get("stop"),
            kw.get("response_format"),
        )
        bodies[CURRENT_SESSION.get() or ""].append(json.dumps(body))
        return await send(**kw)

    client._http.acompletion = recording
    return bodies


async def client_replay(client: Any, calls: list, concurrency: int) -> tuple[float, float]:
    sem = asyncio.Semaphore(concurrency)

    async def one(call) -> None:
        prompt, role, kw, _ = call
        async with sem:
            await client.complete(prompt, role=role, **kw)

    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(c) for c in calls))
    return time.perf_counter() - t0, time.process_time() - c0


def validation_cpu(calls: list) -> float:
    """CPU seconds to parse and validate every recorded reply against its schema, as the client does."""
    c0 = time.process_time()
    for _, _, kw, text in calls:
        check_reply(text, kw.get("schema"))
    return time.process_time() - c0


def run_runner(
    url: str,
    specs: list[SessionSpec],
    concurrency: int,
    *,
    litellm: bool = False,
    record: bool = False,
    model: str = MODEL,
):
    client: Any = LiteLLMClient(settings_for(url, litellm=litellm, model=model, timeout_s=30))
    bodies = record_bodies(client) if not litellm else {}
    recorder = Recorder(client) if record else None
    with tempfile.TemporaryDirectory() as d:
        t0, c0 = time.perf_counter(), time.process_time()
        summary = run_sync(run_specs(specs, recorder or client, d, concurrency=concurrency))  # as the CLI runs it
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return summary, wall, cpu, recorder, list(bodies.values())


# -- a + b ---------------------------------------------------------------------------------------------------------


def bench_throughput(
    levels: list[int], per_level: int, litellm: bool = False, model: str = MODEL
) -> tuple[dict[int, dict], dict[int, dict]]:
    """Part a: per level the lean path, a bare client on the lean path's own request bodies, then (`litellm`, at
    8 and 32) the litellm path on the same sessions, compared with that bare client. Returns (lean, litellm) rows."""
    print(f"\n== a. throughput at 200 ms model latency, {model} (runner vs a bare aiohttp client, same requests) ==")
    print(
        f"{'path':>7} {'conc':>4} {'sessions':>8} {'calls':>6} | {'runner calls/s':>14} {'sessions/min':>12}"
        f" {'in flight':>9} | {'bare, by session':>16} {'ratio':>5} | {'bare, unordered':>15} {'ratio':>5}"
        f" | {'CPU ms/call':>11}"
    )
    rows: dict[int, dict] = {}
    lrows: dict[int, dict] = {}
    with spawn_server(latency_s=0.2, canonical=True) as srv:  # same JSON, same reply, whichever path sent it
        for slow in (False, True) if litellm else (False,):  # warm imports, schemas and the connection pools
            run_runner(srv.url, specs_for(2, model=model), 2, litellm=slow, model=model)
        for c in levels:
            specs = specs_for(max(2, per_level * c), model=model)
            row = _runner_row(srv, specs, c, litellm=False, model=model)
            sessions = row.pop("sessions_bodies")
            n = sum(len(x) for x in sessions)
            bwall, bcpu = asyncio.run(bare_replay(srv.url, sessions, c, ordered=True))
            uwall, _ = asyncio.run(bare_replay(srv.url, sessions, c, ordered=False))
            bare = dict(bare_rate=n / bwall, bare_cpu=bcpu / n, flat_rate=n / uwall)
            rows[c] = {**row, **bare}
            _print_row("lean", c, rows[c])
            if litellm and c in (8, 32):
                lrow = _runner_row(srv, specs, c, litellm=True, model=model)
                lrow.pop("sessions_bodies")
                lrows[c] = {**lrow, **bare}
                _print_row("litellm", c, lrows[c])
    return rows, lrows


def _runner_row(srv: Any, specs: list[SessionSpec], c: int, *, litellm: bool, model: str) -> dict:
    srv.reset()
    summary, wall, cpu, recorder, sessions = run_runner(srv.url, specs, c, litellm=litellm, record=c == 32, model=model)
    st = srv.stats()
    calls = st["requests"]
    row = dict(
        sessions=len(specs),
        completed=len(summary.completed),
        calls=calls,
        wall=wall,
        cpu=cpu,
        rate=calls / wall,
        spm=len(summary.finished) / wall * 60,
        in_flight=st["max_in_flight"],
        recorder=recorder,
        sessions_bodies=sessions,
    )
    if row["completed"] != len(specs):
        print(
            f"     note: {len(specs) - row['completed']} session(s) did not complete: "
            + "; ".join(sorted({r.failure or "" for r in summary.failed})[:3])
        )
    return row


def _print_row(path: str, c: int, row: dict) -> None:
    row["ratio"] = row["rate"] / row["bare_rate"]
    row["flat_ratio"] = row["rate"] / row["flat_rate"]
    print(
        f"{path:>7} {c:>4} {row['sessions']:>8} {row['calls']:>6} | {row['rate']:>14.1f} {row['spm']:>12.1f}"
        f" {row['in_flight']:>9} | {row['bare_rate']:>16.1f} {row['ratio']:>5.2f} | {row['flat_rate']:>15.1f}"
        f" {row['flat_ratio']:>5.2f} | {row['cpu'] / row['calls'] * 1000:>11.2f}"
    )


rows_io: dict[str, float] = {}


def bench_ray(levels: list[int], per_level: int, rows: dict[int, dict]) -> None:
    """The same workloads on `--executor ray` (a local Ray with one async actor per core), against the same
    bare figures (the requests are the same: replies depend only on the request)."""
    import ray

    print("\n== a'. throughput with --executor ray on this machine (one async worker actor per core) ==")
    print(
        f"{'conc':>4} {'sessions':>8} {'calls':>6} | {'runner calls/s':>14} {'sessions/min':>12} | {'bare, by session':>16} {'ratio':>5}"
    )
    t0 = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    print(f"  (ray.init took {time.perf_counter() - t0:.1f}s)")
    try:
        with spawn_server(latency_s=0.2) as srv:
            warm = specs_for(4)
            with tempfile.TemporaryDirectory() as d:
                asyncio.run(
                    run_specs(
                        warm, LiteLLMClient(settings_for(srv.url, timeout_s=30)), d, concurrency=4, executor="ray"
                    )
                )
            for c in levels:
                specs = specs_for(max(2, per_level * c))
                srv.reset()
                client = LiteLLMClient(settings_for(srv.url, timeout_s=30))
                with tempfile.TemporaryDirectory() as d:
                    t0 = time.perf_counter()
                    summary = asyncio.run(run_specs(specs, client, d, concurrency=c, executor="ray"))
                    wall = time.perf_counter() - t0
                calls = srv.stats()["requests"]
                rate = calls / wall
                base = rows.get(c, {}).get("bare_rate")
                ratio = f"{rate / base:>5.2f}" if base else f"{'-':>5}"
                print(
                    f"{c:>4} {len(specs):>8} {calls:>6} | {rate:>14.1f} {len(summary.finished) / wall * 60:>12.1f}"
                    f" | {base or 0:>16.1f} {ratio}"
                )
    finally:
        ray.shutdown()


def bench_breakdown(
    row: dict, url_latency: float = 0.2, litellm: bool = False, label: str = "", model: str = MODEL
) -> None:
    recorder = row["recorder"]
    calls = recorder.calls
    n = row["calls"]
    with spawn_server(latency_s=url_latency, canonical=True) as srv:
        client = LiteLLMClient(settings_for(srv.url, litellm=litellm, model=model, timeout_s=30))
        asyncio.run(client_replay(client, calls[:4], 4))  # warm
        _, ccpu = asyncio.run(client_replay(client, calls, 32))
    total = row["cpu"] / n * 1000
    client_all = ccpu / len(calls) * 1000
    io = row.get("bare_cpu", rows_io.get("bare_cpu", 0.0)) * 1000
    validation = validation_cpu(calls) / len(calls) * 1000
    client_only = max(0.0, client_all - io - validation)
    graph = max(0.0, total - client_all)
    print(f"\n== b. CPU per model call at concurrency 32{label} (ms; by subtraction over the same {n} calls) ==")
    print(f"  graph (LangGraph, engine, supporters, records, run folder) {graph:6.2f}")
    print(f"  validation (parse + pydantic validate replies)              {validation:6.2f}")
    print(f"  client (prompt render, cache key, retries, accounting)     {client_only:6.2f}")
    print(f"  I/O (HTTP request + response, bare aiohttp)                 {io:6.2f}")
    print(f"  all-in                                                      {total:6.2f}   (target <= 8)")


# -- c ------------------------------------------------------------------------------------------------------------


def bench_faults(n: int = 32, concurrency: int = 32) -> None:
    from judges import judge_session, load_rubric, read_judgment, write_judgment
    from simulator.runner.session import MeteredClient

    print(f"\n== c. 20% injected faults, concurrency {concurrency}, {n} sessions, judged ==")
    specs = specs_for(n)
    faults = FaultRates.spread(0.2)
    with spawn_server(latency_s=0.05, faults=faults, hang_s=60) as srv, tempfile.TemporaryDirectory() as d:
        # 2 retries (not the default 4), so that some calls do fail for good and the failure paths are exercised
        client = MeteredClient(LiteLLMClient(settings_for(srv.url, timeout_s=1.0, max_retries=2)))
        rubric = load_rubric()

        async def judge(record, folder) -> None:
            write_judgment(folder, await judge_session(record, client, [MODEL], rubric))

        t0 = time.perf_counter()
        summary = asyncio.run(run_specs(specs, client, d, concurrency=concurrency, judge_hook=judge))
        wall = time.perf_counter() - t0
        st = srv.stats()
        folder = RunFolder(d)
        results = {r.session_id: r for r in folder.results()}
        completed = [r for r in results.values() if r.status == "completed"]
        failed = [r for r in results.values() if r.status == "failed"]
        accounted = len(results) == n and all(r.status in ("completed", "failed") for r in results.values())
        reasons = all(r.failure for r in failed)
        judged_failed = [r.session_id for r in failed if folder.has_judgment(r.session_id)]
        leaks = failed_units = 0
        statuses: dict[str, int] = {}
        for r in completed:
            j = read_judgment(folder, r.session_id)
            if j is None:
                continue
            for v in j.verdicts:
                statuses[v.status] = statuses.get(v.status, 0) + 1
                items = {s.item for s in v.scores}
                failed_units += sum(not f.unsupported for f in v.failures)
                for f in v.failures:
                    if f.unsupported:
                        leaks += any(f"{s.item}/{s.dimension}" == f.unit for s in v.scores)
                    elif f.unit.startswith("session"):
                        leaks += bool(items)  # one call scored everything: if it failed, nothing may be scored
                    else:
                        leaks += f.unit in items
        faults_seen = {k: st[k] for k in ("http_429", "http_500", "hang", "malformed", "bad_content")}
        print(
            f"  server: {st['requests']} requests, faults {faults_seen} ({sum(faults_seen.values()) / st['requests']:.0%})"
        )
        print(
            f"  sessions: {len(completed)} completed, {len(failed)} failed, {n - len(results)} unaccounted; wall {wall:.1f}s"
        )
        for r in failed[:5]:
            print(f"    failed {r.session_id}: {r.failure}")
        print(
            f"  judge verdicts by status: { {str(k): v for k, v in statuses.items()} }; judge calls failed for good: "
            f"{failed_units}; judge hook errors: {len(summary.judge_errors)}"
        )
        print(f"  every session completed or failed with a reason: {accounted and reasons}")
        print(f"  failed sessions judged: {len(judged_failed)} (must be 0)")
        print(f"  scores derived from failed judge calls: {leaks} (must be 0)")


# -- d ------------------------------------------------------------------------------------------------------------


def child(out: str, url: str, n: int, concurrency: int) -> None:
    client = LiteLLMClient(settings_for(url, cache_path=Path(out) / "calls.sqlite", timeout_s=30))
    asyncio.run(run_specs(specs_for(n), client, out, concurrency=concurrency))


def _transcripts(folder: RunFolder) -> dict[str, Any]:
    out = {}
    for sid in folder.session_ids():
        rec = folder.load_session(sid)
        out[sid] = (rec.status, rec.end_reason, [(t.speaker, t.text, tuple(t.addressees)) for t in rec.turns])
    return out


def bench_kill(n: int = 64, concurrency: int = 32) -> None:
    print(f"\n== d. SIGKILL at half of {n} sessions (concurrency {concurrency}), then rerun ==")
    with spawn_server(latency_s=0.05) as srv, tempfile.TemporaryDirectory() as d:
        killed, ref = Path(d) / "killed", Path(d) / "reference"
        cmd = [sys.executable, __file__, "--child", str(killed), srv.url, str(n), str(concurrency)]
        proc = subprocess.Popen(cmd)
        results = killed / "results.jsonl"
        while proc.poll() is None:
            if results.is_file() and results.read_text().count("\n") >= n // 2:
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.02)
        proc.wait()
        at_kill = results.read_text().count("\n") if results.is_file() else 0
        in_flight = sum(1 for sid in RunFolder(killed).session_ids() if RunFolder(killed).status(sid) == "incomplete")
        t0 = time.perf_counter()
        rc = subprocess.run(cmd).returncode
        rerun = time.perf_counter() - t0
        subprocess.run([sys.executable, __file__, "--child", str(ref), srv.url, str(n), str(concurrency)], check=True)
        lines = [json.loads(x)["session_id"] for x in results.read_text().splitlines() if x.strip()]
        a, b = _transcripts(RunFolder(killed)), _transcripts(RunFolder(ref))
        expected = {s.session_id for s in specs_for(n)}
        lost = expected - {sid for sid, v in a.items() if v[0] == "completed"}
        print(f"  killed with {at_kill} result lines written and {in_flight} sessions saved mid-flight (incomplete)")
        print(f"  rerun: rc {rc}, {rerun:.1f}s; results.jsonl lines {len(lines)}, distinct {len(set(lines))}")
        print(
            f"  lost: {len(lost)}  duplicated: {len(lines) - len(set(lines))}  "
            f"identical to an uninterrupted run: {a == b and set(a) == expected}"
        )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="Fewer sessions per level (noisier).")
    p.add_argument(
        "--litellm", action="store_true", help="Also measure the litellm path (providers the lean path does not take)."
    )
    p.add_argument("--model", default=MODEL, help="Model id of every role, served by the fake server (part a, b).")
    p.add_argument("--only", default="abcd", help="Parts to run, e.g. 'ab'.")
    p.add_argument("--ray", action="store_true", help="Also run part a on `--executor ray` (needs the ray extra).")
    p.add_argument(
        "--levels",
        default="1,8,32,64",
        help="Concurrency levels of part a (comma-separated; must include 32 for part b). `--litellm` measures the "
        "litellm path at those of 8 and 32 that are listed.",
    )
    p.add_argument("--child", nargs=4, metavar=("OUT", "URL", "N", "CONC"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        out, url, n, conc = a.child
        child(out, url, int(n), int(conc))
        return
    print(f"scale benchmark: {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f} (other processes share them)")
    started = time.perf_counter()
    per_level = 1 if a.quick else 2
    if "a" in a.only or "b" in a.only:
        levels = [int(x) for x in a.levels.split(",") if x.strip()]
        rows, lrows = bench_throughput(levels, per_level, litellm=a.litellm, model=a.model)
        rows_io["bare_cpu"] = rows[32]["bare_cpu"]
        if "b" in a.only:
            bench_breakdown(rows[32], label=" (lean HTTP path)", model=a.model)
            if lrows:
                bench_breakdown(lrows[max(lrows)], litellm=True, label=" (litellm path)", model=a.model)
        if a.ray:
            bench_ray([32, 64], per_level, rows)
        ratios = [r["ratio"] for r in [*rows.values(), *lrows.values()]]
        flat = [r["flat_ratio"] for r in [*rows.values(), *lrows.values()]]
        print(
            f"\n  runner / bare by session: min {min(ratios):.2f}, median {statistics.median(ratios):.2f} (target >= 0.9)"
        )
        print(f"  runner / bare unordered: min {min(flat):.2f}, median {statistics.median(flat):.2f}")
    if "c" in a.only:
        bench_faults()
    if "d" in a.only:
        bench_kill()
    print(
        f"\ntotal benchmark wall time {time.perf_counter() - started:.0f}s, load average {os.getloadavg()[0]:.1f} at the end"
    )


if __name__ == "__main__":
    main()
