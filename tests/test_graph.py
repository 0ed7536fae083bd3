"""RelationGraph: building from cases, partial updates, queries, JSON round trip, drawing."""

from __future__ import annotations

import pytest

from personas.case import Case, parse_case
from personas.graph import (
    Coalition,
    EdgeState,
    EdgeUpdate,
    MemberState,
    RelationGraph,
    RelationSnapshot,
    RelationUpdate,
)
from personas.library import resolve_case

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_case(
    members: list[tuple[str, int, int]],
    edges: dict[tuple[str, str], tuple[float, float]],
    *,
    group: str = "family",
    pattern: str = "escalation_conflict",
) -> Case:
    """A small hand-made case: members as (name, intensity, generation), edges as (source, target) -> (warmth, tension).

    Marked as RESCUE-derived so that cards may leave pairs out and skip persona traits.
    """
    data = {
        "title": "test case",
        "group": group,
        "setting": "test",
        "presenting_problem": "test",
        "history": "test",
        "members": [
            {
                "name": n,
                "role": "participant",
                "generation": g,
                "baseline_emotion": f"{n} feels",
                "baseline_intensity": i,
            }
            for n, i, g in members
        ],
        "viewpoints": [
            {"source": a, "target": b, "viewpoint": f"{a} on {b}", "attitude": "neutral", "warmth": w, "tension": t}
            for (a, b), (w, t) in edges.items()
        ],
        "relation_pattern": pattern,
        "provenance": {"source": "rescue", "sample_id": "test"},
    }
    return parse_case(data, case_id="test-case")


@pytest.fixture
def couple() -> RelationGraph:
    case = make_case(
        [("Ana", 7, 0), ("Ben", 5, 0)],
        {("Ana", "Ben"): (4, 8), ("Ben", "Ana"): (5, 6)},
        group="couple",
        pattern="pursue_withdraw",
    )
    return RelationGraph.from_case(case)


# ---- building -------------------------------------------------------------------------------------------------


def test_from_case_builds_nodes_edges_and_initial_snapshot() -> None:
    case = resolve_case("dana-and-theo")
    g = RelationGraph.from_case(case)

    assert g.members == ["Dana", "Theo"]
    assert g.group == "couple" and g.pattern == "pursue_withdraw" and g.case_id == "dana-and-theo"
    dana = g.graph.nodes["Dana"]
    assert (dana["emotion"], dana["intensity"], dana["role"], dana["generation"]) == (
        "lonely and angry",
        7,
        "partner",
        0,
    )
    edge = g.graph.edges["Dana", "Theo"]
    assert edge == {
        "viewpoint": "he has chosen work over her and will not admit it",
        "attitude": "hurt and accusing",
        "warmth": 4.0,
        "tension": 8.0,
    }
    assert len(g.snapshots) == 1
    first = g.snapshots[0]
    assert (first.turn, first.view, first.pattern) == (0, "initial", "pursue_withdraw")
    assert [m.name for m in first.members] == ["Dana", "Theo"]
    assert {(e.source, e.target) for e in first.edges} == {("Dana", "Theo"), ("Theo", "Dana")}


def test_from_snapshot_rebuilds_state_with_roles_and_generations() -> None:
    snap = RelationSnapshot(
        turn=4,
        view="observer",
        pattern="cross_generational_coalition",
        members=[
            MemberState(name="Mum", emotion="tired", intensity=6),
            MemberState(name="Kid", emotion="sulky", intensity=4),
        ],
        edges=[EdgeState(source="Mum", target="Kid", viewpoint="v", attitude="a", warmth=3, tension=7)],
    )
    g = RelationGraph.from_snapshot(snap, group="family", roles={"Mum": "mother"}, generations={"Kid": 1})
    assert g.graph.nodes["Mum"]["role"] == "mother" and g.graph.nodes["Kid"]["role"] == "participant"
    assert g.graph.nodes["Kid"]["generation"] == 1
    assert g.snapshot() == snap
    assert g.snapshots == [snap]
    with pytest.raises(ValueError, match="unknown member 'Dad'"):
        RelationGraph.from_snapshot(snap, group="family", roles={"Dad": "father"})
    with pytest.raises(ValueError, match="not a couple pattern"):
        RelationGraph.from_snapshot(snap, group="couple")


# ---- updates --------------------------------------------------------------------------------------------------


def test_apply_changes_only_given_values_and_records_snapshot(couple: RelationGraph) -> None:
    snap = couple.apply(
        RelationUpdate(
            turn=1,
            view="self_report",
            emotions=[MemberState(name="Ben", emotion="cornered", intensity=7)],
            edges=[EdgeUpdate(source="Ana", target="Ben", tension=6.5)],
        )
    )
    assert couple.graph.nodes["Ben"]["emotion"] == "cornered" and couple.graph.nodes["Ben"]["intensity"] == 7
    assert couple.graph.nodes["Ana"]["intensity"] == 7  # untouched
    edge = couple.graph.edges["Ana", "Ben"]
    assert edge["tension"] == 6.5 and edge["warmth"] == 4  # warmth unchanged
    assert edge["viewpoint"] == "Ana on Ben"  # text unchanged
    assert couple.graph.edges["Ben", "Ana"]["tension"] == 6  # other direction untouched
    assert couple.pattern == "pursue_withdraw"  # pattern None keeps the current one
    assert (snap.turn, snap.view) == (1, "self_report")
    assert couple.snapshots[-1] == snap and len(couple.snapshots) == 2

    couple.apply(
        RelationUpdate(
            turn=2,
            view="observer",
            pattern="repair_softening",
            edges=[EdgeUpdate(source="Ben", target="Ana", attitude="softer")],
        )
    )
    assert couple.pattern == "repair_softening"
    assert couple.graph.edges["Ben", "Ana"]["attitude"] == "softer"
    assert [s.turn for s in couple.snapshots] == [0, 1, 2]
    assert couple.snapshots[1].pattern == "pursue_withdraw"  # history is not rewritten


def test_apply_clamps_values_to_scale(couple: RelationGraph) -> None:
    couple.apply(
        RelationUpdate(
            turn=1,
            view="self_report",
            emotions=[MemberState(name="Ana", emotion="flooded", intensity=14)],
            edges=[EdgeUpdate(source="Ana", target="Ben", warmth=-3, tension=12.5)],
        )
    )
    assert couple.graph.nodes["Ana"]["intensity"] == 10
    assert couple.graph.edges["Ana", "Ben"]["warmth"] == 0
    assert couple.graph.edges["Ana", "Ben"]["tension"] == 10


def test_apply_unknown_member_raises_and_changes_nothing(couple: RelationGraph) -> None:
    before = couple.to_json()
    with pytest.raises(ValueError, match="unknown member 'Zoe'"):
        couple.apply(
            RelationUpdate(
                turn=1,
                view="observer",
                emotions=[MemberState(name="Ana", emotion="x", intensity=1)],
                edges=[EdgeUpdate(source="Ana", target="Zoe", tension=9)],
            )
        )
    with pytest.raises(ValueError, match="unknown member 'Zoe'"):
        couple.apply(
            RelationUpdate(turn=1, view="observer", emotions=[MemberState(name="Zoe", emotion="x", intensity=1)])
        )
    with pytest.raises(ValueError, match="not a couple pattern"):
        couple.apply(RelationUpdate(turn=1, view="observer", pattern="escalation_conflict"))
    assert couple.to_json() == before  # checked before anything changed


def test_apply_creates_missing_edge_from_neutral() -> None:
    g = RelationGraph.from_case(make_case([("A", 5, 0), ("B", 5, 0), ("C", 5, 1)], {("A", "B"): (6, 2)}))
    g.apply(RelationUpdate(turn=1, view="observer", edges=[EdgeUpdate(source="C", target="A", tension=8)]))
    assert g.graph.edges["C", "A"] == {"viewpoint": "", "attitude": "", "warmth": 5.0, "tension": 8.0}


def test_empty_pattern_means_no_dominant_pattern(couple: RelationGraph) -> None:
    couple.apply(RelationUpdate(turn=1, view="observer", pattern=""))
    assert couple.pattern == "" and couple.snapshots[-1].pattern == ""


# ---- queries --------------------------------------------------------------------------------------------------


def test_most_distressed_highest_intensity() -> None:
    g = RelationGraph.from_case(make_case([("A", 4, 0), ("B", 9, 0), ("C", 6, 1)], {}))
    assert g.most_distressed() == "B"


def test_most_distressed_ties_by_incoming_tension_then_name() -> None:
    edges = {("A", "C"): (5, 9), ("B", "A"): (5, 2)}
    g = RelationGraph.from_case(make_case([("A", 7, 0), ("B", 3, 0), ("C", 7, 1)], edges))
    assert g.most_distressed() == "C"  # A and C tie on intensity; C draws tension 9, A only 2

    g = RelationGraph.from_case(make_case([("Zed", 7, 0), ("Amy", 7, 0), ("Bo", 2, 1)], {}))
    assert g.most_distressed() == "Amy"  # full tie: alphabetical


def test_conflict_pairs_two_way_and_one_way() -> None:
    edges = {
        ("A", "B"): (3, 7),
        ("B", "A"): (3, 6),  # both ways >= 6: conflict (13)
        ("A", "C"): (3, 9),
        ("C", "A"): (6, 1),  # one way >= 8: conflict (10)
        ("B", "C"): (3, 7.5),
        ("C", "B"): (3, 5),  # one way 7.5 < 8 and other 5 < 6: no conflict
    }
    g = RelationGraph.from_case(make_case([("A", 5, 0), ("B", 5, 0), ("C", 5, 1)], edges))
    assert g.conflict_pairs() == [("A", "B"), ("A", "C")]
    assert g.conflict_pairs(threshold=5.0) == [("A", "B"), ("B", "C"), ("A", "C")]  # 13, 12.5, 10
    assert g.conflict_pairs(threshold=9.5) == []


def test_conflict_pairs_missing_edge_counts_as_zero() -> None:
    g = RelationGraph.from_case(
        make_case([("A", 5, 0), ("B", 5, 0)], {("A", "B"): (2, 8)}, group="couple", pattern="attack_attack")
    )
    assert g.conflict_pairs() == [("A", "B")]  # 8 one way = threshold + 2
    assert g.conflict_pairs(threshold=6.5) == []


def _triangle(gen_son: int) -> RelationGraph:
    edges = {
        ("Mum", "Son"): (8, 2),
        ("Son", "Mum"): (7, 3),  # warm both ways
        ("Mum", "Dad"): (2, 7),
        ("Son", "Dad"): (3, 8),  # both tense toward Dad
        ("Dad", "Mum"): (4, 5),
        ("Dad", "Son"): (4, 5),
    }
    return RelationGraph.from_case(make_case([("Mum", 6, 0), ("Dad", 5, 0), ("Son", 6, gen_son)], edges))


def test_coalition_cross_generational() -> None:
    g = _triangle(gen_son=1)
    assert g.coalitions() == [Coalition(members=("Mum", "Son"), against="Dad", cross_generational=True)]
    assert g.cross_generational_coalitions() == g.coalitions()


def test_coalition_same_generation_is_not_cross_generational() -> None:
    g = _triangle(gen_son=0)
    assert g.coalitions() == [Coalition(members=("Mum", "Son"), against="Dad", cross_generational=False)]
    assert g.cross_generational_coalitions() == []


def test_coalition_needs_warmth_both_ways_and_tension_from_both() -> None:
    g = _triangle(gen_son=1)
    g.apply(RelationUpdate(turn=1, view="observer", edges=[EdgeUpdate(source="Son", target="Mum", warmth=5)]))
    assert g.coalitions() == []
    g = _triangle(gen_son=1)
    g.apply(RelationUpdate(turn=1, view="observer", edges=[EdgeUpdate(source="Mum", target="Dad", tension=5.5)]))
    assert g.coalitions() == []
    assert g.coalitions(tension_min=5.5) != []


def test_left_out_low_and_below_group_mean() -> None:
    edges = {
        ("A", "B"): (8, 2),
        ("B", "A"): (8, 2),
        ("A", "C"): (2, 5),
        ("B", "C"): (3, 5),  # C receives mean warmth 2.5
        ("C", "A"): (6, 3),
        ("C", "B"): (7, 3),
    }
    g = RelationGraph.from_case(make_case([("A", 5, 0), ("B", 5, 0), ("C", 5, 1)], edges))
    # incoming means: A = 7, B = 7.5, C = 2.5; group mean 5.67
    assert g.left_out() == ["C"]
    assert g.left_out(warmth_max=2.0) == []  # 2.5 is not below 2
    assert g.left_out(margin=3.5) == []  # 2.5 is not 3.5 below 5.67


def test_left_out_needs_a_gap_not_just_low_warmth() -> None:
    edges = {(a, b): (3, 5) for a in "ABC" for b in "ABC" if a != b}
    g = RelationGraph.from_case(make_case([("A", 5, 0), ("B", 5, 0), ("C", 5, 0)], edges))
    assert g.left_out() == []  # everyone is cool to everyone: nobody singled out


def test_left_out_ignores_members_without_incoming_edges() -> None:
    edges = {("A", "B"): (9, 1), ("B", "A"): (1, 1)}
    g = RelationGraph.from_case(make_case([("A", 5, 0), ("B", 5, 0), ("C", 5, 1)], edges))
    assert g.left_out() == ["A"]  # C has no incoming edge and is not judged


# ---- persistence and drawing ----------------------------------------------------------------------------------


def test_json_round_trip_is_exact_including_history() -> None:
    g = _triangle(gen_son=1)
    g.graph.nodes["Mum"]["role"] = "mother"
    dad = MemberState(name="Dad", emotion="shut out", intensity=7.25)
    g.apply(RelationUpdate(turn=1, view="self_report", emotions=[dad]))
    g.apply(
        RelationUpdate(
            turn=1,
            view="observer",
            pattern="cross_generational_coalition",
            edges=[EdgeUpdate(source="Dad", target="Son", warmth=0.1, tension=9.9)],
        )
    )
    text = g.to_json()
    back = RelationGraph.from_json(text)
    assert back == g
    assert back.to_json() == text
    assert back.snapshots == g.snapshots and len(back.snapshots) == 3
    assert back.graph.nodes["Mum"]["role"] == "mother" and back.graph.nodes["Son"]["generation"] == 1
    assert back.pattern == "cross_generational_coalition" and back.case_id == "test-case"
    assert back.coalitions() == g.coalitions()


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_draw_png_writes_a_png(tmp_path, n: int) -> None:
    names = ["Ana", "Ben", "Cleo", "Dev", "Eve"][:n]
    edges = {(a, b): (i % 10, (i * 3) % 10) for i, (a, b) in enumerate((a, b) for a in names for b in names if a != b)}
    group, pattern = ("couple", "attack_attack") if n == 2 else ("family", "escalation_conflict")
    g = RelationGraph.from_case(
        make_case([(x, 2 * i, i % 2) for i, x in enumerate(names)], edges, group=group, pattern=pattern)
    )
    out = g.draw_png(tmp_path / "sub" / "graph.png", title="Test")
    data = out.read_bytes()
    assert out == tmp_path / "sub" / "graph.png"
    assert data[:8] == PNG_MAGIC and len(data) > 10_000
    assert not list((tmp_path / "sub").glob(".*.tmp"))  # atomic write left no temp file
