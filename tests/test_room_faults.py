"""A room that stopped being a room (issue 33, item 2): a member who never speaks, or one who holds the floor past
what real sessions show, is a simulator fault, so the session is left out of supporter scores. The dominance
threshold is data from RESCUE's speaker shares, recomputed here when the samples are present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judges import build_leaderboard, faulted
from judges.room_audit import group_shares, rescue_speaker_shares
from personas.rescue import load_rescue
from simulator.faults import detect_faults, largest_share, room_thresholds, speaking_turns
from simulator.records import FaultKind, SessionRecord, Turn
from simulator.runfolder import RunFolder
from tests._session_fixtures import couple_session, family_case

RESCUE_SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "rescue" / "samples.jsonl"


def room(speakers: str, *, family: bool = False, session_id: str = "s1", supporter: str = "a") -> SessionRecord:
    """A completed session whose turns are spoken by `speakers`, one letter a turn: members by their initial
    (A Ana, B Ben; M Mona, S Sam, L Lia), T the counsellor."""
    base = couple_session(session_id, supporter=supporter)
    case = family_case() if family else base.case
    names = {m.name[0]: m.name for m in case.members} | {"T": "Therapist"}
    turns = [
        Turn(
            index=i,
            speaker=names[c],
            kind="supporter" if c == "T" else "member",
            text=f"Line {i} from {names[c]}, said in the room today.",
        )
        for i, c in enumerate(speakers, start=1)
    ]
    return base.model_copy(update={"case": case, "turns": turns, "max_turns": sum(c != "T" for c in speakers)})


def kinds(record: SessionRecord) -> list[tuple[FaultKind, str | None]]:
    return [(f.kind, f.member) for f in detect_faults(record)]


def test_speaking_turns_count_a_run_of_one_speaker_once():
    assert speaking_turns(["Ana", "Ana", "Therapist", "Ana", "Ben", "Ben"], ["Ana", "Ben"]) == ["Ana", "Ana", "Ben"]
    assert largest_share(["Ana", "Ben", "Ben"]) == ("Ben", pytest.approx(2 / 3)) and largest_share([]) is None


def test_a_member_who_never_speaks_over_six_member_turns_is_a_fault():
    record = room("ATATATATATAT")  # Ana speaks all six member turns, the counsellor after each
    assert kinds(record) == [(FaultKind.MEMBER_SILENT, "Ben"), (FaultKind.MEMBER_DOMINATES, "Ana")]
    silent = detect_faults(record)[0]
    assert silent.turn is None and "never spoke in 6 member turns" in silent.detail
    assert kinds(room("ATATATATAT")) == []  # five member turns: too short to tell
    assert kinds(room("ATATATATATBT")) == []  # Ben speaks once, at the end: 5 of 6 is what real couples reach


def test_a_dominating_member_is_a_fault_at_the_share_the_data_sets():
    limits = room_thresholds()
    assert limits.dominant_share == {"couple": 0.834, "family": 0.5}  # RESCUE, see simulator/data/fidelity.yaml
    seven_of_eight = room("ATATATBTATATATAT")
    [f] = detect_faults(seven_of_eight)
    assert (f.kind, f.member) == (FaultKind.MEMBER_DOMINATES, "Ana")
    assert "7 of 8 member speaking turns (88%; real couple sessions reach 83%)" in f.detail
    assert f.quote.startswith("Line 1")
    # a family: Mona holds 4 of 6 (over 3/6); 3 of 6 is within what the real family shows
    assert kinds(room("MTSTMTLTMTMT", family=True)) == [(FaultKind.MEMBER_DOMINATES, "Mona")]
    assert kinds(room("MTSTMTLTMTST", family=True)) == []
    assert kinds(room("MTSTMTMTMTST", family=True)) == [
        (FaultKind.MEMBER_SILENT, "Lia"),
        (FaultKind.MEMBER_DOMINATES, "Mona"),
    ]


def test_a_two_member_family_is_held_to_the_couple_share():
    """A parent and a child are two people in the room: 4 of 6 is what real couples reach, not a fault, though
    the family figure (from a three-member family) would call it one."""
    base = room("ATATATBTATBT")
    two = base.case.model_copy(update={"group": "family"})
    assert kinds(base.model_copy(update={"case": two})) == []
    assert kinds(room("ATATATATATAT").model_copy(update={"case": two}))[-1] == (FaultKind.MEMBER_DOMINATES, "Ana")


def test_consecutive_lines_of_one_member_are_one_speaking_turn():
    """Ana's three lines in a row while the counsellor stays quiet are one speech, as in a RESCUE transcript."""
    assert kinds(room("AAATBTATBTATBT")) == []  # 6 of 9 lines, 4 of 7 speaking turns


def test_a_stressor_that_quiets_a_member_by_design_is_exempt():
    record = room("ATATATATATAT").model_copy(update={"perturbation": "silent_member"})
    assert kinds(record) == []
    assert kinds(record.model_copy(update={"perturbation": "escalation"})) != []


def test_a_silent_room_is_left_out_of_supporter_scores_even_in_an_old_record(tmp_path):
    """A session saved before these kinds existed carries no faults; reading it finds them."""
    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    folder.write_session(couple_session("clean", supporter="a"))
    folder.write_session(room("ATATATATATAT", session_id="dyad"))
    stored = json.loads((folder.path / "sessions" / "dyad.json").read_text())
    assert stored["simulator_faults"] == []  # written without detection, as an old run was
    record = folder.load_session("dyad")
    fault = faulted(record, None)
    assert fault is not None and fault.kinds == ["member_silent", "member_dominates"]
    [row] = build_leaderboard([folder.path]).rows
    assert (row.completed, row.simulator_failures) == (2, 1)
    assert [s.session_id for s in row.simulator_faults.sessions] == ["dyad"]
    assert row.simulator_faults.by_member_model == {"fake/model": {"member_dominates": 1, "member_silent": 1}}


def _sample(sample_id: str, scenario: str, members: list[str], speakers: str) -> dict:
    names = {m[0]: m for m in members} | {"T": "Therapist"}
    return {
        "sample_id": sample_id,
        "scenario": scenario,
        "participants": members,
        "rows": [{"primary_speaker": names[c], "dialogue_cleaned": "x"} for c in speakers],
    }


def test_group_shares_read_windows_of_speaking_turns_from_rescue_format_data(tmp_path):
    """The project's own RESCUE-format fixture (no RESCUE text): one couple, one family."""
    path = tmp_path / "tiny.jsonl"
    samples = [
        _sample("c/1", "couple", ["Ana", "Ben"], "AATBTATATBAAATB"),  # speaking turns A B A A B A B
        _sample("f/1", "family", ["Mo", "Sy", "Lu"], "MTSTLTMMTSTLTM"),  # M S L M S L M
    ]
    path.write_text("\n".join(json.dumps(s) for s in samples))
    shares = group_shares(load_rescue(path))
    couple, family = shares["couple"], shares["family"]
    assert couple.shares == pytest.approx([3 / 6, 4 / 6]) and couple.silent_windows == 0
    assert couple.whole_sample == pytest.approx([4 / 7]) and couple.threshold() == 0.667
    assert family.shares == pytest.approx([2 / 6, 2 / 6]) and family.percentile(95) == pytest.approx(1 / 3)


@pytest.mark.skipif(not RESCUE_SAMPLES.exists(), reason=f"RESCUE samples not present at {RESCUE_SAMPLES}")
def test_the_shipped_threshold_is_the_one_rescue_gives():
    shares = rescue_speaker_shares(RESCUE_SAMPLES)
    assert {g: s.threshold() for g, s in shares.items()} == room_thresholds().dominant_share
    couple = shares["couple"]
    assert (couple.samples, len(couple.shares), couple.silent_windows) == (5, 51, 2)  # as fidelity.yaml says
    assert (shares["family"].samples, len(shares["family"].shares)) == (1, 9)
