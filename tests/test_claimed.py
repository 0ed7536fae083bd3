"""Another member's fact told as the speaker's own (issue 42's muddle: Dana telling Theo's absent father as hers,
Kojo's "my visa"): found by a rule, re-asked like the other fidelity flags, counted by the room audit. Fake models
only."""

from __future__ import annotations

import asyncio

import pytest

from judges.room_audit import audit_record
from personas.library import resolve_case
from simulator.llm.fake import FakeModelClient
from simulator.members import member_turn
from simulator.records import FidelityCheck
from simulator.turn_checks import check_line, claimed, read_line
from tests._sim_fakes import RoomScript
from tests.test_room import _lines_then_script, _room


@pytest.fixture
def dana():
    return resolve_case("dana-and-theo")


@pytest.mark.parametrize(
    "speaker, text, whose",
    [
        ("Dana", "My father was absent through long shifts, always.", "Theo"),  # Theo's father; Dana has one too
        ("Dana", "I took a promotion that keeps me at work till late.", "Theo"),
        ("Theo", "My parents divorced when I was a boy.", "Dana"),
        ("Theo", "I grew up with a single mother who worked two jobs.", "Dana"),  # Dana's background
        ("Dana", "I send money home to my mother every month.", "Theo"),
        ("Theo", "I've been looking at one-bedroom flats online.", "Dana"),  # Dana's secret
        ("Dana", "I am the first in my family to go to university, you know.", "Theo"),
    ],
)
def test_another_members_fact_told_with_i_or_my_is_claimed(dana, speaker, text, whose):
    got = claimed(text, speaker, dana)
    assert got is not None and got[1] == whose
    assert read_line(text, speaker, ["Therapist"], dana, []).claimed.endswith(f"{whose}'s")


@pytest.mark.parametrize(
    "speaker, text",
    [
        ("Dana", "My parents divorced when I was nine, so don't tell me about leaving."),  # her own
        ("Theo", "I took the promotion to pay for the IVF, not to get away from you."),  # his own
        ("Dana", "Since the promotion I eat alone until nine most nights."),  # his event, her experience of it
        ("Dana", "I know your father was absent through long shifts."),  # his, said as his
        ("Dana", "Theo's father was never home, and now neither is Theo."),  # said as his, by name
        ("Theo", "She grew up with a single mother and she thinks I'll leave."),  # said as hers
        ("Dana", "We've been together eleven years and married six."),  # shared
        ("Dana", "I miss my father, he left with no warning."),  # her own fear
        ("Theo", "I don't know what you want from me."),  # nothing of the card
    ],
)
def test_own_facts_shared_facts_and_anothers_said_as_theirs_are_not_claimed(dana, speaker, text):
    assert claimed(text, speaker, dana) is None


def test_a_claimed_fact_is_flagged_reasked_and_if_it_stays_counted(dana):
    bad = "My father was absent through long shifts, so I know what missing is."
    good = "Your father was absent through long shifts, and now you are the one who is absent."
    flags = check_line(bad, speaker="Dana", case=dana, turns=[], addressees=["Theo"], language="en",
                       finish_reason="stop")  # fmt: skip
    assert FidelityCheck.CLAIMED in [f.check for f in flags]
    script = RoomScript(dana)
    for lines, fixed in (([bad, good], True), ([bad, bad, bad], False)):
        client = FakeModelClient(default=_lines_then_script(lines, script))
        turn = asyncio.run(member_turn(client, dana, [], "Dana", ["Theo"], seed=5, window=16))
        assert FidelityCheck.CLAIMED in [f.check for r in turn.reasks for f in r.flags]
        line_calls = [c for c in client.calls if c.schema is None]
        assert "Theo's story as Dana's own" in line_calls[1].prompt.instructions  # the re-ask says whose
        assert turn.text == (good if fixed else bad)
        assert (FidelityCheck.CLAIMED in [f.check for f in turn.flags]) is not fixed
    rec = _room(dana, ["Since the promotion I eat alone.", "You took the promotion without asking me."])
    first = next(t for t in rec.turns if t.kind == "member" and t.speaker == "Dana")
    turns = [t.model_copy(update={"text": bad}) if t is first else t for t in rec.turns]
    audit = audit_record(rec.model_copy(update={"turns": turns}))
    assert audit.room.claimed_turns == 1
    assert audit.room_turns[first.index].claimed == '"My father was absent through long shifts", Theo\'s'
