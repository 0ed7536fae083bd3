"""The Python front door (`import simulator as rs`): the README's example runs as written on a fake provider,
`import simulator` stays light, and every front-door name says why it exists."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import simulator
from simulator.llm.fake import FakeModelClient
from tests._stress_fixtures import any_schema_reply, steady_yes

README = Path(__file__).resolve().parents[1] / "README.md"
# Member lines drawn from dana-and-theo's card, none repeated: a room that plays its case (no simulator fault),
# so the sessions enter the leaderboard's scores.
CARD_LINES = (
    "You took the promotion and now you are at work until nine most nights.",
    "Since the promotion I feel I live alone with a flatmate.",
    "Every attempt to talk ends with a list of what I missed, so I leave the room.",
    "We still have not decided about IVF after the two miscarriages.",
    "My father was absent through long shifts and I swore I would not be like him.",
    "My parents divorced when I was nine, so when you go silent I panic.",
    "Eleven years together, and we cannot talk about IVF without a fight.",
    "When you go silent and leave the room I end up listing everything you missed.",
)


def readme_example() -> str:
    """The one python block of the README's "From Python" section, as a reader copies it."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## From Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the From Python section holds exactly one python example"
    return blocks[0]


def test_readme_example_runs_judges_and_ranks(tmp_path, monkeypatch, capsys):
    client = FakeModelClient(default=any_schema_reply(lines=CARD_LINES), yes=steady_yes)
    made = []

    def fake_factory(settings):
        made.append(settings)
        return client

    monkeypatch.setattr("simulator.llm.settings.make_client", fake_factory)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    exec(compile(readme_example(), "README.md#from-python", "exec"), namespace)

    assert len(made) == 1  # the example's one client, built by the library's factory
    summary = namespace["summary"]
    assert len(summary.completed) == 2 and not summary.failed and not summary.judge_errors
    run_dir = tmp_path / "runs" / "demo"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["supporter"] == "scripted"
    pairs = list(simulator.judged_sessions(run_dir))
    assert [r.session_id for r, _ in pairs] == sorted(r.session_id for r in summary.completed)
    for record, judgment in pairs:
        assert record.status.value == "completed"
        assert judgment is not None and judgment.status.value == "ok" and judgment.session_id == record.session_id
    rows = simulator.leaderboard(run_dir).rows
    assert [row.supporter for row in rows] == ["scripted"]
    assert rows[0].completed == 2 and rows[0].scored == 2 and rows[0].dimensions
    out = capsys.readouterr().out
    assert "2 completed, 0 failed" in out
    assert out.count(" completed ok") == 2
    assert "scripted 2 {" in out
    assert client.calls, "the sessions and the judges called the fake provider"
    # a rerun resumes: nothing runs or is judged twice
    calls = len(client.calls)
    summary2 = asyncio.run(simulator.run(["dana-and-theo"], "scripted", client, run_dir, seeds=[0, 1], turns=4))
    assert not summary2.finished and len(summary2.skipped) == 2 and len(client.calls) == calls


def test_import_simulator_does_not_import_litellm():
    code = (
        "import sys, simulator\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'langgraph', 'judges'))\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_front_door_names_load_without_litellm():
    code = "import sys, simulator\nfor n in simulator.__all__: getattr(simulator, n)\nprint('litellm' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("name", simulator.__all__)
def test_every_front_door_name_says_why(name):
    obj = getattr(simulator, name)
    doc = obj.__doc__  # a class's own docstring, not one inherited from BaseModel
    assert doc and len(doc.split()) >= 8, f"simulator.{name} needs a docstring that says why it exists"


def test_front_door_is_small_and_unknown_names_fail():
    assert 12 <= len(simulator.__all__) <= 20
    assert set(simulator.__all__) <= set(dir(simulator))
    assert sorted(simulator.__all__) == sorted(simulator.api.__all__)  # the package re-exports the front door whole
    with pytest.raises(AttributeError):
        simulator.no_such_name  # noqa: B018


def test_front_door_does_not_import_the_cli():
    source = (Path(simulator.__file__).parent / "api.py").read_text(encoding="utf-8")
    assert "simulator.cli" not in source


def test_run_unjudged_then_judge_run_then_open_run(tmp_path):
    client = FakeModelClient(default=any_schema_reply(lines=CARD_LINES), yes=steady_yes)
    out = tmp_path / "run"
    summary = asyncio.run(simulator.run(["dana-and-theo"], "silent", client, out, seeds=[0, 1], turns=4, judge=False))
    assert len(summary.completed) == 2
    assert [j for _, j in simulator.judged_sessions(out)] == [None, None]
    judged = asyncio.run(simulator.judge_run(out, client))
    assert sorted(j.session_id for j in judged) == sorted(r.session_id for r in summary.completed)
    assert all(j.status.value == "ok" and j.judge_mode == "checklist" for j in judged)
    assert asyncio.run(simulator.judge_run(out, client)) == []  # judged once: nothing left to judge
    folder = simulator.open_run(out)
    assert isinstance(folder, simulator.RunFolder) and len(folder.results()) == 2
    with pytest.raises(Exception, match="rescue-sim play"):
        asyncio.run(simulator.run(["dana-and-theo"], "human", client, tmp_path / "human"))
    with pytest.raises(Exception, match="not a run folder"):
        simulator.open_run(tmp_path / "nothing-here")


def test_stress_from_a_config_path(tmp_path):
    client = FakeModelClient(default=any_schema_reply(lines=CARD_LINES), yes=steady_yes)
    path = tmp_path / "stress.yaml"
    path.write_text(
        "supporters: [scripted, silent]\ncases: [dana-and-theo]\nseeds: 0\nbaseline: true\nturns: 4\n", encoding="utf-8"
    )
    config = simulator.load_stress(path)
    assert isinstance(config, simulator.StressConfig) and config.supporters == ["scripted", "silent"]
    summary = asyncio.run(simulator.stress(path, client, tmp_path / "out"))
    assert len(summary.run.completed) == 2 and not summary.run.failed and not summary.errors
    assert summary.judged == 2
    rows = simulator.leaderboard(tmp_path / "out").rows
    assert sorted(r.supporter for r in rows) == ["scripted", "silent"] and all(r.scored == 1 for r in rows)


def test_run_saves_a_session_a_config_error_stopped_as_failed(tmp_path):
    """A model that turns out unusable mid-session (litellm: unknown model) stops the run with that one-line error,
    and the session it stopped is in the run folder as failed, from the library as from `rescue-sim run` (one home:
    the runner, not a wrapper around it)."""
    from personas.common.errors import UserError
    from personas.library import resolve_case
    from tests._sim_fakes import RoomScript

    script, calls = RoomScript(resolve_case("dana-and-theo")), []

    def reply(call):
        calls.append(call.role)
        if call.role == "member" and calls.count("member") > 10:
            raise UserError("model 'nope/x': unknown model 'nope/x'; use provider/model")
        return script(call)

    out = tmp_path / "run"
    with pytest.raises(UserError, match="unknown model 'nope/x'"):
        asyncio.run(simulator.run(["dana-and-theo"], "scripted", FakeModelClient(default=reply), out, judge=False))
    (record,) = simulator.RunFolder(out).sessions()
    assert record.status.value == "failed" and record.session_id == "dana-and-theo__s0"
    assert [t.kind for t in record.turns].count("member") >= 1  # what was said before the error is kept
