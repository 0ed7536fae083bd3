"""`rescue-sim stress`: config errors are one line with exit 2, --dry-run counts the matrix, a run with a fake
model writes sessions, judgments and checks, and a rerun resumes without re-simulating."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges import read_check, read_judgment
from simulator.cli.app import _register, app
from simulator.llm.fake import FakeModelClient
from simulator.runfolder import RunFolder
from simulator.runner.stress_config import build_matrix, load_stress_config
from simulator.runner.stress_estimate import estimate
from tests._stress_fixtures import any_schema_reply, steady_yes

runner = CliRunner()
SMOKE = Path(__file__).resolve().parent.parent / "simulator" / "perturbations" / "examples" / "smoke.yaml"


@pytest.fixture(autouse=True)
def _app():
    _register()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stress.yaml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = """
name: t
supporters: [scripted, silent]
cases: [dana-and-theo, "nguyen-*"]
seeds: 0-1
trials: 2
baseline: true
perturbations: [crisis_disclosure, mine.yaml]
turns: 3
tracker_every: 0
judge: false
"""
MINE = """
name: walkout_now
title: Walkout now
description: Threat to leave.
groups: [family]
inject: {at_member_turn: 1, speaker: first, text: Say you are leaving.}
check: {within: 2}
"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("supporters: [silent]\ncases: [dana-and-theo]\nperturbation: [escalation]\n", "perturbation: unknown key"),
        ("cases: [dana-and-theo]\nperturbations: [escalation]\n", "supporters: required key is missing; add it"),
        ("supporters: [silent]\ncases: [nope]\nperturbations: [escalation]\n", "cases[0]: no case matches 'nope'"),
        ("supporters: [silent]\ncases: ['zz*']\nperturbations: [escalation]\n", "cases[0]: no case matches 'zz*'"),
        ("supporters: [silent]\ncases: [tag:nope]\nperturbations: [escalation]\n", "no case matches 'tag:nope'; tags:"),
        (
            "supporters: [silent]\ncases: [dana-and-theo]\nperturbations: [boom]\n",
            "perturbations[0]: perturbation 'boom'",
        ),
        (
            "supporters: [silent]\ncases: [dana-and-theo]\nperturbations: [escalation]\nseeds: a-b\n",
            "seeds: use a list",
        ),
        ("supporters: [silent]\ncases: [dana-and-theo]\nperturbations: [escalation]\nturns: 0\n", "turns: must be"),
        ("supporters: [silent]\ncases: [dana-and-theo]\n", "perturbations: empty and baseline is false"),
        ("supporters: [what is this]\ncases: [dana-and-theo]\nbaseline: true\n", "supporters[0]: 'what is this'"),
        ("supporters: [silent]\ncases: [dana-and-theo]\nperturbations: [missing.yaml]\n", "no such perturbation file"),
        ("- just\n- a list\n", "a stress config is a mapping of keys"),
    ],
)
def test_config_errors_exit_2_with_one_line(tmp_path, body, expected):
    path = write(tmp_path, body)
    result = runner.invoke(app, ["stress", str(path), "--dry-run"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert expected in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output


def test_a_bad_ray_env_name_is_said_as_the_flag_it_came_in(tmp_path):
    path = write(tmp_path, "supporters: [silent]\ncases: [dana-and-theo]\nperturbations: [escalation]\n")
    result = runner.invoke(app, ["stress", str(path), "--dry-run", "--ray-env", "sk-123"])
    assert result.exit_code == 2 and "error: --ray-env: 'sk-123' is not a variable name" in result.output


def test_dry_run_counts_the_matrix(tmp_path):
    (tmp_path / "mine.yaml").write_text(MINE, encoding="utf-8")
    path = write(tmp_path, GOOD)
    config = load_stress_config(path)
    matrix = build_matrix(config, tmp_path, path)
    # dana-and-theo (couple) and nguyen-family: baseline + crisis for both, walkout_now only for the family
    # = (2 + 2 + 1) variants x 2 seeds x 2 trials x 2 supporters
    assert len(matrix.specs) == 5 * 2 * 2 * 2 == 40
    assert matrix.skipped == ["dana-and-theo x walkout_now (only for family)"]
    assert len({s.session_id for s in matrix.specs}) == 40
    est = estimate(config, matrix)
    # two calls per member turn, and after the scripted supporter's turns (half the member turns) the appraisals:
    # round(3 x 0.5 x (members + 0.5)) a session, 4 for the couple's 8 sessions, 7 for the family's (4) 12
    assert est.calls["member"] == 40 * 3 * 2 + 8 * 4 + 12 * 7 and est.calls["tracker"] == 40 and est.calls["judge"] == 0
    # rubric verdicts: cases x seeds x trials, scripted only (silent fails on facts); plus, for every perturbed
    # session, the delivery question (was the stressor said?): 3 perturbed case variants x 2 x 2 x 2 supporters
    assert est.calls["check"] == 2 * 2 * 2 + 3 * 2 * 2 * 2
    assert est.local_minutes is not None  # no model configured: the embedded one
    result = runner.invoke(app, ["stress", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "stress matrix: 40 sessions" in result.output
    assert "model calls: member" in result.output and "356" in result.output
    assert "skipped (group does not fit): dana-and-theo x walkout_now" in result.output
    assert not (tmp_path / "runs").exists()


def test_a_stressor_scheduled_beyond_the_session_is_rejected_at_validation(tmp_path):
    (tmp_path / "late.yaml").write_text(MINE.replace("at_member_turn: 1", "at_member_turn: 3"), encoding="utf-8")
    path = write(tmp_path, "supporters: [silent]\ncases: [nguyen-family]\nperturbations: [escalation, late.yaml]\n")
    for turns, ok in ((4, True), (3, False)):
        path.write_text(path.read_text().split("turns:")[0] + f"turns: {turns}\n", encoding="utf-8")
        result = runner.invoke(app, ["stress", str(path), "--dry-run"])
        if ok:
            assert result.exit_code == 0, result.output
            assert "escalation plays at member turn 2 of 4" in result.output  # at: middle of turns 1-3
            assert "walkout_now plays at member turn 3 of 4" in result.output
            continue
        assert result.exit_code == 2, result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in result.output, result.output
        assert " ".join(result.output.split()) == (
            f"error: {path}: perturbations[1]: perturbation walkout_now (at_member_turn: 3) would play at member "
            "turn 3 of 3, leaving 1 of the 2 supporter decisions check.within needs after it; use at_member_turn "
            "<= 2, a relative `at` (early, middle, late or a fraction), or at least 4 turns"
        )
    path.write_text("supporters: [silent]\ncases: [dana-and-theo]\nperturbations: [silent_member]\nturns: 2\n")
    result = runner.invoke(app, ["stress", str(path), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "perturbations[0]: perturbation silent_member: sessions of 2 member turns are too short for it" in " ".join(
        result.output.split()
    )


def test_sensitivity_rejects_a_stressor_its_turns_cannot_hold():
    result = runner.invoke(
        app, ["sensitivity", "--model", "fake/m", "--perturbations", "silent_member", "--turns", "2", "--dry-run"]
    )
    assert result.exit_code == 2, result.output
    assert "silent_member: sessions of 2 member turns are too short" in " ".join(result.output.split())


def test_shipped_smoke_config_is_the_done_when_matrix():
    config = load_stress_config(SMOKE)
    matrix = build_matrix(config, SMOKE.parent, SMOKE)
    assert len(matrix.cases) == 4 and set(config.supporters) == {"scripted", "silent"}
    assert len(matrix.perturbations) == 3 and len(config.seeds) == 2
    assert len(matrix.specs) == 4 * 2 * 3 * 2


def test_run_writes_sessions_checks_and_resumes(tmp_path, monkeypatch):
    (tmp_path / "mine.yaml").write_text(MINE, encoding="utf-8")
    path = write(tmp_path, GOOD.replace("trials: 2", "trials: 1").replace("seeds: 0-1", "seeds: [0]"))
    sim = any_schema_reply()  # every member says "I can't do this any more."

    def reply(call):  # the check model: the directed line did it, quoting it (delivery verified)
        return (
            {"q": "I can't do this", "landed": True}
            if call.schema and call.schema.__name__ == "LandedReply"
            else sim(call)
        )

    fake = FakeModelClient(default=reply, yes=steady_yes)
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: fake)
    out = tmp_path / "run"
    result = runner.invoke(app, ["stress", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    folder = RunFolder(out)
    manifest = folder.read_manifest()
    assert manifest.config["kind"] == "stress" and set(manifest.config["perturbations"]) == {
        "crisis_disclosure",
        "walkout_now",
    }
    ids = folder.session_ids()
    assert len(ids) == 10
    perturbed = [s for s in ids if "__none__" not in s]
    checks = {sid: read_check(folder, sid) for sid in perturbed}
    assert all(c is not None for c in checks.values())
    assert all(read_check(folder, s) is None for s in ids if "__none__" in s)
    silent = checks["nguyen-family__silent__walkout_now__s0__t0"]
    assert silent.status.value == "failed" and silent.reason.startswith("responded: ")
    record = folder.load_session("nguyen-family__silent__walkout_now__s0__t0")
    assert record.perturbation == "walkout_now" and record.turns[0].directive == "Say you are leaving."
    [models] = [line for line in result.output.splitlines() if line.startswith("models: ")]  # before it starts
    assert models.startswith("models: supporters scripted, silent; member=") and "judge=" not in models  # judge: false
    assert "behavioural checks" in result.output
    assert "sessions 10/10" in result.output  # the final progress line (calls, tokens, ...)
    assert read_judgment(folder, ids[0]) is None  # judge: false
    calls = len(fake.calls)
    again = runner.invoke(app, ["stress", str(path), "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert len(fake.calls) == calls  # nothing re-simulated or re-checked
    json.loads(folder.manifest_path.read_text())


def test_judged_stress_run(tmp_path, monkeypatch, bench_reply):
    path = write(
        tmp_path,
        "supporters: [scripted]\ncases: [dana-and-theo]\nperturbations: [escalation]\nturns: 2\ntracker_every: 0\n",
    )
    sim = any_schema_reply()

    def reply(call):
        return bench_reply(call) if call.role == "judge" else sim(call)

    monkeypatch.setattr(
        "simulator.llm.settings.make_client", lambda settings: FakeModelClient(default=reply, yes=steady_yes)
    )
    out = tmp_path / "run"
    result = runner.invoke(app, ["stress", str(path), "--out", str(out)])
    folder = RunFolder(out)
    (sid,) = folder.session_ids()
    judgment = read_judgment(folder, sid)
    assert judgment is not None and judgment.judge_mode == "checklist"  # the default, as `run` and `judge`
    assert judgment.status.value == "ok" and all(s.answers for v in judgment.verdicts for s in v.scores)
    assert folder.read_manifest().config["stress"]["judge_mode"] == "checklist"  # the run says how it judged
    assert read_check(folder, sid) is not None
    assert result.exit_code == 0, result.output
    # --judge-mode verdict: structured verdicts, recorded as such; a config's judge_mode does the same
    out = tmp_path / "verdicts"
    result = runner.invoke(app, ["stress", str(path), "--out", str(out), "--judge-mode", "verdict"])
    folder = RunFolder(out)
    (sid,) = folder.session_ids()
    judgment = read_judgment(folder, sid)
    assert judgment is not None and judgment.judge_mode == "verdict" and judgment.prompt_digest
    assert not any(s.answers for v in judgment.verdicts for s in v.scores)
    # verdict, the mode of every run made before judge_mode existed, is left out of the manifest as those left
    # it: a run begun then resumes under --judge-mode verdict, and is refused (one line) under checklists
    assert "judge_mode" not in folder.read_manifest().config["stress"]
    assert result.exit_code in (0, 1)  # the fake judge's quotes may be unsupported; the check is recorded anyway
    again = runner.invoke(app, ["stress", str(path), "--out", str(out), "--judge-mode", "verdict"])
    assert again.exit_code in (0, 1) and "different config" not in again.output
    refused = runner.invoke(app, ["stress", str(path), "--out", str(out)])
    assert refused.exit_code == 2 and "different config (changed: stress)" in " ".join(refused.output.split())
    assert "use another --out folder" in " ".join(refused.output.split())
    assert load_stress_config(write(tmp_path, path.read_text() + "judge_mode: verdict\n")).judge_mode == "verdict"


def test_a_judgment_whose_judge_calls_failed_makes_stress_exit_1(tmp_path, monkeypatch):
    """As `run` counts it: the session completed but its judging did not (every yes/no item timed out), so the
    stress run failed in part and says so, where it used to exit 0 with a `failed` judgment on disk."""
    path = write(
        tmp_path,
        "name: t\nsupporters: [scripted]\ncases: [dana-and-theo]\nbaseline: true\nturns: 2\ntracker_every: 0\n",
    )
    timed_out = FakeModelClient(default=any_schema_reply(), yes=lambda call: TimeoutError("judge timed out"))
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: timed_out)
    out = tmp_path / "run"
    result = runner.invoke(app, ["stress", str(path), "--out", str(out)], env={"COLUMNS": "300"})
    folder = RunFolder(out)
    (sid,) = folder.session_ids()
    assert folder.status(sid).value == "completed" and read_judgment(folder, sid).status.value == "failed"
    assert result.exit_code == 1, result.output
    assert f"judge/check error {sid}: judging failed:" in result.output and "judge timed out" in result.output


def test_judge_mode_in_a_config_old_and_bad(tmp_path):
    """A config written before judge_mode existed loads as checklist; a bad value is one line naming the key."""
    old = write(tmp_path, "supporters: [scripted]\ncases: [dana-and-theo]\nperturbations: [escalation]\n")
    assert load_stress_config(old).judge_mode == "checklist"
    bad = write(tmp_path, old.read_text() + "judge_mode: rubric\n")
    result = runner.invoke(app, ["stress", str(bad), "--dry-run"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    line = " ".join(result.output.split())
    assert line.startswith("error: ") and "judge_mode: must be 'checklist' or 'verdict'" in line, line
    result = runner.invoke(app, ["stress", str(old), "--dry-run", "--judge-mode", "rubric"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_the_estimate_counts_checklist_questions_as_the_judge_asks_them(tmp_path):
    """In checklist mode the dry run counts the questions a checklist judgment of each session asks (the same
    count `run` and `judge` show): on a session of the planned shape, exactly the yes/no calls the judge makes;
    verdict mode keeps its per-intervention count."""
    import asyncio

    from judges import judge_session, load_rubric
    from simulator.runner.stress_estimate import planned_record

    body = "supporters: [scripted, silent]\ncases: [dana-and-theo]\nbaseline: true\nturns: 4\ntracker_every: 0\n"
    path = write(tmp_path, body)
    config = load_stress_config(path)
    matrix = build_matrix(config, tmp_path, path)
    case = matrix.cases[0]
    asked = {}
    for interventions in (2, 0):  # the scripted supporter speaks after half the member turns, silent never
        planned = planned_record(case, 4, interventions)
        assert [t.kind for t in planned.turns].count("supporter") == interventions
        assert {t.speaker for t in planned.turns if t.kind == "member"} == set(case.member_names)
        client = FakeModelClient(yes=steady_yes)
        judgment = asyncio.run(judge_session(planned, client, ["local/judge"], load_rubric()))
        assert judgment.judge_mode == "checklist"
        asked[interventions] = len(client.calls)
    est = estimate(config, matrix, tmp_path)
    assert est.judge_mode == "checklist" and est.calls["judge"] == asked[2] + asked[0]
    verdicts = estimate(config.model_copy(update={"judge_mode": "verdict"}), matrix, tmp_path)
    assert verdicts.judge_mode == "verdict" and verdicts.calls["judge"] == (2 + 1) + 1  # per turn, local judge
    assert est.calls["judge"] > verdicts.calls["judge"] and est.completion_tokens < verdicts.completion_tokens
    result = runner.invoke(app, ["stress", str(path), "--dry-run"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert re.search(rf"model calls: judge \(checklist\)[\s│]+{est.calls['judge']}\b", result.output), result.output
    result = runner.invoke(app, ["stress", str(path), "--dry-run", "--judge-mode", "verdict"], env={"COLUMNS": "200"})
    assert re.search(r"model calls: judge \(verdict\)[\s│]+4\b", result.output), result.output


def test_budget_caps_count_judge_calls(tmp_path, bench_reply):
    """A cap that one session's own calls stay under is reached by its judging: the next session never starts."""
    import asyncio

    from simulator.runner.stress import run_stress

    sim = any_schema_reply()

    def reply(call):
        return bench_reply(call) if call.role == "judge" else sim(call)

    body = "supporters: [scripted]\ncases: [dana-and-theo]\nperturbations: [escalation]\nseeds: 0-1\nturns: 2\n"
    body += "tracker_every: 0\nbaseline: false\n"
    probe = FakeModelClient(default=reply, yes=steady_yes)
    path = write(tmp_path, body.replace("seeds: 0-1", "seeds: [0]"))
    config = load_stress_config(path)
    asyncio.run(run_stress(config, build_matrix(config, tmp_path, path), probe, tmp_path / "probe", base=tmp_path))
    session_calls = sum(1 for c in probe.calls if c.role != "judge")
    assert 0 < session_calls < len(probe.calls)  # the one session was judged

    path = write(tmp_path, body + f"budget: {{max_calls: {session_calls + 1}}}\n")
    config = load_stress_config(path)
    fake = FakeModelClient(default=reply, yes=steady_yes)
    summary = asyncio.run(
        run_stress(config, build_matrix(config, tmp_path, path), fake, tmp_path / "run", base=tmp_path, concurrency=1)
    )
    assert summary.run.stopped_by is not None and summary.run.stopped_by.startswith("calls")
    assert len(RunFolder(tmp_path / "run").session_ids()) == 1  # seed 1 was never started
