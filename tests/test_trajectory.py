"""Trajectory metrics against values computed by hand on the session in `_session_fixtures` (see its docstring)."""

from __future__ import annotations

import pytest

from judges import (
    attention_shares,
    distress,
    felt_heard,
    group_objective,
    insider_outsider_gap,
    pattern_shares,
    per_turn,
    relation_change,
    trajectory_metrics,
)
from simulator.records import SupporterDecision
from tests._session_fixtures import couple_session, family_case, snap

AB, BA = ("Ana", "Ben"), ("Ben", "Ana")


def test_per_turn_keeps_the_last_snapshot_of_each_turn() -> None:
    a = snap(1, "observer", "attack_attack", {"Ana": 1}, {})
    b = snap(1, "observer", "repair_softening", {"Ana": 2}, {})
    c = snap(0, "initial", "pursue_withdraw", {"Ana": 0}, {})
    assert [s.pattern for s in per_turn([a, c, b])] == ["pursue_withdraw", "repair_softening"]


def test_relation_change_self_report_and_observer() -> None:
    rec = couple_session()
    sr = relation_change(rec.self_report)
    assert sr.view == "self_report"
    pairs = {(p.source, p.target): p for p in sr.pairs}
    # Ana->Ben: warmth 4 -> 5, tension 6 -> 4; Ben->Ana: warmth 5 -> 4, tension 5 -> 6
    assert (pairs[AB].delta_warmth, pairs[AB].delta_tension) == (1, -2)
    assert (pairs[BA].delta_warmth, pairs[BA].delta_tension) == (-1, 1)
    assert pairs[AB].initial_tension == 6 and pairs[AB].final_tension == 4
    assert sr.delta_tension == pytest.approx(-0.5) and sr.delta_warmth == pytest.approx(0.0)
    ob = relation_change(rec.observer)
    # Ana->Ben: w 4 -> 5, t 6 -> 3; Ben->Ana unchanged
    assert ob.view == "observer" and ob.delta_tension == pytest.approx(-1.5) and ob.delta_warmth == pytest.approx(0.5)
    assert relation_change([]).pairs == [] and relation_change([]).delta_tension is None


def test_distress_peak_and_final() -> None:
    rec = couple_session()
    sr = {d.member: d for d in distress(rec.self_report)}
    assert (sr["Ana"].initial, sr["Ana"].peak, sr["Ana"].peak_turn, sr["Ana"].final) == (6, 7, 1, 6)
    assert (sr["Ben"].initial, sr["Ben"].peak, sr["Ben"].peak_turn, sr["Ben"].final) == (5, 6, 2, 6)
    ob = {d.member: d for d in distress(rec.observer)}
    assert (ob["Ana"].peak, ob["Ana"].peak_turn, ob["Ana"].final) == (8, 2, 6)
    assert (ob["Ben"].peak, ob["Ben"].peak_turn, ob["Ben"].final) == (5, 0, 4)


def test_pattern_shares_observer() -> None:
    shares = pattern_shares(couple_session().observer)
    # turns 1..6: pursue_withdraw, attack_attack x4, repair_softening (the initial state is not counted)
    assert shares.turns == 6
    assert shares.negative == pytest.approx(5 / 6) and shares.repair == pytest.approx(1 / 6) and shares.other == 0
    assert shares.counts == {"pursue_withdraw": 1, "attack_attack": 4, "repair_softening": 1}
    mixed = [snap(1, "observer", "mixed_transition", {}, {}), snap(2, "observer", "", {}, {})]
    assert pattern_shares(mixed).other == 1.0
    assert pattern_shares([]).negative is None


def test_group_objective_by_hand() -> None:
    rec = couple_session()
    member_turns = [1, 2, 4, 6]
    g = group_objective(rec.self_report, member_turns, gamma=0.95, lam=0.5)
    # k=1 (turn 1): edges (3,7),(5,5): (4-6)/10 = -0.2; max intensity 7 -> -0.35; r = -0.55
    # k=2 (turn 2): (3,7),(4,6): (3.5-6.5)/10 = -0.3; max 7 -> r = -0.65
    # k=3 (turn 4): (5,5),(4,6): (4.5-5.5)/10 = -0.1; max 6 -> r = -0.40
    # k=4 (turn 6): (5,4),(4,6): (4.5-5)/10 = -0.05; max 6 -> r = -0.35
    expected = 0.95 * -0.55 + 0.95**2 * -0.65 + 0.95**3 * -0.40 + 0.95**4 * -0.35
    assert g.value == pytest.approx(expected) and g.value == pytest.approx(-1.7371521875)
    assert (g.gamma, g.lam, g.turns, g.view) == (0.95, 0.5, 4, "self_report")
    # without the turn filter every turn 1..6 is scored (supporter turns 3 and 5 carry the state)
    assert group_objective(rec.self_report).turns == 6
    flat = group_objective(rec.self_report, member_turns, gamma=1.0, lam=0.0)
    assert flat.value == pytest.approx(-0.2 - 0.3 - 0.1 - 0.05)
    assert group_objective([], gamma=0.9).value is None


def test_attention_shares_and_gini() -> None:
    rec = couple_session()
    att = attention_shares(rec.decisions, rec.case.member_names, "Couple")
    # reframe to Couple: Ana +1, Ben +1; evoke to Ana: Ana +1 -> weights 2, 1; passes address nobody
    w = {m.member: (m.weight, m.share) for m in att.members}
    assert att.interventions == 2 and w == {"Ana": (2.0, pytest.approx(2 / 3)), "Ben": (1.0, pytest.approx(1 / 3))}
    assert att.gini == pytest.approx(1 / 6)


def test_attention_subgroups_split_and_whole_group_counts_for_everyone() -> None:
    case = family_case()
    names = case.member_names  # Mona, Sam, Lia
    decisions = [
        SupporterDecision(after_turn=1, speak=True, targets=["Mona", "Sam"], text="x"),  # subgroup: 1/2 each
        SupporterDecision(after_turn=2, speak=True, targets=["Family"], text="x"),  # everyone +1
        SupporterDecision(after_turn=3, speak=True, targets=["Lia"], text="x"),
        SupporterDecision(after_turn=4, speak=True, targets=["Mona", "Sam", "Lia"], text="x"),  # all = whole group
        SupporterDecision(after_turn=5, speak=True, targets=["Grandma"], text="x"),  # nobody in the room
        SupporterDecision(after_turn=6, speak=False),
    ]
    att = attention_shares(decisions, names, "Family")
    w = {m.member: m.weight for m in att.members}
    assert w == {"Mona": 2.5, "Sam": 2.5, "Lia": 3.0}
    assert att.interventions == 5 and att.untargeted == 1
    assert {m.member: m.share for m in att.members}["Lia"] == pytest.approx(3 / 8)
    # gini of (2.5, 2.5, 3): sum |xi - xj| = 4 * 0.5 = 2; 2 n^2 mean = 2 * 9 * 8/3 = 48
    assert att.gini == pytest.approx(2 / 48)
    empty = attention_shares([], names, "Family")
    assert empty.gini is None and all(m.share is None for m in empty.members)


def test_felt_heard_mean_and_last() -> None:
    rec = couple_session()
    fh = {f.member: f for f in felt_heard(rec.turns, rec.case.member_names)}
    assert (fh["Ana"].n, fh["Ana"].mean, fh["Ana"].last) == (3, pytest.approx(16 / 3), 7)
    assert (fh["Ben"].n, fh["Ben"].mean, fh["Ben"].last) == (1, 4, 4)
    assert felt_heard([], ["Zed"])[0].mean is None


def test_insider_outsider_gap() -> None:
    rec = couple_session()
    gap = insider_outsider_gap(rec.turns, rec.case.member_names)
    # tracker at 2: Ana self 7 vs 8, Ben self 6 vs 5; Ana->Ben 7 vs 8, Ben->Ana 6 vs 5
    # tracker at 6: Ana 6 vs 6, Ben 6 vs 4; Ana->Ben 4 vs 3
    members = {m.member: (m.n, m.mean_abs_gap) for m in gap.members}
    assert members == {"Ana": (2, 0.5), "Ben": (2, 1.5)}
    pairs = {(p.source, p.target): (p.n, p.mean_abs_gap) for p in gap.pairs}
    assert pairs == {AB: (2, 1.0), BA: (1, 1.0)}
    assert gap.mean_intensity_gap == 1.0 and gap.mean_tension_gap == 1.0


def test_gap_needs_a_self_report_first() -> None:
    rec = couple_session()
    # Ben has not spoken before turn 2's tracker in a session cut to turns 1 and 2 with Ben's turn dropped
    turns = [rec.turns[0], rec.turns[1].model_copy(update={"inner": None})]
    gap = insider_outsider_gap(turns, rec.case.member_names)
    assert {m.member: m.n for m in gap.members} == {"Ana": 1, "Ben": 0}
    assert {(p.source, p.target) for p in gap.pairs} == {AB}


def test_trajectory_metrics_bundle() -> None:
    rec = couple_session()
    t = trajectory_metrics(rec, gamma=0.9, lam=0.25)
    assert t.gamma == 0.9 and t.lam == 0.25 and t.objective_self_report.gamma == 0.9
    assert t.objective_self_report.turns == 4 and t.objective_observer.view == "observer"
    assert t.self_report.delta_tension == pytest.approx(-0.5) and t.observer.delta_tension == pytest.approx(-1.5)
    assert t.patterns.negative == pytest.approx(5 / 6) and t.attention.gini == pytest.approx(1 / 6)
    assert t.gap.mean_intensity_gap == 1.0
    assert "gamma^k" in t.objective_self_report.formula
    assert type(t).model_validate_json(t.model_dump_json()) == t
