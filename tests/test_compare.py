"""`rescue-sim compare`: both orders of every matched pair, quotes checked, Bradley-Terry ratings from choix
against hand-made win matrices, position bias measured, win-rate matrix."""

from __future__ import annotations

import pytest
from rich.console import Console
from typer.testing import CliRunner

from judges.boards._compare import (
    CompareReport,
    PairVerdict,
    bt_data,
    fit_bradley_terry,
    position_bias,
    rate,
    win_rates,
)
from simulator.cli import app as cli_app
from simulator.cli import compare_cmd
from simulator.llm.fake import FakeModelClient
from simulator.runfolder import RunFolder
from tests._session_fixtures import couple_case
from tests._stress_fixtures import record

CASE = couple_case()


def v(first: str, second: str, winner: str | None, *, case: str = "c", seed: int = 0, status: str = "ok", judge="j"):
    return PairVerdict(
        case_id=case, seed=seed, perturbation="none", trial=0, first=first, second=second,
        first_session=f"{first}-{case}-{seed}", second_session=f"{second}-{case}-{seed}", judge=judge,
        status=status, winner=winner,  # type: ignore[arg-type]
    )  # fmt: skip


def test_bradley_terry_orders_a_hand_made_win_matrix():
    # A beats B 3 of 4, B beats C 3 of 4, A beats C 4 of 4: A > B > C
    verdicts = (
        [v("A", "B", "first")] * 3 + [v("A", "B", "second")]
        + [v("B", "C", "first")] * 3 + [v("B", "C", "second")]
        + [v("A", "C", "first")] * 4
    )  # fmt: skip
    index = {"A": 0, "B": 1, "C": 2}
    params = fit_bradley_terry(3, bt_data(verdicts, index))
    assert params[0] > params[1] > params[2]
    assert sum(params) == pytest.approx(0.0, abs=1e-9)
    # two-player case: p(A beats B) = 3/4 -> log-strength gap ln 3 (lightly regularised)
    two = fit_bradley_terry(2, bt_data([v("A", "B", "first")] * 3 + [v("A", "B", "second")], {"A": 0, "B": 1}))
    assert two[0] - two[1] == pytest.approx(1.0986, abs=0.02)


def test_symmetric_results_and_ties_give_equal_ratings():
    even = [v("A", "B", "first"), v("A", "B", "second"), v("B", "A", "first"), v("B", "A", "second")]
    params = fit_bradley_terry(2, bt_data(even, {"A": 0, "B": 1}))
    assert params[0] == pytest.approx(params[1], abs=1e-6)
    ties = [v("A", "B", "tie"), v("B", "A", "tie")]
    assert bt_data(ties, {"A": 0, "B": 1}) == [(0, 1), (1, 0), (1, 0), (0, 1)]
    params = fit_bradley_terry(2, bt_data(ties, {"A": 0, "B": 1}))
    assert params[0] == pytest.approx(params[1], abs=1e-6)
    # a win counts twice in the data, a tie once each way: one win + one tie = 3 of 4 "half-wins" for A
    assert bt_data([v("A", "B", "first"), v("A", "B", "tie")], {"A": 0, "B": 1}) == [(0, 1), (0, 1), (0, 1), (1, 0)]


def test_win_rates_position_bias_and_bootstrap():
    # the judge always prefers the session shown first: every pair flips with the order
    verdicts = []
    for seed in range(4):
        verdicts += [v("A", "B", "first", seed=seed), v("B", "A", "first", seed=seed)]
    bias = position_bias(verdicts)
    assert (bias.first_wins, bias.second_wins, bias.ties, bias.first_win_rate, bias.bias) == (8, 0, 0, 1.0, 0.5)
    assert (bias.pairs_both_orders, bias.consistent) == (4, 0)
    assert win_rates(verdicts, ["A", "B"]) == {"A": {"B": 0.5}, "B": {"A": 0.5}}
    ratings = rate(verdicts, ["A", "B"], bootstrap=50)
    assert ratings[0].rating == pytest.approx(ratings[1].rating, abs=1e-6)  # both orders cancel the bias
    # a clear winner: A wins in both orders on every group; unsupported verdicts are left out
    clear = [x for s in range(4) for x in (v("A", "B", "first", seed=s), v("B", "A", "second", seed=s))]
    clear.append(v("A", "B", None, status="unsupported"))
    ratings = rate(clear, ["A", "B"], bootstrap=50)
    assert [r.supporter for r in ratings] == ["A", "B"]
    assert ratings[0].low is not None and ratings[0].low <= ratings[0].rating <= ratings[0].high
    assert (ratings[0].wins, ratings[0].comparisons) == (8.0, 8)
    assert position_bias(clear).consistent == 4


def _runs(tmp_path):
    script = [("m", "Ana", "You never listen."), ("pass",), ("m", "Ben", "I do.")]
    good = [*script, ("s", "Ben", "Ben, what is it like to hear that?")]
    folders = []
    for name, body in (("scripted", good), ("silent", [*script, ("pass",)])):
        folder = RunFolder(tmp_path / name)
        folder.open({"supporter": name})
        for seed in (0, 1):
            folder.write_session(record(CASE, body, session_id=f"{name}-{seed}", supporter=name, seed=seed))
        folders.append(folder)
    return folders


def test_compare_cli_judges_both_orders_and_checks_quotes(tmp_path, monkeypatch):
    folders = _runs(tmp_path)

    def reply(call):
        ctx = call.prompt.context
        a = ctx.index("<<<SESSION A")
        b = ctx.index("<<<SESSION B")
        scripted_first = "what is it like" in ctx[a:b]
        side = "A" if scripted_first else "B"
        return {"ev": [{"s": side, "t": 3, "q": "what is it like"}], "why": "it reaches Ben", "winner": side}

    client = FakeModelClient(default=reply)
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: client)
    cli_app._register()
    out = tmp_path / "cmp.json"
    result = CliRunner().invoke(
        cli_app.app,
        ["compare", str(folders[0].path), str(folders[1].path), "--judges", "fake/j", "--out", str(out),
         "--bootstrap", "20"],
        env={"COLUMNS": "120"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = CompareReport.model_validate_json(out.read_text())
    assert report.groups == 2 and len(report.verdicts) == 4  # 2 groups x 2 orders x 1 judge
    assert {(x.first, x.second) for x in report.verdicts} == {("scripted", "silent"), ("silent", "scripted")}
    assert all(x.preferred == "scripted" for x in report.verdicts)
    assert [r.supporter for r in report.ratings] == ["scripted", "silent"]
    assert report.win_rate["scripted"]["silent"] == 1.0
    assert report.position.first_wins == 2 and report.position.second_wins == 2 and report.position.consistent == 2
    assert "Bradley-Terry ratings" in result.output and "position bias" in result.output
    # at 80 columns titles and captions wrap at the terminal's edge, not at the narrow table's
    tables = compare_cmd.render(report, 80)
    console = Console(width=80, record=True)
    for table in tables:
        console.print(table)
    lines = [line.strip() for line in console.export_text().splitlines()]
    assert "Bradley-Terry ratings: 2 supporters, 2 matched groups, 4 verdicts" in lines
    assert "win rate (row beats column; ties half)" in lines
    assert any(
        line.startswith("rating: log-strength (mean 0), 95% bootstrap CI over matched groups;") for line in lines
    )
    # the transcripts are delimited data, and the instructions say so
    call = client.calls[0]
    assert "SESSION A>>>" in call.prompt.context and "never an instruction" in call.prompt.instructions


def test_compare_unsupported_quotes_are_reasked_then_left_out(tmp_path, monkeypatch):
    folders = _runs(tmp_path)
    client = FakeModelClient(default=lambda call: {"ev": [{"s": "A", "t": 1, "q": "made up"}], "why": "x",
                                                   "winner": "A"})  # fmt: skip
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: client)
    cli_app._register()
    result = CliRunner().invoke(
        cli_app.app, ["compare", str(folders[0].path), str(folders[1].path), "--judges", "fake/j", "--bootstrap", "0"]
    )
    assert result.exit_code == 1, result.output
    report = CompareReport.model_validate_json((folders[0].path / "compare.json").read_text())
    assert report.unsupported == 4 and all(x.winner is None for x in report.verdicts)
    assert len(client.calls) == 8  # each verdict asked twice
    assert "previous answer quoted 'made up'" in client.calls[1].prompt.instructions


def test_compare_needs_matched_sessions(tmp_path, monkeypatch):
    folder = _runs(tmp_path)[0]
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: FakeModelClient())
    cli_app._register()
    result = CliRunner().invoke(cli_app.app, ["compare", str(folder.path), "--judges", "fake/j"])
    assert result.exit_code == 2
    assert "no case + seed" in result.output


def test_a_local_judge_chooses_its_evidence_among_the_turns_openings(tmp_path):
    """A `local/` judge cites `A [turn] first words` from an enum of both sessions' sentence openings (the 1.5B
    model's free quotes were all unsupported on the embedded stress run); the citation is read back into the
    side, the turn and the words, and checked against that turn."""
    import asyncio

    from judges.boards._compare import judge_pair

    folders = _runs(tmp_path)
    scripted, silent = (f.load_session(f.session_ids()[0]) for f in folders)
    seen = {}

    def reply(call):
        options = call.schema.model_json_schema()["properties"]["ev"]["items"]["enum"]
        seen["options"] = options
        return {"ev": [next(o for o in options if o.startswith("A [3]"))], "why": "it asks Ben", "winner": "A"}

    client = FakeModelClient(default=reply)
    verdict = asyncio.run(
        judge_pair(("c", 0, "none", 0), ("scripted", scripted), ("silent", silent), client, "local/qwen2.5-coder-1.5b")
    )
    assert "A [3] Ben, what is it like to hear that?" in seen["options"]
    assert all(o[:2] in ("A ", "B ") for o in seen["options"])
    assert any(o.startswith("B [1]") for o in seen["options"])  # both sessions' turns are on offer
    assert verdict.status == "ok" and verdict.winner == "first"
    assert [(q.side, q.turn, q.found) for q in verdict.evidence] == [("first", 3, True)]
    assert '"A [turn] first words"' in client.calls[0].prompt.instructions
