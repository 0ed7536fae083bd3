"""`rescue-sim judge`, `leaderboard` and `gold labels` through the real typer app, with a fake model client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from judges import read_judgment
from simulator.llm.fake import FakeModelClient
from simulator.records import SessionStatus
from simulator.runfolder import RunFolder
from tests._session_fixtures import couple_session, fill_reply, with_path

FIXTURE = Path(__file__).parent / "fixtures" / "rescue_mini.jsonl"
WIDE = {"COLUMNS": "240", "RESCUE_SIM_MODEL": "", "RESCUE_SIM_JUDGES": ""}


@pytest.fixture
def fake(monkeypatch):
    """Every command gets this client; `fake.default` / `fake.replies` are set per test."""
    client = FakeModelClient(default=lambda call: fill_reply(call.schema))
    seen = []

    def factory(settings):
        seen.append(settings)
        return client

    monkeypatch.setattr("simulator.llm.settings.make_client", factory)
    client.settings_seen = seen
    return client


@pytest.fixture
def invoke(app):
    runner = CliRunner()

    def run(*args: str):
        result = runner.invoke(app, [str(a) for a in args], env=WIDE)
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        return result

    return run


def make_run(path: Path, supporter: str = "fake/supporter", *, extra: bool = True) -> RunFolder:
    """A run folder with one completed session, and (extra) a failed and an incomplete one."""
    folder = RunFolder(path)
    folder.open({"supporter": supporter})
    folder.write_session(couple_session("s1", supporter))
    if extra:
        failed = couple_session("s2", supporter).model_copy(
            update={"status": SessionStatus.FAILED, "failure": "member turn 3 (Ana): model down"}
        )
        folder.write_session(failed)
        folder.write_session(couple_session("s3", supporter).model_copy(update={"status": SessionStatus.INCOMPLETE}))
    return folder


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


# ---- judge -----------------------------------------------------------------------------------------------------


def test_judge_writes_judgments_and_lists_skipped(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    result = invoke("judge", "--judge-mode", "verdict", folder.path)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "1 session(s) judged" in out and "s1" in out and "fake/supporter" in out
    assert "skipped s2 (failed: member turn 3 (Ana): model down)" in out
    assert "skipped s3 (incomplete)" in out
    assert "overall" in out and "strategy fit" in out and "4.00" in out
    assert "judged s1 (ok) 1/1" in result.stderr
    j = read_judgment(folder, "s1")
    assert j is not None and j.status.value == "ok"
    assert j.judges == [fake.settings_seen[0].model_for("judge")]  # the default judge: --model / env / local model
    assert not (folder.judgments_dir / "s2.json").exists()
    assert j.mode == "per_intervention" and len(fake.calls) == 3  # the local default judge: t3, t5, the rest


def test_judge_skips_an_unreadable_session_with_why_and_judges_the_rest(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", extra=False)
    folder.session_path("s0").write_text("{not a record", encoding="utf-8")
    result = invoke("judge", "--judge-mode", "verdict", folder.path)
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith("skipped s0"))
    assert line.startswith(f"skipped s0 (unreadable: {folder.session_path('s0')}: not a valid session record (")
    assert "1 session(s) judged" in result.stdout and read_judgment(folder, "s1") is not None
    assert not (folder.judgments_dir / "s0.json").exists()


def test_judge_panel_and_per_intervention(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", extra=False)
    result = invoke(
        "judge", "--judge-mode", "verdict", folder.path, "--judges", "judge/a, judge/b,judge/a", "--per-intervention"
    )
    assert result.exit_code == 0, result.output
    j = read_judgment(folder, "s1")
    assert j.judges == ["judge/a", "judge/b"] and j.mode == "per_intervention"
    assert {c.model for c in fake.calls} == {"judge/a", "judge/b"} and len(fake.calls) == 2 * 3
    assert fake.settings_seen[0].model_for("judge") == "judge/a"
    assert {a.dimension for a in j.agreement} >= {"timing", "strategy"}


def test_judge_model_option_sets_the_default_judge(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", extra=False)
    assert invoke("judge", "--judge-mode", "verdict", folder.path, "--model", "openai/some-model").exit_code == 0
    assert read_judgment(folder, "s1").judges == ["openai/some-model"]
    assert fake.calls[0].model == "openai/some-model"


def test_judge_failure_is_recorded_and_exit_1(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", extra=False)
    fake.default = lambda call: "not json at all"
    result = invoke("judge", "--judge-mode", "verdict", folder.path)
    assert result.exit_code == 1
    assert "failed s1: judge" in result.stdout and "no valid output after 3 attempts" in result.stdout
    j = read_judgment(folder, "s1")
    assert j.status.value == "failed" and "no valid output" in j.verdicts[0].failures[0].reason


def test_judge_rerun_replaces_the_judgment(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", extra=False)
    fake.default = lambda call: "junk"
    assert invoke("judge", "--judge-mode", "verdict", folder.path).exit_code == 1
    fake.default = lambda call: fill_reply(call.schema)
    assert invoke("judge", "--judge-mode", "verdict", folder.path).exit_code == 0
    assert read_judgment(folder, "s1").status.value == "ok"


def test_judge_with_custom_rubric(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", extra=False)
    rubric = tmp_path / "small.yaml"
    keep = {"timing"}
    from judges import load_rubric

    rubric.write_text(
        yaml.safe_dump(
            {"dimensions": [{"id": d.id, "enabled": False} for d in load_rubric().dimensions if d.id not in keep]}
        ),
        encoding="utf-8",
    )
    assert invoke("judge", "--judge-mode", "verdict", folder.path, "--rubric", rubric).exit_code == 0
    j = read_judgment(folder, "s1")
    assert [d.id for d in j.rubric.dimensions] == ["timing"]
    assert {s.dimension for s in j.verdicts[0].scores} == {"timing"}


def test_judge_nothing_to_judge(invoke, fake, tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.open({"supporter": "x"})
    result = invoke("judge", "--judge-mode", "verdict", folder.path)
    assert result.exit_code == 1 and "nothing to judge" in result.stdout
    assert fake.calls == []


def test_judge_bad_run_dir_is_one_line(invoke, fake, tmp_path: Path) -> None:
    line = one_error_line(invoke("judge", "--judge-mode", "verdict", tmp_path / "missing"))
    assert "not a run folder (no manifest.json)" in line


def test_judge_bad_rubric_is_one_line(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", extra=False)
    bad = tmp_path / "bad.yaml"
    bad.write_text("dimensions: [{id: timing, min: 9}]\n", encoding="utf-8")
    line = one_error_line(invoke("judge", "--judge-mode", "verdict", folder.path, "--rubric", bad))
    assert "dimension 'timing'" in line and "fail" not in line.split("error: ")[0]
    assert fake.calls == []


# ---- leaderboard -----------------------------------------------------------------------------------------------


def test_leaderboard_json(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    assert invoke("judge", "--judge-mode", "verdict", folder.path, "--judges", "judge/a,judge/b").exit_code == 0
    result = invoke("leaderboard", folder.path, "--json")
    assert result.exit_code == 0
    board = json.loads(result.stdout)
    (row,) = board["rows"]
    assert row["supporter"] == "fake/supporter"
    assert (row["sessions"], row["completed"], row["failed_sessions"], row["incomplete_sessions"]) == (3, 1, 1, 1)
    assert (row["failed_judgments"], row["simulator_failures"], row["unjudged"], row["scored"]) == (0, 0, 0, 1)
    dims = {d["dimension"]: d for d in row["dimensions"]}
    assert dims["overall_quality"]["value"]["mean"] == 4.0 and dims["overall_quality"]["measure"] == "mean"
    assert dims["side_taking"]["measure"] == "rate" and dims["side_taking"]["value"]["mean"] == 0.0
    assert dims["strategy"]["value"]["mean"] == 0.0  # judges said track; the supporter stated reframe / evoke
    assert "persona_fidelity" not in dims  # a simulator check, not a supporter score
    assert row["alpha"] is None  # identical judges: no variation, alpha undefined
    assert row["delta_tension"]["mean"] == pytest.approx(-0.5)
    assert row["group_objective"]["mean"] == pytest.approx(-1.7371521875)
    assert board["rank_by"] == "overall_quality" and board["gamma"] == 0.95


def test_leaderboard_table_ranks_supporters_and_excludes_simulator_failures(invoke, fake, tmp_path: Path) -> None:
    good, weak, broken = (make_run(tmp_path / n, f"sup/{n}", extra=False) for n in ("good", "weak", "broken"))
    whole = "--whole-session"  # one reply per session: the fakes below edit its `members` part
    assert invoke("judge", "--judge-mode", "verdict", good.path, whole).exit_code == 0
    fake.default = lambda call: fill_reply(call.schema, score_index=2)  # scores 3 everywhere
    assert invoke("judge", "--judge-mode", "verdict", weak.path, whole).exit_code == 0
    fake.default = lambda call: with_path(fill_reply(call.schema), "members/Ana/persona_fidelity/score", 1)
    assert invoke("judge", "--judge-mode", "verdict", broken.path, whole).exit_code == 0
    result = invoke("leaderboard", weak.path, good.path, broken.path)
    assert result.exit_code == 0
    sessions_table = result.stdout.split("supporter turns")[0].splitlines()
    order = [n for line in sessions_table for n in ("sup/good", "sup/weak", "sup/broken") if n in line]
    assert order == ["sup/good", "sup/weak", "sup/broken"]  # ranked by overall_quality; no scores last
    board = json.loads(invoke("leaderboard", weak.path, good.path, broken.path, "--json").stdout)
    rows = {r["supporter"]: r for r in board["rows"]}
    assert rows["sup/broken"]["simulator_failures"] == 1 and rows["sup/broken"]["scored"] == 0
    assert rows["sup/broken"]["dimensions"] == [] and rows["sup/broken"]["delta_tension"]["n"] == 0
    assert rows["sup/weak"]["dimensions"][1]["value"]["mean"] == 3.0


def test_leaderboard_counts_failed_judgments_and_unjudged(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", extra=False)
    folder.write_session(couple_session("s4", "fake/supporter"))
    fake.default = lambda call: "junk" if call.model == "judge/bad" else fill_reply(call.schema)
    assert invoke("judge", "--judge-mode", "verdict", folder.path, "--judges", "judge/ok,judge/bad").exit_code == 1
    (folder.judgments_dir / "s4.json").unlink()
    row = json.loads(invoke("leaderboard", folder.path, "--json").stdout)["rows"][0]
    assert row["failed_judgments"] == 1 and row["unjudged"] == 1 and row["scored"] == 1
    assert row["delta_tension"]["n"] == 2  # trajectory needs no judgment
    assert "1 completed session(s) not judged yet" in invoke("leaderboard", folder.path).stdout


def test_leaderboard_bad_dir_is_one_line(invoke, tmp_path: Path) -> None:
    assert "not a run folder" in one_error_line(invoke("leaderboard", tmp_path))


def test_leaderboard_unreadable_judgment_is_one_line(invoke, fake, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", extra=False)
    folder.judgments_dir.mkdir(parents=True)
    (folder.judgments_dir / "s1.json").write_text("{oops", encoding="utf-8")
    assert "not a valid judgment" in one_error_line(invoke("leaderboard", folder.path))


# ---- gold labels -----------------------------------------------------------------------------------------------


def test_gold_labels_table_and_json(invoke, fake) -> None:
    fake.default = lambda call: {"why": "it reframes", "label": "reframe"}
    result = invoke("gold", "labels", "--data", FIXTURE)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "not RESCUE SSP" in out and "items 7, scored 7, failed 0" in out
    assert "accuracy 14.3%" in out and "confusion" in out
    data = json.loads(invoke("gold", "labels", "--data", FIXTURE, "--json", "--limit", "2").stdout)
    assert (
        data["items"] == 2
        and data["accuracy"] == 0.5
        and data["confusion"] == {"reframe": {"reframe": 1}, "goal_align": {"reframe": 1}}
    )


def test_gold_labels_all_failed_exit_1(invoke, fake) -> None:
    fake.default = lambda call: {"why": "w", "label": "validation"}  # off-taxonomy: rejected every time
    result = invoke("gold", "labels", "--data", FIXTURE, "--limit", "1")
    assert result.exit_code == 1 and "scored 0, failed 1" in result.stdout


def test_gold_labels_bad_data_is_one_line(invoke, fake, tmp_path: Path) -> None:
    assert "no such file or folder" in one_error_line(invoke("gold", "labels", "--data", tmp_path / "none.jsonl"))
    empty = tmp_path / "plain.jsonl"
    rows = [{"primary_speaker": "A", "dialogue_cleaned": "hi"}]
    sample = {"sample_id": "x/1", "participants": ["A", "B"], "rows": rows}
    empty.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    assert "no therapist rows" in one_error_line(invoke("gold", "labels", "--data", empty))


def test_help_names_the_task_honestly(invoke) -> None:
    out = invoke("gold", "labels", "--help").stdout
    assert "NOT RESCUE's SSP task" in " ".join(out.split())


def test_judge_keys_its_cache_on_the_server_and_no_cache_asks_again(app, tmp_path: Path) -> None:
    """The same `openai/` model id at two OpenAI-compatible servers (OPENAI_API_BASE), one after the other: the second
    server's judge calls are asked of it, not replayed from the first one's cache; `--no-cache` asks again."""
    from judges import load_rubric
    from simulator.testing.fake_openai import FakeOpenAIServer

    folder = make_run(tmp_path / "run", extra=False)
    runner = CliRunner()
    rubric = tmp_path / "timing.yaml"  # one dimension: the fake server's made-up verdicts pass its checks
    rubric.write_text(
        yaml.safe_dump(
            {"dimensions": [{"id": d.id, "enabled": False} for d in load_rubric().dimensions if d.id != "timing"]}
        ),
        encoding="utf-8",
    )

    def judge(server: FakeOpenAIServer, *extra: str):
        env = {
            **WIDE,
            "RESCUE_SIM_HOME": str(tmp_path / "home"),  # the call cache lives here
            "OPENAI_API_BASE": server.url,
            "OPENAI_BASE_URL": None,  # would win over OPENAI_API_BASE
            "OPENAI_API_KEY": "sk-test-not-a-real-key",
        }
        before = server.stats()["requests"]
        result = runner.invoke(
            app,
            ["judge", str(folder.path), "--model", "openai/gpt-4o-mini", "--rubric", str(rubric), "--judge-mode",
             "verdict", *extra],
            env=env,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        return server.stats()["requests"] - before

    with FakeOpenAIServer(latency_s=0.0) as first, FakeOpenAIServer(latency_s=0.0) as second:
        asked = judge(first)
        assert asked > 0
        assert judge(first) == 0  # the same server again: every call replayed from the cache
        assert judge(second) == asked  # another server behind the same model id: asked, not replayed
        assert judge(second, "--no-cache") == asked  # cached now, but --no-cache neither reads nor writes it
