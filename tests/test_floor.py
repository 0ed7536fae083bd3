"""The floor reads what was said: who is spoken about cuts in, who was blamed presses, who is left out comes in,
and an invited member speaks to the other member. Seeded and deterministic; whole sessions on the fake room."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from personas.library import resolve_case
from simulator.engine import run_session
from simulator.floor import blamed_unanswered, choose_next, left_out_after, spoken_about
from simulator.llm.fake import FakeModelClient
from simulator.records import SUPPORTER, Turn
from simulator.session_state import SessionConfig
from simulator.supporters import CallableSupporter
from tests._sim_fakes import RoomScript


@pytest.fixture
def couple():
    return resolve_case("dana-and-theo")  # Dana pursues, Theo withdraws


def _member(i, who, to, text="..."):
    return Turn(index=i, speaker=who, kind="member", addressees=to, text=text)


def _counsellor(i, to, text):
    return Turn(index=i, speaker=SUPPORTER, kind="supporter", addressees=to, text=text)


def test_a_member_named_but_not_addressed_cuts_in(couple):
    said = [
        _member(1, "Dana", [SUPPORTER]),
        _counsellor(2, ["Dana"], "Dana, Theo keeps working late and you feel alone."),
    ]
    plain = [_member(1, "Dana", [SUPPORTER]), _counsellor(2, ["Dana"], "Dana, you feel alone in the evenings.")]
    cut = [choose_next(couple, said, None, s) for s in range(300)]
    base = [choose_next(couple, plain, None, s) for s in range(300)]
    assert spoken_about(couple, said[-1]) == ["Theo"] and spoken_about(couple, plain[-1]) == []
    theo_cut = sum(c.speaker == "Theo" for c in cut)
    theo_base = sum(c.speaker == "Theo" for c in base)
    assert all(c.reason == "cut_in" for c in cut if c.speaker == "Theo" and c.reason != "weighted")
    assert theo_cut > theo_base + 40  # withdrawer: 0.45 * 0.6 = 27% cut in, before the 15% who ignore the address
    assert [choose_next(couple, said, None, s) for s in range(20)] == cut[:20]  # seeded: same choices again


def test_he_said_to_one_partner_is_spoken_about(couple):
    turn = _counsellor(2, ["Dana"], "It sounds like he isn't there when you need him.")
    assert spoken_about(couple, turn) == ["Theo"]
    assert spoken_about(couple, _counsellor(2, ["Couple"], "He said, she said.")) == []


def test_a_blamed_member_presses_and_a_pursuer_accuses(couple):
    turns = [
        _member(1, "Dana", [SUPPORTER]),
        _counsellor(2, ["Theo"], "Theo, you are right, Dana should stop nagging you."),
        _member(3, "Theo", [SUPPORTER]).model_copy(update={"felt_blamed": {"Dana": True, "Theo": False}}),
    ]
    assert blamed_unanswered(turns) == ["Dana"]
    picks = [choose_next(couple, turns, None, s) for s in range(200)]
    pressing = [c for c in picks if c.reason == "pressing"]
    # after Theo's line (the counsellor silent) Dana presses at Theo: the room talks among itself
    assert pressing and all(c.speaker == "Dana" and c.addressees == ("Theo",) for c in pressing)
    assert len(pressing) > 150  # pursuer: 0.6 * 1.5 = 90%
    after_counsellor = [choose_next(couple, turns[:2], None, s) for s in range(200)]
    cut = [c for c in after_counsellor if c.reason == "cut_in"]
    assert cut and all(c.speaker == "Dana" and c.addressees == ("Theo",) for c in cut)  # accuses whom it was said to


def test_an_invited_member_speaks_to_the_other(couple):
    turns = [_member(1, "Dana", [SUPPORTER]), _counsellor(2, ["Dana"], "Dana, could you tell him what you miss?")]
    answers = [c for s in range(100) if (c := choose_next(couple, turns, None, s)).reason == "addressed"]
    assert answers and all(c.addressees == ("Theo",) for c in answers)


def test_no_partner_is_left_out_for_long(couple):
    assert left_out_after(couple) == 2 and left_out_after(resolve_case("carter-family")) == 4
    turns = [_member(1, "Dana", [SUPPORTER]), _counsellor(2, ["Dana"], "Go on."), _member(3, "Dana", [SUPPORTER])]
    turns.append(_counsellor(4, ["Dana"], "And then?"))
    assert {choose_next(couple, turns, None, s).reason for s in range(50)} == {"left_out"}
    assert {choose_next(couple, turns, None, s).speaker for s in range(50)} == {"Theo"}


def _one_sided(name):
    """A counsellor that speaks to `name` every turn and names no one else."""
    return CallableSupporter(
        fn=lambda view: {"targets": [name], "strategy": "reflect", "text": "Say more about how that feels."},
        spec=f"m:only-{name}",
    )


@pytest.mark.parametrize("case_id", ["dana-and-theo", "lena-and-omar", "carter-family", "nowak-siblings"])
def test_a_one_sided_counsellor_still_has_a_multi_party_room(case_id):
    case = resolve_case(case_id)
    favourite = case.member_names[0]
    for seed in range(4):
        client = FakeModelClient(default=RoomScript(case))
        rec = asyncio.run(
            run_session(case, _one_sided(favourite), client, SessionConfig(max_turns=6, seed=seed), session_id="t")
        )
        spoke = Counter(t.speaker for t in rec.turns if t.kind == "member")
        assert sum(spoke.values()) == 6
        if case.group == "couple":
            assert min(spoke[n] for n in case.member_names) >= 2, (seed, spoke)
        else:
            assert set(spoke) == set(case.member_names), (seed, spoke)
        assert all(t.floor for t in rec.turns if t.kind == "member")  # the rule behind each turn is kept


def test_member_to_member_turns_where_the_counsellor_is_silent(couple):
    client = FakeModelClient(default=RoomScript(couple, speak=False))
    silent = CallableSupporter(fn=lambda view: None, spec="m:silent")
    rec = asyncio.run(run_session(couple, silent, client, SessionConfig(max_turns=6, seed=3), session_id="t"))
    members = [t for t in rec.turns if t.kind == "member"]
    assert all(t.addressees != [SUPPORTER] for t in members[1:])


@pytest.mark.parametrize("case_id", ["dana-and-theo", "nguyen-family"])
def test_after_a_silence_members_address_each_other_even_when_pressing(case_id):
    """A counsellor that blames (every member reads it so) and then stays silent every other turn: each member
    line that follows another member's line is spoken to a member, whichever rule gave the floor."""
    case = resolve_case(case_id)
    every_other = CallableSupporter(
        fn=lambda view: None if view.after_turn % 3 else {"targets": [case.member_names[0]], "strategy": None,
                                                           "text": "You are the problem here."},
        spec="m:every-other",
    )  # fmt: skip
    pressed = 0
    for seed in range(4):
        client = FakeModelClient(default=RoomScript(case, blamed=True))
        rec = asyncio.run(run_session(case, every_other, client, SessionConfig(max_turns=8, seed=seed), session_id="t"))
        pairs = list(zip(rec.turns, rec.turns[1:]))
        after_member = [b for a, b in pairs if a.kind == "member" and b.kind == "member"]
        assert after_member and all(set(b.addressees) <= set(case.member_names) for b in after_member)
        pressed += sum(b.floor == "pressing" for b in after_member)
    if case.group == "couple":  # in a family of four, whoever has been left out comes in first
        assert pressed  # blamed members did press after a member's line, and still spoke to a member


def test_old_turns_without_a_floor_rule_load():
    old = {"index": 1, "speaker": "Dana", "kind": "member", "addressees": ["Therapist"], "text": "hi"}
    assert Turn.model_validate(old).floor is None
