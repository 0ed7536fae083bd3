"""`rescue-sim bench` through the real typer app: exit codes, one-line errors, dry runs that call nothing,
resumable runs with an injected fake client, the published comparison, and probe mode on run folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges.bench import BenchSettings, build_rescue_instances, count_instances
from personas.library import resolve_case
from personas.rescue import load_rescue
from simulator.cli import bench_cmd
from simulator.llm.fake import FakeModelClient
from simulator.records import InnerState, SessionRecord, SessionStatus, SupporterDecision, TrackerState, Turn
from simulator.runfolder import RunFolder

FIXTURE = Path(__file__).parent / "fixtures" / "bench_mini.jsonl"
WIDE = {"COLUMNS": "250", "RESCUE_SIM_JUDGE_MODEL": "", "RESCUE_SIM_BERTSCORE_MODEL": "", "RESCUE_SIM_MODEL": ""}


@pytest.fixture
def clients(monkeypatch):
    """Clients the command asked for, in order; each test sets `factory` to build them."""
    made: list[FakeModelClient] = []
    state = {"factory": None}

    def make(settings):
        if state["factory"] is None:
            raise AssertionError("the command asked for a model client")
        client = state["factory"]()
        made.append(client)
        return client

    monkeypatch.setattr(bench_cmd, "make_bench_client", make)
    return made, state


@pytest.fixture
def invoke(app):
    runner = CliRunner()

    def run(*args: str):
        result = runner.invoke(app, ["bench", *map(str, args)], env=WIDE)
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        return result

    return run


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


# ---- errors ----------------------------------------------------------------------------------------------------


def test_bad_data_path_is_one_line_exit_2(invoke, tmp_path, clients):
    line = one_error_line(invoke("--data", tmp_path / "nope.jsonl", "--model", "fake/model"))
    assert "nope.jsonl: no such file or folder" in line


def test_bad_json_is_one_line_exit_2(invoke, tmp_path, clients):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "x", "rows": [\n', encoding="utf-8")
    assert "bad.jsonl:1: not valid JSON" in one_error_line(invoke("--data", bad, "--dry-run"))


@pytest.mark.parametrize(
    "args,needle",
    [
        ((), "give either --data FILE"),
        (("--data", FIXTURE, "--runs", "x"), "give either --data FILE"),
        (("--data", FIXTURE, "--tasks", "itp,foo"), "unknown task foo"),
        (("--data", FIXTURE, "--subgroups", "merge"), "is not keep or collapse"),
        (("--runs", "nowhere"), "nowhere: not a run folder"),
    ],
)
def test_usage_errors_exit_2(invoke, clients, args, needle):
    assert needle in one_error_line(invoke(*args, "--dry-run"))


# ---- dry run ---------------------------------------------------------------------------------------------------


def test_dry_run_counts_and_calls_nothing(invoke, clients):
    made, _ = clients
    result = invoke("--data", FIXTURE, "--dry-run", "--json", "--batch-size", "2")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    expected = count_instances(build_rescue_instances(load_rescue(FIXTURE)).instances)
    assert data["counts"] == expected
    assert data["subgroups"] == "keep" and "characters / 4" in data["token_note"]
    est = {e["task"]: e for e in data["estimates"]}
    assert est["er"]["judge_calls"] == expected["er"]["couple"] + expected["er"]["family"]
    assert est["itp"]["requests"] < est["itp"]["instances"]  # batches of 2
    assert made == []


def test_dry_run_table(invoke, clients):
    result = invoke("--data", FIXTURE, "--dry-run", "--subgroups", "collapse", "--tasks", "stp,ssp")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "no model was called" in out and "characters / 4" in out
    assert "subgroups collapsed" in out and "itp" not in out.split("Calls:")[0]


# ---- runs ------------------------------------------------------------------------------------------------------


def test_run_writes_report_and_resume_makes_no_calls(invoke, clients, tmp_path, bench_reply):
    made, state = clients
    state["factory"] = lambda: FakeModelClient(default=bench_reply)
    out = tmp_path / "res.json"
    result = invoke("--data", FIXTURE, "--model", "fake/model", "--tasks", "itp,stp,er", "--out", out, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report["tasks"]) == {"itp", "stp", "er"} and report["subgroups"] == "keep"
    assert report["tasks"]["stp"]["metrics"]["n"] == 7 and report["tasks"]["er"]["failed"] == 0
    assert report["bertscore"] == "not computed (no offline model configured)"
    assert json.loads(out.read_text())["config_hash"] == report["config_hash"]
    lines = (tmp_path / "res.instances.jsonl").read_text().splitlines()
    assert len(lines) == 14 + 7 + 9
    assert len(made[0].calls) > 0

    state["factory"] = lambda: FakeModelClient()  # no replies: any call would fail the test
    result = invoke("--data", FIXTURE, "--model", "fake/model", "--tasks", "itp,stp,er", "--out", out)
    assert result.exit_code == 0, result.output
    assert made[1].calls == []
    assert "BERTScore: not computed (no offline model configured)." in result.stdout
    assert "subgroups kept" in result.stdout


def test_failures_exit_1_and_are_reported(invoke, clients, tmp_path):
    made, state = clients
    state["factory"] = lambda: FakeModelClient(default=lambda call: RuntimeError("rate limited"))
    result = invoke("--data", FIXTURE, "--model", "fake/model", "--tasks", "rpp", "--out", tmp_path / "r.json")
    assert result.exit_code == 1, result.output
    assert "rpp: 6 failed (0 at the judge), excluded from metrics; rate limited" in result.stdout
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["tasks"]["rpp"]["failed"] == 6 and saved["tasks"]["rpp"]["metrics"] is None


def test_default_out_and_compare_published(invoke, clients, tmp_path, monkeypatch, bench_reply):
    _, state = clients
    state["factory"] = lambda: FakeModelClient(default=bench_reply)
    monkeypatch.chdir(tmp_path)
    result = invoke(
        "--data", FIXTURE, "--model", "fake/model", "--tasks", "itp,rpp", "--limit", "2", "--compare-published"
    )
    assert result.exit_code == 0, result.output
    reports = list((tmp_path / "runs").glob("bench-*.json"))
    assert len(reports) == 1 and reports[0].with_name(reports[0].stem + ".instances.jsonl").is_file()
    out = result.stdout
    assert "arXiv 2609.09657" in out and "Qwen-Plus" in out and "55.78" in out and "GPT-4o" in out
    ours = [line for line in out.splitlines() if line.strip().startswith("ours")]
    # STP, SSP, ER and VP were not run; VP_LLM is never set beside the paper's 1-5 Likert (another scale)
    assert len(ours) == 2 and sum(line.count("n/c") for line in ours) == 7
    assert sum(line.count("n/s") for line in ours) == 1 and "n/s = not the same scale" in out
    assert "ours = fake/model" in out
    assert "ER_LLM here is S_ER" in out


# ---- probe mode ----------------------------------------------------------------------------------------------------


def write_run(folder: Path, session_id: str = "s1", status: SessionStatus = SessionStatus.COMPLETED) -> Path:
    case = resolve_case("dana-and-theo")
    tracker = TrackerState(pattern="pursue_withdraw")

    def member(i: int, who: str, text: str) -> Turn:
        inner = InnerState(landed="landed", emotion="feels on edge", intensity=6, felt_heard=3)
        return Turn(index=i, speaker=who, kind="member", text=text, inner=inner, tracker=tracker)

    def supporter(i: int, target: str, strategy: str) -> Turn:
        d = SupporterDecision(after_turn=i - 1, speak=True, targets=[target], strategy=strategy, text="...")
        return Turn(index=i, speaker="Therapist", kind="supporter", text="Can we slow this down?", decision=d)

    turns = [
        member(1, "Dana", "You always change the subject when I ask."),
        member(2, "Theo", "I do not, I just do not want another fight."),
        supporter(3, "Dana", "evoke"),
        member(4, "Dana", "I feel like I am talking to a wall."),
        member(5, "Theo", "I am right here, I am listening to you."),
        supporter(6, "Couple", "reframe"),
    ]
    record = SessionRecord(
        session_id=session_id,
        case=case,
        supporter="baseline:scripted",
        models={},
        seed=1,
        max_turns=6,
        status=status,
        turns=turns,
    )
    run = RunFolder(folder)
    run.open({"cases": ["dana-and-theo"]})
    run.write_session(record)
    return folder


def test_probe_mode_dry_run_and_run(invoke, clients, tmp_path, bench_reply):
    a = write_run(tmp_path / "run-a")
    b = write_run(tmp_path / "run-b", "s2")
    write_run(tmp_path / "run-b", "s3", SessionStatus.FAILED)  # failed sessions are left out
    result = invoke("--runs", a, b, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["origin"] == "probe" and data["counts"]["stp"] == {
        "couple": 4,
        "family": 0,
        "samples_couple": 2,
        "samples_family": 0,
    }
    assert "self-report" in data["gold_sources"]["er"] and "tracker" in data["gold_sources"]["rpp"]

    made, state = clients
    state["factory"] = lambda: FakeModelClient(default=bench_reply)
    result = invoke("--runs", a, "--model", "fake/model", "--tasks", "itp,ssp", "--out", tmp_path / "p.json", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["origin"] == "probe" and report["tasks"]["ssp"]["instances"] == 2
    assert "supporter decision.strategy" in report["tasks"]["ssp"]["gold_source"]
    assert any("not comparable" in n for n in report["notes"])


def test_positional_run_dirs_need_runs(invoke, clients, tmp_path):
    a = write_run(tmp_path / "run-a")
    assert "run folders follow --runs" in one_error_line(invoke("--data", FIXTURE, a, "--dry-run"))


def test_settings_hash_ignores_how_it_runs():
    a = BenchSettings(model="m", judge_model="j", concurrency=1).config(origin="rescue", sources=["x"])
    b = BenchSettings(model="m", judge_model="j", concurrency=9).config(origin="rescue", sources=["x"])
    c = BenchSettings(model="m", judge_model="j", batch_size=2).config(origin="rescue", sources=["x"])
    assert a == b and a != c


def test_out_folder_is_refused(invoke, clients, tmp_path):
    assert "is a folder" in one_error_line(invoke("--data", FIXTURE, "--out", tmp_path, "--model", "fake/model"))
