"""The concurrent, kill-safe runner against the shipped fake OpenAI-compatible server: sessions really run in
parallel, a SIGKILL and a rerun lose and duplicate nothing, faults end in retries or recorded failures (never
judged), a budget cap stops cleanly, torn result lines are repaired, and Ray gives the local executor's results.
No timing assertions: speed is measured by tests/benchmarks/scale_bench.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from personas.library import load_library, resolve_case
from simulator.llm.embedded import MAX_BATCH
from simulator.llm.fake import FakeModelClient
from simulator.records import SessionStatus
from simulator.runfolder import RunFolder, RunFolderError
from simulator.runner.runs import Budget, RunEvents, run_specs
from simulator.runner.session import SessionSpec, make_session_id
from simulator.session_state import SessionConfig
from simulator.testing.fake_openai import FakeOpenAIServer, FaultRates, instance_for_schema
from tests._runner_child import client as child_client
from tests._runner_child import specs as child_specs
from tests._sim_fakes import RoomScript

CHILD = Path(__file__).parent / "_runner_child.py"


def transcripts(folder: RunFolder) -> dict:
    out = {}
    for sid in folder.session_ids():
        rec = folder.load_session(sid)
        out[sid] = (rec.status, rec.end_reason, rec.seed, rec.trial, [(t.speaker, t.text) for t in rec.turns])
    return out


def raw_result_ids(folder: RunFolder) -> list[str]:
    return [json.loads(line)["session_id"] for line in folder.results_path.read_text().splitlines() if line.strip()]


@pytest.fixture
def server():
    with FakeOpenAIServer(latency_s=0.05) as srv:
        yield srv


# -- the fake server -----------------------------------------------------------------------------------------


def test_fake_server_replies_validate_against_the_simulators_schemas():
    import random

    from simulator.members import state_schema
    from simulator.safety import verdict_schema
    from simulator.supporters import decision_schema
    from simulator.tracker import tracker_schema

    case = resolve_case("dana-and-theo")
    for schema in (
        state_schema(case, case.member_names[0]),
        tracker_schema(case),
        decision_schema(case),
        verdict_schema(),
    ):
        for seed in range(5):
            schema.model_validate(instance_for_schema(schema.model_json_schema(), random.Random(seed)))


def test_fake_server_is_loopback_and_openai_shaped(server):
    import urllib.request

    assert server.url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(server.url + "/models") as resp:
        assert json.loads(resp.read())["data"][0]["id"] == "fake"
    body = {"model": "fake", "messages": [{"role": "user", "content": "Say something."}]}
    req = urllib.request.Request(server.url + "/chat/completions", data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req) as resp:
        reply = json.loads(resp.read())
    assert reply["choices"][0]["message"]["content"] and reply["usage"]["completion_tokens"] > 0
    with urllib.request.urlopen(req) as resp:  # same request, same answer
        assert json.loads(resp.read())["choices"] == reply["choices"]


# -- concurrency ---------------------------------------------------------------------------------------------


def test_sessions_really_run_concurrently(server, tmp_path):
    specs = child_specs(6, turns=2)
    summary = asyncio.run(run_specs(specs, child_client(server.url, None), tmp_path / "run", concurrency=3))
    assert [r.status for r in summary.finished] == [SessionStatus.COMPLETED] * 6
    assert server.stats()["max_in_flight"] == 3  # never more than asked, and really more than one
    folder = RunFolder(tmp_path / "run")
    assert sorted(raw_result_ids(folder)) == sorted(s.session_id for s in specs)


def test_concurrent_run_equals_a_sequential_one(server, tmp_path):
    specs = child_specs(5, turns=2)
    asyncio.run(run_specs(specs, child_client(server.url, None), tmp_path / "seq", concurrency=1))
    asyncio.run(run_specs(specs, child_client(server.url, None), tmp_path / "par", concurrency=5))
    assert transcripts(RunFolder(tmp_path / "seq")) == transcripts(RunFolder(tmp_path / "par"))


# -- kill safety -----------------------------------------------------------------------------------------------


def test_sigkill_mid_run_then_rerun_loses_and_duplicates_nothing(tmp_path):
    n = 8
    with FakeOpenAIServer(latency_s=0.1) as srv:
        out = tmp_path / "killed"
        cmd = [sys.executable, str(CHILD), str(out), srv.url, str(n), "4"]
        proc = subprocess.Popen(cmd)
        results = out / "results.jsonl"
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if results.is_file() and results.read_text().count("\n") >= 2:
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.01)
        assert proc.wait() == -signal.SIGKILL, "the child finished before it could be killed"
        folder = RunFolder(out)
        assert len(folder.results()) < n
        assert subprocess.run(cmd).returncode == 0  # the same command again
        asyncio.run(run_specs(child_specs(n), child_client(srv.url, None), tmp_path / "reference", concurrency=4))
    ids = raw_result_ids(folder)
    assert sorted(ids) == sorted(s.session_id for s in child_specs(n))  # none lost, none listed twice
    assert transcripts(folder) == transcripts(RunFolder(tmp_path / "reference"))
    assert all(r.status == SessionStatus.COMPLETED for r in folder.results())


def test_torn_duplicate_and_missing_result_lines_are_repaired(tmp_path):
    case = resolve_case("dana-and-theo")
    client = FakeModelClient(default=RoomScript(case))
    specs = [
        SessionSpec(
            session_id=make_session_id(case.id, "scripted", None, s),
            case=case,
            supporter="scripted",
            seed=s,
            config=SessionConfig(max_turns=2, seed=s),
        )
        for s in range(3)
    ]
    asyncio.run(run_specs(specs, client, tmp_path, concurrency=2))
    folder = RunFolder(tmp_path)
    lines = folder.results_path.read_text().splitlines(keepends=True)
    # a kill between writing a session and appending its line, a duplicate, and a torn last line
    folder.results_path.write_text(lines[0] + lines[1] + lines[1] + lines[2][:40])
    statuses = folder.reconcile()
    assert statuses == {s.session_id: SessionStatus.COMPLETED for s in specs}
    assert sorted(raw_result_ids(folder)) == sorted(s.session_id for s in specs)
    calls = len(client.calls)
    summary = asyncio.run(run_specs(specs, client, tmp_path, concurrency=2))
    assert len(summary.skipped) == 3 and len(client.calls) == calls


def test_a_second_writer_on_the_same_folder_is_refused(tmp_path):
    lock = RunFolder(tmp_path).lock()
    try:
        with pytest.raises(RunFolderError, match="another rescue-sim process"):
            RunFolder(tmp_path).lock()
    finally:
        lock.release()
    RunFolder(tmp_path).lock().release()


# -- faults ------------------------------------------------------------------------------------------------------


def test_faults_end_in_retries_or_recorded_failures_never_judged(tmp_path, monkeypatch):
    monkeypatch.setattr("simulator.llm.client.random.random", lambda: 0.0)  # short backoff
    faults = FaultRates(http_429=0.12, http_500=0.12, malformed=0.12, bad_content=0.1, hang=0.04)
    judged: list[str] = []

    async def judge(record, folder) -> None:
        assert record.status == SessionStatus.COMPLETED
        judged.append(record.session_id)

    specs = child_specs(8, turns=2)
    with FakeOpenAIServer(latency_s=0.01, faults=faults, seed=3, hang_s=30) as srv:
        client = child_client(srv.url, None)
        client.settings.timeout_s, client.settings.max_retries = 0.5, 1
        summary = asyncio.run(run_specs(specs, client, tmp_path, concurrency=8, judge_hook=judge))
        stats = srv.stats()
    assert all(stats[k] > 0 for k in ("http_429", "http_500", "malformed", "bad_content"))
    folder = RunFolder(tmp_path)
    results = {r.session_id: r for r in folder.results()}
    assert set(results) == {s.session_id for s in specs}
    failed = [r for r in results.values() if r.status == SessionStatus.FAILED]
    assert failed and all(r.failure for r in failed)  # these fault rates beat one retry somewhere
    assert {r.session_id for r in summary.failed} == {r.session_id for r in failed}
    assert sorted(judged) == sorted(r.session_id for r in results.values() if r.status == SessionStatus.COMPLETED)
    with FakeOpenAIServer(latency_s=0.01) as srv:  # the rerun retries exactly the failed sessions
        summary = asyncio.run(run_specs(specs, child_client(srv.url, None), tmp_path, concurrency=8, judge_hook=judge))
    assert sorted(r.session_id for r in summary.finished) == sorted(r.session_id for r in failed)
    assert all(r.status == SessionStatus.COMPLETED for r in folder.results())
    assert sorted(raw_result_ids(folder)) == sorted(s.session_id for s in specs)


def test_a_crashing_supporter_fails_its_session_only(tmp_path):
    case = resolve_case("dana-and-theo")

    class Boom:
        spec, structured = "boom", True

        async def decide(self, view, *args, **kwargs):
            raise RuntimeError("supporter bug")

    specs = [
        SessionSpec(session_id=f"s{i}", case=case, supporter="x", seed=i, config=SessionConfig(max_turns=2, seed=i))
        for i in range(3)
    ]

    def factory(spec, client):
        from simulator.supporters import SilentSupporter

        return Boom() if spec.seed == 1 else SilentSupporter()

    client = FakeModelClient(default=RoomScript(case))
    summary = asyncio.run(run_specs(specs, client, tmp_path, concurrency=3, supporter_factory=factory))
    assert [r.session_id for r in summary.failed] == ["s1"]
    assert "supporter bug" in summary.failed[0].failure
    assert len(summary.completed) == 2


# -- budget -------------------------------------------------------------------------------------------------------


def test_budget_cap_stops_cleanly_and_a_rerun_finishes(tmp_path):
    cases = load_library()[:3]
    script = RoomScript(cases[0])
    client = FakeModelClient(default=script)
    specs = [
        SessionSpec(
            session_id=make_session_id(c.id, "fake/s", None, 0),
            case=c,
            supporter="fake/s",
            seed=0,
            config=SessionConfig(max_turns=3, seed=0),
        )
        for c in cases
        for _ in [0]
    ] + [
        SessionSpec(
            session_id=make_session_id(c.id, "fake/s", None, 1),
            case=c,
            supporter="fake/s",
            seed=1,
            config=SessionConfig(max_turns=3, seed=1),
        )
        for c in cases
    ]
    seen = []
    events = RunEvents(progress=lambda p: seen.append((p.done, p.running, p.calls)))
    summary = asyncio.run(run_specs(specs, client, tmp_path, concurrency=2, budget=Budget(max_calls=6), events=events))
    assert summary.stopped_by and summary.stopped_by.startswith("calls")
    assert summary.not_started and summary.incomplete  # nothing new started; the two in flight were stopped
    assert len(summary.incomplete) == 2 and not summary.finished
    assert max(c for _, _, c in seen) <= 6 + 2  # at most one call per session in flight past the cap
    folder = RunFolder(tmp_path)
    assert folder.results() == []  # unfinished sessions have no result line
    for sid in summary.incomplete:
        rec = folder.load_session(sid)
        assert rec.status == SessionStatus.INCOMPLETE and rec.end_reason == "interrupted"
    summary = asyncio.run(run_specs(specs, client, tmp_path, concurrency=2))
    assert summary.stopped_by is None and len(summary.completed) == len(specs)
    assert sorted(raw_result_ids(folder)) == sorted(s.session_id for s in specs)


def test_specs_are_checked():
    case = resolve_case("dana-and-theo")
    with pytest.raises(ValidationError, match="config.seed"):
        SessionSpec(session_id="a", case=case, supporter="silent", seed=1, config=SessionConfig(seed=0))
    with pytest.raises(ValidationError, match="session_id"):
        SessionSpec(session_id="../x", case=case, supporter="silent", config=SessionConfig())
    ids = {
        make_session_id("c", "http://h:1/v1#bot", None, 0),
        make_session_id("c", "http://h:2/v1#bot", None, 0),
        make_session_id("c", "scripted", "crisis", 0),
        make_session_id("c", "scripted", None, 0, trial=1),
    }
    assert len(ids) == 4 and make_session_id("c", "scripted", None, 2) == "c__scripted__none__s2__t0"
    spec = SessionSpec(session_id="t", case=case, supporter="silent", seed=3, trial=2, config=SessionConfig(seed=3))
    assert spec.engine_config().seed == spec.engine_seed != 3  # trials are distinct sessions


def test_duplicate_session_ids_are_refused(tmp_path):
    case = resolve_case("dana-and-theo")
    spec = SessionSpec(session_id="a", case=case, supporter="silent", config=SessionConfig())
    with pytest.raises(ValueError, match="share the session id"):
        asyncio.run(run_specs([spec, spec], FakeModelClient(), tmp_path))


# -- Ray ------------------------------------------------------------------------------------------------------------


def test_ray_executor_gives_the_local_executors_results(server, tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is the optional `ray` extra (pip install 'rescue-sim[ray]')")
    specs = child_specs(4, turns=2)
    asyncio.run(run_specs(specs, child_client(server.url, None), tmp_path / "local", concurrency=2))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        summary = asyncio.run(
            run_specs(specs, child_client(server.url, None), tmp_path / "ray", concurrency=2, executor="ray")
        )
    finally:
        ray.shutdown()
    assert len(summary.completed) == 4 and summary.progress.calls > 0
    assert transcripts(RunFolder(tmp_path / "ray")) == transcripts(RunFolder(tmp_path / "local"))
    assert sorted(raw_result_ids(RunFolder(tmp_path / "ray"))) == sorted(s.session_id for s in specs)


# -- the CLI -------------------------------------------------------------------------------------------------------


def test_run_concurrency_option_runs_every_session_and_reports_progress(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from simulator.cli import app as cli_app

    cli_app._register()
    cases = load_library()
    fake = FakeModelClient(default=RoomScript(cases[0]))
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: fake)
    out = tmp_path / "r"
    args = ["run", "--case", "all", "--supporter", "scripted", "--turns", "2", "--no-judge", "--concurrency", "4"]
    res = CliRunner().invoke(cli_app.app, [*args, "--out", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert f"sessions {len(cases)}/{len(cases)}" in res.output and "0 running" in res.output
    results = RunFolder(out).results()
    assert sorted(r.case_id for r in results) == sorted(c.id for c in cases)
    assert all(r.status == SessionStatus.COMPLETED for r in results)
    again = CliRunner().invoke(cli_app.app, [*args, "--out", str(out)], env={"COLUMNS": "200"})
    assert again.exit_code == 0 and f"{len(cases)} already done" in again.output


def test_provider_concurrency_comes_from_the_environment(monkeypatch):
    from personas.common.errors import UserError
    from simulator.cli._models import model_settings

    monkeypatch.setenv("RESCUE_SIM_PROVIDER_CONCURRENCY", "openai=64, hosted_vllm=128")
    s = model_settings("openai/gpt-4o-mini")
    assert s.concurrency == {"openai": 64, "hosted_vllm": 128, "local": MAX_BATCH} and s.default_concurrency == 8
    monkeypatch.setenv("RESCUE_SIM_PROVIDER_CONCURRENCY", "32")
    assert model_settings("openai/gpt-4o-mini").default_concurrency == 32
    monkeypatch.setenv("RESCUE_SIM_PROVIDER_CONCURRENCY", "local=4")
    monkeypatch.setenv("RESCUE_SIM_PROVIDER_CONCURRENCY", "local=64")
    assert model_settings().concurrency["local"] == MAX_BATCH  # the embedded model's batch, whatever is asked
    monkeypatch.setenv("RESCUE_SIM_PROVIDER_CONCURRENCY", "lots")
    with pytest.raises(UserError, match="RESCUE_SIM_PROVIDER_CONCURRENCY"):
        model_settings()


def test_read_sessions_gives_each_session_or_why_it_is_unreadable(tmp_path):
    from tests._session_fixtures import couple_session

    folder = RunFolder(tmp_path)
    folder.open({"x": 1})
    folder.write_session(couple_session("a"))
    folder.session_path("b").write_text("{not json", encoding="utf-8")
    stored = list(folder.read_sessions())
    assert [s.session_id for s in stored] == ["a", "b"]
    assert stored[0].record is not None and stored[0].error is None and stored[0].loaded() is stored[0].record
    assert stored[1].record is None and "b.json: not a valid session record" in str(stored[1].error)
    with pytest.raises(RunFolderError, match="b.json: not a valid session record"):
        stored[1].loaded()
    with pytest.raises(RunFolderError, match="b.json: not a valid session record"):
        folder.sessions()
