"""The supporter ladder and `rescue-sim sensitivity`: ladder specs parse into supporters whose prompts differ, their
decisions keep the contract, the declared orders are data, and the statistics separate only what they measured."""

from __future__ import annotations

import asyncio
import re

import pytest

from personas.library import load_library, resolve_case
from personas.taxonomy import strategies_for
from simulator.llm.fake import FakeModelClient
from simulator.records import Turn
from simulator.supporters import (
    LADDER_STYLES,
    InvalidDecision,
    ModelSupporter,
    ScriptedSupporter,
    SilentSupporter,
    SupporterSpecError,
    parse_supporter_spec,
)
from simulator.view import build_view

M = "fake/model"


def _view(case_id: str = "dana-and-theo"):
    case = next(c for c in load_library() if c.id == case_id)
    a, b = case.member_names[:2]
    turns = [
        Turn(index=1, speaker=a, kind="member", addressees=[], text="You never listen to me."),
        Turn(index=2, speaker=b, kind="member", addressees=[], text="Because you only ever complain."),
    ]
    return case, build_view(case, turns, member_turns=2, max_turns=6)


def test_ladder_specs_parse_and_each_rung_prompt_differs():
    client = FakeModelClient()
    assert isinstance(parse_supporter_spec("silent", client), SilentSupporter)
    assert isinstance(parse_supporter_spec("scripted", client), ScriptedSupporter)
    _, view = _view()
    prompts = {}
    for spec in [M, *(f"{s}:{M}" for s in LADDER_STYLES)]:
        sup = parse_supporter_spec(spec, client)
        assert isinstance(sup, ModelSupporter)
        assert sup.model == M and sup.spec == spec  # same model; the record's supporter names the rung
        prompts[spec] = sup.instructions(view)
    assert len(set(prompts.values())) == len(prompts)
    case = view.intake
    ally, other = case.member_names[:2]
    assert f"side with {ally}" in prompts[f"sides:{M}"] and f"what {other} did wrong" in prompts[f"sides:{M}"]
    assert "advice" in prompts[f"lecture:{M}"] and "feelings" in prompts[f"lecture:{M}"]
    assert "spoke the last line" in prompts[f"generic:{M}"]


@pytest.mark.parametrize("bad", ["sides:", "sides:gpt4", "lecture:http://x/v1#m", "generic:a b/c"])
def test_ladder_spec_needs_a_model_id(bad):
    with pytest.raises(SupporterSpecError):
        parse_supporter_spec(bad, FakeModelClient())


def good_instructions(style, view):
    return ModelSupporter(client=FakeModelClient(), model=M, spec=f"{style}:{M}", style=style).instructions(view)


@pytest.mark.parametrize("case_id", ["dana-and-theo", "nguyen-family"])
@pytest.mark.parametrize("style", LADDER_STYLES)
def test_degraded_supporters_keep_the_decision_contract(style, case_id):
    case, view = _view(case_id)
    last = view.transcript[-1].speaker
    strategy = next(iter(strategies_for(case.group)))
    verdict = {"verdict": f"{last} will not listen"} if style == "sides" else {}
    blame_check = [" yes"] if style == "sides" else []  # `sides` asks whether its own line blames (a draw kept)
    good = FakeModelClient(
        replies=[
            {"speak": True, "targets": [last], "strategy": strategy, **verdict, "text": "I hear you."},
            *blame_check,
        ]
    )
    decision = asyncio.run(parse_supporter_spec(f"{style}:{M}", good).decide(view))
    assert decision.speak and decision.targets == [last] and decision.strategy == strategy
    assert decision.rationale == verdict.get("verdict", "")  # `sides` records the verdict it spoke from
    assert good.calls[0].model == M and good.calls[0].prompt.instructions == good_instructions(style, view)
    off = FakeModelClient(replies=[{"speak": True, "targets": [last], "strategy": "not_a_label", "text": "Hi."}] * 3)
    with pytest.raises(InvalidDecision):
        asyncio.run(parse_supporter_spec(f"{style}:{M}", off).decide(view))
    bad = FakeModelClient(
        replies=[{"speak": True, "targets": ["Nobody"], "strategy": "track", "text": "Hi."}] * 3,
    )
    with pytest.raises(InvalidDecision):
        asyncio.run(parse_supporter_spec(f"{style}:{M}", bad).decide(view))


def test_sides_draws_again_until_its_line_blames():
    """A `sides` line the room's blame question does not read as blaming a member it sides against is drawn again
    (with a note), at most SIDES_DRAWS times; the last draw is kept whatever it reads as, and every call behind
    the draws is recorded."""
    from simulator.supporters import SIDES_DRAWS

    case, view = _view("dana-and-theo")
    line = {"speak": True, "targets": ["Theo"], "strategy": "track", "verdict": "he works late", "text": "I hear you."}
    blames_second = FakeModelClient(replies=[line, " no", line, " yes"])
    decision = asyncio.run(parse_supporter_spec(f"sides:{M}", blames_second).decide(view))
    assert decision.draws == 2 and len(decision.draw_calls) == 3  # the first draw and both blame checks
    assert "did not put the blame on Theo" in blames_second.calls[2].prompt.instructions
    assert blames_second.calls[1].role == "supporter" and "Does it blame or criticise Theo?" in str(
        blames_second.calls[1].prompt.prefill
    )
    never = FakeModelClient(replies=[line, " no"] * SIDES_DRAWS)
    kept = asyncio.run(parse_supporter_spec(f"sides:{M}", never).decide(view))
    assert kept.draws == SIDES_DRAWS and kept.speak and kept.text == "I hear you."
    assert len(never.calls) == 2 * SIDES_DRAWS and len(kept.draw_calls) == 2 * SIDES_DRAWS - 1
    plain = FakeModelClient(replies=[{k: v for k, v in line.items() if k != "verdict"}])
    assert asyncio.run(parse_supporter_spec(f"lecture:{M}", plain).decide(view)).draws == 1  # other rungs: one


@pytest.mark.parametrize("style", ["sides", "lecture", "generic"])
def test_a_rung_line_in_a_members_voice_is_drawn_again(style: str):
    """A rung's line that speaks as a member ("It's hurting me too") is not the counsellor the rung names: it is
    drawn again with a note before any blame check; the supporter under test (no style) is never redrawn."""
    case, view = _view("dana-and-theo")
    base = {"speak": True, "targets": ["Theo"], "strategy": "track", "text": "It's hurting me too. Talk to me."}
    if style == "sides":
        base["verdict"] = "he shuts her out"
    counsellor = {**base, "text": "Theo, you keep shutting Dana out, and it has to stop."}
    client = FakeModelClient(replies=[base, counsellor, " yes"])
    decision = asyncio.run(parse_supporter_spec(f"{style}:{M}", client).decide(view))
    assert decision.draws == 2 and decision.text == counsellor["text"]
    assert "as if you were one of them" in client.calls[1].prompt.instructions
    assert len(client.calls) == (3 if style == "sides" else 2)  # only `sides` asks the blame question, once
    under_test = FakeModelClient(replies=[{k: v for k, v in base.items() if k != "verdict"}])
    kept = asyncio.run(parse_supporter_spec(M, under_test).decide(view))
    assert kept.draws == 1 and kept.text == base["text"] and len(under_test.calls) == 1


@pytest.mark.parametrize(
    "line, voiced",
    [
        ("It's hurting me too. Please talk to me about it.", True),
        ("You're always there for me, but I feel like I'm falling short of my potential.", True),
        ("I feel so drained and disconnected from everything.", True),
        ("I can\u2019t stand it anymore!", True),
        ("Theo, tell me what happens for you when Dana raises her voice.", False),
        ("Help me understand what you need from Dana right now.", False),
        ("Ben, Ana is right and you are wrong. You keep brushing her off, and it has to stop.", False),
        ("I hear how tired you both are.", False),
    ],
)
def test_member_voice_reads_the_speakers_own_hurt_not_counsellor_phrases(line: str, voiced: bool):
    from simulator.transcript import in_member_voice

    assert in_member_voice(line) is voiced


def test_sides_states_its_verdict_before_its_words():
    """The 1.5B asked for a sides line alone sympathised with the member it was to blame (tests/benchmarks/
    rung_bench.py: 0 of 8 first lines read as blaming the other member); the verdict field comes before the text,
    so the text is written after the blame."""
    from simulator.supporters import decision_schema

    _, view = _view()
    fields = list(decision_schema(view.intake, "sides").model_json_schema()["properties"])
    assert fields.index("verdict") == fields.index("text") - 1
    assert "verdict" in decision_schema(view.intake, "sides").model_json_schema()["required"]
    for style in (None, "lecture", "generic"):
        assert "verdict" not in decision_schema(view.intake, style).model_json_schema()["properties"]
    last = view.transcript[-1].speaker
    no_verdict = {"speak": True, "targets": [last], "strategy": "track", "text": "You are wrong."}
    with pytest.raises(InvalidDecision):  # without its verdict a sides reply breaks the rung's contract
        asyncio.run(parse_supporter_spec(f"sides:{M}", FakeModelClient(replies=[no_verdict] * 3)).decide(view))


# -- the statistics -----------------------------------------------------------------------------------------------


def _metric(order, higher_is_better=True):
    from simulator.runner.sensitivity_ladder import LadderMetric

    return LadderMetric(id="m", source="judge", order=order, higher_is_better=higher_is_better)


def test_ladder_file_declares_orders_over_known_rungs():
    from simulator.runner.sensitivity_ladder import load_ladder

    ladder = load_ladder()
    ids = [r.id for r in ladder.rungs]
    assert ids[0] == "model" and "silent" in ids and len(ids) == 6
    specs = ladder.specs(M)
    assert set(specs.values()) == {M, "scripted", "silent", *(f"{s}:{M}" for s in LADDER_STYLES)}
    by_id = {m.id: m for m in ladder.metrics}
    assert {"overall_quality", "balance", "group_objective", "stress_pass_rate", "critical_share"} <= set(by_id)
    assert "silent" in by_id["strategy_fit"].unordered  # silent has no strategy fit, and says so
    assert by_id["side_taking"].higher_is_better is False
    from judges import load_rubric

    about_supporter = {d.id for d in load_rubric(None).active if d.about == "supporter"}
    assert {m.id for m in ladder.metrics if m.source == "judge"} <= about_supporter


def test_known_order_gives_tau_one_and_separation():
    from simulator.runner.sensitivity_stats import analyse_metric

    order = ["a", "b", "c", "d"]
    units = [f"u{i}" for i in range(12)]
    values = {r: {u: 4.0 - k + 0.1 * ((i * 7 + k) % 3) for i, u in enumerate(units)} for k, r in enumerate(order)}
    result = analyse_metric(_metric(order), values)
    assert result.kendall_tau == pytest.approx(1.0)
    assert result.observed == order
    assert all(p.separates and p.as_declared for p in result.adjacent)
    assert result.separates_top_bottom and result.measured
    assert all(p.sessions_for_power is not None and p.sessions_for_power >= 2 for p in result.adjacent)
    # lower is better: the same numbers reversed are the declared order
    flipped = analyse_metric(_metric(order[::-1], higher_is_better=False), values)
    assert flipped.kendall_tau == pytest.approx(1.0) and flipped.separates_top_bottom


def test_reversed_order_separates_the_wrong_way():
    from simulator.runner.sensitivity_stats import analyse_metric, failures_of

    values = {"a": {f"u{i}": float(i % 2) for i in range(10)}, "b": {f"u{i}": 3.0 + i % 2 for i in range(10)}}
    result = analyse_metric(_metric(["a", "b"]), values)
    assert result.kendall_tau == pytest.approx(-1.0)
    assert result.top_bottom.separates and not result.separates_top_bottom
    assert "wrong way" in failures_of([result])[0]


def test_identical_values_separate_nothing():
    from simulator.runner.sensitivity_stats import analyse_metric, failures_of

    order = ["a", "b", "c"]
    values = {r: {f"u{i}": 3.0 for i in range(8)} for r in order}
    result = analyse_metric(_metric(order), values)
    assert result.kendall_tau is None
    assert not any(p.separates for p in result.adjacent) and not result.separates_top_bottom
    assert all(p.difference == 0 and p.sessions_for_power is None for p in result.adjacent)
    assert failures_of([result]) and "identical" in failures_of([result])[0]


def test_one_shared_unit_claims_nothing():
    from simulator.runner.sensitivity_stats import analyse_metric

    result = analyse_metric(_metric(["a", "b"]), {"a": {"u0": 5.0, "u1": 5.0}, "b": {"u0": 1.0, "u9": 1.0}})
    assert result.top_bottom.shared_units == 1 and not result.top_bottom.separates


def test_power_needs_more_sessions_for_smaller_differences():
    from simulator.runner.sensitivity_stats import sessions_for_power

    diffs = [-0.5, -0.5, 1.5, -0.5]
    assert sessions_for_power(diffs, 0.0) is None
    assert sessions_for_power(diffs, 0.1) > sessions_for_power(diffs, 1.0)
    # the paired formula: (1.96 + 0.84)^2 * var(d) / d^2, var(d) = 1.0 here
    assert sessions_for_power(diffs, 1.0) == 8


def test_few_scattered_units_do_not_separate():
    """Three positive differences that scatter widely: a percentile bootstrap over three units excludes 0 (every
    resampled mean is positive), but nothing has been shown; the paired t interval keeps the pair unseparated."""
    from simulator.runner.sensitivity_stats import analyse_metric

    values = {"a": {"u0": 1.5, "u1": 3.0, "u2": 1.2}, "b": {"u0": 1.0, "u1": 1.0, "u2": 1.0}}
    result = analyse_metric(_metric(["a", "b"]), values)
    assert result.top_bottom.difference == pytest.approx(0.9)
    assert result.top_bottom.low < 0 < result.top_bottom.high
    assert not result.top_bottom.separates and not result.separates_top_bottom
    # the same differences, tight: they separate
    tight = {"a": {"u0": 1.9, "u1": 2.0, "u2": 1.8}, "b": {"u0": 1.0, "u1": 1.0, "u2": 1.0}}
    assert analyse_metric(_metric(["a", "b"]), tight).separates_top_bottom


def test_the_same_difference_on_a_few_units_is_no_separation():
    """Integer judge scores tie: two units on which the top rung beats the bottom by exactly 2 give a zero-width
    interval [2, 2], which says the spread is unknown, not zero; a sign test needs 6 same-signed units at 95%."""
    from judges import difference_separates
    from simulator.runner.sensitivity_stats import analyse_metric

    def ladder_of(n):
        return {"a": {f"u{i}": 4.0 for i in range(n)}, "b": {f"u{i}": 2.0 for i in range(n)}}

    few = analyse_metric(_metric(["a", "b"]), ladder_of(2)).top_bottom
    assert (few.low, few.high) == (2.0, 2.0) and not few.separates and few.sessions_for_power == 6
    assert "no spread to estimate; a sign test needs 6" in few.note
    assert not analyse_metric(_metric(["a", "b"]), ladder_of(5)).separates_top_bottom
    assert analyse_metric(_metric(["a", "b"]), ladder_of(6)).separates_top_bottom
    # the same rule for the trajectory separation of the room (judges.room_audit): one function decides both
    assert not difference_separates([1.0, 1.0], (1.0, 1.0)) and difference_separates([1.0] * 6, (1.0, 1.0))
    assert difference_separates([0.9, 1.1, 1.0], (0.8, 1.2)) and not difference_separates([0.9, 1.1], (-0.1, 2.1))


# -- the command --------------------------------------------------------------------------------------------------


@pytest.fixture
def cli():
    from typer.testing import CliRunner

    from simulator.cli.app import _register, app

    _register()
    return CliRunner(), app


def test_dry_run_prints_the_matrix_and_runs_nothing(cli, tmp_path, monkeypatch):

    runner, app = cli

    def no_client(settings):
        raise AssertionError("a dry run makes no client")

    monkeypatch.setattr("simulator.llm.settings.make_client", no_client)
    out = tmp_path / "run"
    args = ["sensitivity", "--model", M, "--cases", "dana-and-theo", "--seeds", "0-2", "--dry-run", "--out", str(out)]
    result = runner.invoke(app, [*args, "--perturbations", "none,crisis_disclosure", "--rungs", "all"])
    assert result.exit_code == 0, result.output
    assert "6 rungs x 1 cases x 3 seeds x 2 perturbations" in result.output
    assert "36 sessions" in result.output and "model calls: total" in result.output
    assert "perturbations: none, crisis_disclosure" in result.output
    assert f"sides:{M}" in result.output and not out.exists()
    # by default only the listed perturbation runs: `none` (unperturbed sessions) is asked for, not implied
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "3 rungs x 1 cases x 3 seeds x 1 perturbations = 9 sessions" in result.output  # default_rungs
    assert "perturbations: crisis_disclosure" in result.output and "scripted" not in result.output
    assert "embedded model," not in result.output  # M is not the embedded model
    result = runner.invoke(app, [*args, "--perturbations", " , "])
    assert result.exit_code == 2 and "perturbations: none given" in result.output


def test_model_binds_only_the_rungs_and_every_role_s_model_is_printed(cli, tmp_path, monkeypatch):
    """`sensitivity --model M` binds the ladder's rungs, not the room: its help names the room's default model and
    the run prints each role's model before it starts."""
    from simulator.llm.embedded import DEFAULT_LOCAL_MODEL

    runner, app = cli
    env = {"COLUMNS": "400", "RESCUE_SIM_MODEL": ""}
    helped = runner.invoke(app, ["sensitivity", "--help"], env=env)
    assert helped.exit_code == 0 and DEFAULT_LOCAL_MODEL in helped.output and "the usual" not in helped.output
    args = ["sensitivity", "--model", M, "--perturbations", "none", "--dry-run", "--out", str(tmp_path / "r")]
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    local = DEFAULT_LOCAL_MODEL
    rungs = f"supporter rungs model={M}, sides=sides:{M}, silent=silent"
    assert f"models: {rungs}; member={local}; tracker={local}; judge={local}\n" in result.output
    room = [*args, "--room-model", "fake/room", "--judge", "fake/j1", "--judge", "fake/j2"]
    result = runner.invoke(app, room, env=env)
    assert result.exit_code == 0, result.output
    assert f"models: {rungs}; member=fake/room; tracker=fake/room; judge=fake/j1, fake/j2\n" in result.output


def test_same_answer_provider_separates_nothing_and_exits_1(cli, tmp_path, monkeypatch):
    import json

    from simulator.runfolder import RunFolder
    from simulator.runner.sensitivity_stats import SensitivityReport
    from tests._stress_fixtures import any_schema_reply, steady_yes

    runner, app = cli
    fake = FakeModelClient(default=any_schema_reply(), yes=steady_yes)
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: fake)
    out = tmp_path / "run"
    args = [
        "sensitivity",
        "--model",
        M,
        "--cases",
        "dana-and-theo",
        "--seeds",
        "0-1",
        "--turns",
        "2",
        "--perturbations",
        "none",
        "--rungs",
        "all",
    ]
    result = runner.invoke(app, [*args, "--tracker-every", "0", "--out", str(out)])
    assert result.exit_code == 1, result.output
    report = SensitivityReport.model_validate(json.loads((out / "sensitivity.json").read_text()))
    folder = RunFolder(out)
    records = [folder.load_session(s) for s in folder.session_ids()]
    assert {r.supporter for r in records} == set(report.rungs.values())  # each record names its rung
    from judges import read_judgment

    judgments = [read_judgment(folder, r.session_id) for r in records]
    assert all(j is not None and j.judge_mode == "checklist" for j in judgments)  # the default, as `run`
    assert folder.read_manifest().config["stress"]["judge_mode"] == "checklist"
    # a room that says the same line every turn is a malfunctioning room: every session is a simulator fault,
    # left out of every metric and counted per rung, so nothing is measured and nothing separates
    assert set(report.simulator_faults) == set(report.rungs)
    assert all(t.faulted == 2 and not t.included for t in report.simulator_faults.values())
    assert not any(m.measured for m in report.metrics) and report.failures
    assert "simulator faults" in result.output and "left out of every metric" in result.output
    # put back, the identical sessions are measured and still separate nothing
    result = runner.invoke(app, [*args, "--tracker-every", "0", "--out", str(out), "--include-simulator-faults"])
    assert result.exit_code == 1, result.output
    report = SensitivityReport.model_validate(json.loads((out / "sensitivity.json").read_text()))
    assert all(t.included for t in report.simulator_faults.values())
    assert report.sessions == 12 and report.units == 2 and report.sessions_per_unit == 1 and report.failures
    assert not any(m.separates_top_bottom for m in report.metrics)
    assert not any(p.separates for m in report.metrics for p in [*m.adjacent, m.top_bottom])
    assert all(not m.run for m in report.metrics if m.source == "stress")  # no perturbations: not run
    objective = next(m for m in report.metrics if m.id == "group_objective")
    assert objective.measured and objective.kendall_tau is None  # measured, identical for every rung
    assert all(p.difference == 0 and p.sessions_for_power is None for p in objective.adjacent)
    assert "not sensitive" in result.output and "do not separate" in result.output


def test_judge_mode_verdict_judges_the_ladder_with_verdicts(cli, tmp_path, monkeypatch, bench_reply):
    from judges import read_judgment
    from simulator.runfolder import RunFolder
    from tests._stress_fixtures import any_schema_reply

    runner, app = cli
    room = any_schema_reply(lines=["I am tired of this.", "You never ask me.", "Fine, say it then."])
    fake = FakeModelClient(default=lambda call: bench_reply(call) if call.role == "judge" else room(call))
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: fake)
    out = tmp_path / "run"
    args = ["sensitivity", "--model", M, "--cases", "dana-and-theo", "--seeds", "0", "--turns", "2", "--rungs"]
    args += ["model,silent", "--perturbations", "none", "--tracker-every", "0", "--out", str(out)]
    result = runner.invoke(app, [*args, "--judge-mode", "verdict"])
    assert result.exit_code in (0, 1), result.output  # one unit separates nothing; the judgments are what count
    folder = RunFolder(out)
    judgments = [read_judgment(folder, sid) for sid in folder.session_ids()]
    assert len(judgments) == 2 and all(j is not None and j.judge_mode == "verdict" for j in judgments)
    assert not any(c.schema is None and c.role == "judge" for c in fake.calls)  # no checklist question asked
    assert "judge_mode" not in folder.read_manifest().config["stress"]  # absent reads as verdict, as before


def test_report_only_reads_the_folder_and_runs_nothing(cli, tmp_path, monkeypatch):
    import json

    from simulator.runner.sensitivity_stats import SensitivityReport
    from tests._stress_fixtures import any_schema_reply, steady_yes

    runner, app = cli
    out = tmp_path / "run"
    args = ["sensitivity", "--model", M, "--cases", "dana-and-theo", "--seeds", "0-1", "--turns", "2"]
    args += ["--perturbations", "none", "--tracker-every", "0", "--out", str(out), "--rungs", "all"]
    missing = runner.invoke(app, [*args, "--report-only"])
    assert missing.exit_code == 2 and "no run folder there" in missing.output and not out.exists()
    fake = FakeModelClient(default=any_schema_reply(), yes=steady_yes)
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: fake)
    assert runner.invoke(app, args).exit_code == 1
    ran = json.loads((out / "sensitivity.json").read_text())
    (out / "sensitivity.json").unlink()

    def no_client(settings):
        raise AssertionError("--report-only makes no client")

    monkeypatch.setattr("simulator.llm.settings.make_client", no_client)
    result = runner.invoke(app, [*args, "--report-only"])
    assert result.exit_code == 1, result.output  # the same verdict: nothing separates
    report = SensitivityReport.model_validate(json.loads((out / "sensitivity.json").read_text()))
    assert report.model_dump(mode="json") == ran and report.completed == 12


def test_rung_subsets_keep_each_metric_s_order_among_the_chosen_rungs():
    from simulator.runner.sensitivity_ladder import LadderError, load_ladder

    full = load_ladder()
    assert full.default_rungs == ["model", "sides", "silent"]
    default = full.subset()
    assert [r.id for r in default.rungs] == ["model", "sides", "silent"]
    by_id = {m.id: m for m in default.metrics}
    assert by_id["overall_quality"].order == ["model", "sides", "silent"]
    assert by_id["balance"].order == ["model", "sides"] and set(by_id["balance"].unordered) == {"silent"}
    assert by_id["critical_share"].order == ["model", "silent"] and set(by_id["critical_share"].unordered) == {"sides"}
    # a metric with fewer than two of the chosen rungs in its order is dropped, not reported as ordering one rung
    pair = full.subset(["scripted", "silent"])
    assert "side_taking" not in {m.id for m in pair.metrics} and "overall_quality" in {m.id for m in pair.metrics}
    assert [r.id for r in full.subset(["silent", "model"]).rungs] == ["model", "silent"]  # the ladder's order
    for bad, says in ((["model", "nope"], "unknown rung(s) nope"), (["model"], "name at least two")):
        with pytest.raises(LadderError, match=re.escape(says)):
            full.subset(bad)


def test_dry_run_estimates_the_embedded_model_s_minutes_for_ladder_rungs(cli, tmp_path):
    runner, app = cli
    local = "local/qwen2.5-coder-1.5b"
    result = runner.invoke(app, ["sensitivity", "--model", local, "--dry-run", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "3 rungs x 1 cases x 2 seeds x 1 perturbations = 6 sessions" in result.output
    assert "embedded model, checklist prefixes cached" in result.output  # sides:local/... is the embedded model too


def test_rung_bench_reads_each_rung_by_its_own_check():
    """The manipulation check on a fake room that reads every line as blaming everyone and lecturing nobody:
    `sides` took on every line (a non-ally was blamed), `lecture` on none, `generic` on every line (nobody read
    it as about them in particular); the table counts per case."""
    import importlib.util
    from pathlib import Path

    from tests._sim_fakes import RoomScript

    path = Path(__file__).parent / "benchmarks" / "rung_bench.py"
    spec = importlib.util.spec_from_file_location("rung_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    case = resolve_case("dana-and-theo")
    client = FakeModelClient(default=RoomScript(case, blamed=True))
    rows = asyncio.run(bench.measure(client, [case.id], ["sides", "lecture", "generic", "model"], [0, 1], M))
    assert len(rows) == 8 and all(r["text"] for r in rows)
    table = {e["rung"]: e for e in bench.summary(rows, ["sides", "lecture", "generic", "model"])}
    assert (table["sides"]["sides"], table["sides"]["lines"]) == (2, 2)
    assert table["lecture"]["lecture"] == 0 and table["generic"]["generic"] == 2
    assert (table["model"]["sides"], table["model"]["lecture"], table["model"]["generic"]) == (2, 0, 2)
    assert all(set(r["answers"]["blamed"]) == {"Dana", "Theo"} for r in rows if r["rung"] == "sides")


def test_sides_and_generic_lines_open_as_the_counsellor_they_are():
    """The grammar makes `sides` open as its prompt's example does, on a member it sides against and the ally in
    the third person ("Minh, Lan ..."), and `generic` on a stock reflection, so neither is said in a member's own
    voice; `lecture` and M's own prompt are left free."""
    from simulator.supporters import decision_schema

    case, view = _view("nguyen-family")
    ally, *others = case.member_names

    def opens(style, line):
        return re.match(decision_schema(view.intake, style).model_json_schema()["properties"]["text"]["pattern"], line)

    assert all(opens("sides", f"{o}, {ally} is right and you keep brushing her off.") for o in others)
    assert not opens("sides", f"{others[0]}, I know you want to be good for me.")
    assert not opens("sides", f"{ally}, you are right.") and not opens("sides", "It's hurting me too.")
    assert opens("generic", "It sounds like you are worn out.") and not opens("generic", "I feel so drained.")
    for style in ("lecture", None):
        assert opens(style, "Set one evening a week aside to talk.") and opens(style, "")


# -- the `human` reference (--human) ------------------------------------------------------------------------------


def _play_folder(out, fake, *, seeds, models: dict[str, str], judge_like=None, supporter="human:ana", turns=2):
    """A folder of one session played by a person through the play runner (`run_sessions` with `human_input`, as
    `rescue-sim play` and serve's play page drive it): scripted moves, speak then stay silent; judged like
    `judge_like` (a ladder judgment) when given."""
    from judges import judge_session, load_rubric, write_judgment
    from simulator.runfolder import RunFolder
    from simulator.runner.runs import RunConfig, run_sessions
    from simulator.supporters import HumanSupporter

    case = resolve_case("dana-and-theo")
    said: set[str] = set()

    async def human_input(payload, record):  # each session: speak once, then stay silent
        if record.session_id in said:
            return {"text": ""}
        said.add(record.session_id)
        return {"text": "Dana, Theo: what would you each like the other to hear?", "targets": ["Dana", "Theo"]}

    config = RunConfig(cases=[case.id], supporter=supporter, models=models, seeds=seeds, max_turns=turns, judge=False)
    config.tracker_every = 0
    asyncio.run(run_sessions(config, [case], fake, HumanSupporter(spec=supporter), out, human_input=human_input))
    folder = RunFolder(out)
    if judge_like is not None:
        for sid in folder.session_ids():
            per_turn = judge_like.mode == "per_intervention"
            judgment = asyncio.run(
                judge_session(
                    folder.load_session(sid),
                    fake,
                    judge_like.judges,
                    load_rubric(),
                    per_turn,
                    judge_mode=judge_like.judge_mode,
                )
            )
            write_judgment(folder, judgment)
    return out


def test_human_sessions_sit_beside_the_ladder_paired_by_unit(cli, tmp_path, monkeypatch):
    """A folder of played sessions enters the report as the unranked `human` reference: its values are read (never
    simulated), paired with the ladder's units by case x seed x perturbation; a session of a seed the ladder did not
    run and the ladder unit no human played are listed as unmatched; the exit code is the ladder's alone."""
    import json

    from judges import read_judgment
    from simulator.runfolder import RunFolder
    from simulator.runner.sensitivity_ladder import load_ladder
    from simulator.runner.sensitivity_stats import SensitivityReport
    from tests._stress_fixtures import any_schema_reply, steady_yes

    ref = load_ladder().reference("human")
    assert ref.beside == "model" and ref.takes("human:ana") and ref.takes("human") and not ref.takes("humane")
    runner, app = cli
    fake = FakeModelClient(default=any_schema_reply(), yes=steady_yes)
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: fake)
    out = tmp_path / "run"
    args = ["sensitivity", "--model", M, "--cases", "dana-and-theo", "--seeds", "0-2", "--turns", "2"]
    args += ["--perturbations", "none", "--tracker-every", "0", "--out", str(out), "--include-simulator-faults"]
    assert runner.invoke(app, args).exit_code == 1
    ladder = RunFolder(out)
    first = ladder.session_ids()[0]
    models = ladder.load_session(first).models
    like = read_judgment(ladder, first)
    played = _play_folder(tmp_path / "plays" / "a", fake, seeds=[0, 1], models=models, judge_like=like)
    elsewhere = _play_folder(tmp_path / "plays" / "b", fake, seeds=[7], models=models, judge_like=like)
    longer = _play_folder(tmp_path / "plays" / "c", fake, seeds=[2], models=models, judge_like=like, turns=3)
    calls = len(fake.calls)

    def no_client(settings):
        raise AssertionError("--report-only makes no client")

    monkeypatch.setattr("simulator.llm.settings.make_client", no_client)
    human = ["--human", f"{played},{elsewhere}", "--human", str(longer)]
    result = runner.invoke(app, [*args, "--report-only", *human], env={"COLUMNS": "300"})
    assert result.exit_code == 1, result.output  # the ladder's verdict, unchanged by the reference
    assert len(fake.calls) == calls  # nothing simulated or judged
    report = SensitivityReport.model_validate(json.loads((out / "sensitivity.json").read_text()))
    h = report.human
    assert h is not None and h.beside == "model" and h.sessions == 4
    assert h.units == ["dana-and-theo|s0|none", "dana-and-theo|s1|none"]
    assert any("s7|none" in u and "ladder ran no session" in u for u in h.unmatched)
    assert any("s2|none" in u and "played 3 member turns, the ladder 2" in u for u in h.unmatched)
    assert "ladder units no human played" not in " ".join(h.unmatched)  # s2 was played, only not comparably
    objective = next(m for m in report.metrics if m.id == "group_objective")
    assert objective.human is not None and objective.human.ci.n == 2
    assert {d.rung for d in objective.human.distances} == set(report.rungs)
    assert all(d.shared_units == 2 and d.difference is not None for d in objective.human.distances)
    assert all("human" not in m.declared for m in report.metrics)  # never in an order
    assert "human (beside model, unranked" in result.output and "unmatched" in result.output
    assert "human: " in result.output and "vs sides:" in result.output
    # the same folders as a RUNS_DIR of plays
    result = runner.invoke(app, [*args, "--report-only", "--human", str(tmp_path / "plays")])
    assert result.exit_code == 1
    assert SensitivityReport.model_validate(json.loads((out / "sensitivity.json").read_text())).human.sessions == 4
    # only one of them: the ladder's unit nobody played is listed
    result = runner.invoke(app, [*args, "--report-only", "--human", str(elsewhere)])
    h = SensitivityReport.model_validate(json.loads((out / "sensitivity.json").read_text())).human
    assert h.units == [] and h.unmatched[-1] == "ladder units no human played: " + ", ".join(
        f"dana-and-theo|s{s}|none" for s in range(3)
    )
    # judged by another panel than the ladder's: refused with the line that re-judges it as the ladder was
    other = like.model_copy(update={"judges": ["fake/other-judge"]})
    odd = _play_folder(tmp_path / "odd", fake, seeds=[0], models=models, judge_like=other)
    result = runner.invoke(app, [*args, "--report-only", "--human", str(odd)], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "judged otherwise than the ladder" in result.output
    assert f"rescue-sim judge {odd} --judges {','.join(like.judges)}" in result.output


def test_human_folders_that_are_not_played_or_not_judged_are_refused(cli, tmp_path, monkeypatch):
    from simulator.runfolder import RunFolder
    from tests._stress_fixtures import any_schema_reply, steady_yes

    runner, app = cli
    fake = FakeModelClient(default=any_schema_reply(), yes=steady_yes)
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: fake)
    out = tmp_path / "run"
    args = ["sensitivity", "--model", M, "--cases", "dana-and-theo", "--seeds", "0", "--turns", "2"]
    args += ["--perturbations", "none", "--tracker-every", "0", "--out", str(out)]
    runner.invoke(app, args)
    models = RunFolder(out).load_session(RunFolder(out).session_ids()[0]).models
    # the ladder's own folder: its sessions were not played by a person
    result = runner.invoke(app, [*args, "--report-only", "--human", str(out)])
    assert result.exit_code == 2 and "not by a person" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    # a played folder nobody judged: the line to run first
    unjudged = _play_folder(tmp_path / "u", fake, seeds=[0], models=models)
    result = runner.invoke(app, [*args, "--report-only", "--human", str(unjudged)], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and f"rescue-sim judge {unjudged} --judges " in result.output
    assert "--judge-mode checklist" in result.output  # the ladder's mode
    # no run folder there at all
    result = runner.invoke(app, [*args, "--report-only", "--human", str(tmp_path / "nope")], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and f"error: --human {tmp_path / 'nope'}: no such folder" in result.output
