"""`rescue-sim judge --repeat K`: distinct trials (own cache key and seed), every trial stored, flip rates per
dimension against hand-computed values."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from judges import read_stability, read_trials
from simulator.cli import app as cli_app
from simulator.llm.fake import FakeModelClient
from simulator.runfolder import RunFolder
from tests._session_fixtures import couple_session, fill_reply

SCALE_INDEX = {(0, 0): 2, (0, 1): 2, (0, 2): 4, (1, 0): 3, (1, 1): 3, (1, 2): 3}  # (session seed, trial) -> index


@pytest.fixture
def run(tmp_path, monkeypatch):
    folder = RunFolder(tmp_path / "run")
    folder.open({"supporter": "fake/supporter"})
    folder.write_session(couple_session("a", seed=0))
    folder.write_session(couple_session("b", seed=1))

    def reply(call):
        seed = call.seed % 7919 % 1009  # judge seeds: record seed + 7919 * trial (+ 1009 per re-ask)
        return fill_reply(call.schema, score_index=SCALE_INDEX[(seed, call.trial)])

    client = FakeModelClient(default=reply)
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: client)
    cli_app._register()
    return folder, client


def test_repeat_stores_every_trial_and_reports_flip_rates(run):
    folder, client = run
    result = CliRunner().invoke(
        cli_app.app,
        ["judge", "--judge-mode", "verdict", str(folder.path), "--repeat", "3", "--judges", "fake/judge"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert sorted({c.trial for c in client.calls}) == [0, 1, 2]
    assert len({(c.seed, c.trial) for c in client.calls}) == 6  # 2 sessions x 3 trials, each distinct
    trials = read_trials(folder, "a")
    assert [j.trial for j in trials] == [0, 1, 2]
    assert (folder.path / "judgments" / "trials" / "a" / "2.json").is_file()
    stability = read_stability(folder)
    assert stability is not None and stability.trials == 3 and stability.sessions == 2
    overall = stability.dimension("overall_quality")
    # session a: scores 3, 3, 5 (flips; 1 of 3 pairs agree; spread 2); session b: 4, 4, 4 (stable)
    assert overall.items == 2
    assert overall.flip_rate == pytest.approx(0.5)
    assert overall.pairwise_disagreement == pytest.approx((2 / 3 + 0) / 2)
    assert overall.mean_spread == pytest.approx(1.0)
    fit = stability.dimension("strategy_fit")  # two interventions per session, both flip in a only
    assert (fit.items, fit.flip_rate, fit.mean_spread) == (4, 0.5, 1.0)
    sides = stability.dimension("side_taking")  # labels never change here
    assert sides.kind == "label" and sides.flip_rate == 0.0 and sides.mean_spread is None
    assert stability.by_supporter["fake/supporter"][0].items > 0
    assert "judge stability over 3 trials" in result.output
    assert "50%" in result.output


def test_repeat_1_is_the_ordinary_judgment(run):
    folder, client = run
    result = CliRunner().invoke(
        cli_app.app, ["judge", "--judge-mode", "verdict", str(folder.path), "--judges", "fake/judge"]
    )
    assert result.exit_code == 0, result.output
    assert {c.trial for c in client.calls} == {0}
    assert read_stability(folder) is None
    assert [j.trial for j in read_trials(folder, "a")] == [0]
