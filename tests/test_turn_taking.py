"""Who held the floor (judges.room_audit._turn_taking): turn shares and addressees of constructed sessions with known
figures, beside RESCUE's, through the library, `fidelity_report` and `rescue-sim fidelity --rescue`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from judges import FidelityReport, fidelity_report
from judges.room_audit import (
    PUBLISHED_TURN_TAKING,
    Floor,
    Spoken,
    compare_floor,
    floor_of_gold,
    floor_of_record,
    turn_taking,
    turn_taking_rows,
)
from personas.rescue import case_from_sample, gold_from_sample, load_rescue
from simulator.cli import app as cli_app
from simulator.records import Turn
from simulator.runfolder import RunFolder
from tests._session_fixtures import couple_session

T = "Therapist"


def floor(*turns: tuple[str, tuple[str, ...]], members=("Kim", "Lee")) -> Floor:
    return Floor(members=members, turns=tuple(Spoken(s, to) for s, to in turns))


# Kim speaks 3 of 4 member turns; the counsellor 2 of 6 turns; to the counsellor 2, to Lee 1, to both 1
ROOM = floor(
    ("Kim", (T,)), (T, ("Kim",)), ("Kim", ("Lee",)), ("Lee", (T, "Kim")), ("Kim", (T,)), (T, ("Lee",))
)  # fmt: skip
# a dyad: Kim alone, no counsellor; one turn to the group label only (to neither)
DYAD = floor(("Kim", (T,)), ("Kim", (T,)), ("Kim", ("Couple",)))


def test_figures_of_constructed_sessions():
    one = turn_taking([ROOM])
    assert (one.sessions, one.turns, one.member_turns) == (1, 6, 4)
    assert one.speakers == 3 and one.counsellor_share == pytest.approx(2 / 6)
    assert one.top_member_share == pytest.approx(3 / 4)
    assert one.addressees == {"counsellor": 2, "member": 1, "both": 1} and one.unaddressed == 0
    both = turn_taking([ROOM, DYAD, floor()])  # an empty session is no session
    assert (both.sessions, both.turns, both.member_turns) == (2, 9, 7)
    assert both.speakers == pytest.approx((3 + 1) / 2)  # mean over sessions
    assert both.counsellor_share == pytest.approx(2 / 9)  # pooled over turns
    assert both.top_member_share == pytest.approx((3 / 4 + 3 / 3) / 2)
    assert both.addressees == {"counsellor": 4, "member": 1, "both": 1} and both.unaddressed == 1
    assert both.addressee_share("counsellor") == pytest.approx(4 / 6)
    empty = turn_taking([])
    assert empty.sessions == 0 and empty.speakers is None and empty.counsellor_share is None


def test_addressees_split_by_the_turn_before():
    one = turn_taking([ROOM, DYAD])
    # ROOM: Kim to Lee after the counsellor; Lee to both after Kim; Kim to the counsellor after Lee.
    # DYAD: Kim after Kim is in neither split; the opening turn has no turn before it.
    assert one.addressees_after == {
        "counsellor": {"counsellor": 0, "member": 1, "both": 0},
        "member": {"counsellor": 1, "member": 0, "both": 1},
    }
    assert one.addressee_share("member", "counsellor") == 1.0
    assert one.addressee_share("member", "member") == 0.0
    rows = {r.figure.strip(): r for r in turn_taking_rows(one, turn_taking([ROOM]))}
    assert rows["to another member, after a counsellor turn"].distance == 0.0
    assert rows["to another member, after another member's turn"].simulated == 0.0
    assert turn_taking([DYAD]).addressee_share("member", "counsellor") is None  # nothing to share out


def test_each_figure_has_its_distance():
    sim, real = turn_taking([ROOM, DYAD]), turn_taking([ROOM])
    rows = {r.figure: r for r in turn_taking_rows(sim, real, PUBLISHED_TURN_TAKING["couple"])}
    speakers = rows["speakers per session"]
    assert (speakers.simulated, speakers.real, speakers.distance) == (2.0, 3.0, 1.0)
    assert speakers.published == 3.0 and speakers.distance_published == 1.0
    share = rows["counsellor share of turns"]
    assert share.distance == pytest.approx(abs(2 / 9 - 2 / 6), abs=1e-4)
    assert share.published == 0.354 and share.distance_published == pytest.approx(abs(2 / 9 - 0.354), abs=1e-4)
    top = rows["top member's share of member turns"]
    assert top.distance == pytest.approx(0.875 - 0.75) and top.published is None
    assert rows["member turns to the counsellor"].distance == pytest.approx(4 / 6 - 2 / 4, abs=1e-4)
    assert rows["member turns to another member"].distance == pytest.approx(1 / 4 - 1 / 6, abs=1e-4)
    assert rows["member turns to both"].distance == pytest.approx(1 / 4 - 1 / 6, abs=1e-4)
    mix = rows["addressee mix (counsellor / member / both)"]
    assert mix.metric == "jensen_shannon" and 0 < mix.distance < 1
    same = {r.figure: r.distance for r in turn_taking_rows(real, real)}
    assert all(d == 0 for d in same.values())  # a session beside itself: every distance 0
    alone = turn_taking_rows(sim, None)  # no RESCUE side: figures shown, no distance claimed
    assert all(r.distance is None and r.real is None for r in alone)


def _record(session_id: str, turns: list[tuple[str, list[str]]], supporter: str = "fake/supporter"):
    made = [
        Turn(index=i, speaker=s, kind="supporter" if s == T else "member", addressees=to, text="...")
        for i, (s, to) in enumerate(turns, start=1)
    ]
    return couple_session(session_id, supporter).model_copy(update={"turns": made})


def test_records_and_gold_rows_are_read_as_floors():
    record = _record("s1", [("Ana", [T]), (T, ["Ana"]), ("Ben", ["Ana"]), ("Ana", ["Ben", T])])
    assert (
        turn_taking([floor_of_record(record)]).model_dump()
        == turn_taking(
            [floor(("Ana", (T,)), (T, ("Ana",)), ("Ben", ("Ana",)), ("Ana", ("Ben", T)), members=("Ana", "Ben"))]
        ).model_dump()
    )
    silent = _record("s2", [("Ana", [T]), ("Ana", [T])], supporter="silent")
    compared = compare_floor("c", "couple", [record, silent], [])
    assert compared.left_out == 1 and compared.simulated.sessions == 1  # no counsellor by design: left out
    assert compared.real is None


SAMPLE = {
    "sample_id": "kim_and_lee/001",
    "scenario": "couple",
    "participants": ["Kim", "Lee"],
    "rows": [
        {"row_index": 1, "primary_speaker": "Kim", "target": ["Therapist"], "dialogue_cleaned": "He is never home.",
         "utterance_type": "accusation", "internal_emotion": [], "viewpoints_attitudes": [], "support_strategy": [],
         "relation_pattern": "attack_attack"},
        {"row_index": 2, "primary_speaker": "Lee", "target": ["Kim"], "dialogue_cleaned": "I work so we can live.",
         "utterance_type": "defense", "internal_emotion": [], "viewpoints_attitudes": [], "support_strategy": [],
         "relation_pattern": "attack_attack"},
        {"row_index": 3, "primary_speaker": "Therapist", "target": ["Lee"], "dialogue_cleaned": "What is it like?",
         "utterance_type": "", "internal_emotion": [], "viewpoints_attitudes": [], "support_strategy": [],
         "relation_cycle_state": "attack_attack"},
        {"row_index": 4, "primary_speaker": "Lee", "target": ["Therapist"], "dialogue_cleaned": "Lonely, honestly.",
         "utterance_type": "disclosure", "internal_emotion": [], "viewpoints_attitudes": [], "support_strategy": [],
         "relation_pattern": "pursue_withdraw"},
    ],
}  # fmt: skip


@pytest.fixture
def sample_file(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(SAMPLE) + "\n")
    return path


def test_fidelity_compares_a_derived_case_and_every_group_with_rescue(tmp_path, sample_file):
    sample = load_rescue(sample_file)[0]
    real = turn_taking([floor_of_gold(gold_from_sample(sample))])
    assert (real.speakers, real.counsellor_share, real.top_member_share) == (3, 1 / 4, 2 / 3)
    assert real.addressees == {"counsellor": 2, "member": 1, "both": 0}
    case = case_from_sample(sample)
    derived = couple_session("d1").model_copy(update={"case": case})
    derived = derived.model_copy(
        update={
            "turns": [
                Turn(index=1, speaker="Kim", kind="member", addressees=[T], text="..."),
                Turn(index=2, speaker=T, kind="supporter", addressees=["Kim"], text="..."),
                Turn(index=3, speaker="Kim", kind="member", addressees=[T], text="..."),
            ]
        }
    )
    shipped = _record("s1", [("Ana", [T]), (T, ["Ana"]), ("Ben", ["Ana"]), ("Ana", ["Ben", T])])
    run = RunFolder(tmp_path / "run")
    run.open({"supporter": "fake/supporter"})
    run.write_session(derived)
    run.write_session(shipped)
    report = fidelity_report([run.path], rescue=sample_file)
    (c,) = report.sim_vs_real
    rows = {r.figure: r for r in c.turn_taking.rows}
    assert c.turn_taking.simulated.top_member_share == 1.0  # Kim held every member turn
    assert rows["top member's share of member turns"].distance == pytest.approx(1 - 2 / 3, abs=1e-4)
    assert rows["speakers per session"].distance == 1.0  # 2 speakers (Kim, the counsellor) vs 3
    assert rows["counsellor share of turns"].distance == pytest.approx(1 / 3 - 1 / 4, abs=1e-4)
    assert rows["member turns to another member"].simulated == 0 and rows["member turns to another member"].real == (
        pytest.approx(1 / 3, abs=1e-4)
    )
    (group,) = report.turn_taking  # every couple session, the shipped case's too, beside every couple sample
    assert group.scope == "couple" and group.real_samples == [SAMPLE["sample_id"]]
    assert group.simulated.sessions == 2 and group.simulated.speakers == 2.5
    assert group.published == PUBLISHED_TURN_TAKING["couple"]
    speakers = {r.figure: r for r in group.rows}["speakers per session"]
    assert speakers.distance == 0.5 and speakers.published == 3.0 and speakers.distance_published == 0.5
    # the JSON the command prints holds the same; a report written before these fields still loads
    dumped = json.loads(report.model_dump_json())
    assert dumped["turn_taking"][0]["rows"][0]["figure"] == "speakers per session"
    old = {k: v for k, v in dumped.items() if k != "turn_taking"} | {"schema_version": 1}
    for comparison in old["sim_vs_real"]:
        del comparison["turn_taking"]
    assert FidelityReport.model_validate(old).turn_taking == []

    cli_app._register()
    runner = CliRunner()
    res = runner.invoke(cli_app.app, ["fidelity", str(run.path), "--rescue", str(sample_file)], env={"COLUMNS": "160"})
    assert res.exit_code == 0, res.output
    assert f"who held the floor: {case.id} vs {SAMPLE['sample_id']}" in res.output
    assert "Who held the floor: every couple session (2) vs 1 RESCUE couple sample(s) given" in res.output
    assert "top member's share of member turns" in res.output and "RESCUE-BENCH paper, Table 3" in res.output
    assert "RESCUE's own `target` label" in res.output
    as_json = runner.invoke(cli_app.app, ["fidelity", str(run.path), "--rescue", str(sample_file), "--json"])
    assert as_json.exit_code == 0 and FidelityReport.model_validate_json(as_json.stdout).turn_taking == (
        report.turn_taking
    )
    plain = runner.invoke(cli_app.app, ["fidelity", str(run.path)], env={"COLUMNS": "160"})
    assert plain.exit_code == 0 and "held the floor" not in plain.output  # asked with --rescue only


@pytest.mark.rescue
def test_rescue_s_own_samples_match_its_published_speaker_counts(rescue_dir):
    """The shared samples against RESCUE-BENCH's Table 3: every couple sample has 3 speakers (Table 3: 3.00) and the
    family sample 4 (4.06); the counsellor's share of turns is 44 of 154 couple turns (Table 3 over 174 samples:
    35.4%) and 15 of 29 family turns (47.1%); every member row names its addressees."""
    golds = [gold_from_sample(s) for s in load_rescue(rescue_dir / "samples.jsonl")]
    couples = turn_taking([floor_of_gold(g) for g in golds if g.group == "couple"])
    family = turn_taking([floor_of_gold(g) for g in golds if g.group == "family"])
    assert couples.sessions == 5 and couples.speakers == PUBLISHED_TURN_TAKING["couple"].speakers == 3.0
    assert couples.counsellor_share == pytest.approx(44 / 154) and couples.unaddressed == 0
    assert family.sessions == 1 and family.speakers == 4 and family.counsellor_share == pytest.approx(15 / 29)
    assert family.unaddressed == 0
    # real members speak to each other: 50 of 110 couple member turns, 8 of 14 family ones
    assert couples.addressees == {"counsellor": 60, "member": 50, "both": 0}
    assert family.addressees == {"counsellor": 6, "member": 8, "both": 0}
