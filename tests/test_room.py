"""The room plays its case (issue 42): the room measures (grounded, counsellor voice, third person, echo), the
director that gives each member turn its content, the re-ask of an ungrounded line, the `ungrounded_room` fault,
and old records. Fake models only; the one test that reads RESCUE skips without it."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest

from judges.room_audit import audit_record, room_turns
from personas.case import parse_case
from personas.library import resolve_case
from simulator.director import _FRAMES, beat_direction, beat_opener, card_beats, choose_beat
from simulator.engine import run_session
from simulator.faults import detect_faults
from simulator.llm.fake import FakeModelClient
from simulator.members import FAULT_REASKS, member_turn
from simulator.records import Beat, FaultKind, FidelityCheck, SessionRecord, Turn
from simulator.session_state import SessionConfig
from simulator.supporters import SilentSupporter
from simulator.turn_checks import check_line, member_facts, read_line, read_out
from simulator.view import build_view
from tests._sim_fakes import RoomScript

RESCUE = Path(__file__).resolve().parents[2] / "shared" / "rescue" / "samples.jsonl"


@pytest.fixture
def dana():
    return resolve_case("dana-and-theo")


def said(index: int, speaker: str, text: str, to: tuple[str, ...] = ("Therapist",)) -> Turn:
    kind = "supporter" if speaker == "Therapist" else "member"
    return Turn(index=index, speaker=speaker, kind=kind, addressees=list(to), text=text)


# ---- the measures, on lines of known answer --------------------------------------------------------------------


@pytest.mark.parametrize(
    "speaker, to, text, grounded",
    [
        ("Dana", "Theo", "You took that promotion and now I eat dinner alone every night until nine.", True),
        ("Theo", "Dana", "I'm doing this for the IVF, not because I'd rather be at work.", True),
        ("Theo", "Dana", "My dad worked double shifts and I swore I wouldn't be that.", True),  # a person on the card
        ("Dana", "Theo", "I just feel like I'm drowning and nobody cares.", False),
        ("Theo", "Dana", "I don't know what you want from me. I'm tired.", False),
        ("Dana", "Theo", "Theo, Theo, Theo.", False),  # a name alone is not the case
        ("Dana", "Theo", "Mum, honestly, you sound like a broken record.", False),  # a card person, not someone's
        ("Dana", "Therapist", "My mum never once said a word against him.", True),  # her mother, on the card
    ],
)
def test_grounding_needs_something_of_this_case(dana, speaker, to, text, grounded):
    assert (read_line(text, speaker, [to], dana, []).grounded is not None) is grounded


def test_a_word_another_member_said_does_not_ground_the_answer_alone(dana):
    """Read against blind labels (issue 42 (10)), a line that shared a word with another member's grounded line
    was the member's own case 0 times in 15: the card's words ground a line, not the other member's."""
    earlier = [said(1, "Dana", "You missed my mother's birthday for a shipment in Doncaster.", ("Theo",))]
    r = read_line("The Doncaster shipment was the one night I couldn't move.", "Theo", ["Dana"], dana, earlier)
    assert r.grounded is None
    r = read_line("The Doncaster shipment came the week of the promotion and the IVF.", "Theo", ["Dana"], dana, earlier)
    assert r.grounded is not None and "doncaster" not in r.grounded.lower()


def test_a_frequent_word_does_not_ground_a_line_through_a_rarer_form_on_the_card(dana):
    """Issue 42 (10): English's most frequent words were kept out of the card's words but not the line's, so
    "remember" in a line matched the card's "remembered". Dana's card has "promotion" and "missed"-forms: the
    frequent "promote" and "missed" alone ground nothing, "promotion" does."""
    assert read_line("I never wanted to promote anything.", "Dana", ["Theo"], dana, []).grounded is None
    assert read_line("I just feel like I missed something.", "Dana", ["Theo"], dana, []).grounded is None
    assert read_line("I missed the promotion party.", "Dana", ["Theo"], dana, []).grounded == "card: promotion"


@pytest.mark.parametrize(
    "text",
    [
        "I understand that it must be overwhelming, but I want to make sure you know that I'm here for you.",
        "Let's talk about what happened and how we can move forward together.",
        "I just feel like I'm drowning. Can you tell me what happened?",
        "I can see that you're struggling with being alone.",
    ],
)
def test_the_counsellors_voice_in_a_members_mouth(dana, text):
    r = read_line(text, "Dana", ["Theo"], dana, [])
    assert r.counsellor_voice is not None
    assert FidelityCheck.SPEAKING_AS_OTHER in _checks(dana, text, "Dana", ("Theo",))


@pytest.mark.parametrize(
    "speaker, text, flagged",
    [  # README command 1 on 2026-12-06, Theo to the counsellor; then what the rule must leave alone
        ("Theo", "I understand that your words made me feel alone, Theo. It's not easy.", True),
        ("Dana", "Dana, I can see how hard this year has been for you.", True),
        ("Theo", "No. Theo! Listen to yourself for once.", True),
        ("Theo", "Dana, I'm at the warehouse until nine because someone has to pay for it.", False),
        ("Dana", "My name is Dana, and I eat dinner alone every night.", False),
        ("Dana", "Dana and Theo, that's what it says on the door, but I live alone.", False),
        ("Dana", "He never says Theodore, only Theo, to anyone.", False),
    ],
)
def test_a_member_who_speaks_to_themself_by_name_speaks_from_another_seat(dana, speaker, text, flagged):
    r = read_line(text, speaker, ["Therapist"], dana, [])
    assert (r.counsellor_voice is not None) is flagged
    assert (FidelityCheck.SPEAKING_AS_OTHER in _checks(dana, text, speaker, ("Therapist",))) is flagged
    if flagged:
        assert r.counsellor_voice == f"speaks to {speaker}, who is speaking"


@pytest.mark.parametrize(
    "text, voiced",
    [  # the counsellor's moves, not only its phrases (2026-12-07); then a member's own lines with the same words
        ("What I'm noticing is that every time the money comes up, we both go quiet.", True),
        ("Maybe each of us could name one thing we need from the other this week.", True),
        ("Could we let each person finish before anyone answers?", True),
        ("Your feelings are totally valid, Theo.", True),
        ("Everything is going to be fine, I promise. It will all get better.", True),
        ("Can we take a breath for a second?", True),
        ("I noticed the receipts in your coat pocket.", False),
        ("Each of us said things that night that we regret.", False),
        ("Each of us paid half the deposit, that was the deal.", False),
        ("Things will get worse if you keep lying to me.", False),
        ("That's not a valid excuse and you know it.", False),
    ],
)
def test_the_counsellors_moves_in_a_members_mouth(dana, text, voiced):
    assert (read_line(text, "Dana", ["Theo"], dana, []).counsellor_voice is not None) is voiced


def test_words_a_member_quotes_are_not_their_voice(dana):
    """README command 1 on 2026-12-06 (stop 49): Dana quoted her parents ("They always told me that 'no matter what
    happens to you, your parents will still be here for you.'"), and the counsellor phrase inside the quotation made
    the session a simulator fault. Said as her own words, it is still the counsellor's voice."""
    quoting = (
        "They always told me that 'no matter what happens to you, your parents will still be here for you.' Now "
        "they're not here, and I'm left alone."
    )
    assert read_line(quoting, "Dana", ["Theo"], dana, []).counsellor_voice is None
    assert FidelityCheck.SPEAKING_AS_OTHER not in _checks(dana, quoting, "Dana", ("Theo",))
    own = "No matter what happens to you, I'm still here for you. Now they're not here, and I'm left alone."
    assert FidelityCheck.SPEAKING_AS_OTHER in _checks(dana, own, "Dana", ("Theo",))
    assert read_line('He said "I\'m here for you" and left.', "Dana", ["Theo"], dana, []).counsellor_voice is None


def test_re_saying_the_counsellor_is_its_voice_too(dana):
    earlier = [said(1, "Therapist", "Dana, it sounds like the evenings alone have been very hard.", ("Dana",))]
    r = read_line("It sounds like the evenings alone have been very hard, yes.", "Dana", ["Therapist"], dana, earlier)
    assert r.counsellor_voice is not None and r.echo is not None


@pytest.mark.parametrize(
    "speaker, to, text, third",
    [
        ("Dana", "Theo", "Theo. I feel like he's ignoring me at home too.", True),
        ("Dana", "Theo", "Theo always says later, and later never comes.", True),
        (
            "Dana",
            "Therapist",
            "He checks his phone every time I talk about the miscarriages.",
            False,
        ),  # to the counsellor
        ("Dana", "Theo", "Theo, you check your phone every time I talk.", False),  # a vocative, then you
        ("Theo", "Dana", "My father was never home, and he never once said sorry to my mother.", False),  # another man
        # issue 42 (13): the one a thing is done to, by name ("giving Avi £200", said to Avi)
        ("Dana", "Theo", "I have been giving Theo money for the IVF every month.", True),
        ("Dana", "Theo", "I worry about Theo all week and he never sees it.", True),
        ("Dana", "Theo", "I'm giving you this last chance, Theo.", False),  # spoken to: apart, after a comma
        ("Dana", "Theo", "Thank you for being honest with me, Theo.", False),
    ],
)
def test_the_addressee_in_the_third_person(dana, speaker, to, text, third):
    assert (read_line(text, speaker, [to], dana, []).third_person is not None) is third
    assert (FidelityCheck.THIRD_PERSON in _checks(dana, text, speaker, (to,))) is third


@pytest.mark.parametrize(
    "case, speaker, to, text, third",
    [  # 2026-12-07: the addressee as a sentence's subject, by name with any verb, or by what their children call them
        ("bia-and-sujin", "Bia", "Sujin", "Sujin leaves at seven, and then Sujin decides who sleeps in my house.", True),
        ("yilmaz-family", "Deniz", "Ayse", "Mum thinks nobody sees her skip the pills.", True),
        ("yilmaz-family", "Elif", "Kemal", "I asked twice. Dad never answers when it is about money.", True),
        ("santos-family", "Jasmine", "Cora", "Ma, you keep saying we're fine.", False),  # an address, then you
        ("santos-family", "Paolo", "Rodel", "Mom keeps telling everyone I'm fine.", False),  # not the addressee
        ("bia-and-sujin", "Bia", "Sujin", "Sujin, you go back to work and I stay here with the baby.", False),
        ("bia-and-sujin", "Bia", "Sujin", "I told you lots of things that night, Sujin.", False),  # spoken to
        # the one a thing is done to, by name: not the subject, still spoken of as absent (issue 42 (13))
        ("bia-and-sujin", "Bia", "Sujin", "I told Sujin lots of things that night.", True),
    ],
)  # fmt: skip
def test_the_addressee_as_the_subject_of_a_sentence(case, speaker, to, text, third):
    card = resolve_case(case)
    assert (read_line(text, speaker, [to], card, []).third_person is not None) is third


ROHAN = "You've been working so hard with Rohan's wedding plans, and it's making me anxious."
COPING = "I know we're coping without him sometimes, it's just that I'm still feeling a bit lonely and alone."


@pytest.mark.parametrize(
    "case, speaker, to, before, text, third",
    [
        # issue 42: him is Rohan, the dead son her own last line named, not Arjun whom she addresses
        ("arjun-and-meera", "Meera", "Arjun", [("Meera", ROHAN), ("Arjun", "I can't do it anymore.")], COPING, False),
        ("nowak-siblings", "Kasia", "Marek", [("Marek", "Last week Mum asked me when Dad was coming home.")],
         "And I'm the one who tells her every single time that he's gone.", False),  # Dad, a person word
        ("arjun-and-meera", "Meera", "Arjun", [("Meera", "We eat at different times now.")],
         "He holds the newspaper up at dinner so he doesn't have to look at me.", True),
        # the limit: the rule reads names, not sense, so after a line naming Rohan it takes 'he' for him (a miss)
        ("arjun-and-meera", "Meera", "Arjun", [("Meera", ROHAN)],
         "He holds the newspaper up at dinner so he doesn't have to look at me.", False),
        ("nowak-siblings", "Kasia", "Marek", [("Tomek", "Marek wants the house sold before Christmas.")],
         "He hasn't changed Mum once in six years and now he decides where she lives.", True),  # Marek named last
        ("nowak-siblings", "Kasia", "Marek", [("Marek", "Dad would have wanted the house sold.")],
         "Marek, he always knows what Dad would have wanted, doesn't he?", True),  # the line names him first
        ("arjun-and-meera", "Meera", "Arjun", [], COPING, True),  # no one in reach: read as the addressee, as before
    ],
)  # fmt: skip
def test_a_person_of_the_card_named_just_before_is_whom_a_pronoun_means(case, speaker, to, before, text, third):
    card = resolve_case(case)
    earlier = [said(i, who, line, (to if who == speaker else speaker,)) for i, (who, line) in enumerate(before, 1)]
    assert (read_line(text, speaker, [to], card, earlier).third_person is not None) is third
    assert (FidelityCheck.THIRD_PERSON in _checks(card, text, speaker, (to,), earlier)) is third  # live, the same


def test_the_people_of_a_card_outside_the_room_are_read_from_its_text():
    from simulator.turn_checks._room import card_people

    grief = card_people(resolve_case("arjun-and-meera"))
    assert set(grief) == {"rohan", "sneha"} and grief["rohan"][0] == "he" and grief["sneha"][0] == "she"
    assert card_people(resolve_case("bia-and-sujin"))["rafael"] is None  # 'friend Rafael': either
    assert card_people(resolve_case("dana-and-theo")) == {}


def test_an_echo_is_near_verbatim_not_only_verbatim(dana):
    theirs = "I'm doing all of this for us, for the IVF, and you make it sound like I abandoned you."
    earlier = [said(1, "Theo", theirs, ("Dana",))]
    mine = "Oh, you're doing all of this for us, for the IVF, and I make it sound like you abandoned me?"
    r = read_line(mine, "Dana", ["Theo"], dana, earlier)
    assert r.echo is not None and r.echo_turn == 1
    assert FidelityCheck.NEAR_DUPLICATE in _checks(dana, mine, "Dana", ("Theo",), earlier)  # flagged once, as a repeat
    # a run of words re-said inside a longer line of its own: too little of it for a near-duplicate, still an echo
    theirs = (
        "Every night you come home at nine and go straight to your laptop, and I sit there with the dinner going cold."
    )
    earlier = [said(1, "Theo", theirs, ("Dana",))]
    mine = "So I come home at nine and go straight to your laptop? I answer two emails because the warehouse rings me."
    assert FidelityCheck.ECHO in _checks(dana, mine, "Theo", ("Dana",), [said(1, "Dana", theirs, ("Theo",))])
    answer = "The IVF is the reason I took the job, and you know it."  # takes up its words, does not re-say it
    assert read_line(answer, "Dana", ["Theo"], dana, earlier).echo is None


def test_a_line_re_said_from_the_other_seat_is_an_echo_and_a_conceded_charge_is_not(dana):
    theirs = "All I've ever asked is that you're honest with me. That's all I've ever asked."
    earlier = [said(1, "Theo", theirs, ("Dana",))]
    flipped = "All you've ever asked is that I'm honest with you. Yes. That's all you've ever asked."
    r = read_line(flipped, "Dana", ["Theo"], dana, earlier)
    assert r.echo is not None and r.echo_turn == 1
    assert FidelityCheck.ECHO in _checks(dana, flipped, "Dana", ("Theo",), earlier)
    charge = [said(1, "Dana", "You missed the scan in February and told nobody, Theo.", ("Theo",))]
    conceded = "I missed the scan in February, yes, and I drove to the warehouse because they rang me at six."
    assert read_line(conceded, "Theo", ["Dana"], dana, charge).echo is None


@pytest.mark.parametrize(
    ("to", "text", "wrong"),
    [
        (("Therapist",), "I missed you too, Theo. I feel like I've been left alone again.", True),  # command 1, t1
        (("Therapist",), "He works till nine. Theo, you know it's true.", True),
        (("Theo",), "Theo, you read the promotion email at dinner again.", False),  # the addressee, by name
        (("Therapist",), "Theo said he'd be home by six, and then I called Theo.", False),  # spoken of, not to
        (("Therapist",), "My mum used to say, 'Theo, look after her.' He never did.", False),  # quoted words
        (("Couple",), "Theo, I need you home before nine once a week.", False),  # a line to the whole room
    ],
)
def test_a_member_spoken_to_by_name_in_a_line_not_to_them_is_a_wrong_address(dana, to, text, wrong):
    r = read_line(text, "Dana", list(to), dana, [])
    assert (r.wrong_address == "speaks to Theo") is wrong
    assert (FidelityCheck.WRONG_ADDRESS in _checks(dana, text, "Dana", to)) is wrong


@pytest.mark.parametrize(
    ("speaker", "to", "text", "given"),
    [
        # README command 1: Theo's father, given to the counsellor
        ("Theo", "Therapist", "I understand that your father was absent through long shifts.", True),
        ("Theo", "Dana", "You took the promotion to pay for the IVF without telling anyone.", True),  # his secret
        ("Theo", "Dana", "My father was absent through long shifts, and I swore I'd be different.", False),
        ("Theo", "Dana", "You know my father was absent through long shifts.", False),
        ("Dana", "Theo", "You took the promotion and now you're never home before nine.", False),  # his, said to him
        ("Dana", "Theo", "Theo took the promotion and I eat alone.", False),  # his, told as his
        ("Dana", "Therapist", "My mum worked two jobs, so I know what it is to wait up.", False),
        ("Theo", "Dana", "I sent money to my mother again, and you said 'your father could lend it'.", False),  # quote
    ],
)
def test_a_members_own_fact_told_as_someone_elses_is_given_away(dana, speaker, to, text, given):
    r = read_line(text, speaker, [to], dana, [])
    assert (r.given_away is not None) is given, r.given_away
    assert (FidelityCheck.GIVEN_AWAY in _checks(dana, text, speaker, (to,))) is given


def test_whose_fact_it_is_follows_the_card():
    """Issue 42's nakamura run: Yumiko's secret ('met Haru secretly every month') told to Kenji as his; a fact of
    the speaker's that is about the listener too is not given away by saying it to them."""
    nakamura = resolve_case("nakamura-family")
    assert any("met Haru secretly every month" in f for f in member_facts(nakamura, "Yumiko"))
    assert not any("secretly" in f for n in ("Kenji", "Haru") for f in member_facts(nakamura, n))
    secret = "I didn't realize that you were secretly meeting with Haru every month."
    assert read_line(secret, "Yumiko", ["Kenji"], nakamura, []).given_away == (
        '"you were secretly meeting with Haru every month", told of Kenji'
    )
    assert read_line(secret.replace("you were", "I was"), "Yumiko", ["Kenji"], nakamura, []).given_away is None
    van = "You needed the money from the shop's accounts for the band's van."  # her secret, but about Haru
    assert read_line(van, "Yumiko", ["Haru"], nakamura, []).given_away is None
    assert read_line(van, "Yumiko", ["Kenji"], nakamura, []).given_away is not None  # told as Kenji's


def _checks(case, text, speaker, to, turns=()):
    flags = check_line(text, speaker=speaker, case=case, turns=list(turns), addressees=list(to), language="en",
                       finish_reason="stop")  # fmt: skip
    return [f.check for f in flags]


@pytest.mark.parametrize(  # written like real members' lines (not copied from any transcript)
    "speaker, to, text",
    [
        ("Dana", "Therapist", "Yeah. I mean, I don't know. It's just hard."),
        ("Theo", "Therapist", "She's never happy. It's always something with her."),
        ("Dana", "Theo", "And that's exactly how you are with me, every single time."),
        ("Theo", "Dana", "You don't see anything wrong with that?"),
        ("Dana", "Therapist", "I understand what he's saying, I just don't agree with it."),
    ],
)
def test_no_role_or_echo_check_fires_on_lines_like_real_members(dana, speaker, to, text):
    earlier = [said(1, "Theo", "I work and I come home and I'm still wrong.", ("Dana",))]
    r = read_line(text, speaker, [to], dana, earlier)
    assert r.counsellor_voice is None and r.third_person is None and r.echo is None


@pytest.mark.rescue
def test_role_and_echo_rarely_fire_on_rescues_real_member_lines():
    """Real people are never the counsellor: the role and echo rules' false-positive rate on RESCUE's member lines
    stays at most 5% (measured: 0%, 0%, 1%, 0% and 0% of 84; tests/benchmarks/README.md)."""
    if not RESCUE.exists():
        pytest.skip(f"RESCUE samples not found at {RESCUE} (../shared/rescue is outside the repository)")
    from personas.rescue import case_from_sample, load_rescue

    fired = {"counsellor_voice": 0, "third_person": 0, "echo": 0, "wrong_address": 0, "given_away": 0}
    n = 0
    for sample in load_rescue(RESCUE):
        case = case_from_sample(sample)
        members = set(case.member_names)
        turns = [
            said(
                i,
                r.primary_speaker if r.primary_speaker in members else "Therapist",
                r.dialogue_cleaned,
                tuple(t if t in members else "Therapist" for t in r.target),
            )  # fmt: skip
            for i, r in enumerate(sample.rows, 1)
        ]
        for i, t in enumerate(turns):
            if t.kind == "member" and t.text.strip():
                n += 1
                r = read_line(t.text, t.speaker, t.addressees, case, turns[:i])
                for m in fired:
                    fired[m] += getattr(r, m) is not None
    assert n > 50
    assert all(v / n <= 0.05 for v in fired.values()), fired


# ---- the director ------------------------------------------------------------------------------------------------


def test_the_directors_choice_is_seeded_and_draws_from_the_members_own_card(dana):
    turns = [said(1, "Therapist", "Who would like to start?", ("Dana", "Theo"))]
    picks = [choose_beat(dana, turns, "Dana", seed) for seed in range(12)]
    assert picks == [choose_beat(dana, turns, "Dana", seed) for seed in range(12)]  # the same seed, the same beat
    assert len({p.source for p in picks}) > 1  # seeds differ somewhere
    theos = {b.source for b in card_beats(dana, "Theo")}
    assert all(p.source not in theos or p.kind == "fact" for p in picks)  # Theo's background or secrets never
    assert all(p.kind != "secret" for p in picks)  # no secret on a member's first turn
    assert all(p.words for p in picks)  # every beat has words specific to the case


def test_a_sentence_about_two_members_hands_each_only_their_own_clause(dana):
    # README command 1: Dana was handed "Theo's father was absent through long shifts; Dana's parents divorced when
    # she was nine" and told Theo's father's story as hers
    facts = {m: [b.text for b in card_beats(dana, m) if b.kind == "fact"] for m in dana.member_names}
    assert "Dana's parents divorced when she was nine." in facts["Dana"]
    assert "Theo's father was absent through long shifts." in facts["Theo"]
    assert not any("Theo's father" in t or "Theo took a promotion" in t for t in facts["Dana"])
    assert not any("Dana's parents" in t for t in facts["Theo"])
    # a clause that leans on the one cut away keeps the sentence whole (issue 42's nguyen run handed Thuy "her
    # mother Thuy has known for ten months and helped keep it secret." alone)
    nguyen = resolve_case("nguyen-family")
    thuy = [b.text for b in card_beats(nguyen, "Thuy") if b.kind == "fact"]
    assert not any(t.startswith("her mother Thuy") for t in thuy)
    assert any(t.startswith("Vy, 17, has been dating a girl, Kim") and "her mother Thuy" in t for t in thuy)
    assert any("to marry him" in t and "Minh runs" in t for t in thuy)  # "him" is Minh: not cut from him
    # a sentence about both, with no clause to cut, stays with both
    both = "Every attempt to talk ends with Dana listing what he missed and Theo going silent or leaving the room."
    assert both in facts["Dana"] and both in facts["Theo"]


def test_a_fact_that_opens_on_another_member_is_told_as_theirs():
    mensah = resolve_case("mensah-family")
    visa = next(b for b in card_beats(mensah, "Kojo") if b.text.startswith("Abena's visa"))
    said_by_kojo = beat_direction(visa, "Kojo", ["Therapist"], mensah.member_names)
    assert "This is Abena's part of the story, not Kojo's" in said_by_kojo
    own = next(b for b in card_beats(mensah, "Abena") if b.text.startswith("Abena's visa"))
    assert "part of the story" not in beat_direction(own, "Abena", ["Kojo"], mensah.member_names)


def test_a_card_agenda_is_drawn_first_and_a_reply_answers_what_was_said_about_them(dana):
    data = dana.model_dump(exclude={"id"})
    data["members"][0]["agenda"] = ["the anniversary dinner in Whitby that Theo cancelled by text"]
    card = parse_case(data, case_id="dana-agenda", source="test")
    beats = [choose_beat(card, [], "Dana", seed) for seed in range(20)]
    assert sum(b.kind == "agenda" for b in beats) >= 5
    about_dana = [said(1, "Theo", "Dana, you read out my missed dinners like a charge sheet about the promotion.",
                       ("Dana",))]  # fmt: skip
    reply = choose_beat(dana, about_dana, "Dana", 3)
    assert reply.kind == "reply" and reply.source == "turn 1"


def test_a_beat_reaches_only_its_member_and_an_ungrounded_line_is_reasked_with_it(dana):
    generic = "I just feel so alone all the time."
    grounded = "You took the promotion and I eat alone until nine."
    script = RoomScript(dana)
    lines = iter([generic, grounded])
    client = FakeModelClient(default=lambda call: next(lines) if call.schema is None else script(call))
    beat = next(b for b in card_beats(dana, "Dana") if b.kind == "secret")  # private: only Dana's line may see it
    # worded so it does not open on Dana: no opener begins her line (the opener's tests are below)
    beat = beat.model_copy(update={"text": "One-bedroom flats: she has looked at them online twice this month."})
    turn = asyncio.run(member_turn(client, dana, [], "Dana", ["Theo"], seed=5, window=16, beat=beat))
    assert turn.text == grounded and turn.beat == beat and turn.directive is None
    assert [r.flags[0].check for r in turn.reasks] == [FidelityCheck.UNGROUNDED]
    line_calls = [c for c in client.calls if c.schema is None]
    state_call = next(c for c in client.calls if c.schema is not None)
    assert "stage direction" in line_calls[0].prompt.instructions.lower()
    assert f"what Dana has kept back: {beat.text}" in line_calls[0].prompt.instructions
    assert "what Dana has kept back" not in state_call.prompt.instructions + state_call.prompt.context
    assert "nothing of Dana's own situation" in line_calls[1].prompt.instructions


def test_a_line_that_reads_out_its_stage_direction_is_reasked(dana):
    """Issue 42 (9): Eleni said her direction aloud ("The notes speak of Eleni by name; I say it of themself with
    'I' and 'my'"). The card's words the direction hands over may be said; its own wording may not."""
    beat = next(b for b in card_beats(dana, "Dana") if b.kind == "fact" and not b.text.startswith("Dana"))
    assert ".." not in beat_direction(beat, "Dana", ["Theo"], dana.member_names)
    scaffold = beat_direction(beat.model_copy(update={"text": "..."}), "Dana", ["Theo"])
    assert read_out("The notes speak of Dana by name, and I feel it.", scaffold) == "the notes speak of dana"
    assert read_out(beat.text, scaffold) is None  # the card's words it hands over may be said
    assert read_out("You took the promotion and I eat alone until nine.", scaffold) is None
    grievance = next(b for b in card_beats(dana, "Dana") if b.kind == "grievance")  # "about Theo: he has chosen ..."
    said = grievance.text.removeprefix("about Theo: ").replace("he has", "you have").replace("her", "me")
    assert read_out(said, beat_direction(grievance.model_copy(update={"text": "..."}), "Dana", ["Theo"])) is None
    leaked = "The notes speak of Dana by name; I say it of themself with 'I' and 'my'."
    grounded = "You took the promotion and I eat alone until nine."
    client = FakeModelClient(default=_lines_then_script([leaked, grounded], RoomScript(dana)))
    turn = asyncio.run(member_turn(client, dana, [], "Dana", ["Theo"], seed=5, window=16, beat=beat))
    assert turn.text == grounded and turn.flags == []
    assert [f.check for r in turn.reasks if r.part == "line" for f in r.flags][:1] == [FidelityCheck.COPIED_TAG]


def _beat(case, speaker, starts):
    return next(b for b in card_beats(case, speaker) if b.text.startswith(starts))


def test_a_beat_opening_on_its_member_begins_their_line_in_their_own_voice(dana):
    arjun, mensah, carter = (resolve_case(c) for c in ("arjun-and-meera", "mensah-family", "carter-family"))
    cases = [
        (arjun, "Arjun", "Arjun bought", ["Meera"], "I bought Rohan the motorbike"),  # stops before "his", and "for"
        (arjun, "Arjun", "He sold", ["Meera"], "I sold Rohan's damaged motorbike without telling you"),
        (dana, "Dana", "Dana's parents", ["Theo"], "My parents divorced"),  # "she" would need conjugating
        (dana, "Theo", "Theo took", ["Dana"], "I took a promotion that keeps me"),
        (dana, "Dana", "about Theo", ["Theo"], "You have chosen work"),  # "her" is Dana: not Theo's
        (mensah, "Abena", "Abena came", ["Akua"], "I came to the UK as a nurse"),
        (carter, "Marcus", "Marcus sets", ["Renee"], "I set rules"),
        (carter, "Marcus", "He knows", ["Renee"], "I know Jordan is withdrawing"),  # "and fears": whose verb?
    ]
    for case, speaker, starts, to, opener in cases:
        assert beat_opener(_beat(case, speaker, starts), speaker, to, case) == opener

    def agenda(text):
        return Beat(kind="agenda", text=text, source="members[0].agenda[0]")

    assert beat_opener(agenda("I'm tired of eating alone while Theo works"), "Dana", ["Theo"], dana) == (
        "I'm tired of eating alone while you work"
    )
    assert beat_opener(agenda("Dana wants Theo home by seven"), "Dana", ["Theo"], dana) == "I want you home by seven"
    # issue 42 (11): an agenda written as a noun phrase is said after a frame; one written "That ..." is the
    # statement after it; a clause in the member's voice is said as it is
    framed = beat_opener(agenda("The anniversary dinner Theo cancelled"), "Dana", ["Theo"], dana)
    assert framed in {f"{f} the anniversary dinner you cancelled" for f in _FRAMES}
    # "The" is never a name, even before one (issue 42 (12): "I can't get past The R2.8 million house")
    framed = beat_opener(agenda("The IVF money Theo spent"), "Dana", ["Theo"], dana)
    assert framed in {f"{f} the IVF money you spent" for f in _FRAMES}
    assert beat_opener(agenda("That Theo works until nine every night"), "Dana", ["Theo"], dana) == (
        "You work until nine every night"
    )
    assert beat_opener(agenda("That she eats alone most nights"), "Dana", ["Theo"], dana) == "I eat alone most nights"
    assert beat_opener(agenda("Theo asked me last week why I cry"), "Dana", ["Theo"], dana) == (
        "You asked me last week why I cry"
    )
    # issue 42 (13): a statement is framed after "how" ("I keep thinking about the phone rang" was heard), and a
    # noun phrase that only looks like one is not; a capitalised possessive is a name
    framed = beat_opener(agenda("The phone rang during the dinner in front of everyone"), "Dana", ["Theo"], dana)
    assert framed in {f"{f} how the phone rang during the dinner" for f in _FRAMES}
    framed = beat_opener(agenda("that the video calls were lies"), "Dana", ["Theo"], dana)  # (14): not "how that"
    assert framed in {f"{f} that the video calls were lies" for f in _FRAMES}
    framed = beat_opener(agenda("how thin the girls have become since June"), "Dana", ["Theo"], dana)  # (15)
    assert framed in {f"{f} how thin the girls have become" for f in _FRAMES}  # not "how how"
    framed = beat_opener(agenda("A student played the clip on a speaker"), "Dana", ["Theo"], dana)
    assert framed in {f"{f} how a student played the clip" for f in _FRAMES}
    framed = beat_opener(agenda("The promised holiday in Pembrokeshire"), "Dana", ["Theo"], dana)
    assert framed in {f"{f} the promised holiday in Pembrokeshire" for f in _FRAMES}
    framed = beat_opener(agenda("Deshawn's mother emailed the principal"), "Dana", ["Theo"], dana)
    assert framed in {f"{f} how Deshawn's mother emailed the principal" for f in _FRAMES}
    niamh, lena, nadia = (resolve_case(c) for c in ("shane-and-niamh", "lena-and-omar", "nadia-and-craig"))
    more = [
        (niamh, "Niamh", "In April Niamh", ["Shane"], "In April I found €11,000 on a credit card"),  # a time first
        (niamh, "Niamh", "She has asked a solicitor", ["Shane"], "I have asked a solicitor about separating"),
        (lena, "Omar", "Switches into Arabic", ["Lena"], "I switch into Arabic when overwhelmed"),  # verb first
        (dana, "Theo", "Logistics manager", ["Dana"], None),  # a plural noun first, not a verb
        (nadia, "Nadia", "Craig says Nadia", ["Craig"], None),  # "You say Nadia has ...": herself by name
    ]
    for case, speaker, starts, to, opener in more:
        assert beat_opener(_beat(case, speaker, starts), speaker, to, case) == opener
    # said to someone else, or opening on another member: no opener
    assert beat_opener(_beat(dana, "Dana", "about Theo"), "Dana", ["Therapist"], dana) is None
    assert beat_opener(_beat(mensah, "Kojo", "Abena's visa"), "Kojo", ["Akua"], mensah) is None
    # opening on the one spoken to: "you", and the speaker's own name stops it
    assert beat_opener(_beat(mensah, "Kojo", "Abena's visa"), "Kojo", ["Abena"], mensah) == (
        "Your visa and salary could not support bringing"
    )


def test_an_opener_ends_where_the_member_can_go_on_in_their_own_words(dana):
    """Issue 42 (13): an opener cut on a word that needs what follows had the 1.5B finish the card's phrase wrong
    ("the Port Talbot steelworks last" + "39 years ago"), and an appositive read as a verb gave "I the eldest"."""
    from simulator.director import _NEEDS_MORE

    fact = Beat(kind="fact", text="Dana, 36, the eldest of three sisters in a Leeds family, left home at 17.",
                source="members[0].background")  # fmt: skip
    assert beat_opener(fact, "Dana", ["Theo"], dana) == "I am the eldest of three sisters"
    assert beat_opener(fact, "Theo", ["Dana"], dana) == "You are the eldest of three sisters"
    retired = Beat(kind="fact", text="Theo retired from the Port Talbot steelworks last May after thirty-nine years.",
                   source="history")  # fmt: skip
    assert beat_opener(retired, "Theo", ["Dana"], dana) == "I retired from the Port Talbot steelworks"
    cards = [resolve_case(c) for c in ("dana-and-theo", "mensah-family", "nguyen-family", "lena-and-omar")]
    for case in cards:
        for speaker in case.member_names:
            for beat in card_beats(case, speaker):
                opener = beat_opener(beat, speaker, [n for n in case.member_names if n != speaker][:1], case)
                last = opener.split()[-1].lower() if opener else ""
                assert last not in _NEEDS_MORE and not last.endswith("'s"), opener


def test_an_opener_begins_the_line_only_for_a_piece_not_yet_brought_up(dana):
    beat = _beat(dana, "Dana", "She has looked")
    client = FakeModelClient(default=RoomScript(dana))
    turn = asyncio.run(member_turn(client, dana, [], "Dana", ["Theo"], seed=5, window=16, beat=beat))
    line = next(c for c in client.calls if c.schema is None)
    assert line.prompt.prefill.endswith('"I have looked at one-bedroom flats online twice ')
    assert turn.text.startswith("I have looked at one-bedroom flats online twice ")
    assert turn.beat.opener == "I have looked at one-bedroom flats online twice"
    assert all("one-bedroom" not in (c.prompt.prefill or "") for c in client.calls if c.schema is not None)
    before = [said(1, "Dana", "I looked at one-bedroom flats online, twice.", ("Theo",))]
    again = asyncio.run(member_turn(client, dana, before, "Dana", ["Theo"], seed=5, window=16, beat=beat))
    assert again.beat.opener is None and not again.text.startswith("I have looked")


def test_of_two_drawn_lines_the_one_that_makes_no_fault_is_kept(dana):
    # README command 1: Dana's first draw was in role but ungrounded, the re-ask spoke to Theo by name in a line to
    # the counsellor; one flag each, and the later was kept, making the session a simulator fault
    generic = "I just feel so alone all the time."
    wrong = "I missed you too, Theo. Since the promotion I eat alone every night."
    beat = next(b for b in card_beats(dana, "Dana") if b.kind == "fact")
    client = FakeModelClient(default=_lines_then_script([generic, wrong], RoomScript(dana)))
    turn = asyncio.run(member_turn(client, dana, [], "Dana", ["Therapist"], seed=5, window=16, beat=beat))
    assert turn.text == generic and [f.check for f in turn.flags] == [FidelityCheck.UNGROUNDED]
    assert [f.check for r in turn.reasks if r.part == "line" for f in r.flags] == [FidelityCheck.WRONG_ADDRESS]


def test_a_session_records_beats_the_supporter_never_sees_them(dana):
    client = FakeModelClient(default=RoomScript(dana, line="You took the promotion and I eat alone until nine."))
    rec = asyncio.run(run_session(dana, SilentSupporter(), client, SessionConfig(max_turns=3, seed=4), session_id="b"))
    members = [t for t in rec.turns if t.kind == "member"]
    assert all(t.beat is not None for t in members)
    view = build_view(dana, rec.turns, member_turns=len(members), max_turns=3)
    shown = view.model_dump_json()
    assert '"beat"' not in shown and all(not hasattr(t, "beat") for t in view.transcript)
    private = [b.text for m in dana.member_names for b in card_beats(dana, m) if b.kind in ("secret", "grievance")]
    assert private and not any(text in shown for text in private)
    again = asyncio.run(
        run_session(
            dana,
            SilentSupporter(),
            FakeModelClient(default=RoomScript(dana, line=members[0].text)),
            SessionConfig(max_turns=3, seed=4),
            session_id="b",
        )  # fmt: skip
    )
    assert [t.beat for t in again.turns if t.kind == "member"] == [t.beat for t in members]


# ---- faults, the audit and old records --------------------------------------------------------------------------


def _room(case, lines, *, beats=True):
    script = RoomScript(case)
    it = itertools.cycle(lines)
    client = FakeModelClient(default=lambda call: next(it) if call.schema is None else script(call))
    rec = asyncio.run(run_session(case, SilentSupporter(), client, SessionConfig(max_turns=4, seed=2), session_id="g"))
    if not beats:  # as made before the director: no beat, and no line begun with the card's words

        def before(t):
            opener = t.beat.opener if t.beat is not None else None
            return t.model_copy(update={"beat": None, "text": t.text.removeprefix(f"{opener} ") if opener else t.text})

        rec = rec.model_copy(update={"turns": [before(t) for t in rec.turns]})
    return rec


def test_a_room_that_stays_off_its_case_is_a_fault_and_a_grounded_one_is_not(dana):
    vague = ["I just feel so alone.", "I'm tired of all of it.", "Nobody listens to me here.", "Why is it always me?"]
    rec = _room(dana, vague)
    assert FaultKind.UNGROUNDED_ROOM in {f.kind for f in detect_faults(rec)}
    fid = audit_record(rec)
    opened = sum(t.beat.opener is not None for t in rec.turns if t.kind == "member")  # begun with the card's words
    assert fid.room.member_turns == 4 and fid.room.grounded_turns == opened < 2 and fid.room.directed_turns == 4
    grounded = [
        "You took the promotion without asking me.",
        "The IVF money had to come from somewhere.",  # no name: the engine, not the list, picks who says it
        "You stay at work until nine most nights since the promotion.",
        "I'm not asking your father for a loan.",
    ]
    rec = _room(dana, grounded)
    assert FaultKind.UNGROUNDED_ROOM not in {f.kind for f in detect_faults(rec)}
    assert audit_record(rec).room.grounded_turns == 4


def _lines_then_script(lines, script):
    it = iter(lines)
    return lambda call: next(it) if call.schema is None else script(call)


@pytest.mark.parametrize(
    ("speaker", "bad", "good", "check", "why", "fault"),
    [
        (  # README command 1, turn 1: Dana to the counsellor
            "Dana",
            "I missed you too, Theo. You took the promotion and I eat alone until nine.",
            "You took the promotion and I eat alone until nine, and I sit there waiting.",
            FidelityCheck.WRONG_ADDRESS,
            "speaks to Theo by name",
            "by name",
        ),
        (  # README command 1: Theo gives his own father to the counsellor
            "Theo",
            "I understand that your father was absent through long shifts.",
            "My father was absent through long shifts, and the promotion keeps me out till nine.",
            FidelityCheck.GIVEN_AWAY,
            "tells Theo's own story as Therapist's",
            "own story",
        ),
    ],
)
def test_a_role_fault_in_a_line_is_reasked_and_if_it_stays_counted_and_a_fault(
    dana, speaker, bad, good, check, why, fault
):
    script = RoomScript(dana)
    for lines, fixed in (([bad, good], True), ([bad] * (2 + FAULT_REASKS), False)):
        client = FakeModelClient(default=_lines_then_script(lines, script))
        turn = asyncio.run(member_turn(client, dana, [], speaker, ["Therapist"], seed=5, window=16))
        # a line that stays wrong is asked once more (a fault by itself), then kept flagged
        assert [r.flags[0].check for r in turn.reasks] == [check] * (len(lines) - 1)
        line_calls = [c for c in client.calls if c.schema is None]
        assert why in line_calls[1].prompt.instructions  # the re-ask says why
        assert turn.text == (good if fixed else bad)
        assert (check in [f.check for f in turn.flags]) is not fixed
    rec = _room(dana, ["You took the promotion without asking me.", "The IVF money had to come from somewhere."])
    rec = rec.model_copy(update={"turns": [turn.model_copy(update={"index": 1})]})  # the kept line, in a record
    assert any(f.kind == FaultKind.OUT_OF_ROLE and fault in f.detail for f in detect_faults(rec))
    audit = audit_record(rec)
    assert getattr(audit.room, f"{check.value}_turns") == 1 and audit.room.share(check.value) == 1.0


@pytest.mark.parametrize(
    ("measure", "second"),
    [
        ("given_away", "My father worked long shifts."),
        ("invented_figure", "Married six years, Theo."),
        ("claimed", "Married six years, Theo."),
    ],
)
def test_an_audit_written_before_a_measure_still_loads(dana, measure, second):
    audit = audit_record(_room(dana, ["You took the promotion without asking me.", second]))
    data = json.loads(audit.model_dump_json())
    data["room"].pop(f"{measure}_turns")
    for t in data["room_turns"].values():
        t.pop(measure)
    assert getattr(type(audit).model_validate(data).room, f"{measure}_turns") == 0


def test_an_old_record_without_beats_loads_and_keeps_its_faults(dana):
    rec = _room(dana, ["I just feel so alone.", "I'm tired of all of it."], beats=False)
    data = json.loads(rec.model_dump_json())
    for t in data["turns"]:
        t.pop("beat")
    old = SessionRecord.model_validate(data)
    assert all(t.beat is None for t in old.turns)
    assert FaultKind.UNGROUNDED_ROOM not in {f.kind for f in detect_faults(old)}  # made before the director
    rooms = room_turns(old)  # still measured
    assert rooms and all(r.grounded is None for r in rooms.values())
    card = dana.model_dump(exclude={"id"})
    for m in card["members"]:
        m.pop("agenda")
    assert parse_case(card, case_id="old-card", source="test").members[0].agenda == []


# ---- the counsellor rungs (issue 42 item 3) ----------------------------------------------------------------------


def _counsellor_view(case):
    turns = [
        said(1, "Dana", "You took the promotion and I eat alone until nine.", ("Theo",)),
        said(2, "Therapist", "Theo, the promotion keeps you at work until nine most nights.", ("Theo",)),
        said(3, "Theo", "The IVF money has to come from somewhere, Dana.", ("Dana",)),
    ]
    return build_view(case, turns, member_turns=2, max_turns=6)


def test_a_rung_line_repeating_a_line_already_said_is_drawn_again(dana):
    from simulator.supporters import parse_supporter_spec

    view = _counsellor_view(dana)
    repeat = {"speak": True, "targets": ["Theo"], "strategy": view_strategy(dana), "text": view.transcript[1].text}
    fresh = {**repeat, "text": "It sounds like you are weighing the IVF money against the evenings Dana spends alone."}
    client = FakeModelClient(replies=[repeat, fresh])
    decision = asyncio.run(parse_supporter_spec("generic:fake/model", client).decide(view))
    assert decision.text == fresh["text"] and decision.draws == 2
    assert "repeated words already said" in client.calls[1].prompt.instructions
    assert client.calls[0].prompt.avoid[:2] == (view.transcript[2].text, view.transcript[1].text)  # latest first


def test_the_built_in_counsellor_is_never_redrawn_but_a_line_cut_at_its_cap_is_invalid(dana):
    from simulator.supporters import TEXT_FINISH_WORDS, TEXT_WORDS, InvalidDecision, parse_supporter_spec

    view = _counsellor_view(dana)
    long = " ".join(["word"] * (TEXT_WORDS + TEXT_FINISH_WORDS - 1)) + " much."
    cut = {"speak": True, "targets": ["Theo"], "strategy": view_strategy(dana), "text": long}
    with pytest.raises(InvalidDecision, match="was cut"):
        asyncio.run(parse_supporter_spec("fake/model", FakeModelClient(replies=[cut])).decide(view))
    copy = {**cut, "text": view.transcript[2].text}  # the supporter under test copying a member: kept, measured
    client = FakeModelClient(replies=[copy])
    assert asyncio.run(parse_supporter_spec("fake/model", client).decide(view)).text == copy["text"]
    assert view.transcript[2].text in client.calls[0].prompt.avoid  # (the embedded model's decoding avoids it)
    assert "name the particular thing" in client.calls[0].prompt.instructions


def view_strategy(case):
    from personas.taxonomy import strategies_for

    return next(iter(strategies_for(case.group)))


# ---- where a rule cannot see it: yes/no questions --------------------------------------------------------------


def test_the_questions_ask_only_what_the_rule_left_unflagged_and_record_failures(dana):
    from judges.room_audit import LINE_CONTEXT, ask_room, questions_for, room_questions
    from tests._stress_fixtures import record

    rec = record(dana, [("m", "Dana", "You took the promotion and now he's never home."),
                        ("m", "Theo", "I'm here for you, let's work through this together."),
                        ("m", "Dana", "Maybe we both need to look at what happens when we get home.")])  # fmt: skip
    rec = rec.model_copy(update={"turns": [t.model_copy(update={"addressees": [o]}) for t, o in
                                           zip(rec.turns, ["Theo", "Dana", "Theo"], strict=True)]})  # fmt: skip
    # turn 2 is the counsellor's voice by rule: only turns 1 and 3 are asked, and only the validated question
    assert set(room_questions()) == {"counsellor_voice"}
    assert questions_for(rec) == [(1, "counsellor_voice"), (3, "counsellor_voice")]
    cut = room_questions()["counsellor_voice"].yes_at

    def yes(call):
        return cut + 0.01 if "look at what happens" in call.prompt.instructions else cut - 0.01

    client = FakeModelClient(yes=yes)
    answers = asyncio.run(ask_room(rec, client, "fake/judge"))
    assert [(a.turn, a.holds) for a in answers] == [(1, False), (3, True)]
    # the line alone, quoted as data: no other line of the transcript, no card, no inner state
    last = client.calls[-1].prompt
    assert last.context == LINE_CONTEXT and '"Maybe we both need to look at what happens when we get home."' in (
        last.instructions
    )
    assert "promotion" not in last.instructions and "work through" not in last.instructions
    assert all(c.role == "judge" for c in client.calls)
    client = FakeModelClient(yes=lambda call: RuntimeError("server down"))
    failed = asyncio.run(ask_room(rec, client, "fake/judge"))
    assert all(a.p_yes is None and a.holds is None and a.failure == "server down" for a in failed)
    assert len(failed) == 2


def test_a_frequent_english_word_alone_does_not_ground_a_line_unless_the_card_quotes_it(dana):
    """Issue 42's second held-out set: "especially" (in no other shipped card) made a generic line "grounded".
    English's most frequent words never count alone; a word the card quotes as the case's own still does."""
    nadia = resolve_case("nadia-and-craig")
    generic = "It's been a struggle at times, especially since the company went through that thing."
    assert read_line(generic, "Craig", ["Nadia"], nadia, []).grounded is None
    quoted = read_line("Theo always says later, and later never comes.", "Dana", ["Theo"], dana, [])
    assert quoted.grounded is not None and "later" in quoted.grounded  # Dana's trigger: "the word 'later'"


@pytest.mark.parametrize(
    ("text", "self_named"),
    [
        # issue 42 (3)'s live run: the card's sentence, read aloud by Shane
        (
            "My father drank away a small farm in County Clare and Shane swore he would never be that man.",
            "Shane swore",
        ),
        ("Shane never once said no to his mother. I'm tired of it.", "Shane never"),
        ("I guess Shane is the problem, so.", "Shane is"),  # one of the verbs a self-named line says anywhere
        ("I swore I would never be my father, and here I am.", None),
        ('Dad always said "Shane will end up like me." He was nearly right.', None),  # quoted words
        ("Niamh, Shane's sorry. I'm sorry.", None),  # a possessive, not a subject
        ("Your mother told the whole town Shane lost his job.", None),  # reported after a verb, not a joiner
        ("Shane gotta stop lying to himself.", "Shane gotta"),  # the whole word, not "got" cut from it
        ("So Shane got angry and walked out.", "Shane got"),  # a joining word that opens the sentence
        # README command 1 (issue 42 (14)): the problem read aloud, the speaker's name before a verb in -ing
        ("Every talk ends with you listing what I missed and Shane going silent.", "Shane going"),
        ("Every talk ends with you listing what I missed and me going silent.", None),
    ],
)
def test_a_member_speaking_of_themself_by_name_is_in_the_third_person(text, self_named):
    shane = resolve_case("shane-and-niamh")
    r = read_line(text, "Shane", ["Niamh"], shane, [])
    assert r.third_person == self_named
    assert (FidelityCheck.SPEAKING_AS_OTHER in _checks(shane, text, "Shane", ("Niamh",))) is (self_named is not None)


def test_a_fact_given_away_inside_ive_heard_is_found():
    """Issue 42 (3)'s live run: Niamh, who works the twelve-hour shifts, to Shane; "I've heard" now opens a clause
    as "I heard" did. Her own shifts said as hers, or his redundancy said to him, are not given away."""
    shane = resolve_case("shane-and-niamh")
    heard = "I've heard about how you're working twelve-hour shifts at a nursing home. It's tough."
    assert read_line(heard, "Niamh", ["Shane"], shane, []).given_away == (
        '"about how you\'re working twelve-hour shifts at a nursing home", told of Shane'
    )
    own = "I've heard you say I'm never home, but I work twelve-hour shifts at a nursing home."
    assert read_line(own, "Niamh", ["Shane"], shane, []).given_away is None
    his = "I've been told you were made redundant from the plant in January, and I'm sorry."
    assert read_line(his, "Niamh", ["Shane"], shane, []).given_away is None


PATTERN = "I notice that each time this comes up, voices rise and the same people end up on opposite sides."


@pytest.mark.parametrize(
    ("text", "voice"),
    [
        # issue 42 (4)'s carter run: the counsellor's turn 3 in other words (the echo rule needs the same words)
        ("It feels like every time this comes back up, voices are rising and the same members end up on either side.",
         "re-says the counsellor's turn 3 in other words (com, end, ris, sam, sid, tim, voic)"),
        ("Voices rise at home too, and it's always me on my own side.", None),  # an answer in a few of its words
        ("Yes. Every time this comes up at home, voices rise, and it's me against the rest of them.", None),
        ("'Opposite sides'? There's one side here, and it's Marcus's.", None),  # its words quoted, to dispute them
    ],
)  # fmt: skip
def test_a_member_re_saying_the_counsellor_in_other_words_speaks_in_its_voice(text, voice):
    carter = resolve_case("carter-family")
    earlier = [said(1, "Marcus", "My wife died four years ago, and now there's this new person taking over."),
               said(2, "Jordan", "I can't imagine being without her.", ("Marcus",)), said(3, "Therapist", PATTERN)]  # fmt: skip
    assert read_line(text, "Kayla", ["Therapist"], carter, earlier).counsellor_voice == voice
    assert (FidelityCheck.SPEAKING_AS_OTHER in _checks(carter, text, "Kayla", ("Therapist",), earlier)) is (
        voice is not None
    )


def test_the_audit_and_the_live_check_read_counsellor_voice_alike():
    """One order decides counsellor voice for the room measure and the re-ask: a line that echoes a member and
    says the counsellor's line again in other words is in its voice for both (the live check read only the echo)."""
    carter = resolve_case("carter-family")
    marcus = "My wife died four years ago, and now there's this new person taking over."
    earlier = [said(1, "Marcus", marcus), said(2, "Therapist", PATTERN)]
    both = (
        "Now there's this new person taking over, he says, and every time this comes back up, voices are rising and "
        "the same members end up on either side."
    )
    r = read_line(both, "Kayla", ["Therapist"], carter, earlier)
    assert r.echo is not None and r.echo.startswith("turn 1")
    assert r.counsellor_voice is not None and r.counsellor_voice.startswith("re-says the counsellor's turn 2 in other")
    flags = check_line(both, speaker="Kayla", case=carter, turns=earlier, addressees=["Therapist"], language="en",
                       finish_reason="stop")  # fmt: skip
    assert FidelityCheck.ECHO in [f.check for f in flags]
    assert any(f.check is FidelityCheck.SPEAKING_AS_OTHER and f.turn == 2 for f in flags)


@pytest.mark.parametrize(
    ("text", "seat"),
    [
        ("I feel forced into this. But as the counsellor, I can't ignore that fact.", True),  # lena-and-omar run
        ("Speaking as your therapist, I think you two need a break.", True),
        ("As the counsellor said, we keep going round and round.", False),  # the counsellor, referred to
        ("As a nurse, I've watched overdoses come into my ICU.", False),
    ],
)
def test_a_member_taking_the_counsellors_seat_speaks_in_its_voice(text, seat):
    lena = resolve_case("lena-and-omar")
    assert (read_line(text, "Lena", ["Therapist"], lena, []).counsellor_voice is not None) is seat
