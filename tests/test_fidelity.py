"""Per-turn fidelity checks, the re-ask path and flags in the session record (mocked replies, no model)."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import create_model

from personas.library import resolve_case
from personas.taxonomy import MEMBER_MOVES, SOFTENING_MOVES
from simulator.engine import run_session
from simulator.llm.fake import FakeModelClient, FakeReply
from simulator.members import (
    DIRECTED_REASKS,
    FAULT_REASKS,
    FINISH_WORDS,
    MAX_SOFTEN_STEP,
    RESEED,
    WORD_CAPS,
    member_turn,
    state_schema,
    state_word_caps,
)
from simulator.records import FidelityCheck, SessionRecord, Turn
from simulator.session_state import SessionConfig
from simulator.supporters import SilentSupporter
from simulator.turn_checks import (
    NEAR_DUPLICATE_OVERLAP,
    check_line,
    check_state,
    emotion_range,
    overlap,
    room_lexicon,
    session_language,
    whole_sentences,
)
from tests._sim_fakes import RoomScript

Check = FidelityCheck


@pytest.fixture
def case():
    return resolve_case("arjun-and-meera")


def member(index: int, speaker: str, text: str, to: str = "Therapist") -> Turn:
    return Turn(index=index, speaker=speaker, kind="member", addressees=[to], text=text)


def supporter(index: int, text: str, to: str = "Arjun") -> Turn:
    return Turn(index=index, speaker="Therapist", kind="supporter", addressees=[to], text=text)


EARLIER = [
    member(1, "Meera", "He never listens when I talk about the money, not once in ten years."),
    supporter(2, "Arjun, what happens for you when Meera says she feels alone with the bills?"),
]
# after a counsellor turn the member is asked first: did its words blame / understand him? then Meera: blame her?
NEITHER = (" no", " no", " no")
UNDERSTOOD = (" no", " yes", " no")


def line_checks(case, text, *, turns=EARLIER, to=("Therapist",), finish="stop", speaker="Arjun"):
    flags = check_line(
        text, speaker=speaker, case=case, turns=turns, addressees=list(to), language="en", finish_reason=finish
    )
    return [f.check for f in flags], flags


def state(emotion="hurt", intensity=6, *, landed="it stung", reason="same old fight", cue="", move="defend"):
    return {"emotion": emotion, "intensity": intensity, "landed": landed, "reason": reason, "cue": cue, "move": move}


def state_checks(case, s, *, turns=EARLIER, speaker="Arjun"):
    fields = {k: s[k] for k in ("landed", "cue", "emotion", "reason")}
    flags = check_state(
        fields,
        intensity=s["intensity"],
        move=s["move"],
        speaker=speaker,
        turns=turns,
        language="en",
        word_caps=state_word_caps(),
    )
    return [f.check for f in flags], flags


# ---- each check ---------------------------------------------------------------------------------------------


def test_a_clean_line_passes(case):
    assert line_checks(case, "I work all day at the shop and still I'm the bad guy?")[0] == []
    # the card gives no hours: a figure of the member's own making is the one thing flagged
    assert line_checks(case, "I work twelve hours a day and still I'm the bad guy?")[0] == [Check.INVENTED_FIGURE]


def test_verbatim_repeat_of_another_members_turn_is_a_duplicate(case):
    kinds, flags = line_checks(case, "He never listens when I talk about the money, not once in ten years.")
    assert kinds == [Check.DUPLICATE]
    assert "turn 1 (Meera)" in flags[0].detail and flags[0].evidence.startswith("turn 1:")


def test_near_duplicate_above_the_documented_threshold(case):
    text = "She never listens when I talk about the money, not once in ten years, honestly."
    assert overlap(text, EARLIER[0].text) >= NEAR_DUPLICATE_OVERLAP
    assert line_checks(case, text)[0] == [Check.NEAR_DUPLICATE]
    # sharing a phrase or two is not a repeat
    other = "When I talk about the money she rolls her eyes at me."
    assert overlap(other, EARLIER[0].text) < NEAR_DUPLICATE_OVERLAP
    assert line_checks(case, other)[0] == []


def test_short_lines_are_never_called_repeats(case):
    turns = [member(1, "Meera", "I don't know."), supporter(2, "Go on.")]
    assert line_checks(case, "I don't know.", turns=turns)[0] == []


def test_speaking_for_another_member(case):
    kinds, flags = line_checks(case, "I work all day. Meera: And I do everything else!")
    assert kinds == [Check.SPEAKING_AS_OTHER] and "Meera" in flags[0].detail
    assert line_checks(case, "Thank you both for sharing, that took courage.")[0] == [Check.SPEAKING_AS_OTHER]
    assert line_checks(case, "Arjun feels nobody in this house sees him.")[0] == [Check.SPEAKING_AS_OTHER]
    # the embedded member model wrote this one: its own name, an adverb, then a verb
    assert line_checks(case, "So, you know, Arjun always has these lists.")[0] == [Check.SPEAKING_AS_OTHER]
    assert line_checks(case, "Arjun honestly tried, and you never saw it.")[0] == [Check.SPEAKING_AS_OTHER]
    # about another member, to the counsellor: not speaking as another, and not out of role
    assert line_checks(case, "Meera always has these lists.")[0] == []
    # said TO Meera, it speaks of her as someone absent (issue 42): the third-person check, not speaking_as_other
    assert line_checks(case, "Meera always has these lists.", to=("Meera",))[0] == [Check.THIRD_PERSON]
    assert line_checks(case, "Meera, you never see what I carry.", to=("Meera",))[0] == []  # a vocative is fine


def test_copied_speaker_tag_from_the_transcript_rendering(case):
    kinds, flags = line_checks(case, 'Arjun (to Therapist): "I work all day and nobody notices.')
    assert Check.COPIED_TAG in kinds and flags[0].evidence == "Arjun (to Therapist):"


def test_a_self_report_field_that_copies_the_prompts_rendering(case):
    kinds, flags = state_checks(case, state(landed="The last line was Therapist (to Couple): 'Can I pause us?'"))
    assert kinds == [Check.COPIED_TAG] and flags[0].field == "landed" and "Therapist (to Couple):" in flags[0].detail
    kinds, flags = state_checks(case, state(emotion="lonely and angry (7/10)", intensity=7))
    assert kinds == [Check.COPIED_TAG] and flags[0].field == "emotion"
    assert state_checks(case, state(reason="the last line was Meera's, and it hurt"))[0] == [Check.COPIED_TAG]
    assert state_checks(case, state(cue="Therapist: 'what hurts the most?'"))[0] == []  # a cue quotes by design
    assert state_checks(case, state(landed="like the last line she always uses"))[0] == []  # words, not the prompt's
    kinds, flags = state_checks(case, state(landed="Fine. Meera: you never listen."))
    assert kinds == [Check.COPIED_TAG] and "('Meera:')" in flags[0].detail  # a tag opening a sentence
    # the embedded member restating the verdict its prompt gave it names itself mid-sentence: not a transcript tag
    verdict = "The counsellor's words showed understanding of Arjun: Arjun feels more heard and a little calmer."
    assert state_checks(case, state(landed=verdict))[0] == []


def test_language_switch(case):
    assert line_checks(case, "Yo trabajo todo el día y ella no lo ve, es muy difícil para mí.")[0] == [
        Check.LANGUAGE_SWITCH
    ]
    kinds, flags = line_checks(case, "I work all day and nobody sees it 我.")
    assert kinds == [Check.LANGUAGE_SWITCH] and "Chinese" in flags[0].detail
    kinds, flags = state_checks(case, state(reason="she is dismissing me 但是"))
    assert kinds == [Check.LANGUAGE_SWITCH] and flags[0].field == "reason"
    assert session_language(case) == "en"


def test_line_cut_off_at_the_token_limit(case):
    assert line_checks(case, "I work all day and then I come home and she", finish="length")[0] == [Check.CUT_OFF]
    assert line_checks(case, "I work all day, I really do.", finish="length")[0] == [Check.CUT_OFF]
    assert line_checks(case, "I just want to", finish="stop")[0] == [Check.CUT_OFF]  # ends mid-phrase
    assert line_checks(case, "Whatever", finish="stop")[0] == []  # trailing off is allowed when it stopped itself
    # a stop string hit after a comma: the sentence is not finished (issue 42's nakamura run)
    assert line_checks(case, "I know you might be worried about your son's health,", finish="stop")[0] == [
        Check.CUT_OFF
    ]


def test_cut_off_self_report_field(case):
    kinds, flags = state_checks(case, state(landed="when she said that I felt a"))
    assert kinds == [Check.CUT_OFF] and flags[0].field == "landed" and "mid-phrase" in flags[0].detail
    longest = state_word_caps()["reason"]
    assert longest == WORD_CAPS["reason"] + FINISH_WORDS
    kinds, flags = state_checks(case, state(reason=" ".join(["word"] * longest)))
    assert kinds == [Check.CUT_OFF] and f"{longest}-word limit" in flags[0].detail
    # the grammar makes a field at its longest end on a full stop: that proves nothing
    assert state_checks(case, state(reason=" ".join(["word"] * longest) + "."))[0] == [Check.CUT_OFF]
    assert state_checks(case, state(reason=" ".join(["word"] * (longest - 1)) + "."))[0] == []
    assert state_checks(case, state(reason=" ".join(["word"] * WORD_CAPS["reason"])))[0] == []  # could go on
    # an object pronoun ends a phrase; a subject pronoun or an article does not (a member's reason in a run)
    assert state_checks(case, state(reason="the counsellor acknowledged my effort and I felt heard by him"))[0] == []
    assert state_checks(case, state(reason="she keeps ignoring me"))[0] == []
    assert state_checks(case, state(reason="I felt heard because he"))[0] == [Check.CUT_OFF]
    # records from before word caps: a field exactly at the old character cap was cut by the grammar
    legacy = check_state(
        {"landed": "x" * 60, "emotion": "hurt"}, intensity=5, move=None, speaker="Arjun", turns=[], language="en",
        char_caps={"landed": 60},
    )  # fmt: skip
    assert [f.check for f in legacy] == [Check.CUT_OFF]


def test_emotion_field_must_name_an_emotion(case):
    kinds, _ = state_checks(case, state(emotion="Meera's tone of voice remained a"))
    assert Check.NOT_AN_EMOTION in kinds and Check.CUT_OFF in kinds


def test_feelings_named_as_nouns_are_emotions(case):
    """'numbness', 'coldness', 'tension' and 'warmth' are how people name feelings: the embedded member model wrote
    them in benchmark runs, and each was re-asked as not an emotion."""
    for emotion in ("numbness", "coldness", "tension", "loneliness", "warmth", "fury"):
        assert emotion_range(emotion) is not None, emotion
        assert Check.NOT_AN_EMOTION not in state_checks(case, state(emotion=emotion, intensity=5))[0]


def test_inconsistent_intensity(case):
    assert state_checks(case, state(emotion="calm", intensity=9))[0] == [Check.INTENSITY_MISMATCH]
    assert state_checks(case, state(emotion="furious", intensity=2))[0] == [Check.INTENSITY_MISMATCH]
    assert state_checks(case, state(emotion="slightly annoyed", intensity=8))[0] == [Check.INTENSITY_MISMATCH]
    assert state_checks(case, state(emotion="hurt and defensive", intensity=8))[0] == []
    assert emotion_range("very hurt") == (4, 10)


def test_intensity_one_point_outside_the_range_is_a_degree_not_a_mismatch(case):
    """The embedded members' first self-reports of 'indignant' and 'frustration' at 10 (ranges stop at 9) faulted
    sessions of the sensitivity run; a number one point past its word's range is not a contradiction."""
    assert emotion_range("indignant") == (3, 9) and emotion_range("frustration") == (2, 9)
    assert state_checks(case, state(emotion="indignant", intensity=10))[0] == []
    assert state_checks(case, state(emotion="frustration", intensity=10))[0] == []
    assert state_checks(case, state(emotion="furious", intensity=5))[0] == []
    assert state_checks(case, state(emotion="warmth", intensity=10))[0] == [Check.INTENSITY_MISMATCH]  # fits 1-7
    assert state_checks(case, state(emotion="furious", intensity=4))[0] == [Check.INTENSITY_MISMATCH]


def test_false_reference_to_the_counsellor(case):
    assert line_checks(case, "When you mentioned the motorbike accident, I froze.")[0] == [Check.FALSE_REFERENCE]
    assert line_checks(case, "When you said alone with the bills, that stung.")[0] == []
    kinds, _ = line_checks(case, "Like you said, it's about the money.", turns=EARLIER[:1])
    assert kinds == [Check.FALSE_REFERENCE]  # the counsellor has not spoken at all


def test_softening_needs_a_cause_in_the_supporters_last_turn(case):
    # earned: the cue is the supporter's words, and the supporter spoke after Arjun last did
    assert state_checks(case, state(move="soften", cue="alone with the bills"))[0] == []
    kinds, flags = state_checks(case, state(move="soften", cue="you are a good father"))
    assert kinds == [Check.UNEARNED_SOFTENING] and flags[0].field == "cue"
    assert state_checks(case, state(move="repair_attempt", cue=""))[0] == [Check.UNEARNED_SOFTENING]
    no_supporter = [EARLIER[0]]
    kinds, flags = state_checks(case, state(move="soften", cue="anything"), turns=no_supporter)
    assert kinds == [Check.UNEARNED_SOFTENING] and "has not spoken" in flags[0].detail
    # Arjun spoke after the supporter: that supporter turn no longer earns his softening
    later = [*EARLIER, member(3, "Arjun", "Fine, whatever you say.")]
    assert state_checks(case, state(move="soften", cue="alone with the bills"), turns=later)[0] == [
        Check.UNEARNED_SOFTENING
    ]


# ---- the schema ---------------------------------------------------------------------------------------------


def test_schema_offers_softening_moves_only_with_a_cause(case):
    with_cause = state_schema(case, "Arjun", can_soften=True).model_json_schema()
    without = state_schema(case, "Arjun", can_soften=False).model_json_schema()
    assert set(with_cause["properties"]["move"]["enum"]) == set(MEMBER_MOVES)
    assert not set(without["properties"]["move"]["enum"]) & SOFTENING_MOVES and "cue" not in without["properties"]
    assert list(with_cause["properties"])[-1] == "move"  # the move is picked after the feelings it follows from


def test_schema_caps_words_not_characters(case):
    props = state_schema(case, "Arjun").model_json_schema()["properties"]
    for name in ("landed", "emotion", "reason", "cue"):
        assert "maxLength" not in props[name] and props[name]["pattern"].startswith("^")
    pytest.importorskip("llama_cpp")
    from llama_cpp import LlamaGrammar

    from simulator.llm.embedded import schema_gbnf

    LlamaGrammar.from_string(schema_gbnf(state_schema(case, "Arjun").model_json_schema()), verbose=False)


def test_a_field_past_its_cap_may_only_go_on_to_end_its_sentence(case):
    import re

    from simulator.llm.structured import max_words, soft_max_words

    props = state_schema(case, "Arjun").model_json_schema()["properties"]
    assert max_words(props["reason"]) == WORD_CAPS["reason"] + FINISH_WORDS
    assert max_words(props["emotion"]) == WORD_CAPS["emotion"]  # a feeling is not a sentence
    field = re.compile(props["reason"]["pattern"])

    def words(n, end=""):
        return " ".join(["word"] * n) + end

    cap = WORD_CAPS["reason"]
    assert field.match(words(cap)) and field.match(words(3))  # up to the cap it may stop anywhere
    assert not field.match(words(cap + 1))  # past it only a sentence's end may close the field
    assert field.match(words(cap + 1, ".")) and field.match(words(cap + FINISH_WORDS, "?"))
    assert not field.match(words(cap + 1, ".") + " more.")  # at the first end
    assert not field.match(words(cap + FINISH_WORDS + 1, "."))
    assert max_words(props["cue"]) == WORD_CAPS["cue"] + FINISH_WORDS and re.match(props["cue"]["pattern"], "")
    plain = create_model("P", x=(str, soft_max_words(4))).model_json_schema()["properties"]["x"]
    assert max_words(plain) == 4 and not re.match(plain["pattern"], words(5, "."))


def test_the_supporter_s_text_past_its_cap_ends_on_its_sentence(case):
    """The counsellor's text is capped as the members' fields are (soft_max_words), not by characters: a grammar
    closing it at 300 characters cut it mid-sentence ("...and also making sure that", README command 1)."""
    import re

    from simulator.llm.structured import max_words
    from simulator.supporters import TEXT_FINISH_WORDS, TEXT_WORDS, decision_schema
    from simulator.view import intake_of

    for style in (None, "sides"):
        field = decision_schema(intake_of(case), style).model_json_schema()["properties"]["text"]
        assert "maxLength" not in field and max_words(field) == TEXT_WORDS + TEXT_FINISH_WORDS
        pattern = field["pattern"]
        if style == "sides":  # it opens on whom it sides against and its ally ("Meera, Arjun"); the same cap after
            assert re.match(pattern, "Meera, Arjun is right and you keep shutting him out.")
            assert not re.match(pattern, "It's hurting me too.") and not re.match(pattern, "Arjun, you are right.")
            pattern = pattern.replace("(Meera, Arjun) ", "", 1)
        text = re.compile(pattern)
        first = "Arjun, I can hear how exhausted and alone you have felt, carrying every one of the household bills."
        second = (
            "Meera, when he goes quiet like that, I wonder what happens inside you, and whether you could tell him "
            "what you need from him right now, and also making sure that he hears it."
        )
        said = f"{first} {second}"  # 53 words: the cap falls inside the second sentence, which ends within 56
        assert len(first.split()) < TEXT_WORDS < len(said.split()) <= TEXT_WORDS + TEXT_FINISH_WORDS
        cut = said[: said.index("making sure that") + len("making sure that")]  # where the character cap cut
        assert len(cut.split()) > TEXT_WORDS and not text.match(cut)  # past the cap it may not stop mid-sentence
        assert text.match(said)  # it goes on to the end of the sentence it is in
        assert not text.match(said + " Take your time.")  # and stops at that end
        assert text.match(first) and text.match(first[:-1]) and text.match("")  # under the cap: as before; a pass
        endless = " ".join(["and then"] * 30) + "."  # no sentence end within the finishing words
        assert not text.match(endless)


def test_no_field_may_end_mid_phrase(case):
    """The grammar closes a field only on a word that ends a phrase: a cue once ended "...frustration...',"."""
    import re

    from simulator.llm.structured import soft_max_words
    from simulator.turn_checks import field_cut_off

    props = state_schema(case, "Arjun").model_json_schema()["properties"]
    plain = create_model("P", x=(str, soft_max_words(4))).model_json_schema()["properties"]["x"]
    for field in (props["cue"], props["reason"], props["emotion"], plain):
        rx = re.compile(field["pattern"])
        for end in ",;:(-–—":
            assert not rx.match(f"he said{end}") and field_cut_off(f"he said{end}")
        assert rx.match("he said.") and rx.match("hurt") and rx.match("'hurt'")
    cue = re.compile(props["cue"]["pattern"])
    assert not cue.match("Therapist says, 'Underneath the frustration...',")
    assert cue.match("Therapist says, 'Underneath the frustration...'") and cue.match("")


# ---- the re-ask path ----------------------------------------------------------------------------------------


def _state_reply(reading="missed", **kw):
    base = state(**kw)

    def reply(call):
        out = {
            "landed": base["landed"],
            "emotion": base["emotion"],
            "intensity": base["intensity"],
            "felt_heard": 4,
            "toward": [{"member": "Meera", "warmth": 4, "tension": 7}],
            "reason": base["reason"],
            "move": base["move"],
        }
        if "cue" in call.schema.model_fields:
            out["cue"] = base["cue"]
        if "reading" in call.schema.model_fields:  # right after a counsellor turn (the numbers follow it)
            out["reading"] = reading
        return out

    return reply


def play(client, case, turns=EARLIER, speaker="Arjun", to=("Therapist",)):
    return asyncio.run(member_turn(client, case, list(turns), speaker, list(to), seed=11, window=16))


def test_a_failing_line_is_reasked_with_the_reason_and_a_new_seed(case):
    repeat = EARLIER[0].text
    fresh = "I work all day at the shop and still I'm the bad guy?"
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), repeat, fresh])
    turn = play(client, case)
    assert turn.text == fresh and turn.flags == [] and turn.move == "defend"
    assert [(r.part, r.attempt, r.text) for r in turn.reasks] == [("line", 1, repeat)]
    assert turn.reasks[0].flags[0].check == Check.DUPLICATE
    first, second = client.calls[4], client.calls[5]
    assert "not used" not in first.prompt.instructions
    assert "Your last answer was not used: it repeats turn 1 (Meera)" in second.prompt.instructions
    assert second.prompt.context == first.prompt.context  # the re-ask keeps the cached prefix
    assert second.seed == first.seed + RESEED
    assert len(turn.calls) == 5 and len(turn.reasks[0].calls) == 1  # three appraisals, the self-report, the line


def test_a_repeated_line_is_reasked_with_the_earlier_line_to_avoid(case):
    """A small model told in words alone wrote the same line again; its re-ask names the line it may not copy
    (the embedded model bans its token runs while decoding: tests/test_embedded_e2e.py)."""
    repeat = EARLIER[0].text
    client = FakeModelClient(
        replies=[*NEITHER, _state_reply(), repeat, "I work all day at the shop and still I'm the bad guy?"]
    )
    turn = play(client, case)
    assert turn.reasks[0].flags[0].turn == 1
    # every line avoids the counsellor's stock phrases (issue 42); a re-asked repeat puts the repeated line first,
    # then every other earlier line: kept from one, the model copied another
    voice = room_lexicon().counsellor_avoid
    assert voice and "I'm here for you" in voice
    assert client.calls[4].prompt.avoid == voice
    assert client.calls[5].prompt.avoid == (repeat, EARLIER[1].text, *voice)
    # other failures name no earlier line to avoid
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), FakeReply("I work all day and", "length"), "Fine."])
    play(client, case)
    assert client.calls[5].prompt.avoid == voice


def test_a_line_that_still_fails_is_accepted_and_flagged(case):
    client = FakeModelClient(
        replies=[
            *NEITHER,
            _state_reply(),
            FakeReply("I work all day and then", "length"),
            FakeReply("And she just", "length"),
        ]
    )
    turn = play(client, case)
    assert turn.text == "And she just"  # the later of two equally bad attempts
    assert [f.check for f in turn.flags] == [Check.CUT_OFF] and "length limit" in turn.flags[0].detail
    assert len(turn.reasks) == 1 and turn.reasks[0].text == "I work all day and then"


def test_a_line_the_length_limit_cut_after_full_sentences_keeps_them(case):
    """The 1.5B runs past "one or two short sentences" to the length limit; its full sentences are the line, the
    unfinished words after them are recorded as dropped, and nothing is re-asked. A cut line with no full sentence
    of MIN_KEPT_WORDS words is still cut, and re-asked."""
    long = "I work all day at the depot. Nobody here even notices it. And when I get home she just"
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), FakeReply(long, "length")])
    turn = play(client, case)
    assert turn.text == "I work all day at the depot. Nobody here even notices it."
    assert turn.dropped == "And when I get home she just" and turn.flags == [] and turn.reasks == []
    assert turn.calls[-1].finish_reason == "length" and not client.replies
    short = FakeReply("No. And when I get home she just", "length")  # "No." alone is too little to be the line
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), short, "I work all day and nobody sees it."])
    turn = play(client, case)
    assert turn.text == "I work all day and nobody sees it." and turn.dropped is None
    assert [f.check for f in turn.reasks[0].flags] == [Check.CUT_OFF]


@pytest.mark.parametrize(
    ("text", "kept", "dropped"),
    [
        ("Mr. Pike took the £9,500 deposit. Then he went", "Mr. Pike took the £9,500 deposit.", "Then he went"),
        ('She said "no." And then', 'She said "no."', "And then"),
        ("We married at St. Anne's in 2005. It was", "We married at St. Anne's in 2005.", "It was"),
        ("What? No! I never", "What? No!", "I never"),
        ("It cost 1.5 times the quote.", "It cost 1.5 times the quote.", ""),
        ("I just want to", "", "I just want to"),
    ],
)
def test_whole_sentences_end_at_a_sentence_mark_not_a_title_or_a_decimal(text, kept, dropped):
    assert whole_sentences(text) == (kept, dropped)


def test_the_attempt_with_fewer_failed_checks_is_kept(case):
    bad = "Arjun (to Therapist): He never listens when I talk about the money, not once in ten years."
    worse_later = 'Meera: "Yo trabajo todo el día y ella no lo ve, es muy difícil para mí'
    worse = [FakeReply(worse_later, "length")] * FAULT_REASKS  # both fault the session: asked once more
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), bad, FakeReply(worse_later, "length"), *worse])
    turn = play(client, case)
    assert turn.text == bad and {f.check for f in turn.flags} == {Check.COPIED_TAG, Check.NEAR_DUPLICATE}
    assert len(turn.reasks) == 1 + FAULT_REASKS and not client.replies


def test_a_line_whose_every_draw_would_fault_the_session_is_asked_once_more(case):
    """One re-ask may mend one flag and bring another (issue 42's held-out runs); while every draw so far makes a
    fault by itself (a repeat, out of role, another language), the line is asked FAULT_REASKS more times. A
    re-ask whose only flag makes no fault (cut off) ends the asking."""
    repeat, cut = EARLIER[0].text, FakeReply("I work all day and nobody here even notices what I carry, and", "length")
    fine = "I work all day at the shop and still I'm the one who gets blamed at home."
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), repeat, repeat, fine])
    turn = play(client, case)
    assert FAULT_REASKS >= 1 and turn.text == fine and turn.flags == []
    assert [[f.check for f in r.flags] for r in turn.reasks] == [[Check.DUPLICATE], [Check.DUPLICATE]]
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), repeat, cut, fine])
    turn = play(client, case)
    assert turn.text == cut.text and [f.check for f in turn.flags] == [Check.CUT_OFF]
    assert client.replies == [fine]  # never asked


def test_between_equally_bad_attempts_the_one_that_repeats_nothing_is_kept(case):
    cut = FakeReply("I work all day and nobody here even notices what I carry for this family, and", "length")
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), cut, EARLIER[0].text])
    turn = play(client, case)
    assert turn.text == cut.text and [f.check for f in turn.flags] == [Check.CUT_OFF]
    assert turn.reasks[0].flags[0].check == Check.DUPLICATE


def test_felt_heard_by_the_counsellor_moves_only_after_a_counsellor_turn(case):
    """Before the counsellor has said a word the self-report has no felt_heard to give (the 1.5B reported 10 in
    a member's first turn); it carries over, and is asked again right after a counsellor turn."""
    client = FakeModelClient(replies=[_state_reply(), "I'm tired of this."])
    turn = play(client, case, turns=[member(1, "Meera", "He never listens.")], to=("Meera",))
    assert "felt_heard" not in client.calls[0].schema.model_fields
    assert "felt_heard" not in client.calls[0].prompt.instructions
    assert turn.inner.felt_heard == 5  # the baseline, not the 4 the reply offered
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), "Fine."])
    turn = play(client, case)  # right after the counsellor: asked, and bounded by the reading (missed: 5 -> 4)
    assert "felt_heard" in client.calls[3].schema.model_fields and turn.inner.felt_heard == 4


def test_a_failing_self_report_is_reasked(case):
    client = FakeModelClient(
        replies=[
            *NEITHER,
            _state_reply(emotion="Meera's tone of voice remained a"),
            _state_reply(emotion="stung"),
            "Fine.",
        ]
    )
    turn = play(client, case)
    assert turn.inner.emotion == "stung" and turn.flags == []
    assert turn.reasks[0].part == "state" and {f.check for f in turn.reasks[0].flags} >= {Check.NOT_AN_EMOTION}
    assert "`emotion` must name a feeling" in client.calls[4].prompt.instructions


def test_unearned_softening_is_flagged_and_blocks_softening(case):
    """After a counsellor turn the member's appraisals found neither blaming nor understanding (`missed`), a
    softening move must quote the counsellor's words that earned it, or it is re-asked, flagged and blocked."""
    earlier = [member(1, "Arjun", "I'm done talking."), *EARLIER]
    earlier = [t.model_copy(update={"index": i + 1}) for i, t in enumerate(earlier)]
    soft = _state_reply("missed", move="soften", cue="you are a wonderful husband", emotion="calmer", intensity=4)
    client = FakeModelClient(replies=[*NEITHER, soft, soft, "Okay. Maybe I do shut down."])
    turn = play(client, case, turns=earlier)
    assert turn.move == "soften" and [f.check for f in turn.flags] == [Check.UNEARNED_SOFTENING]
    base = case.member("Arjun").baseline_intensity
    assert turn.inner.intensity == base and "softening blocked" in turn.inner.reason  # not lowered at all
    # earned: the cue quotes the supporter's last turn, so the two-point cap applies instead
    earned = _state_reply("missed", move="soften", cue="alone with the bills", emotion="calmer", intensity=4)
    turn = play(FakeModelClient(replies=[*NEITHER, earned, "Okay. Maybe I do shut down."]), case, turns=earlier)
    assert turn.flags == [] and turn.inner.intensity == base - MAX_SOFTEN_STEP and turn.cue == "alone with the bills"


def test_after_words_the_member_found_understanding_softening_needs_no_quoted_cue(case):
    """`softened`: the appraisal already found the counsellor's words understanding, the cause a cue had to show,
    so no cue is asked and a softening move is not flagged (the embedded member named its card's softeners instead
    of quoting, and good counsellors' sessions were left out as simulator faults for it)."""
    earlier = [member(1, "Arjun", "I'm done talking."), *EARLIER]
    earlier = [t.model_copy(update={"index": i + 1}) for i, t in enumerate(earlier)]
    soft = _state_reply("softened", move="soften", emotion="calmer", intensity=4)
    client = FakeModelClient(replies=[*UNDERSTOOD, soft, "Okay. Maybe I do shut down."])
    turn = play(client, case, turns=earlier)
    state_call = next(c for c in client.calls if c.schema is not None)
    assert "cue" not in state_call.schema.model_fields and "cue =" not in state_call.prompt.instructions
    base = case.member("Arjun").baseline_intensity
    assert turn.move == "soften" and turn.flags == [] and turn.cue == ""
    assert turn.inner.intensity == base - MAX_SOFTEN_STEP  # still capped per turn


def test_a_model_error_on_a_reask_keeps_the_earlier_attempt(case):
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), EARLIER[0].text, RuntimeError("server went away")])
    turn = play(client, case)
    assert turn.text == EARLIER[0].text and [f.check for f in turn.flags] == [Check.DUPLICATE]
    assert turn.reasks[-1].failure and "server went away" in turn.reasks[-1].failure


def test_flags_and_reasks_are_part_of_the_session_record(case, tmp_path):
    """RoomScript says the same line every turn: from turn 2 on each line is re-asked, then recorded flagged. (The
    line is about the case, so the director's grounding check passes it: repeats are what this test is about.)"""
    client = FakeModelClient(default=RoomScript(case, line="Since Rohan died this house has gone quiet."))
    rec = asyncio.run(run_session(case, SilentSupporter(), client, SessionConfig(max_turns=3, seed=1), session_id="f"))
    members = [t for t in rec.turns if t.kind == "member"]
    assert members[0].flags == [] and members[0].reasks == []
    for t in members[1:]:
        assert [f.check for f in t.flags] == [Check.DUPLICATE] and t.move == "defend"
        assert len(t.reasks) == 1 + FAULT_REASKS  # a repeat makes a fault by itself: asked once more
    # accounting covers the rejected attempts
    assert len(rec.calls) == sum(len(t.calls) + sum(len(r.calls) for r in t.reasks) for t in rec.turns) + sum(
        1 for t in rec.turns if t.tracker and t.tracker.call
    ) + sum(1 for d in rec.decisions if d.call and not d.speak)
    path = tmp_path / "s.json"
    path.write_text(rec.model_dump_json())
    back = SessionRecord.model_validate_json(path.read_text())
    assert back.turns[1].flags[0].check == Check.DUPLICATE
    assert json.loads(path.read_text())["turns"][1]["flags"][0]["check"] == "duplicate"


def test_old_records_without_fidelity_fields_still_load(case):
    rec = asyncio.run(
        run_session(case, SilentSupporter(), FakeModelClient(default=RoomScript(case)), SessionConfig(max_turns=1),
                    session_id="old")
    )  # fmt: skip
    data = json.loads(rec.model_dump_json())
    for t in data["turns"]:
        for key in ("move", "cue", "flags", "reasks"):
            t.pop(key)
    old = SessionRecord.model_validate(data)
    assert old.turns[0].move is None and old.turns[0].flags == []


def test_an_apology_in_character_is_not_a_refusal(case):
    from simulator.llm.structured import looks_like_refusal

    assert not looks_like_refusal("I'm sorry if I sound harsh, but it's not my fault.")  # failed a session before
    assert not looks_like_refusal("I'm sorry. I didn't mean it like that.")
    assert looks_like_refusal("I'm sorry, but I can't help with role-playing this.")
    assert looks_like_refusal("I apologize, but I cannot continue with this request.")


def test_a_directed_line_without_its_wordings_is_reasked_with_them_as_examples(case):
    """A 1.5B member told to voice a stressor often leaves it out; a stressor with `said_if` wordings re-asks
    the line (DIRECTION_IGNORED) naming them, and the same fact later decides delivery."""
    direction = "Say that lately you have thought about hurting yourself."
    wordings = ("hurting myself", "not being here any more", "end my life")
    vague = "It's been really tough lately... I'm not sure what to do about it."
    said = "Some nights I think about hurting myself, and then I go back to work like nothing happened."

    def directed(client):
        return asyncio.run(
            member_turn(
                client, case, list(EARLIER), "Arjun", ["Therapist"], seed=11, window=16, directive=direction,
                said_if=wordings,
            )
        )  # fmt: skip

    client = FakeModelClient(replies=[*NEITHER, _state_reply(), vague, said])
    turn = directed(client)
    assert turn.text == said and turn.flags == [] and turn.directive == direction
    assert [(r.part, r.text, r.flags[0].check) for r in turn.reasks] == [("line", vague, Check.DIRECTION_IGNORED)]
    assert '"hurting myself"; "not being here any more"' in client.calls[5].prompt.instructions
    # still left out after DIRECTED_REASKS re-asks: accepted with its flag (then a simulator fault by delivery)
    others = [f"I just want us to stop fighting about money, point {i}." for i in range(DIRECTED_REASKS)]
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), vague, *others])
    turn = directed(client)
    assert [f.check for f in turn.flags] == [Check.DIRECTION_IGNORED]
    assert len(turn.reasks) == DIRECTED_REASKS and len(client.calls) == 5 + DIRECTED_REASKS
    # with an opening, the last re-ask starts with the stressor's own words (and the line keeps them)
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), vague, *others[:-1], "so I stay in my car at night."])
    turn = asyncio.run(
        member_turn(
            client, case, list(EARLIER), "Arjun", ["Therapist"], seed=11, window=16, directive=direction,
            said_if=wordings, opening="Some days I think about hurting myself, and",
        )
    )  # fmt: skip
    assert turn.text == "Some days I think about hurting myself, and so I stay in my car at night." and turn.flags == []
    assert client.calls[-1].prompt.prefill.endswith('"Some days I think about hurting myself, and ')
    assert not any("hurting myself" in c.prompt.prefill for c in client.calls[:-1])  # only the last try
    # no wordings, or no direction: nothing is checked here
    client = FakeModelClient(replies=[*NEITHER, _state_reply(), vague])
    assert play(client, case).flags == []
