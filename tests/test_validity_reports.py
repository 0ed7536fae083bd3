"""Validity travels with the numbers: `leaderboard` (and its JSON) shows, next to each dimension, the validity card of
the instrument that produced it when one matches the recorded model and prompt digest, and "not validated" otherwise.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges.scoring._render import prompt_digest as judge_digest
from judges.scoring._rubric import load_rubric
from judges.validity import validate, write_card
from personas.rescue import load_rescue
from simulator.cli import app as cli_app
from simulator.llm.fake import FakeModelClient
from simulator.runfolder import RunFolder
from simulator.tracker import prompt_digest as tracker_digest
from tests._session_fixtures import couple_session, fill_reply
from tests.test_validity import fixture_client

FIXTURE = Path(__file__).parent / "fixtures" / "validity_rescue.jsonl"
WIDE = {"COLUMNS": "240", "RESCUE_SIM_MODEL": "", "RESCUE_SIM_JUDGES": ""}


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("RESCUE_SIM_HOME", str(tmp_path / "home"))


@pytest.fixture
def invoke(monkeypatch):
    client = FakeModelClient(default=lambda call: fill_reply(call.schema))
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: client)
    cli_app._register()
    runner = CliRunner()

    def run(*args):
        result = runner.invoke(cli_app.app, [str(a) for a in args], env=WIDE)
        assert "Traceback" not in result.output
        return result

    return run


def _run_folder(path: Path, *, digests: bool = True) -> RunFolder:
    folder = RunFolder(path)
    folder.open({"supporter": "fake/supporter"})
    record = couple_session("s1")
    update = {"models": {**record.models, "tracker": "fake/model"}}
    if digests:
        update["prompt_digests"] = {"tracker": tracker_digest()}
    folder.write_session(record.model_copy(update=update))
    return folder


def _store_cards() -> None:
    samples = load_rescue(FIXTURE)
    for card in asyncio.run(
        validate(samples, fixture_client(), source="fixture", judge_model="judge/a", judge_mode="verdict")
    ):
        write_card(card)


def test_leaderboard_shows_matching_cards_and_not_validated(invoke, tmp_path):
    folder = _run_folder(tmp_path / "run")
    assert invoke("judge", "--judge-mode", "verdict", folder.path, "--judges", "judge/a,judge/b").exit_code == 0
    judgment = json.loads((folder.judgments_dir / "s1.json").read_text())
    assert judgment["prompt_digest"] == judge_digest(load_rubric().digest)
    _store_cards()
    board = json.loads(invoke("leaderboard", folder.path, "--json").stdout)
    (row,) = board["rows"]
    dims = {d["dimension"]: d for d in row["dimensions"]}
    strategy = {n["model"]: n for n in dims["strategy"]["validity"]}
    assert (
        strategy["judge/a"]["validated"] and strategy["judge/a"]["text"] == "strategy labels = gold 3/4, macro-F1 0.60"
    )
    assert strategy["judge/b"]["text"].startswith("not validated (no card for judge/b @ ")
    assert {n["model"]: n["text"] for n in dims["target_fit"]["validity"]}["judge/a"] == "preferred target = gold 3/4"
    assert [n["text"] for n in dims["timing"]["validity"]] == ["not validated (no RESCUE gold measures timing)"] * 2
    (obs,) = row["observer_validity"]
    assert obs["validated"] and obs["model"] == "fake/model" and obs["text"].startswith("warmth change/turn 0.31")
    table = invoke("leaderboard", folder.path).stdout
    assert "validity (`rescue-sim gold sessions` cards" in table
    assert "strategy=stated — judge judge/a @ " in table and "strategy labels = gold 3/4" in table


def test_records_without_digests_are_not_validated(invoke, tmp_path):
    folder = _run_folder(tmp_path / "run", digests=False)
    assert invoke("judge", "--judge-mode", "verdict", folder.path, "--judges", "judge/a").exit_code == 0
    _store_cards()
    row = json.loads(invoke("leaderboard", folder.path, "--json").stdout)["rows"][0]
    assert [n["text"] for n in row["observer_validity"]] == ["not validated (no prompt digest recorded)"]


def test_leaderboard_card_option_and_bad_card(invoke, tmp_path):
    folder = _run_folder(tmp_path / "run")
    assert invoke("judge", "--judge-mode", "verdict", folder.path, "--judges", "judge/a").exit_code == 0
    (card,) = asyncio.run(
        validate(
            load_rescue(FIXTURE),
            fixture_client(),
            source="f",
            instruments=["judge"],
            judge_model="judge/a",
            judge_mode="verdict",
        )
    )
    given = tmp_path / "given.json"
    given.write_text(card.model_dump_json())
    row = json.loads(invoke("leaderboard", folder.path, "--json", "--card", given).stdout)["rows"][0]
    note = next(d for d in row["dimensions"] if d["dimension"] == "strategy")["validity"][0]
    assert note["validated"] and note["card"] == "given card"
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = invoke("leaderboard", folder.path, "--card", bad)
    assert result.exit_code == 2
    assert result.stderr.strip().startswith(f"error: {bad}: not a validity card")


# ---- bench reports ---------------------------------------------------------------------------------------------


def test_bench_probe_gold_carries_the_tracker_card(tmp_path, bench_reply):
    from judges.bench import BenchSettings, Task, plan_probe, run_bench
    from judges.validity.card import BENCH_JUDGE_NOTE, with_bench_validity

    folder = _run_folder(tmp_path / "run")
    _store_cards()
    settings = BenchSettings(model="fake/model", judge_model="fake/judge")
    plan = plan_probe([folder.path], settings, tasks=[Task.RPP, Task.SSP, Task.ER])
    assert plan.tracker_sources == [("fake/model", tracker_digest())]
    client = FakeModelClient(default=bench_reply)
    report = asyncio.run(run_bench(plan, client, out=tmp_path / "bench.json", annotate=with_bench_validity))
    (rpp,) = report.tasks["rpp"].validity
    assert rpp.validated and rpp.measure == "pattern" and rpp.text == "pattern = gold 2/3, macro-F1 0.33"
    assert report.tasks["ssp"].validity == []  # gold is the supporter's own label: no instrument behind it
    (er,) = report.tasks["er"].validity
    assert not er.validated and er.text == BENCH_JUDGE_NOTE and er.model == "fake/judge"
    saved = json.loads((tmp_path / "bench.json").read_text())
    assert saved["tasks"]["rpp"]["validity"][0]["text"] == rpp.text


def test_bench_rescue_mode_needs_no_tracker(tmp_path, bench_reply):
    from judges.bench import BenchSettings, Task, plan_rescue, run_bench
    from judges.validity.card import with_bench_validity

    plan = plan_rescue(FIXTURE, BenchSettings(model="fake/model", judge_model="fake/model"), tasks=[Task.RPP])
    report = asyncio.run(
        run_bench(plan, FakeModelClient(default=bench_reply), out=tmp_path / "b.json", annotate=with_bench_validity)
    )
    assert report.tasks["rpp"].validity == []
