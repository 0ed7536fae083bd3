"""`validate`: the tracker replayed as in a session and scored against gold; the judge's strategy and target checks;
validity cards and where they are shown. Every figure is checked against values computed by hand from the
fixture (tests/fixtures/validity_rescue.jsonl, written for these tests) or from the raw RESCUE JSON.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges.validity import (
    ReplaySettings,
    ValidityCard,
    dimension_validity,
    planned_checkpoints,
    read_card,
    rescue_turns,
    series_jitter,
    tracker_case,
    validate,
    validate_tracker,
    validity_dir,
    validity_for,
    write_card,
)
from judges.validity.run import judge_digest
from personas.rescue import load_rescue, warmth_tension
from simulator.llm.fake import FakeModelClient
from simulator.session_state import derive_seed
from simulator.tracker import observe
from simulator.tracker import prompt_digest as tracker_digest

FIXTURE = Path(__file__).parent / "fixtures" / "validity_rescue.jsonl"


def _vp(source, target, warmth, tension, viewpoint="sees the other as distant", attitude="wary"):
    return {
        "source": source,
        "target": target,
        "viewpoint": viewpoint,
        "attitude": attitude,
        "warmth": warmth,
        "tension": tension,
    }


# The mocked tracker's replies at the fixture's three checkpoints (after rows 3, 8 and 11).
TRACKER_REPLIES = [
    {  # row 3: pattern right; Rosa 7 (gold 8), Tomas not reported (gold 6)
        "pattern": "attack_attack",
        "emotions": [{"person": "Rosa", "emotion": "angry", "intensity": 7}],
        "viewpoints": [_vp("Rosa", "Tomas", 3, 8), _vp("Tomas", "Rosa", 4, 6)],
        "at_risk": [],
    },
    {  # row 8: pattern wrong (gold repair_softening from row 9); Tomas 6 (gold 4); a false risk flag
        "pattern": "pursue_withdraw",
        "emotions": [
            {"person": "Rosa", "emotion": "guarded", "intensity": 5},
            {"person": "Tomas", "emotion": "hopeful", "intensity": 6},
        ],
        "viewpoints": [_vp("Tomas", "Rosa", 6, 4), _vp("Rosa", "Tomas", 5, 5)],
        "at_risk": ["Rosa"],
    },
    {  # row 11: pattern right; Tomas 8 (gold 8); only a view from Rosa (the speaker is Tomas); risk hit
        "pattern": "mixed_transition",
        "emotions": [{"person": "Tomas", "emotion": "hopeless", "intensity": 8}],
        "viewpoints": [_vp("Rosa", "Tomas", 5, 3)],
        "at_risk": ["Tomas"],
    },
]
VP_JUDGE = [
    {"reason": "same pair, close view", "source_target": 2, "viewpoint": 3},
    {"reason": "pair right, view partly", "source_target": 1, "viewpoint": 2},
]
STRATEGY_BY_ROW = {4: "track", 6: "reframe", 9: "enact", 12: "safeguard"}  # gold: track, evoke, enact, safeguard
TARGET_BY_ROW = {4: "Couple", 6: "Rosa", 9: "Rosa", 12: "Tomas"}  # gold: Couple, Tomas, Rosa, Tomas


def _row_of(call) -> int:
    return int(re.search(r"row (\d+)", call.prompt.instructions).group(1))


def judge_reply(call):
    if call.schema.__name__ == "StrategyLabel":
        return {"why": "what the turn does", "label": STRATEGY_BY_ROW[_row_of(call)]}
    if call.schema.__name__ == "PreferredTarget":
        return {"why": "who needs it", "target": TARGET_BY_ROW[_row_of(call)]}
    raise AssertionError(call.schema.__name__)


def fixture_client(tracker=None) -> FakeModelClient:
    return FakeModelClient(
        by_role={"tracker": list(TRACKER_REPLIES if tracker is None else tracker)},
        replies=[*VP_JUDGE],
        default=judge_reply,
    )


@pytest.fixture
def samples():
    return load_rescue(FIXTURE)


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("RESCUE_SIM_HOME", str(tmp_path / "home"))


def run_tracker(samples, client, judge_model="fake/judge"):
    return asyncio.run(validate_tracker(samples, client, source=str(FIXTURE), judge_model=judge_model))


# ---- the replay is the session's tracker -----------------------------------------------------------------------


def test_turns_and_cadence_follow_the_session(samples):
    turns = rescue_turns(samples[0])
    assert [t.kind for t in turns].count("member") == 8
    assert turns[3].speaker == "Therapist" and turns[3].kind == "supporter" and turns[3].addressees == ["Couple"]
    assert turns[0].addressees == ["Therapist"] and turns[2].addressees == ["Tomas"]
    # every 3 member turns (rows 3 and 8) and the last member turn (row 11)
    assert planned_checkpoints(samples[0], ReplaySettings()) == [3, 8, 11]
    assert planned_checkpoints(samples[0], ReplaySettings(tracker_every=2)) == [2, 5, 8, 11]
    assert planned_checkpoints(samples[0], ReplaySettings(tracker_every=0)) == [11]


def test_tracker_sees_what_it_sees_in_a_session(samples):
    client = fixture_client()
    card = run_tracker(samples, client, judge_model=None)
    calls = [c for c in client.calls if c.role == "tracker"]
    assert len(calls) == card.tracker.checkpoints == 3
    case, turns = tracker_case(samples[0]), rescue_turns(samples[0])
    assert "hostile" not in case.presenting_problem and "abandons" not in case.presenting_problem
    for call, row in zip(calls, (3, 8, 11)):
        session = FakeModelClient(replies=[TRACKER_REPLIES[0]])
        asyncio.run(observe(session, case, turns[:row], seed=derive_seed(0, "tracker", row), window=16))
        assert call.prompt == session.calls[0].prompt
        assert call.seed == session.calls[0].seed
        assert call.schema.model_json_schema() == session.calls[0].schema.model_json_schema()
    assert card.digest == tracker_digest() and card.model == "fake/model"


# ---- tracker metrics, by hand ------------------------------------------------------------------------------------


def test_pattern_against_gold(samples):
    p = run_tracker(samples, fixture_client(), judge_model=None).tracker.pattern
    # gold: row 3 attack_attack (own label), row 8 repair_softening (next therapist row), row 11 mixed_transition
    assert (p.n, p.correct, p.no_gold, p.no_dominant, p.off_taxonomy) == (3, 2, 0, 0, 0)
    assert p.accuracy == pytest.approx(2 / 3)
    assert p.macro_f1 == pytest.approx(2 / 6)  # attack 1, mixed 1, four couple labels 0
    assert p.confusion == {
        "attack_attack": {"attack_attack": 1},
        "repair_softening": {"pursue_withdraw": 1},
        "mixed_transition": {"mixed_transition": 1},
    }
    assert p.per_label["repair_softening"].model_dump() == {"support": 1, "predicted": 0, "correct": 0, "recall": 0.0}
    assert p.per_label["pursue_withdraw"].model_dump() == {"support": 0, "predicted": 1, "correct": 0, "recall": None}
    assert p.by_group["couple"].model_dump() == {"k": 2, "n": 3}


def test_emotion_intensity_against_gold(samples):
    e = run_tracker(samples, fixture_client(), judge_model=None).tracker.emotions
    # pairs (tracker, gold): row 3 Rosa (7, 8); row 8 Tomas (6, 4); row 11 Tomas (8, 8); row 3 Tomas not reported
    assert (e.n, e.not_reported) == (3, 1)
    assert e.mae == pytest.approx((1 + 2 + 0) / 3)
    # ranks: tracker [2, 1, 3], gold [2.5, 1, 2.5] -> rho = 1.5 / sqrt(2 * 1.5)
    assert e.spearman == pytest.approx(1.5 / 3**0.5)
    assert {k: (v.n, v.mae) for k, v in e.per_person.items()} == {"Rosa": (1, 1.0), "Tomas": (2, 1.0)}


def test_viewpoints_pairing_and_vp_judge(samples):
    client = fixture_client()
    card = run_tracker(samples, client)
    v = card.tracker.viewpoints
    # gold from the speaker at rows 3 (Rosa->Tomas), 8 (Tomas->Rosa), 11 (Tomas->Rosa; Tomas->Therapist left out)
    assert (v.items, v.gold_pairs.k, v.gold_pairs.n, v.excluded_targets, v.no_speaker_view) == (3, 2, 3, 1, 1)
    judged = [c for c in client.calls if c.schema is not None and c.schema.__name__ == "VpJudgement"]
    assert len(judged) == 2 and all(c.model == "fake/judge" for c in judged)
    assert "Rosa -> Tomas: he abandons her when it matters" in judged[0].prompt.context
    # judge (2, 3), (1, 2) and the row without a speaker view as (0, 0)
    assert (v.judged, v.judge_failed) == (3, 0)
    assert v.source_target == pytest.approx(1.0)
    assert v.viewpoint == pytest.approx(5 / 3)
    assert v.vp_score == pytest.approx((4.5 + 3.0 + 1.0) / 3)


def test_risk_against_marked_gold(samples):
    r = run_tracker(samples, fixture_client(), judge_model=None).tracker.risk
    assert r.gold_marked and (r.checkpoints, r.flagged_checkpoints, r.flags) == (3, 2, 2)
    assert (r.tp, r.fp, r.fn, r.tn, r.scored_pairs) == (1, 1, 0, 4, 6)


def test_jitter_against_lexicon_gold(samples):
    # the importer's lexicon, by hand: base 5/5 plus each matched stem's (warmth, tension)
    assert warmth_tension("resentful and blaming") == (2.5, 9.0)
    assert warmth_tension("hostile and blaming") == (1.5, 9.5)
    assert warmth_tension("curious and hopeful") == (7.5, 4.0)
    assert warmth_tension("hopeful") == (6.5, 4.5)
    assert warmth_tension("defensive and distant") == (2.5, 6.5)
    assert warmth_tension("wary") == (4.0, 6.0)
    assert warmth_tension("hopeful and open") == (7.5, 4.0)
    assert warmth_tension("hopeless") == (3.0, 5.5)
    j = run_tracker(samples, fixture_client(), judge_model=None).tracker.jitter
    # tracker Rosa->Tomas w 3,5,5 / t 8,5,3 at rows 3,8,11; Tomas->Rosa w 4,6 / t 6,4 at rows 3,8
    assert (j.tracker_warmth.pairs, j.tracker_warmth.steps, j.tracker_warmth.turns) == (2, 3, 13)
    assert j.tracker_warmth.per_turn == pytest.approx(4 / 13)
    assert j.tracker_tension.per_turn == pytest.approx(7 / 13)
    assert j.tracker_tension.per_step == pytest.approx(7 / 3)
    # gold Rosa->Tomas rows 1,3,7,10: w 2.5,1.5,7.5,6.5; Tomas->Rosa rows 2,5,8,11: w 2.5,4,7.5,3
    assert (j.gold_warmth.pairs, j.gold_warmth.steps, j.gold_warmth.turns) == (2, 6, 18)
    assert j.gold_warmth.per_turn == pytest.approx((8 + 9.5) / 18)
    assert j.gold_tension.per_turn == pytest.approx((6.5 + 4.0) / 18)
    assert j.ratio("warmth") == pytest.approx((4 / 13) / (17.5 / 18))


def test_series_jitter_pools_pairs():
    s = series_jitter([[(1, 5.0), (3, 1.0), (4, 2.0)], [(2, 7.0)], [(1, 0.0), (11, 10.0)]])
    assert (s.pairs, s.steps, s.turns, s.total_change) == (2, 3, 13, 15.0)
    assert s.per_turn == pytest.approx(15 / 13) and s.per_step == pytest.approx(5.0)
    assert series_jitter([]).per_turn is None


def test_failed_tracker_call_is_counted_and_excluded(samples):
    replies = [TRACKER_REPLIES[0], RuntimeError("model down"), TRACKER_REPLIES[2]]  # the fake fails a call at once
    card = run_tracker(samples, fixture_client(tracker=replies), judge_model=None)
    t = card.tracker
    assert (t.checkpoints, t.failed) == (3, 1) and "model down" in t.failures[0]
    assert [c.row for c in t.items if c.failure] == [8]
    assert (t.pattern.n, t.pattern.correct) == (2, 2)
    assert (t.emotions.n, t.risk.checkpoints, t.risk.fp) == (2, 2, 0)


# ---- judges ------------------------------------------------------------------------------------------------------


def test_judge_strategy_and_target(samples):
    cards = asyncio.run(
        validate(
            samples, fixture_client(), source="f", instruments=["judge"], judge_model="fake/j", judge_mode="verdict"
        )
    )
    (card,) = cards
    s, g = card.judge.strategy, card.judge.target
    assert (s.items, s.scored, s.failed, s.accuracy) == (4, 4, 0, 0.75)
    assert s.confusion["evoke"] == {"reframe": 1}
    assert s.macro_f1 == pytest.approx(3 / 5)  # track, enact, safeguard 1; evoke, reframe 0 (labels seen)
    assert (g.items, g.scored, g.correct, g.accuracy) == (4, 4, 3, 0.75)
    assert {k: (v.support, v.predicted, v.recall) for k, v in g.by_kind.items() if v.support or v.predicted} == {
        "individual": (3, 3, pytest.approx(2 / 3)),
        "whole_group": (1, 1, 1.0),
    }
    assert g.confusion == {"whole_group": {"whole_group": 1}, "individual": {"individual": 3}}
    assert card.model == "fake/j" and card.calls == 8


def test_target_judge_sees_only_earlier_rows(samples):
    client = fixture_client()
    asyncio.run(validate(samples, client, source="f", instruments=["judge"], judge_mode="verdict"))
    calls = [c for c in client.calls if c.schema.__name__ == "PreferredTarget"]
    six = next(c for c in calls if _row_of(c) == 6)
    assert "[5] Tomas" in six.prompt.context and "freeze?" not in six.prompt.context
    assert set(six.schema.model_json_schema()["properties"]["target"]["enum"]) == {"Rosa", "Tomas", "Couple"}


def checklist_yes(call):
    """Chosen P(yes): the strategy of STRATEGY_BY_ROW and the target of TARGET_BY_ROW answer yes most strongly."""
    text = call.prompt.instructions
    turn = int(re.search(r"turn \[(\d+)\]", text).group(1))
    if "Is this turn mainly" in text:
        return 0.8 if f"'{STRATEGY_BY_ROW[turn]}'" in text else 0.3
    if "need the counsellor's attention" in text:
        wanted = {"Couple": "the couple as a whole"}.get(TARGET_BY_ROW[turn], TARGET_BY_ROW[turn])
        return 0.7 if f"did {wanted} need" in text else 0.4
    raise AssertionError(text)


def test_checklist_judge_strategy_and_target_as_judge_reads_them(samples):
    client = FakeModelClient(yes=checklist_yes)
    (card,) = asyncio.run(validate(samples, client, source="f", instruments=["judge"], judge_model="fake/j"))
    s, g = card.judge.strategy, card.judge.target
    # the yes-most strategy is the label: 3 of 4 as gold (row 6 reads reframe, gold evoke), as the verdict test
    assert (s.items, s.scored, s.failed, s.accuracy) == (4, 4, 0, 0.75)
    assert s.confusion["evoke"] == {"reframe": 1}
    assert [r.reasoning for r in s.results][0] == "checklist: most probable strategy track (0.80)"
    # the candidate whose addressee item says yes most: Couple, Rosa, Rosa, Tomas against gold Couple, Tomas, Rosa, Tomas
    assert (g.items, g.scored, g.correct) == (4, 4, 3)
    assert [r.predicted for r in g.results] == ["Couple", "Rosa", "Rosa", "Tomas"]
    assert card.judge_mode == "checklist" and card.calls == 40 + 12
    assert card.digest == judge_digest("checklist") != judge_digest("verdict")
    # strategy items see the turn itself; target items only the rows before it (the turn names its addressee)
    strategy_calls = [c for c in client.calls if "Is this turn mainly" in c.prompt.instructions]
    target_calls = [c for c in client.calls if "attention" in c.prompt.instructions]
    assert all(c.prompt.context == strategy_calls[0].prompt.context for c in strategy_calls[:10])
    six = next(c for c in target_calls if "turn [6]" in c.prompt.instructions)
    assert "[5] Tomas" in six.prompt.context and "freeze?" not in six.prompt.context


def test_checklist_validation_uses_the_judges_items_and_scoring(samples):
    """A strategy item answered yes below 0.5 everywhere still names the most probable strategy (the judge's rule);
    a failed question fails its item (excluded and counted), never filled in."""

    def yes(call):
        text = call.prompt.instructions
        if "turn [9]" in text and "Is this turn mainly" in text:
            return RuntimeError("provider down")
        return checklist_yes(call) - 0.25

    (card,) = asyncio.run(validate(samples, FakeModelClient(yes=yes), source="f", instruments=["judge"]))
    s = card.judge.strategy
    assert (s.scored, s.failed) == (3, 1) and "provider down" in s.results[2].failure
    assert [r.predicted for r in s.results if r.predicted] == ["track", "reframe", "safeguard"]


def test_a_verdict_card_never_answers_for_a_checklist_judgment(samples):
    (card,) = asyncio.run(
        validate(samples, fixture_client(), source="f", instruments=["judge"], judge_model="j", judge_mode="verdict")
    )
    write_card(card)
    assert card.judge_mode == "verdict"
    assert dimension_validity("strategy", "j", judge_digest("verdict")).validated
    assert not dimension_validity("strategy", "j", judge_digest("checklist")).validated


# ---- cards and where they are shown ------------------------------------------------------------------------------


def test_card_round_trip_and_lookup(samples, tmp_path):
    (card,) = asyncio.run(
        validate(samples, fixture_client(), source="f", instruments=["tracker"], judge_model="fake/j")
    )
    path = write_card(card)
    assert path.parent == validity_dir() and path.parent == tmp_path / "home" / "validity"
    assert read_card(path) == card
    note = validity_for("tracker", "fake/model", card.digest, measure="pattern")
    assert note.validated and note.text == "pattern = gold 2/3, macro-F1 0.33" and note.card == str(path)
    assert not validity_for("tracker", "fake/model", "0000", measure="pattern").validated
    assert validity_for("tracker", "other/model", card.digest).text.startswith("not validated (no card")
    assert validity_for("tracker", None, None).text == "not validated (no prompt digest recorded)"
    assert not validity_for("tracker", "fake/model", card.digest, measure="strategy").validated
    jitter = dimension_validity("delta_tension_observer", "fake/model", card.digest)
    assert jitter.validated and jitter.text.startswith("warmth change/turn 0.31 vs gold 0.97")
    assert dimension_validity("timing", "fake/j", "x").text == "not validated (no RESCUE gold measures timing)"


def test_given_cards_win_over_the_store(samples):
    (card,) = asyncio.run(validate(samples, fixture_client(), source="f", instruments=["tracker"], judge_model=None))
    assert validity_for("tracker", card.model, card.digest, measure="risk", cards=[card]).card == "given card"
    assert validity_for("tracker", card.model, card.digest, measure="risk", cards=[card]).text == (
        "risk flags: 1 hits, 1 false alarms, 0 missed (6 member checks)"
    )


# ---- CLI -----------------------------------------------------------------------------------------------------------


def _cli(monkeypatch, client):
    from simulator.cli import app as app_module

    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: client)
    app_module._register()
    return app_module.app


def test_cli_gold_sessions_writes_cards(monkeypatch, tmp_path):
    app = _cli(monkeypatch, fixture_client())
    out = tmp_path / "cards.json"
    res = CliRunner().invoke(
        app,
        [
            "gold",
            "sessions",
            "--data",
            str(FIXTURE),
            "--card",
            str(out),
            "--judge-model",
            "fake/judge",
            "--judge-mode",
            "verdict",
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    assert "pattern = gold (RPP top-1)" in res.output and "2/3" in res.output
    assert "preferred target = gold (next turn)" in res.output
    cards = [ValidityCard.model_validate(c) for c in json.loads(out.read_text())]
    assert [c.instrument for c in cards] == ["tracker", "judge"]
    stored = sorted(p.name for p in validity_dir().glob("*.json"))
    assert len(stored) == 2 and stored[0].startswith("judge-fake_judge-")
    assert stored[1] == f"tracker-fake_model-{tracker_digest()}.json"


def test_cli_ship_writes_numbers_only_cards(monkeypatch, tmp_path):
    app = _cli(monkeypatch, FakeModelClient(yes=checklist_yes))
    ship = tmp_path / "shipped"
    res = CliRunner().invoke(
        app, ["gold", "sessions", "--data", str(FIXTURE), "--only", "judge", "--no-store", "--ship", str(ship)]
    )
    assert res.exit_code == 0, res.output
    (path,) = ship.glob("*.json")
    card = read_card(path)
    assert card.judge_mode == "checklist" and card.digest == judge_digest("checklist")
    assert card.data.samples == [] and card.judge.strategy.results == [] and card.judge.strategy.scored == 4
    assert not list(validity_dir().glob("*.json"))  # --no-store: nothing in the user's folder
    (tmp_path / "file").write_text("")
    res = CliRunner().invoke(app, ["gold", "sessions", "--data", str(FIXTURE), "--ship", str(tmp_path / "file")])
    assert res.exit_code == 2 and "--ship" in res.output and "is a file" in res.output


def test_cli_dry_run_counts_calls(monkeypatch):
    app = _cli(monkeypatch, FakeModelClient())
    res = CliRunner().invoke(
        app, ["gold", "sessions", "--data", str(FIXTURE), "--dry-run", "--json", "--judge-mode", "verdict"]
    )
    assert res.exit_code == 0
    assert json.loads(res.output) == {"tracker": 3, "vp_judge": 3, "strategy": 4, "target": 4, "total": 14}
    # checklist (the default): one question per couple strategy (10) per turn, one per candidate target (3) per turn
    res = CliRunner().invoke(app, ["gold", "sessions", "--data", str(FIXTURE), "--dry-run", "--json"])
    assert json.loads(res.output) == {"tracker": 3, "vp_judge": 3, "strategy": 40, "target": 12, "total": 58}


def test_cli_bad_input_is_one_line(monkeypatch, tmp_path):
    app = _cli(monkeypatch, FakeModelClient())
    res = CliRunner().invoke(app, ["gold", "sessions", "--data", str(FIXTURE), "--only", "both"])
    assert res.exit_code == 2 and "--only: 'both' is not one of tracker, judge" in res.output
    res = CliRunner().invoke(app, ["gold", "sessions", "--data", str(tmp_path / "missing.jsonl")])
    assert res.exit_code == 2 and "no such file or folder" in res.output


def test_cli_exit_1_when_every_tracker_call_fails(monkeypatch):
    client = FakeModelClient(by_role={"tracker": [RuntimeError("down")] * 3})
    app = _cli(monkeypatch, client)
    res = CliRunner().invoke(app, ["gold", "sessions", "--data", str(FIXTURE), "--only", "tracker", "--no-vp-judge"])
    assert res.exit_code == 1
    assert "calls 3, failed 3 (excluded)" in res.output


# ---- the RESCUE samples (skipped without ../shared/rescue) ------------------------------------------------------


def _constant_tracker(call):
    """Couples: pursue_withdraw; family: cooperative_family_alliance; every member at 6; no views, no risk."""
    item = call.schema.model_fields["emotions"].annotation.__args__[0]
    names = item.model_fields["person"].annotation.__args__
    family = "cooperative_family_alliance" in call.schema.model_fields["pattern"].annotation.__args__
    return {
        "pattern": "cooperative_family_alliance" if family else "pursue_withdraw",
        "emotions": [{"person": n, "emotion": "tense", "intensity": 6} for n in names],
        "viewpoints": [],
        "at_risk": [],
    }


@pytest.mark.rescue
def test_rescue_samples_with_a_constant_tracker(rescue_dir):
    raw = [json.loads(line) for line in (rescue_dir / "samples.jsonl").read_text().splitlines() if line.strip()]
    samples = load_rescue(rescue_dir / "samples.jsonl")
    client = FakeModelClient(by_role={"tracker": []}, default=_constant_tracker)
    card = asyncio.run(validate_tracker(samples, client, source="samples", judge_model=None))
    t = card.tracker
    # checkpoints from the raw rows: every 3rd non-therapist row of a sample, and its last one
    expected_rows = []
    for s in raw:
        member_rows = [i for i, r in enumerate(s["rows"], 1) if r["primary_speaker"] != "Therapist"]
        expected_rows += [
            (s["sample_id"], p) for k, p in enumerate(member_rows, 1) if k % 3 == 0 or k == len(member_rows)
        ]
    assert [(c.sample_id, c.row) for c in t.items] == expected_rows and t.checkpoints == 44 and t.failed == 0
    # by hand from the rows: 13 checkpoints with a label (002 row 3 and 007 row 10 are "" = no dominant pattern);
    # right: pursue_withdraw at 002/8, 003/7, 003/22, 006/9 and cooperative_family_alliance at 013/25
    p = t.pattern
    assert (p.n, p.correct, p.no_dominant, p.no_gold) == (13, 5, 2, 29)
    assert p.by_group["couple"].model_dump() == {"k": 4, "n": 11}
    assert p.by_group["family"].model_dump() == {"k": 1, "n": 2}
    # intensity: every annotated member's gold intensity at a checkpoint row against a constant 6
    gold = [
        e["intensity"]
        for s in raw
        for sid, row in expected_rows
        if sid == s["sample_id"]
        for e in s["rows"][row - 1]["internal_emotion"]
        if e["person"] in s["participants"]
    ]
    assert t.emotions.n == len(gold) and t.emotions.not_reported == 0
    assert t.emotions.mae == pytest.approx(sum(abs(6 - g) for g in gold) / len(gold))
    assert t.emotions.spearman is None  # a constant tracker has no ranks
    assert t.viewpoints.no_speaker_view == t.viewpoints.items and t.viewpoints.gold_pairs.k == 0
    assert not t.risk.gold_marked and t.risk.flagged_checkpoints == 0
    assert t.jitter.tracker_warmth.steps == 0 and t.jitter.gold_warmth.steps > 0


def test_cli_cadence_options_reach_the_replay(monkeypatch, tmp_path):
    replies = [TRACKER_REPLIES[0], TRACKER_REPLIES[0], TRACKER_REPLIES[1], TRACKER_REPLIES[2]]
    client = fixture_client(tracker=replies)
    app = _cli(monkeypatch, client)
    out = tmp_path / "c.json"
    args = ["gold", "sessions", "--data", str(FIXTURE), "--only", "tracker", "--tracker-every", "2", "--window", "4"]
    res = CliRunner().invoke(app, [*args, "--no-vp-judge", "--card", str(out), "--no-store"])
    assert res.exit_code == 0, res.output
    (card,) = [ValidityCard.model_validate(c) for c in json.loads(out.read_text())]
    assert card.tracker.settings.model_dump() == {"tracker_every": 2, "window": 4, "seed": 0}
    assert [c.row for c in card.tracker.items] == [2, 5, 8, 11]
    # window 4 slides in steps of 2: after 11 turns it shows turns 9-11
    assert "[8 earlier turns not shown]" in [c for c in client.calls if c.role == "tracker"][-1].prompt.context
    assert not validity_dir().exists()  # --no-store
