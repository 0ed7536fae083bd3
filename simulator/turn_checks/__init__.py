"""Per-turn fidelity checks on member turns: cheap, deterministic, no model call.

A member turn is checked before it is accepted (simulator.members re-asks a failing part with the reason, then
accepts it flagged), and the same functions audit saved sessions after the fact (judges.room_audit), so old and
new records are measured alike. Thresholds are module constants, documented here:

- repeats: the overlap coefficient of two turns' word-trigram sets, |A ∩ B| / min(|A|, |B|), compared with every
  earlier turn (any speaker). Identical word sequences are a `duplicate`; an overlap of NEAR_DUPLICATE_OVERLAP
  or more is a `near_duplicate`. Turns shorter than MIN_REPEAT_WORDS words are never called repeats ("No." twice
  is how people talk).
- speaking as another: another participant's speaker tag in the line (`Meera:`), a counsellor's stock phrase, or
  the speaker naming themselves as a third person (`Arjun feels ...`).
- copied tag: the transcript's own rendering (`Name (to X):`, or the speaker's `Name:`) inside the line; in a
  self-report field also a state's `(7/10)` or the prompt's "the last line was".
- language: characters of another script (one is enough: "a field ends in a Chinese token"), or, for lines of at
  least LANGUAGE_MIN_WORDS words, more function words of another language than of the session's.
- emotion: the field must contain a word of the emotion lexicon (simulator/data/fidelity.yaml), and the intensity
  must fall in the range of one of the matched emotions (shifted by "slightly" / "very").
- cut off: the call stopped at its token limit (`finish_reason == "length"`); a field that ends on a dangling word
  ("remained a") or a comma, or that used every word its schema allows (the grammar ended it, so a full stop
  there proves nothing); a line without closing punctuation when
  the finish reason is unknown. A member line the limit stopped after a full sentence of MIN_KEPT_WORDS words is
  kept as its full sentences and is not cut (`whole_line`; the rest is `Turn.dropped`).
- false reference: "you mentioned X" to the counsellor when the counsellor never spoke, or never said anything
  like X.
- unearned softening: a softening move (personas.taxonomy.SOFTENING_MOVES) needs a supporter turn since the
  member last spoke, and the member's `cue` must be words from it (SOFTENING_CUE_OVERLAP of its content words).

- room measures (issue 42, `_room`): grounded in the case, counsellor voice, the addressee in the third person,
  echo of another speaker; see that module. A figure (year, amount, age, count) that the card, the room and the
  member's stage direction never gave (`_figures`).

The checks live in this package by what they look at: the lexicon and word measures (`_text`), language
(`_language`), the line (`_line`), the self-report (`_self_report`), and what a re-ask is told (`_reask`).
"""

from simulator.turn_checks._figures import invented_figure, line_figures
from simulator.turn_checks._language import (
    LANGUAGE_MIN_WORDS,
    LANGUAGE_NAMES,
    detect_language,
    foreign_script,
    language_switch,
    session_language,
)
from simulator.turn_checks._line import (
    MIN_REPEAT_WORDS,
    NEAR_DUPLICATE_OVERLAP,
    check_line,
    false_reference,
    repeat_of,
    tagged_speaker,
    whole_line,
)
from simulator.turn_checks._reask import (
    FAULTING,
    REPEATS,
    invented_figures,
    reask_note,
    repeated_texts,
)
from simulator.turn_checks._room import (
    GENDERED_PRONOUNS,
    ITEM_WORDS,
    CaseWords,
    Echo,
    RoomLexicon,
    RoomReading,
    case_words,
    claimed,
    content_words,
    counsellor_phrase,
    echo_of,
    given_away,
    grounding,
    member_facts,
    pronoun_of,
    read_line,
    read_out,
    room_lexicon,
    self_address,
    stem,
    third_person,
    wrong_address,
)
from simulator.turn_checks._self_report import (
    LEGACY_CHAR_CAPS,
    SOFTENING_CUE_OVERLAP,
    STATE_TEXT_FIELDS,
    check_state,
    copied_rendering,
    cue_in,
    emotion_range,
    field_cut_off,
    softening_cause,
    unearned_softening,
)
from simulator.turn_checks._text import (
    LEXICON_PATH,
    Lexicon,
    card_sentences,
    lexicon,
    overlap,
    trigrams,
    whole_sentences,
    words,
)

__all__ = [
    "ITEM_WORDS",
    "CaseWords",
    "Echo",
    "RoomLexicon",
    "RoomReading",
    "case_words",
    "content_words",
    "counsellor_phrase",
    "echo_of",
    "grounding",
    "pronoun_of",
    "read_line",
    "read_out",
    "self_address",
    "room_lexicon",
    "stem",
    "third_person",
    "GENDERED_PRONOUNS",
    "wrong_address",
    "given_away",
    "invented_figure",
    "invented_figures",
    "claimed",
    "line_figures",
    "member_facts",
    "LANGUAGE_MIN_WORDS",
    "LANGUAGE_NAMES",
    "LEGACY_CHAR_CAPS",
    "LEXICON_PATH",
    "MIN_REPEAT_WORDS",
    "NEAR_DUPLICATE_OVERLAP",
    "REPEATS",
    "FAULTING",
    "SOFTENING_CUE_OVERLAP",
    "STATE_TEXT_FIELDS",
    "Lexicon",
    "check_line",
    "check_state",
    "copied_rendering",
    "cue_in",
    "detect_language",
    "emotion_range",
    "false_reference",
    "field_cut_off",
    "foreign_script",
    "language_switch",
    "lexicon",
    "overlap",
    "reask_note",
    "repeat_of",
    "repeated_texts",
    "session_language",
    "softening_cause",
    "tagged_speaker",
    "trigrams",
    "unearned_softening",
    "whole_line",
    "whole_sentences",
    "card_sentences",
    "words",
]
