"""`rescue-sim run | show | play | models` through the real typer app with an injected fake model."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from personas.library import resolve_case
from simulator.llm.fake import FakeModelClient
from simulator.runfolder import RunFolder
from tests._sim_fakes import RoomScript

WIDE = {"COLUMNS": "200"}


@pytest.fixture
def fake(monkeypatch):
    """Every command gets this client; tests swap its behaviour through `holder`."""
    case = resolve_case("dana-and-theo")
    holder = {"client": FakeModelClient(default=RoomScript(case))}
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: holder["client"])
    return holder


@pytest.fixture
def invoke(app):
    runner = CliRunner()

    def run(*args, input=None):
        result = runner.invoke(app, [str(a) for a in args], env=WIDE, input=input)
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        return result

    return run


def base(out, *extra):
    return [
        "run",
        "--case",
        "dana-and-theo",
        "--supporter",
        "scripted",
        "--turns",
        "3",
        "--no-judge",
        "--out",
        out,
        *extra,
    ]


def test_run_writes_a_complete_run_folder_and_resumes(invoke, fake, tmp_path):
    out = tmp_path / "r"
    res = invoke(*base(out))
    assert res.exit_code == 0, res.output
    assert f"run folder: {out}" in res.output.replace("\n", "")
    folder = RunFolder(out)
    manifest = folder.read_manifest()
    assert manifest.config["supporter"] == "scripted" and manifest.config["max_turns"] == 3
    assert "rescue-sim" in manifest.packages and manifest.config_hash
    rec = folder.load_session("dana-and-theo__s0")
    assert rec.status == "completed" and sum(t.kind == "member" for t in rec.turns) == 3
    assert all(c.model and c.latency_s >= 0 for t in rec.turns for c in t.calls)
    [result] = folder.results()
    assert result.status == "completed" and result.member_turns == 3
    calls = len(fake["client"].calls)
    again = invoke(*base(out))
    assert again.exit_code == 0 and "already completed" in again.output
    assert len(fake["client"].calls) == calls  # nothing re-simulated


def test_failed_session_exits_1_and_is_retried_on_rerun(invoke, fake, tmp_path):
    case = resolve_case("dana-and-theo")
    script = RoomScript(case)
    fake["client"] = FakeModelClient(
        default=lambda call: TimeoutError("timed out") if call.role == "tracker" else script(call)
    )
    out = tmp_path / "r"
    res = invoke(*base(out))
    assert res.exit_code == 1 and "1 session(s) failed" in res.output and "timed out" in res.output
    assert RunFolder(out).results()[0].status == "failed"
    fake["client"] = FakeModelClient(default=script)
    res = invoke(*base(out))
    assert res.exit_code == 0
    assert RunFolder(out).results()[0].status == "completed"


def test_interrupt_saves_an_incomplete_session_then_resumes(invoke, fake, tmp_path):
    case = resolve_case("dana-and-theo")
    script = RoomScript(case)
    n = {"calls": 0}

    def interrupting(call):
        n["calls"] += 1
        if n["calls"] == 5:
            raise KeyboardInterrupt
        return script(call)

    fake["client"] = FakeModelClient(default=interrupting)
    out = tmp_path / "r"
    res = invoke(*base(out))
    assert res.exit_code == 130 and "incomplete" in res.output
    rec = RunFolder(out).load_session("dana-and-theo__s0")
    assert rec.status == "incomplete" and rec.end_reason == "interrupted" and len(rec.turns) >= 1
    fake["client"] = FakeModelClient(default=script)
    assert invoke(*base(out)).exit_code == 0
    assert RunFolder(out).load_session("dana-and-theo__s0").status == "completed"


def test_several_seeds_and_cases(invoke, fake, tmp_path):
    out = tmp_path / "r"
    res = invoke(
        "run",
        "--case",
        "dana-and-theo",
        "--case",
        "lena-and-omar",
        "--supporter",
        "silent",
        "--seeds",
        "0-2",
        "--turns",
        "2",
        "--no-judge",
        "--no-live",
        "--out",
        out,
    )
    assert res.exit_code == 0, res.output
    assert RunFolder(out).session_ids() == sorted(
        f"{c}__s{s}" for c in ("dana-and-theo", "lena-and-omar") for s in range(3)
    )


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--case", "no-such-case", "--supporter", "silent"], "no such case id"),
        (["--case", "dana-and-theo", "--supporter", "whatever"], "--supporter 'whatever' is not a known form"),
        (["--case", "dana-and-theo", "--supporter", "http://localhost:8000/v1"], "add the model name after '#'"),
        (["--case", "dana-and-theo", "--supporter", "no_such_module_x:fn"], "cannot import"),
        (["--case", "dana-and-theo", "--supporter", "human"], "rescue-sim play"),
        (["--case", "dana-and-theo", "--seeds", "a,b"], "--seeds"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(invoke, fake, tmp_path, args, needle):
    res = invoke("run", *args, "--no-judge", "--out", tmp_path / "r")
    assert res.exit_code == 2
    assert needle in res.output
    assert len([line for line in res.output.strip().splitlines() if line.strip()]) == 1


def test_changed_config_in_the_same_folder_is_refused(invoke, fake, tmp_path):
    out = tmp_path / "r"
    assert invoke(*base(out)).exit_code == 0
    res = invoke("run", "--case", "dana-and-theo", "--supporter", "silent", "--turns", "3", "--no-judge", "--out", out)
    assert res.exit_code == 2 and "different config" in res.output and "supporter" in res.output
    assert "use another --out folder" in " ".join(res.output.split())  # the library's `out_dir`, said as the flag


def test_show_replays_a_session(invoke, fake, tmp_path):
    out = tmp_path / "r"
    invoke(*base(out))
    res = invoke("show", out)
    assert res.exit_code == 0
    rec = RunFolder(out).load_session("dana-and-theo__s0")
    for turn in rec.turns:
        assert turn.text[:30] in res.output.replace("\n", " ") or turn.text[:15] in res.output
    as_json = invoke("show", out, "--json")
    assert json.loads(as_json.output)["session_id"] == "dana-and-theo__s0"
    bad = invoke("show", tmp_path / "nope")
    assert bad.exit_code == 2 and "not a run folder" in bad.output


def test_play_takes_the_humans_moves(invoke, fake, tmp_path):
    out = tmp_path / "p"
    # move 1: speak to Dana with `evoke`; move 2: stay quiet; move 3: invalid target, then the group, no label
    moves = "What hurts most, Dana?\nDana\nevoke\n\nWhat do you both need?\nNobody\nCouple\n\n"
    res = invoke("play", "--case", "dana-and-theo", "--turns", "3", "--out", out, input=moves)
    assert res.exit_code == 0, res.output
    rec = RunFolder(out).load_session("dana-and-theo__s0")
    spoken = [t.decision for t in rec.turns if t.kind == "supporter"]
    assert [(d.text, d.targets, d.strategy) for d in spoken] == [
        ("What hurts most, Dana?", ["Dana"], "evoke"),
        ("What do you both need?", ["Couple"], None),
    ]
    assert [d.speak for d in rec.decisions] == [True, False, True]
    assert "unknown target" in res.output


def test_models_lists_roles(invoke, fake):
    res = invoke("models", "--model", "openai/gpt-4o-mini")
    assert res.exit_code == 0
    assert "openai/gpt-4o-mini" in res.output and "member, supporter, tracker, judge" in res.output


def test_models_check_calls_each_model_once(invoke, fake):
    fake["client"] = FakeModelClient(default=lambda call: "ready")
    res = invoke("models", "--model", "openai/gpt-4o-mini", "--check")
    assert res.exit_code == 0 and "ok" in res.output and "'ready'" in res.output
    assert [c.role for c in fake["client"].calls] == ["check"]
    fake["client"] = FakeModelClient(default=lambda call: ConnectionError("connection refused"))
    res = invoke("models", "--model", "openai/gpt-4o-mini", "--check")
    assert res.exit_code == 1 and "failed" in res.output and "connection refused" in res.output


def test_credentials_in_a_supporter_url_never_reach_the_run_folder(invoke, fake, tmp_path):
    out = tmp_path / "r"
    res = invoke(
        "run",
        "--case",
        "dana-and-theo",
        "--supporter",
        "http://bob:hunter22@localhost:9/v1#bot",
        "--turns",
        "2",
        "--no-judge",
        "--out",
        out,
    )
    assert res.exit_code == 0, res.output
    written = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert "hunter22" not in written and "[redacted]" in written
    assert "hunter22" not in res.output and "models: supporter=" in res.output  # nor the models line it prints


def test_run_prints_every_role_s_model_when_it_starts(app, fake, tmp_path):
    """`--model` binds every role of `run`; the line says so before anything runs (and what --*-model changed)."""
    from simulator.llm.embedded import DEFAULT_LOCAL_MODEL

    env = {**WIDE, "RESCUE_SIM_MODEL": ""}
    res = CliRunner().invoke(app, base(str(tmp_path / "a")), env=env)
    assert res.exit_code == 0, res.output
    local = DEFAULT_LOCAL_MODEL
    assert f"models: supporter=scripted; member={local}; tracker={local}\n" in res.output  # --no-judge: no judge
    args = [*base(str(tmp_path / "b")), "--model", "fake/room", "--tracker-model", "fake/observer"]
    res = CliRunner().invoke(app, args, env=env)
    assert res.exit_code == 0, res.output
    assert "models: supporter=scripted; member=fake/room; tracker=fake/observer\n" in res.output


def test_missing_api_key_is_caught_before_simulating(app, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    res = CliRunner().invoke(
        app,
        [
            "run",
            "--case",
            "dana-and-theo",
            "--supporter",
            "scripted",
            "--judge-model",
            "anthropic/claude-sonnet-4-5",
            "--out",
            str(tmp_path / "r"),
        ],
        env=WIDE,
    )
    assert res.exit_code == 2 and "ANTHROPIC_API_KEY" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "r").exists()  # nothing started, nothing written


def test_run_judges_each_session_at_the_end(invoke, fake, tmp_path, bench_reply):
    """The default path of `run` (no --no-judge): simulate, show the outcome, then judge and write it."""
    from judges import read_judgment

    case = resolve_case("dana-and-theo")
    script = RoomScript(case)
    sim_schemas = {"MemberStateReply", "TrackerReply", "SupporterReply"}
    from tests._session_fixtures import fill_reply

    def reply(call):
        if call.schema is None or call.schema.__name__ in sim_schemas:
            return script(call)
        if call.role == "judge":  # evidence must quote the cited turn (turn 1: the member's line)
            return fill_reply(call.schema, quote=script.line)
        return bench_reply(call)

    fake["client"] = FakeModelClient(default=reply, yes=lambda call: 0.7)  # checklist answers (the default)
    out = tmp_path / "r"
    res = invoke("run", "--case", "dana-and-theo", "--supporter", "scripted", "--turns", "2", "--out", out)
    assert res.exit_code == 0, res.output
    assert res.output.index("completed: turn limit reached") < res.output.index("judging with")
    judgment = read_judgment(RunFolder(out), "dana-and-theo__s0")
    assert judgment is not None and judgment.judges == [
        "local/qwen2.5-coder-1.5b"
    ]  # the default judge role, under its true name
    assert "judge" in {c.role for c in fake["client"].calls}


def test_run_does_not_format_its_summary_at_exit(invoke, fake, tmp_path, monkeypatch):
    """asyncio.run reprs the main task's result (every session record) while restoring its SIGINT handler: work
    that grows with the run and shows nothing; the command hands the summary back without it."""
    from simulator.runner.runs import RunSummary

    formatted = []
    monkeypatch.setattr(RunSummary, "__repr__", lambda self: formatted.append(1) or "RunSummary(...)")
    assert invoke(*base(tmp_path / "r")).exit_code == 0
    assert formatted == []
