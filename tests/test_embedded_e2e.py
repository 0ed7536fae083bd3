"""End to end on the real embedded model (llama.cpp, CPU): a tiny session through the real CLI.

These run in CI (the README's test command installs the `local` extra). They are slow by nature (a minute or
two each on 2 cores); everything else in the suite uses fake models.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from simulator.cli import app as cli_app
from simulator.llm.embedded import DEFAULT_LOCAL_MODEL
from simulator.members import APPRAISALS
from simulator.runfolder import RunFolder

pytestmark = pytest.mark.embedded  # skipped without llama-cpp-python, and then failed in CI (see conftest.py)


@pytest.fixture(scope="module")
def session_dir(tmp_path_factory):
    """One real 2-member-turn session with the embedded model as personas, tracker and supporter."""
    cli_app._register()
    out = tmp_path_factory.mktemp("e2e") / "run"
    res = CliRunner().invoke(
        cli_app.app,
        [
            "run",
            "--case",
            "dana-and-theo",
            "--supporter",
            DEFAULT_LOCAL_MODEL,
            "--turns",
            "2",
            "--no-judge",
            "--no-cache",
            "--out",
            str(out),
        ],
        env={"COLUMNS": "160"},
    )
    assert res.exit_code == 0, res.output
    assert "run folder:" in res.output and str(out) in res.output.replace("\n", "")
    return out


def test_session_file_holds_turns_states_decisions_and_calls(session_dir):
    folder = RunFolder(session_dir)
    rec = folder.load_session("dana-and-theo__s0")
    assert rec.status == "completed" and rec.end_reason == "turn_limit"
    members = [t for t in rec.turns if t.kind == "member"]
    assert len(members) == 2 and len(rec.decisions) == 2
    for t in members:
        assert t.text.strip() and t.speaker in ("Dana", "Theo")
        assert t.inner is not None and 0 <= t.inner.intensity <= 10 and t.inner.emotion.strip()
        assert {f.member for f in t.inner.toward} == {"Dana", "Theo"} - {t.speaker}
        before = rec.turns[t.index - 2] if t.index > 1 else None
        if before is not None and before.kind == "supporter" and before.text:
            # right after a counsellor line: what it did to the speaker (blamed, else understood) and whether the
            # other member felt blamed, then the self-report and the line
            assert 2 + 1 + 1 <= len(t.calls) <= 2 + len(APPRAISALS) + 1
        else:
            assert len(t.calls) == 2  # the self-report and the line
    tracked = [t for t in rec.turns if t.tracker is not None]
    assert tracked and tracked[-1].tracker.pattern  # the tracker ran at the final member turn
    for call in rec.calls:
        assert call.model == DEFAULT_LOCAL_MODEL and call.latency_s > 0 and not call.cache_hit
        assert call.usage.prompt_tokens > 0 and call.usage.completion_tokens > 0 and call.cost_usd == 0.0
    assert sum(c.usage.cached_prompt_tokens for c in rec.calls) > 0  # llama.cpp reused shared prefixes
    assert [s.turn for s in rec.self_report] == [0, *[t.index for t in rec.turns]]
    assert folder.results()[0].status == "completed"
