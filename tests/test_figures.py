"""A figure the card and the room never gave (issue 42's muddle: "April 2016", a stray "6/10"): found by a rule,
re-asked like the other fidelity flags, counted by the room audit and shown. Fake models only."""

from __future__ import annotations

import asyncio

import pytest

from judges.room_audit import audit_record
from personas.library import resolve_case
from simulator.llm.fake import FakeModelClient
from simulator.members import member_turn
from simulator.records import FidelityCheck, Turn
from simulator.turn_checks import check_line, invented_figure, line_figures, read_line
from tests._sim_fakes import RoomScript
from tests.test_room import _lines_then_script, _room


@pytest.fixture
def dana():
    return resolve_case("dana-and-theo")


def said(index: int, speaker: str, text: str) -> Turn:
    kind = "supporter" if speaker == "Therapist" else "member"
    return Turn(index=index, speaker=speaker, kind=kind, addressees=["Therapist"], text=text)


@pytest.mark.parametrize(
    "text, value",
    [
        ("It cost R2.8 million.", 2_800_000),
        ("We put £4k into it.", 4_000),
        ("four thousand pounds, gone", 4_000),
        ("For twenty-three years I did that.", 23),
        ("I lent him $12,500 in March.", 12_500),
        ("Since the 1990s.", 1990),
        ("Five grand a cycle, Theo.", 5_000),
        ("I came over in twenty seventeen.", 2017),
        ("It's closer to two hundred and fifty.", 250),
        ("You're forty, not a boy.", 40),
        ("He got in at eight last night.", 8),
        ("They phoned four times.", 4),
    ],
)
def test_a_figure_is_read_in_any_wording(text, value):
    assert [v for _, v in line_figures(text)] == [value]


@pytest.mark.parametrize(
    "text",
    [
        "We've been together 11 years and you still do this.",  # the card: "Together eleven years"
        "Married six years, and I eat alone until 9.",  # "married six", "until nine"
        "I'm 36, Theo. After 2 miscarriages I can't wait forever.",  # her age; "two miscarriages"
        "I'm there 24/7 for my class and nobody is there for me.",  # idioms, not figures
        "I'm 100% sure you'd rather be at work.",
        "I've told you a hundred times, one more time won't change it.",
        "You took the promotion and I sit alone every evening.",  # no figure at all
    ],
)
def test_a_figure_the_card_holds_or_an_idiom_is_not_invented(dana, text):
    assert invented_figure(text, dana, []) is None


@pytest.mark.parametrize(
    "text, figure",
    [
        ("Ever since April 2016 you come home at nine.", "2016"),  # a year the card does not hold
        ("We've been married twelve years, Theo.", "twelve"),  # the card: married six
        ("You get home at 10pm every single night.", "10pm"),  # the card: until nine
        ("I'm at a 6/10 tonight, honestly.", "6/10"),  # the self-report's scale, though 6 is on the card
        ("After 3 miscarriages, I can't.", "3"),  # the card: two
        ("Honestly, I'm at a three out of ten.", "three out of ten"),
        ("I was twelve and eight, not nine, when they split.", "twelve"),  # two numbers, not "twenty"
        ("Since '09 you've worked late.", "'09"),
    ],
)
def test_a_figure_the_card_does_not_hold_is_invented(dana, text, figure):
    assert invented_figure(text, dana, []) == figure
    assert read_line(text, "Dana", ["Theo"], dana, []).invented_figure == figure


def test_a_figure_said_earlier_in_the_room_or_handed_over_by_a_stage_direction_is_supported(dana):
    line = "Until 10, Theo. Every night until 10."
    assert invented_figure(line, dana, []) == "10"
    assert invented_figure(line, dana, [said(1, "Theo", "Tuesday I was there until 10, I admit it.")]) is None
    deposit = "I've paid the £500 deposit already."
    assert invented_figure(deposit, dana, []) == "£500"
    assert invented_figure(deposit, dana, [], given=("hint that you have paid a £500 deposit",)) is None
    scale = "Maybe a 4/10."
    assert invented_figure(scale, dana, []) == "4/10"
    assert invented_figure(scale, dana, [said(1, "Therapist", "On a scale of one to ten, how stuck?")]) is None


def test_years_between_two_years_on_the_card_are_supported():
    lena = resolve_case("lena-and-omar")  # Dubai in 2016, the banking collapse in 2019
    assert invented_figure("You turned Dubai down in 2016 and three years later came 2019.", lena, []) is None
    assert invented_figure("It's been 3 years since 2016 and you still blame me.", lena, []) is None
    assert invented_figure("You turned Dubai down in 2014.", lena, []) == "2014"
    assert invented_figure("Since '16 it's been the same fight.", lena, []) is None  # 2016, abbreviated
    # since a year on the card, to a year from its last (2019) to two after: "now" is on no card
    assert invented_figure("Five years since Dubai, Omar.", lena, []) is None
    assert invented_figure("Fifteen years since Dubai, Omar.", lena, []) == "Fifteen"


def test_an_invented_figure_is_flagged_reasked_and_if_it_stays_counted(dana):
    bad = "Ever since April 2016 you stay at work until nine."
    good = "Ever since the promotion you stay at work until nine."
    assert FidelityCheck.INVENTED_FIGURE in [
        f.check
        for f in check_line(
            bad, speaker="Dana", case=dana, turns=[], addressees=["Theo"], language="en", finish_reason="stop"
        )  # fmt: skip
    ]
    script = RoomScript(dana)
    for lines, fixed in (([bad, good], True), ([bad, bad, bad], False)):
        client = FakeModelClient(default=_lines_then_script(lines, script))
        turn = asyncio.run(member_turn(client, dana, [], "Dana", ["Theo"], seed=5, window=16))
        assert FidelityCheck.INVENTED_FIGURE in [f.check for r in turn.reasks for f in r.flags]
        line_calls = [c for c in client.calls if c.schema is None]
        assert "'2016'" in line_calls[1].prompt.instructions  # the re-ask names the figure
        assert "Ever since April 2016" in line_calls[1].prompt.avoid  # and may not write it after the same words
        assert "Ever since April 2016" not in line_calls[0].prompt.avoid
        assert turn.text == (good if fixed else bad)
        assert (FidelityCheck.INVENTED_FIGURE in [f.check for f in turn.flags]) is not fixed
    rec = _room(dana, [good, "You took the promotion without asking me."])
    first = next(t for t in rec.turns if t.kind == "member")
    turns = [t.model_copy(update={"text": bad}) if t is first else t for t in rec.turns]
    audit = audit_record(rec.model_copy(update={"turns": turns}))
    assert audit.room.invented_figure_turns == 1
    assert audit.room_turns[first.index].invented_figure == "2016"
