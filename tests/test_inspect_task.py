"""The Inspect AI tasks on Inspect's mockllm provider (the supporter, and the room roles bound through
`model_roles`) and the project's fake client (the fallback room): evals complete, logs validate, scores equal
`rescue-sim judge`, invalid supporter output is an invalid decision, eval-retry resumes without duplicates."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai import eval_retry  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from simulator.integrations import inspect_task  # noqa: E402
from simulator.llm.fake import FakeModelClient, anchor_reading  # noqa: E402
from simulator.runfolder import RunFolder  # noqa: E402
from simulator.runner.stress_config import StressConfigError  # noqa: E402
from simulator.testing.fake_replies import instance_for_schema, numbered_turns, quotable_spans  # noqa: E402
from tests._session_fixtures import fill_reply  # noqa: E402
from tests._stress_fixtures import any_schema_reply, steady_yes  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ROOM_LINES = tuple(
    f"I {verb} {thing}, and {why}."
    for verb, thing, why in [
        ("never agreed to", "the booking at my mother's house", "nobody asked me first"),
        ("keep making", "the dinners while Theo works late", "it wears me down every week"),
        ("cannot talk about", "money without a fight starting", "the rent went up again"),
        ("still remember", "what happened at the wedding", "it was never mentioned since"),
        ("want", "one evening a week just for us", "the phones stay in the drawer"),
        ("feel alone with", "the chores and the school runs", "my sister noticed it too"),
        ("am tired of", "apologising for things I did not do", "the blame lands on me"),
        ("would like", "a plan we both can live with", "the kids hear us arguing"),
    ]
)
SCHEMA_MARK = "Answer with one JSON object matching this JSON schema, nothing else:\n"
GOOD_DECISION = {
    "speak": True,
    "targets": ["Couple"],
    "strategy": "track",
    "text": "Let us slow down so each of you can be heard.",
    "close_session": False,
}


def _cite(value, turns: dict[int, str]):
    """Every evidence item quotes the first words of the turn it cites, as the judge prompt shows that turn."""
    if isinstance(value, list):
        return [_cite(v, turns) for v in value]
    if isinstance(value, dict):
        out = {k: _cite(v, turns) for k, v in value.items()}
        if "q" in out and out.get("t") in turns:
            out["q"] = " ".join(turns[out["t"]].split()[:3])
        return out
    return value


def judge_reply(call) -> object:
    """A valid verdict for any judge schema that quotes the transcript it was shown (its evidence checks pass)."""
    text = call.prompt.context + "\n" + call.prompt.instructions
    return _cite(fill_reply(call.schema, quote="-"), numbered_turns(text))


def fake_room() -> FakeModelClient:
    """The fallback client: a room that does not repeat itself (no simulator fault) and a quoting judge."""
    room = any_schema_reply(lines=ROOM_LINES)
    return FakeModelClient(
        default=lambda call: judge_reply(call) if call.role in ("judge", "check") else room(call), yes=steady_yes
    )


def _output(text: str) -> ModelOutput:
    out = ModelOutput.from_content("mockllm/model", text)
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # mockllm counts tokens otherwise
    return out


def supporter(decision: dict | str = GOOD_DECISION):
    """The evaluated model: mockllm answering every decision with `decision`."""
    text = decision if isinstance(decision, str) else json.dumps(decision)
    return get_model("mockllm/model", custom_outputs=lambda *a: _output(text))


def schema_answering_model(lines=ROOM_LINES):
    """An Inspect mockllm that answers any structured call from the JSON schema in its prompt (the chat profile
    puts it last), a checklist judge's yes/no question (asked for at most 3 tokens) with yes (one quoting an
    anchor line of the rubric as that line's answer), and free text with distinct lines: a room or a judge played
    through Inspect."""
    texts = iter(lines * 50)

    def answer(messages, tools, tool_choice, config) -> ModelOutput:
        if config.max_tokens is not None and config.max_tokens <= 3:
            anchor = anchor_reading(messages[-1].text, None)
            return _output("yes" if anchor is None or anchor > 0.5 else "no")
        prompt = messages[-1].text
        if SCHEMA_MARK in prompt:
            schema = json.loads(prompt.split(SCHEMA_MARK, 1)[1])
            shown = "\n".join(m.text for m in messages)
            value = instance_for_schema(schema, quotable=quotable_spans(shown), turns=numbered_turns(shown))
            return _output(json.dumps(value))
        return _output(next(texts))

    return get_model("mockllm/model", custom_outputs=answer, memoize=False)


@pytest.fixture
def room(monkeypatch) -> FakeModelClient:
    client = fake_room()
    monkeypatch.setattr(inspect_task, "make_room_client", lambda config: client)
    return client


def run_eval(tmp_path: Path, model, **task_args):
    args = {"cases": "dana-and-theo", "seeds": "0-1", "turns": 2, "out": str(tmp_path / "runs"), **task_args}
    eval_args = {k: task_args.pop(k) for k in ("model_roles", "max_samples") if k in task_args}
    args = {k: v for k, v in args.items() if k not in ("model_roles", "max_samples")}
    [log] = inspect_eval(
        inspect_task.rescue_session(**args),
        model=model,
        log_dir=str(tmp_path / "logs"),
        display="none",
        **eval_args,
    )
    return log


def test_rescue_session_runs_each_sample_as_a_session_with_a_valid_log(tmp_path, room):
    log = run_eval(tmp_path, supporter())
    assert log.status == "success", log.error
    again = read_eval_log(log.location)  # validates against Inspect's log schema
    assert [s.id for s in again.samples] == ["dana-and-theo__none__s0__t0", "dana-and-theo__none__s1__t0"]
    sample = again.samples[0]
    folder = RunFolder(sample.metadata["run_folder"])
    record = folder.load_session(sample.metadata["session_id"])
    assert record.supporter == "inspect/mockllm/model" and record.status.value == "completed"
    assert sample.metadata["case"] == "dana-and-theo" and sample.metadata["seed"] == 0
    assert sample.metadata["invalid_decisions"] == 0 and sample.metadata["faults"] == []
    # the public transcript: members as user messages led by their name, the supporter as the assistant
    spoken = [(m.role, m.text) for m in sample.messages[1:]]
    expected = [("user" if t.kind == "member" else "assistant", t.text) for t in record.turns]
    assert [r for r, _ in spoken] == [r for r, _ in expected]
    assert spoken[0][1] == f"{record.turns[0].speaker}: {record.turns[0].text}"
    assert any(role == "assistant" and text == GOOD_DECISION["text"] for role, text in spoken)
    assert sorted(folder.session_ids()) == sorted(s.metadata["session_id"] for s in again.samples)
    assert len(folder.results()) == 2
    # one score per session: every supporter-facing dimension and the room metrics, with the judges' reasons
    score = sample.scores["rescue_judges"]
    assert set(inspect_task.ROOM_METRICS) <= set(score.value) and "strategy_fit" in score.value
    assert not math.isnan(score.value["strategy_fit"])
    assert score.metadata["judgment"]["session_id"] == record.session_id
    assert score.metadata["judgment"]["judge_mode"] == "checklist"  # the default, as `run` and `stress`
    assert "strategy_fit" in score.explanation
    metrics = {s.name: s.metrics for s in again.results.scores}
    assert {"mean", "stderr", "bootstrap_ci_low", "bootstrap_ci_high"} <= set(metrics["strategy_fit"])
    # the room's roles fell back to rescue-sim's client; the supporter never did
    assert {c.role for c in room.calls} >= {"member", "tracker", "judge"} and "supporter" not in {
        c.role for c in room.calls
    }


def test_scores_equal_rescue_sim_judge_on_the_same_records(tmp_path, room, monkeypatch):
    from judges import read_judgment, session_values
    from simulator.cli.app import _register, app

    log = run_eval(tmp_path, supporter(), seeds="0")
    sample = read_eval_log(log.location).samples[0]
    from_inspect = sample.scores["rescue_judges"].value
    folder = Path(sample.metadata["run_folder"])
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: fake_room())
    _register()
    result = CliRunner().invoke(app, ["judge", str(folder), "--judges", "fake/model"])  # both judge with checklists
    assert result.exit_code == 0, result.output
    rejudged = session_values(read_judgment(folder, sample.metadata["session_id"]))
    assert rejudged
    assert {k: round(v, 6) for k, (_, v) in rejudged.items()} == {k: round(from_inspect[k], 6) for k in rejudged}


def test_invalid_supporter_output_is_an_invalid_decision_not_a_crash(tmp_path, room):
    log = run_eval(tmp_path, supporter("I would rather just listen for now."), seeds="0")
    assert log.status == "success", log.error
    sample = read_eval_log(log.location).samples[0]
    record = RunFolder(sample.metadata["run_folder"]).load_session(sample.metadata["session_id"])
    assert record.status.value == "completed"
    assert record.decisions and all(not d.valid for d in record.decisions)
    assert "no JSON object" in record.decisions[0].invalid_reason
    assert sample.metadata["invalid_decisions"] == len(record.decisions)


def test_model_roles_reach_their_calls_and_the_rest_fall_back(tmp_path, room):
    log = run_eval(
        tmp_path,
        supporter(),
        seeds="0",
        model_roles={"member": schema_answering_model(), "judge": schema_answering_model()},
    )
    assert log.status == "success", log.error
    sample = read_eval_log(log.location).samples[0]
    by_role: dict[str | None, int] = {}
    for event in sample.events:
        if event.event == "model":
            by_role[event.role] = by_role.get(event.role, 0) + 1
    fallback = {c.role for c in room.calls}
    assert by_role.get("member", 0) >= 2 and by_role.get("judge", 0) >= 1
    assert by_role.get(None, 0) >= 1  # the evaluated model (the supporter) has no role
    assert "member" not in fallback and "judge" not in fallback and "tracker" in fallback
    record = RunFolder(sample.metadata["run_folder"]).load_session(sample.metadata["session_id"])
    assert record.models["member"] == "inspect/mockllm/model" and record.models["tracker"] == "fake/model"


def _retry_scenario(tmp: str) -> dict:
    """An eval whose seed-1 room crashes (the eval stops in error), then `eval_retry` with a working room. Runs in
    a child process: Inspect's eval-retry applies nest_asyncio to the whole process (asyncio.run patched), which
    would change how later tests' Ctrl-C handling behaves."""
    from simulator.runner.session import CURRENT_SESSION

    tmp_path = Path(tmp)

    def room_for(crash_on: str | None, sessions: list[str]) -> FakeModelClient:
        client = fake_room()
        sim = client.default

        def reply(call):
            sessions.append(str(CURRENT_SESSION.get()))
            if crash_on is not None and crash_on in sessions[-1]:
                raise RuntimeError("the room crashed")  # not a model failure: the sample errors
            return sim(call)

        client.default = reply
        return client

    first: list[str] = []
    crashing = room_for("__s1__", first)
    inspect_task.make_room_client = lambda config: crashing
    log = run_eval(tmp_path, supporter(), max_samples=1)
    [folder] = [RunFolder(p) for p in (tmp_path / "runs").iterdir()]
    before = [r.seed for r in folder.results()]
    second: list[str] = []
    fixed = room_for(None, second)
    inspect_task.make_room_client = lambda config: fixed
    [retried] = eval_retry(log, log_dir=str(tmp_path / "logs"), display="none")
    return {
        "first": log.status,
        "results_before": before,
        "retried": retried.status,
        "samples": sorted(str(s.id) for s in retried.samples),
        "results_after": sorted(r.seed for r in folder.results()),
        "sessions": len(folder.session_ids()),
        "retry_room_served": sorted(set(second)),
    }


def test_eval_retry_resumes_without_duplicating_sessions(tmp_path):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        got = pool.submit(_retry_scenario, str(tmp_path)).result(timeout=300)
    assert got["first"] == "error" and got["results_before"] == [0]
    assert got["retried"] == "success"
    assert got["samples"] == ["dana-and-theo__none__s0__t0", "dana-and-theo__none__s1__t0"]
    assert got["results_after"] == [0, 1] and got["sessions"] == 2
    # the completed seed-0 session was not simulated (nor judged) again: the retry's room only served seed 1
    assert got["retry_room_served"] and all("__s1__" in s for s in got["retry_room_served"])


def test_a_failed_session_errors_the_sample_never_a_nan_score(tmp_path, room):
    """Issue 43: a session that failed (here the members' model never answers) made `inspect eval` exit 0 with a
    NaN mean. Now the sample errors, so the eval's status is `error` (and `inspect eval` exits 1)."""
    sim = room.default
    room.default = lambda call: ConnectionError("the room's server is down") if call.role == "member" else sim(call)
    log = run_eval(tmp_path, supporter(), seeds="0")
    assert log.status == "error"
    [sample] = read_eval_log(log.location).samples
    assert sample.error is not None and "SessionFailed" in sample.error.traceback
    assert "failed:" in sample.error.message and "the room's server is down" in sample.error.message
    assert not sample.scores  # never scored, so no NaN enters a mean
    record = RunFolder(sample.metadata["run_folder"]).load_session(sample.metadata["session_id"])
    assert record.status.value == "failed"  # the run folder keeps the failed record


def test_an_unusable_room_model_errors_the_sample_before_any_call(tmp_path, room):
    """Issue 44: the Inspect task shares `run`'s pre-check. A room model that cannot be used (here: no API key)
    errors the sample with the pre-check's one line, and nothing of the room is called or written."""
    from simulator.llm.types import ModelConfigError

    def check_environment(model: str) -> None:
        raise ModelConfigError(f"model {model!r}: missing API key; set OPENAI_API_KEY")

    room.check_environment = check_environment
    log = run_eval(tmp_path, supporter(), seeds="0")
    assert log.status == "error"
    [sample] = read_eval_log(log.location).samples
    assert "UnusableModels" in sample.error.traceback
    assert "member, tracker, judge, check model" in sample.error.message
    assert "missing API key; set OPENAI_API_KEY" in sample.error.message
    assert room.calls == [] and not sample.scores
    assert not list((tmp_path / "runs").glob("*/sessions/*.json"))


def test_failed_judging_errors_the_sample_and_the_next_eval_judges_again(tmp_path, room):
    room.yes = lambda call: TimeoutError("judge timed out")
    log = run_eval(tmp_path, supporter(), seeds="0")
    assert log.status == "error"
    [sample] = read_eval_log(log.location).samples
    assert "judging failed" in sample.error.message and "judge timed out" in sample.error.message
    assert not sample.scores
    # the session itself completed: the next eval reuses it and judges again, with a judge that answers
    room.yes = steady_yes
    played = sum(c.role == "member" for c in room.calls)
    again = run_eval(tmp_path, supporter(), seeds="0")
    assert again.status == "success", again.error
    [sample] = read_eval_log(again.location).samples
    assert sample.scores["rescue_judges"].metadata["judgment"]["status"] == "ok"
    assert not math.isnan(sample.scores["rescue_judges"].value["strategy_fit"])
    assert sum(c.role == "member" for c in room.calls) == played  # not played again


def test_judge_mode_verdict_makes_the_scorer_judge_with_verdicts(tmp_path, room):
    log = run_eval(tmp_path, supporter(), seeds="0", judge_mode="verdict")
    assert log.status == "success", log.error
    sample = read_eval_log(log.location).samples[0]
    score = sample.scores["rescue_judges"]
    assert score.metadata["judgment"]["judge_mode"] == "verdict" and not math.isnan(score.value["strategy_fit"])
    judged = [c for c in room.calls if c.role == "judge"]
    assert judged and all(c.schema is not None for c in judged)  # structured verdicts, no yes/no question
    with pytest.raises(StressConfigError, match=r"rescue_session task args: judge_mode: must be 'checklist' or"):
        inspect_task.rescue_session(cases="dana-and-theo", judge_mode="rubric")


def test_rescue_stress_runs_a_stress_config(tmp_path, room):
    config = tmp_path / "stress.yaml"
    config.write_text(
        "name: tiny\nsupporters: [silent, scripted]\ncases: [dana-and-theo]\nseeds: [0]\nturns: 2\nbaseline: true\n",
        encoding="utf-8",
    )
    [log] = inspect_eval(
        inspect_task.rescue_stress(config=str(config), out=str(tmp_path / "runs")),
        model=supporter(),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    samples = read_eval_log(log.location).samples
    assert [s.id for s in samples] == ["dana-and-theo__none__s0__t0"]  # the config's supporters are replaced
    assert samples[0].metadata["session_id"].startswith("dana-and-theo__inspect-mockllm-model")
    assert samples[0].scores["rescue_judges"].metadata["judgment"]["judge_mode"] == "checklist"
    # the task's judge_mode overrides the config's
    task = inspect_task.rescue_stress(config=str(config), out=str(tmp_path / "runs"), judge_mode="verdict")
    assert task.metadata["rescue_sim"]["config"]["judge_mode"] == "verdict"
    with pytest.raises(StressConfigError, match=r"rescue_stress task args: judge_mode: must be"):
        inspect_task.rescue_stress(config=str(config), judge_mode="rubric")


def test_import_inspect_rebuilds_the_run_folder_and_the_leaderboard_reads_it(tmp_path, room):
    from judges import build_leaderboard
    from simulator.cli.app import _register, app

    log = run_eval(tmp_path, supporter())
    _register()
    out = tmp_path / "imported"
    result = CliRunner().invoke(app, ["import-inspect", log.location, "--out", str(out)])
    assert result.exit_code == 0, result.output
    original = RunFolder(read_eval_log(log.location).samples[0].metadata["run_folder"])
    imported = RunFolder(out)
    assert imported.session_ids() == original.session_ids()
    board = build_leaderboard([out])
    [row] = board.rows
    assert row.supporter == "inspect/mockllm/model" and row.completed == 2 and row.scored == 2
    assert build_leaderboard([original.path]).rows[0].dimensions == row.dimensions

    missing = CliRunner().invoke(app, ["import-inspect", str(tmp_path / "nope.eval"), "--out", str(out)])
    assert missing.exit_code == 2 and "no such Inspect log" in missing.output
    assert "Traceback" not in missing.output


def test_the_entry_point_names_the_tasks_rescue_sim(tmp_path):
    """What pyproject.toml declares, installed as a distribution's entry point, lets Inspect find the tasks by
    name alone (`inspect eval rescue_sim/rescue_session`)."""
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["inspect_ai"]
    dist = tmp_path / "rescue_sim_entry_probe-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rescue-sim-entry-probe\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[inspect_ai]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    # what `pip install -e .` leaves in a checkout, found first when run from the repo root: it once hid the
    # editable install from Inspect, which then registered the tasks without their `rescue_sim/` prefix
    (tmp_path / "rescue_sim.egg-info").mkdir()
    (tmp_path / "rescue_sim.egg-info" / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: rescue-sim\nVersion: 0.1.0\n"
    )
    code = (
        "from inspect_ai._util.registry import registry_lookup, registry_find\n"
        "import sys\n"
        "assert 'simulator.integrations.inspect_task' not in sys.modules\n"
        "for name in ('rescue_sim/rescue_session', 'rescue_sim/rescue_stress'):\n"
        "    assert registry_lookup('task', name) is not None, name\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_core_does_not_import_inspect_ai():
    code = (
        "import sys\n"
        "import personas, simulator, judges, simulator.cli.app, simulator.runner.runs, simulator.runner.stress\n"
        "from simulator.cli.app import _register\n"
        "_register()\n"
        "assert 'inspect_ai' not in sys.modules, 'the core imported inspect_ai'\n"
        "import simulator.integrations.inspect_task\n"
        "assert 'litellm' not in sys.modules, 'the Inspect task imported litellm'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_bad_task_args_are_one_line_errors(tmp_path):
    from personas.common.errors import UserError

    with pytest.raises(UserError, match=r"^rescue_session task args: cases: must list at least one entry; add one$"):
        inspect_task.rescue_session(cases="")
    with pytest.raises(UserError, match=r"nope\.yaml: no such config file; check the path$"):
        inspect_task.rescue_stress(config=str(tmp_path / "nope.yaml"))


@pytest.mark.embedded
def test_the_embedded_model_is_the_room_by_default(tmp_path, monkeypatch):
    """`inspect eval rescue_sim/rescue_session` with no roles bound: the embedded model plays the members, the
    tracker and the judge; the supporter is the evaluated (here mock) model. One 2-member-turn session."""
    from simulator.llm.embedded import DEFAULT_LOCAL_MODEL

    monkeypatch.delenv("RESCUE_SIM_MODEL", raising=False)
    log = run_eval(tmp_path, supporter(), seeds="0")
    assert log.status == "success", log.error
    sample = read_eval_log(log.location).samples[0]
    record = RunFolder(sample.metadata["run_folder"]).load_session(sample.metadata["session_id"])
    assert record.status.value == "completed", record.failure
    assert record.models == {
        "member": DEFAULT_LOCAL_MODEL,
        "tracker": DEFAULT_LOCAL_MODEL,
        "judge": DEFAULT_LOCAL_MODEL,
    }
    assert sum(t.kind == "member" for t in record.turns) == 2
    assert any(t.kind == "supporter" and t.text == GOOD_DECISION["text"] for t in record.turns)
    assert sample.scores["rescue_judges"].metadata["judgment"]["judges"] == [DEFAULT_LOCAL_MODEL]
    judgment = sample.scores["rescue_judges"].metadata["judgment"]
    assert judgment["judge_mode"] == "checklist" and judgment["status"] == "ok"  # P(yes) from llama.cpp's logits
    answers = [a for v in judgment["verdicts"] for s in v["scores"] for a in s["answers"]]
    assert answers and {a["method"] for a in answers if a["item"] != "third_person"} == {"logprobs"}
    assert {a["method"] for a in answers if a["item"] == "third_person"} == {"rule"}  # its rule answers it, no call
