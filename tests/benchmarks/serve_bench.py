"""`rescue-sim serve` benchmark: one run folder of 200 judged sessions (the report benchmark's synthetic
18-turn sessions, two judges each, written through RunFolder), served by a real uvicorn server; in headless chromium
the time from navigation to a usable run page (leaderboard, filters, first page of the list), and to one session
opened (its detail fetched from the server).

First, the folder as the commands leave it: `run` and `judge` end with `refresh_index` (simulator.runner.pageindex), which
is timed (the seconds it adds to the command), then a never-served start whose first request must find the index
(the page data is not built: asserted). Then three starts are timed, in this order, on the same folder with the
index removed: cold without an index (the first request builds the
page data and keeps it in `<run>/.serve-index.json`: what every start did before the index), cold with the index (a
restart: the first request reads that one file), and the way `rescue-sim serve` starts (page data made ready in a
thread at start; the page is loaded once that is done). The cold first loads' ratio is printed.

    python -m tests.benchmarks.serve_bench [--sessions 200] [--loads 3] [--fake-run 200] [--changed 5]

`--changed N` then changes the folder after its command: N sessions re-judged (other scores) and N added. Its
first page load is timed twice in the same run: with the per-session entries the previous build kept
(`.serve-entries.json`: only the 2N changed sessions are read again) and without them (every session read, what
every such start did before), with their ratio.

`--fake-run N` also times `run_specs` on N fake-provider sessions of 2 turns (no judging) without the index, then
the `refresh_index` that `run_specs` adds at its end on that folder: the added seconds of a plain `run`.

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from judges import write_judgment
from simulator.runfolder import RunFolder
from simulator.runner.pageindex import ENTRIES_NAME, INDEX_NAME, refresh_index
from simulator.serve import bind_socket, build_app
from tests._browser import Browser, chromium_missing
from tests._rating_fixtures import SessionSpec, judge_record
from tests.benchmarks.report_bench import JUDGES, long_session, score

SUPPORTER = "openai/gpt-4o-mini"


def make_run(path: Path, sessions: int) -> Path:
    folder = RunFolder(path)
    folder.open({"supporter": SUPPORTER, "models": {"member": "member/model-x"}, "judges": list(JUDGES)})
    for k in range(sessions):
        spec = SessionSpec(f"c{k % 10}__s{k // 10}", case_id=f"c{k % 10}", seed=k // 10)
        record = long_session(spec, SUPPORTER)
        folder.write_session(record)
        write_judgment(folder, judge_record(record, JUDGES, score))
    return folder.path


def change_run(path: Path, n: int) -> None:
    """What a later command (or a person) does to a run: `n` sessions re-judged with other scores, `n` added."""
    folder = RunFolder(path)
    for sid in folder.session_ids()[:n]:
        write_judgment(folder, judge_record(folder.load_session(sid), JUDGES, lambda *a: 1))
    for k in range(n):
        record = long_session(SessionSpec(f"c{k}__s{900 + k}", case_id=f"c{k}", seed=900 + k), SUPPORTER)
        folder.write_session(record)
        write_judgment(folder, judge_record(record, JUDGES, score))


def no_model():  # the benchmark plays no session
    raise RuntimeError("no model in the benchmark")


def fake_run_added(root: Path, sessions: int) -> tuple[float, float]:
    """Seconds of `run_specs` on `sessions` fake 2-turn sessions without the index, and of the index added after."""
    from personas.library import resolve_case
    from simulator.llm.fake import FakeModelClient
    from simulator.runner.runs import run_specs
    from simulator.runner.session import SessionSpec, make_session_id
    from simulator.session_state import SessionConfig
    from tests._sim_fakes import RoomScript

    case = resolve_case("dana-and-theo")
    specs = [
        SessionSpec(
            session_id=make_session_id(case.id, "scripted", None, s),
            case=case,
            supporter="scripted",
            seed=s,
            config=SessionConfig(max_turns=2, seed=s),
        )
        for s in range(sessions)
    ]
    t0 = time.perf_counter()
    asyncio.run(run_specs(specs, FakeModelClient(default=RoomScript(case)), root, concurrency=8, page_index=False))
    run_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert refresh_index(root), "the fake run's index is written"
    return run_s, time.perf_counter() - t0


def timed_loads(runs_dir: Path, *, warm: bool, loads: int, profile: Path, build: bool = True) -> dict[str, float]:
    import uvicorn

    app = build_app(runs_dir, client_factory=no_model, warm=warm)
    if not build:  # the first request must read the index the commands left

        def refuse(run):
            raise AssertionError(f"built {run}: the index the commands left was not used")

        import simulator.serve._runs as served

        served.build_index_data, kept = refuse, served.build_index_data
    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    started = time.perf_counter()
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    out: dict[str, float] = {"server_up_s": time.perf_counter() - started}
    if warm:  # wait for the start-up build, as a person opening the page a few seconds later would
        while not app.app.state.runs.is_built("run"):
            time.sleep(0.02)
        out["warm_build_s"] = time.perf_counter() - started
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/run?name=run"
    ready = []
    with Browser(profile) as browser:
        page = browser.page()
        for _ in range(loads):
            t0 = time.perf_counter()
            page.send("Page.navigate", {"url": url})
            page.wait_event("Page.loadEventFired", 120)
            page.wait_for("window.__report && window.__report.ready === true", 120)
            ready.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        page.eval("document.querySelector('#session-table tr.row').click()")
        page.wait_for("document.querySelectorAll('#transcript .turn').length > 0")
        out["open_session_s"] = time.perf_counter() - t0
        out["errors"] = len(page.errors())
        page.close()
    server.should_exit = True
    thread.join(20)
    if not build:
        served.build_index_data = kept
    out["first_load_s"] = ready[0]
    out["median_load_s"] = statistics.median(ready)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--fake-run", type=int, default=0, help="also time the index added to a fake run of N sessions")
    ap.add_argument("--changed", type=int, default=0, help="also time a first load after N re-judged + N added")
    args = ap.parse_args()
    why = chromium_missing()
    if why:
        raise SystemExit(f"needs headless chromium: {why}")
    root = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    try:
        t0 = time.perf_counter()
        make_run(root / "runs" / "run", args.sessions)
        print(f"run folder: {args.sessions} judged sessions of 18 turns, written in {time.perf_counter() - t0:.1f} s")
        index = root / "runs" / "run" / INDEX_NAME
        t0 = time.perf_counter()
        assert refresh_index(root / "runs" / "run"), "the commands' index is written"
        added = time.perf_counter() - t0
        fresh = timed_loads(root / "runs", warm=False, loads=args.loads, profile=root / "p0", build=False)
        print(
            f"as the commands leave it (`run`/`judge` end with the index: {added:.2f} s added, "
            f"{index.stat().st_size // 1024} KB), never served: first page load {fresh['first_load_s'] * 1000:.0f} ms "
            f"(no build), later loads median {fresh['median_load_s'] * 1000:.0f} ms"
        )
        if args.fake_run:
            run_s, index_s = fake_run_added(root / "fake", args.fake_run)
            print(
                f"fake run of {args.fake_run} 2-turn sessions: run_specs {run_s:.2f} s without the index, "
                f"the index after it {index_s:.2f} s (+{100 * index_s / run_s:.0f}%)"
            )
        index.unlink()
        (index.parent / ENTRIES_NAME).unlink()  # and the per-session entries: a build from nothing
        before = timed_loads(root / "runs", warm=False, loads=args.loads, profile=root / "p1")
        print(
            f"cold, no index (the first request builds the page data): first page load "
            f"{before['first_load_s'] * 1000:.0f} ms, later loads (cached) median {before['median_load_s'] * 1000:.0f} ms"
        )
        assert index.is_file(), "the cold build keeps its index"
        after = timed_loads(root / "runs", warm=False, loads=args.loads, profile=root / "p2")
        print(
            f"cold, restarted with the index (the first request reads {index.stat().st_size // 1024} KB): first page "
            f"load {after['first_load_s'] * 1000:.0f} ms, later loads median {after['median_load_s'] * 1000:.0f} ms; "
            f"first load {before['first_load_s'] / after['first_load_s']:.1f}x faster than without"
        )
        w = timed_loads(root / "runs", warm=True, loads=args.loads, profile=root / "p3")
        print(
            f"as `rescue-sim serve` starts (page data ready {w['warm_build_s']:.2f} s after start, index present): "
            f"first page load {w['first_load_s'] * 1000:.0f} ms, median of {args.loads} {w['median_load_s'] * 1000:.0f} ms; "
            f"open one session (detail fetched) {w['open_session_s'] * 1000:.0f} ms; console errors {w['errors']:.0f}"
        )
        if args.changed:
            run = root / "runs" / "run"
            kept = (run / ENTRIES_NAME).read_bytes()  # the entries the last build left
            change_run(run, args.changed)
            (run / ENTRIES_NAME).unlink()
            whole = timed_loads(root / "runs", warm=False, loads=args.loads, profile=root / "p4")
            (run / ENTRIES_NAME).write_bytes(kept)
            (run / INDEX_NAME).unlink()
            part = timed_loads(root / "runs", warm=False, loads=args.loads, profile=root / "p5")
            print(
                f"changed after its command ({args.changed} re-judged, {args.changed} added, "
                f"{len(RunFolder(run).session_ids())} sessions): first page load {whole['first_load_s'] * 1000:.0f} ms "
                f"reading every session, {part['first_load_s'] * 1000:.0f} ms reading the {2 * args.changed} changed "
                f"ones ({whole['first_load_s'] / part['first_load_s']:.1f}x faster; later loads median "
                f"{part['median_load_s'] * 1000:.0f} ms; console errors {part['errors']:.0f})"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
