"""Checks on what a member said, against the turns before it: repeats (duplicate, near-duplicate), speaking as
another participant, a copied speaker tag, speaking of the addressee in the third person, an echo of another
speaker's line, a figure the card never gave, a language switch, a cut-off line, and a false reference to the
counsellor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from personas.case import Case
from personas.taxonomy import SUPPORTER_NAME
from simulator.records import FidelityCheck, FidelityFlag, Turn
from simulator.turn_checks._figures import invented_figure
from simulator.turn_checks._language import language_switch
from simulator.turn_checks._room import (
    CounsellorVoice,
    claimed,
    counsellor_voices,
    echo_of,
    given_away,
    self_named,
    third_person,
    wrong_address,
)
from simulator.turn_checks._text import (
    _TERMINAL,
    NEAR_DUPLICATE_OVERLAP,
    _flag,
    _tag,
    lexicon,
    overlap,
    whole_sentences,
    words,
)

MIN_REPEAT_WORDS = 4


def repeat_of(text: str, earlier: Sequence[Turn]) -> tuple[FidelityCheck, Turn, float] | None:
    """The closest earlier turn this text repeats (duplicate or near-duplicate), with the overlap."""
    ws = words(text)
    if len(ws) < MIN_REPEAT_WORDS:
        return None
    best: tuple[FidelityCheck, Turn, float] | None = None
    for t in earlier:
        if not t.text:
            continue
        if words(t.text) == ws:
            return FidelityCheck.DUPLICATE, t, 1.0
        ov = overlap(text, t.text)
        if ov >= NEAR_DUPLICATE_OVERLAP and (best is None or ov > best[2]):
            best = (FidelityCheck.NEAR_DUPLICATE, t, ov)
    return best


FIGURE_LEAD_WORDS = 3


def _with_lead(text: str, phrase: str) -> str:
    """`phrase` with the FIGURE_LEAD_WORDS words before it in `text`: what the re-ask may not write again ("the
    seder in 1974": the 1.5B re-drew the same year after the same words, issue 42 (13))."""
    at = text.find(phrase)
    lead = text[:at].split()[-FIGURE_LEAD_WORDS:] if at > 0 else []
    return " ".join([*lead, phrase])


def tagged_speaker(text: str, names: Sequence[str]) -> str | None:
    """The first of `names` whose transcript speaker tag (`Ben:`, `Therapist (to Ana):`) occurs in `text`."""
    return next((n for n in names if re.search(_tag(n), text)), None)


def check_line(
    text: str,
    *,
    speaker: str,
    case: Case,
    turns: Sequence[Turn],
    addressees: Sequence[str],
    language: str,
    finish_reason: str | None = None,
    given: Sequence[str] = (),
) -> list[FidelityFlag]:
    """Every check on what a member said, against the turns before it and what the member was `given` to say
    (a stressor's stage direction)."""
    flags: list[FidelityFlag] = []
    rep = repeat_of(text, turns)
    if rep is not None:
        kind, earlier, ov = rep
        how = "repeats" if kind == FidelityCheck.DUPLICATE else f"mostly repeats ({ov:.0%} of its word sequences)"
        flags.append(
            _flag(
                kind,
                f"it {how} turn {earlier.index} ({earlier.speaker}); say something new, in {speaker}'s own words",
                f"turn {earlier.index}: {earlier.text}",
                turn=earlier.index,
            )
        )
    others = [n for n in case.member_names if n != speaker] + [SUPPORTER_NAME]
    m = re.search(_tag(speaker), text) or re.search(r"(?:[\w'’]+\s*)?\(to [^)]*\)\s*:", text)
    if m:
        flags.append(
            _flag(FidelityCheck.COPIED_TAG, "it contains a transcript speaker tag; write only the spoken words", m[0])
        )
    for name in others:
        m = re.search(_tag(name), text)
        if m:
            flags.append(
                _flag(
                    FidelityCheck.SPEAKING_AS_OTHER,
                    f"it contains a line for {name}; write only what {speaker} says",
                    m[0],
                )
            )
            break
    echo = echo_of(text, speaker, turns)
    flags.extend(f for v in counsellor_voices(text, speaker, turns, echo) if (f := _voice_flag(v, speaker)))
    said = self_named(text, speaker)  # "Theo always has these lists", said by Theo
    if said:
        flags.append(
            _flag(FidelityCheck.SPEAKING_AS_OTHER, f"{speaker} speaks about {speaker} as someone else; use I", said)
        )
    to = next(iter(a for a in addressees if a in case.member_names and a != speaker), None)
    said_of = third_person(text, speaker, addressees, case, turns)
    if said_of:
        flags.append(
            _flag(
                FidelityCheck.THIRD_PERSON,
                f"{speaker} is talking to {to} but speaks of {to} as someone absent ('{said_of}'); say 'you' to {to}",
                said_of,
            )
        )
    elsewhere = wrong_address(text, speaker, addressees, case)
    if elsewhere:
        to_all = ", ".join(addressees) or "the room"
        flags.append(
            _flag(
                FidelityCheck.WRONG_ADDRESS,
                f"{speaker} is talking to {to_all} but speaks to {elsewhere} by name; speak to {to_all}, and of "
                f"{elsewhere} as someone in the room",
                elsewhere,
            )
        )
    handed = given_away(text, speaker, addressees, case)
    if handed:
        clause, whom = handed
        flags.append(
            _flag(
                FidelityCheck.GIVEN_AWAY,
                f'"{clause}" tells {speaker}\'s own story as {whom}\'s; {speaker} tells it with "I" and "my"',
                clause,
            )
        )
    took = claimed(text, speaker, case)
    if took:
        clause, whose = took
        flags.append(
            _flag(
                FidelityCheck.CLAIMED,
                f"\"{clause}\" tells {whose}'s story as {speaker}'s own; {speaker} speaks of it as {whose}'s",
                clause,
            )
        )
    figure = invented_figure(text, case, turns, given)
    if figure:
        flags.append(
            _flag(
                FidelityCheck.INVENTED_FIGURE,
                f"it states '{figure}', a figure that {speaker}'s notes and the room never gave; leave it out, or "
                "use the notes' own figure",
                _with_lead(text, figure),
            )
        )
    if echo is not None and rep is None:  # a line already flagged as a repeat is recorded, and re-asked, as one
        flags.append(
            _flag(
                FidelityCheck.ECHO,
                f"it re-says turn {echo.turn.index} ({echo.turn.speaker}: {echo.how}); answer it in {speaker}'s own "
                "words instead of repeating them",
                f"turn {echo.turn.index}: {echo.turn.text}",
                turn=echo.turn.index,
            )
        )
    switch = language_switch(text, language)
    if switch:
        flags.append(switch)
    cut = _line_cut_off(text, finish_reason)
    if cut:
        flags.append(_flag(FidelityCheck.CUT_OFF, cut, text[-60:]))
    if SUPPORTER_NAME in addressees:
        ref = false_reference(text, turns)
        if ref:
            flags.append(ref)
    return flags


def _voice_flag(voice: CounsellorVoice, speaker: str) -> FidelityFlag | None:
    """The flag a counsellor-voice reading raises; none for the echo of a counsellor line, which the echo flag
    (or the repeat flag) already re-asks."""
    if voice.how == "phrase":
        return _flag(FidelityCheck.SPEAKING_AS_OTHER, f"'{voice.words}' is the counsellor's voice, not {speaker}'s",
                     voice.words)  # fmt: skip
    if voice.how == "self_address":
        return _flag(
            FidelityCheck.SPEAKING_AS_OTHER,
            f"{speaker} speaks to {speaker} by name; speak as {speaker}, to the others in the room",
            speaker,
        )
    if voice.how == "paraphrase" and voice.turn is not None:
        return _flag(
            FidelityCheck.SPEAKING_AS_OTHER,
            f"it re-says the counsellor's turn {voice.turn.index} in other words ({voice.words}); say what "
            f"{speaker} thinks of it, in {speaker}'s own words",
            f"turn {voice.turn.index}: {voice.turn.text}",
            turn=voice.turn.index,
        )
    return None


# A line the length limit cut keeps its full sentences when they say this much: shorter, it is cut.
MIN_KEPT_WORDS = 4


def whole_line(text: str, finish_reason: str | None) -> tuple[str, str, str | None]:
    """A member line as said, the unfinished words after its last full sentence, and how it ended for the cut-off
    check: a line the length limit stopped is its full sentences, when they have MIN_KEPT_WORDS words, and ended
    (`stop`); otherwise it is what was drawn, ended as it was. The engine keeps what this keeps, and the audit,
    reading the kept line with its call's `length`, finds it whole as the engine did."""
    if finish_reason != "length":
        return text, "", finish_reason
    kept, dropped = whole_sentences(text)
    if len(words(kept)) < MIN_KEPT_WORDS:
        return text, "", finish_reason
    return kept, dropped, "stop"


def _line_cut_off(text: str, finish_reason: str | None) -> str | None:
    if finish_reason == "length":
        return "it stopped at the length limit; say it in one or two short, complete sentences"
    if _TERMINAL.search(text):
        return None
    ws = words(text)
    # a line ending on a comma stopped mid-sentence whatever stopped it (a stop string, issue 42's nakamura run:
    # "I know you might be feeling a bit nervous and worried about your son's health,")
    if finish_reason is None or text.rstrip().endswith((",", ";", ":")) or (ws and ws[-1] in lexicon().dangling):
        return "it stops mid-sentence; finish the sentence"
    return None


def false_reference(text: str, turns: Sequence[Turn]) -> FidelityFlag | None:
    """'You mentioned X' to the counsellor, when no supporter turn said anything like X."""
    verbs = "|".join(re.escape(v) for v in lexicon().reference_verbs)
    m = re.search(rf"\byou(?:'ve| have)?\s+(?:{verbs})\b(.*)", text, re.IGNORECASE)
    if not m:
        return None
    said = [t.text for t in turns if t.kind == "supporter" and t.text]
    if not said:
        return _flag(
            FidelityCheck.FALSE_REFERENCE,
            "the counsellor has not said anything yet; do not quote them",
            m[0][:80],
        )
    stop = lexicon().function_words
    content = [w for w in words(m[1])[:6] if len(w) >= 4 and w not in stop]
    if not content:
        return None
    spoken = {w[:5] for s in said for w in words(s)}
    if not any(w[:5] in spoken for w in content):
        return _flag(
            FidelityCheck.FALSE_REFERENCE,
            "the counsellor never said that; respond to what they did say",
            m[0][:80],
        )
    return None
