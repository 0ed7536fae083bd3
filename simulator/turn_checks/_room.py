"""The room measures of a member line (issue 42): does it bring this case's own material, is it said in the
member's own role, and does it re-say another speaker's line. Rules over words, no model call, so they run live
(a failing line is re-asked) and on saved records alike (`judges.room_audit` audits old sessions the same way).

- grounded: the line carries a word specific to this case (a word of the card's problem, history, setting,
  backgrounds, needs and fears, triggers, softeners, private knowledge, agenda or viewpoints that at most
  `room.max_other_cards` other shipped cards use; names, feeling words, conversation glue and English's most
  frequent words (`room.common_rank`: whole tokens among cl100k_base's first ranks) never count), or
  ITEM_WORDS content words of one item of the card (a sentence, a trigger, a secret), a person the card names by
  what they are to someone, said as someone's ("my father" where the card has a father; not "Baby, ..."), or a word
  of an earlier line of another member that the card grounds (answering what was said about the case).
- counsellor voice: a counsellor's stock phrase (`counsellor_phrases`: validating, summarising, inviting, "I'm here
  for you", "tell me what happened"), the speaker's own name said as an address ("... made me feel alone, Theo.",
  said by Theo: a member speaking to themself is speaking from another seat, here the counsellor's), an echo of a
  counsellor line, or one of the last three counsellor lines said again in other words (`counsellor_paraphrase`).
- third person: a line to one member that speaks of them by name ("Theo always says later") or, when the card
  tells their gender, as he/she with no other person in the line it could mean ("Theo. I feel like he's ignoring me"),
  nor, in the lines just before, a person of the card outside the room it could mean (Rohan, a dead son, in
  "we're coping without him"); or a line whose speaker speaks of themself by name as absent ("... and Shane swore
  he would never be that man", said by Shane: the card read aloud; `self_named`).
- wrong address: a member spoken to by name in a line that is not to them ("I missed you too, Theo", to the
  counsellor).
- fact given away: a clause that tells one of the speaker's own facts as the listener's or another member's
  ("your father was absent through long shifts", said by Theo, whose father it was; `given_away`).
- fact claimed: the other way round, a clause that tells another member's fact as the speaker's own ("my father
  was never there", said by Dana of Theo's; `claimed`).
- echo: the line re-says another speaker's line: the same words, most of its word trigrams (at least
  ECHO_MIN_TRIGRAMS of them), or `room.echo_run` words in a row, read with I and you as one seat (`seatless`:
  a line re-said from the other side is still re-said).

Thresholds are data (simulator/data/fidelity.yaml, `room`), measured on the known-answer lines of
tests/benchmarks/data/room_lines.yaml and on RESCUE's real member lines (tests/benchmarks/room_bench.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import yaml

from personas.case import Case, Member
from personas.taxonomy import SUPPORTER_NAME
from simulator.llm.tokenizers import common_words
from simulator.records import Turn
from simulator.turn_checks._figures import invented_figure
from simulator.turn_checks._text import (
    _ADVERBS,
    _SELF_VERBS,
    LEXICON_PATH,
    NEAR_DUPLICATE_OVERLAP,
    card_sentences,
    lexicon,
    overlap,
    trigrams,
    unquoted,
    words,
)

# An echo by overlap needs this many shared word trigrams: on RESCUE's real lines, a short reply sharing two ("how
# you are with me") reached the near-duplicate overlap with the line it answered (tests/benchmarks/room_bench.py).
ECHO_MIN_TRIGRAMS = 3
# A line that shares this many content words with one item of the card (a sentence, a trigger, a secret) brings
# that item up, even in words other cards use too ("my parents divorced when I was nine").
ITEM_WORDS = 2


@dataclass(frozen=True)
class RoomLexicon:
    """The `generic_words`, `person_words` and `room` sections of simulator/data/fidelity.yaml."""

    generic: frozenset[str]
    person_groups: dict[str, str]  # word -> its group ("dad" -> "father")
    max_other_cards: int
    common_rank: int
    echo_run: int
    paraphrase_words: int
    paraphrase_share: float
    min_content_words: int
    ungrounded_min_member_turns: int
    ungrounded_share: float
    counsellor_patterns: tuple[re.Pattern[str], ...] = ()
    counsellor_avoid: tuple[str, ...] = ()  # what a member line's decoding may not say (Prompt.avoid)


@functools.lru_cache(maxsize=1)
def room_lexicon() -> RoomLexicon:
    data = yaml.safe_load(LEXICON_PATH.read_text(encoding="utf-8"))
    room = data["room"]
    return RoomLexicon(
        generic=frozenset(str(w) for w in data["generic_words"]),
        person_groups={str(w): g for g, ws in data["person_words"].items() for w in ws},
        max_other_cards=int(room["max_other_cards"]),
        common_rank=int(room["common_rank"]),
        echo_run=int(room["echo_run"]),
        paraphrase_words=int(room["paraphrase_words"]),
        paraphrase_share=float(room["paraphrase_share"]),
        min_content_words=int(room["min_content_words"]),
        ungrounded_min_member_turns=int(room["ungrounded_min_member_turns"]),
        ungrounded_share=float(room["ungrounded_share"]),
        counsellor_patterns=tuple(re.compile(x) for x in data.get("counsellor_patterns") or ()),
        counsellor_avoid=tuple(str(x) for x in data.get("counsellor_avoid") or ()),
    )


def stem(word: str) -> str:
    """A word without a plural `s`, cut to its first five letters (promotion/promoted, miscarriage/s, list/s)."""
    word = word.removesuffix("'s")
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:5]


@functools.lru_cache(maxsize=1)
def _not_content() -> frozenset[str]:
    lex = lexicon()
    return frozenset(lex.function_words | room_lexicon().generic | lex.stopwords.get("en", frozenset()))


def _is_feeling(word: str) -> bool:
    return any(word.startswith(e) for e in lexicon().emotions)


def content_words(text: str, names: Iterable[str] = ()) -> list[str]:
    """The words of `text` that can carry a case's material: not glue, not feeling words, not the given names."""
    skip = _not_content() | {n.lower() for n in names}
    return [
        w
        for w in words(text)
        if w not in skip and w.removesuffix("'s") not in skip and len(w) >= 3 and not w.isdigit() and not _is_feeling(w)
    ]


def card_texts(case: Case) -> list[str]:
    """Every text of the card a member could speak from (traits and styles aside: they are how, not what)."""
    out = [case.title, case.setting, case.presenting_problem, case.history]
    for m in case.members:
        out += [m.background, m.core_need, m.core_fear, *m.triggers, *m.softeners, *m.private_knowledge]
        out += list(getattr(m, "agenda", []) or [])
    out += [vp.viewpoint for vp in case.viewpoints]
    return [t for t in out if t]


def card_items(case: Case) -> list[str]:
    """The card's texts cut into items a member could bring up: sentences of the long fields, each list entry."""
    return [s for t in card_texts(case) for s in card_sentences(t)]


def _stems(case: Case) -> frozenset[str]:
    return frozenset(stem(w) for t in card_texts(case) for w in content_words(t, case.member_names))


@functools.lru_cache(maxsize=1)
def _library_stems() -> dict[str, frozenset[str]]:
    from personas.library import load_library

    return {c.id: _stems(c) for c in load_library()}


@dataclass(frozen=True)
class CaseWords:
    """What makes a line specific to one case: its card's specific word stems, the content stems of each of its
    items (a sentence, a trigger, a secret, a viewpoint) and the kinds of person it names."""

    specific: frozenset[str]
    persons: frozenset[str]  # person_words groups the card names (father, mother, ...)
    items: tuple[tuple[str, frozenset[str]], ...] = ()  # (the card's words, their content stems)
    quoted: frozenset[str] = frozenset()  # words the card quotes: specific even where English uses them often


def _card_key(case: Case) -> str:
    return case.model_dump_json()


@functools.lru_cache(maxsize=64)
def _case_words(key: str) -> CaseWords:
    case = Case.model_validate_json(key)
    lex = room_lexicon()
    quoted = {w for t in card_texts(case) for q in _QUOTED.findall(t) for w in words(q[0] or q[1])}
    common = common_words(lex.common_rank) - quoted  # a word the card quotes is the case's own ("the word 'later'")
    mine = frozenset(
        stem(w) for t in card_texts(case) for w in content_words(t, case.member_names) if not _common(w, common)
    )
    others = [s for cid, s in _library_stems().items() if cid != case.id]
    specific = frozenset(w for w in mine if sum(w in s for s in others) <= lex.max_other_cards)
    card = [w.removesuffix("'s") for t in card_texts(case) for w in words(t)]
    persons = frozenset(lex.person_groups[w] for w in card if w in lex.person_groups)
    items = tuple(
        (item, stems)
        for item in card_items(case)
        if len(stems := frozenset(stem(w) for w in content_words(item, case.member_names))) >= ITEM_WORDS
    )
    return CaseWords(specific=specific, persons=persons, items=items, quoted=frozenset(quoted))


def case_words(case: Case) -> CaseWords:
    return _case_words(_card_key(case))


_QUOTED = re.compile(r"(?<![A-Za-z])['\u2018]([^'\u2019]+)['\u2019](?![A-Za-z])|[\"\u201c]([^\"\u201d]+)[\"\u201d]")


def _common(word: str, common: frozenset[str]) -> bool:
    return word.removesuffix("'s") in common


_OWNED = re.compile(r"\b(?:my|your|his|her|our|their)\s+([^\W\d_]+(?:'s)?)", re.IGNORECASE)


def _owned_persons(text: str) -> list[str]:
    """Words said as someone's ("my father", "your mum", "our son"): a person of the card is one of these, not an
    endearment or a likeness ("Baby, there's room for it in here", "like I'm one of the kids")."""
    return [m.group(1).lower() for m in _OWNED.finditer(text.replace("\u2019", "'"))]


def grounding(text: str, case: Case) -> str | None:
    """Why the line is grounded in this case (the words that show it), or None when it brings nothing of it: a
    word specific to the card that is not one of English's most frequent (unless the card quotes it); two words
    of one card item; a person of the card said as someone's. Read against blind labels (issue 42 (10) in
    tests/benchmarks/README.md), a frequent word matched through a rarer form on the card ("remember" for the
    card's "remembered") and a word shared with another member's grounded line (own case 0 times in 15) said
    yes where the line was not the member's case; neither grounds a line now, so no earlier line is read."""
    cw = case_words(case)
    lex = room_lexicon()
    ws = content_words(text, case.member_names)
    common = common_words(lex.common_rank)
    found = list(dict.fromkeys(w for w in ws if stem(w) in cw.specific and (not _common(w, common) or w in cw.quoted)))
    if len(found) >= lex.min_content_words:
        return "card: " + ", ".join(found)
    mine = {stem(w) for w in ws}
    for item, stems in cw.items:
        shared = mine & stems
        if len(shared) >= ITEM_WORDS:
            return f"card item: {', '.join(sorted(shared))} ({item[:60]})"
    person = next((w for w in _owned_persons(text) if lex.person_groups.get(w.removesuffix("'s")) in cw.persons), None)
    return f"person on the card: {person}" if person else None


def counsellor_phrase(text: str) -> str | None:
    """The counsellor's stock phrase in a member's line (`counsellor_phrases`, then `counsellor_patterns`), if any;
    words the member quotes (their parents' "we'll always be here for you") are not their voice."""
    text = unquoted(text)
    low = " ".join(words(text))
    phrase = next((p for p in lexicon().counsellor_phrases if " ".join(words(p)) in low), None)
    if phrase is not None:
        return phrase
    plain = " ".join(text.lower().split())
    return next((m[0] for pat in room_lexicon().counsellor_patterns if (m := pat.search(plain))), None)


def _said_to(text: str, name: str) -> bool:
    """Whether `name` (its first word) is said as an address in `text`: at a sentence's start or set off by a comma,
    and ending there ("Theo, ...", "..., Theo."); "My name is Dana, and ..." and "I called Theo." are not."""
    first = re.escape(name.split()[0]) if name.split() else ""
    return bool(first) and re.search(rf"(?:^|[.!?]\s+|,\s*){first}\s*(?:[,.!?]|$)", text.strip()) is not None


def self_address(text: str, speaker: str) -> str | None:
    """The speaker's own first name said as an address, if the line has it (`_said_to`)."""
    return f"speaks to {speaker.split()[0]}, who is speaking" if _said_to(text, speaker) else None


def wrong_address(text: str, speaker: str, addressees: Sequence[str], case: Case) -> str | None:
    """The member spoken to by name in a line that is not to them, if the line has one: Dana, speaking to the
    counsellor, "I missed you too, Theo" (README command 1, turn 1). A line to the whole group is to everyone;
    names inside quoted words ("my mother used to say, 'Dana, come home'") are not the speaker's address."""
    if any(a not in case.member_names and a != SUPPORTER_NAME for a in addressees):
        return None  # the group label: every member is spoken to
    plain = unquoted(text)
    return next((n for n in case.member_names if n != speaker and n not in addressees and _said_to(plain, n)), None)


_HE = ("he", "him", "his", "he's", "he'd", "he'll", "himself")
_SHE = ("she", "her", "hers", "she's", "she'd", "she'll", "herself")
GENDERED_PRONOUNS = frozenset(_HE + _SHE)  # he- and she-words: a person spoken of, not to
_MALE_ROLES = ("husband", "father", "son", "brother", "stepfather", "stepson", "grandfather", "boyfriend", "uncle")
_FEMALE_ROLES = ("wife", "mother", "daughter", "sister", "stepmother", "stepdaughter", "grandmother", "girlfriend",
                 "aunt")  # fmt: skip


def pronoun_of(case: Case, name: str) -> tuple[str, ...] | None:
    """He- or she-words for a member, when the card tells: their role word, else how the card writes of them."""
    member = case.member(name)
    role = words(member.role)[:1]
    if role and role[0] in _MALE_ROLES:
        return _HE
    if role and role[0] in _FEMALE_ROLES:
        return _SHE
    about = [vp.viewpoint for vp in case.viewpoints if vp.target == name]
    about += [member.background, member.core_need, member.core_fear, *member.private_knowledge, *member.softeners]
    ws = [w for t in about for w in words(t)]
    he, she = sum(w in _HE for w in ws), sum(w in _SHE for w in ws)
    if he > she and he >= 2:
        return _HE
    if she > he and she >= 2:
        return _SHE
    return None


# Person words that tell a gender, for a person named in the lines before (`_someone_else_before`); a word that does
# not ("friend", "boss", "child") is not counted there: it is counted only in the line itself, as before.
_HE_PEOPLE = frozenset(
    {*_MALE_ROLES, "dad", "daddy", "papa", "appa", "baba", "grandpa", "fiancé", "nephew", "grandson"}
)
_SHE_PEOPLE = frozenset(
    {*_FEMALE_ROLES, "mum", "mom", "mummy", "mommy", "mama", "umma", "grandma", "granny", "nana", "fiancée", "niece"}
)
_EITHER_PEOPLE = ("friend", "partner", "child", "kid", "baby", "girl", "boy")
# A name on the card right after a person word ("their only son Rohan", "his fiancée Sneha", "a girl, Kim").
_INTRODUCED = re.compile(
    rf"\b({'|'.join(sorted({*_HE_PEOPLE, *_SHE_PEOPLE, *_EITHER_PEOPLE}, key=len, reverse=True))}),?\s+"
    r"([^\W\d_][^\W\d_'’-]+)(?=[\s,.;:!?'’)]|$)"
)


@functools.lru_cache(maxsize=64)
def _card_people(key: str) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
    case = Case.model_validate_json(key)
    members = {n.lower() for n in case.member_names}
    out: dict[str, tuple[str, ...] | None] = {}
    for text in card_texts(case):
        for m in _INTRODUCED.finditer(" ".join(text.split())):
            word, name = m[1].lower(), m[2]
            if not name[0].isupper() or name.lower() in members:
                continue
            said = _HE if word in _HE_PEOPLE else _SHE if word in _SHE_PEOPLE else None
            out[name.lower()] = said if out.get(name.lower(), said) == said else None  # told both ways: either
    return tuple(out.items())


def card_people(case: Case) -> dict[str, tuple[str, ...] | None]:
    """The people a card names who are not members, lower-cased, each with the he- or she-words the person word before
    the name tells (`son Rohan`: he), or None where it does not (`friend Rafael`: either)."""
    return dict(_card_people(_card_key(case)))


def _reach(speaker: str, earlier: Sequence[Turn]) -> list[Turn]:
    """The lines a pronoun may point back to, latest first: those since the speaker last spoke and that line of theirs
    (what they said and have heard since), or the previous line where they have not spoken yet."""
    turns = [t for t in earlier if t.text]
    own = next((i for i in range(len(turns) - 1, -1, -1) if turns[i].speaker == speaker), len(turns) - 1)
    return list(reversed(turns[max(own, 0) :]))


def _someone_else_before(
    name: str, pronouns: tuple[str, ...], case: Case, earlier: Sequence[Turn], speaker: str
) -> bool:
    """Whether the person a pronoun most recently points back to in the lines before is not the addressee `name`: the
    last person of the pronoun's gender (or of none told) named in the latest line of the reach that names one. A
    person counts when named: the addressee, another member the card gives that gender, a person of the card outside
    the room (`card_people`), or a person word of that gender ("my father", "your brother")."""
    people = {n: p for n, p in card_people(case).items() if p in (None, pronouns)}
    others = {n.lower() for n in case.member_names if n != name and pronoun_of(case, n) == pronouns}
    gendered = _HE_PEOPLE if pronouns == _HE else _SHE_PEOPLE
    for turn in _reach(speaker, earlier):
        named = [
            w for w in (x.removesuffix("'s") for x in words(turn.text))
            if w == name.lower() or w in others or w in people or w in gendered
        ]  # fmt: skip
        if named:
            return named[-1] != name.lower()
    return False


def third_person(
    text: str, speaker: str, addressees: Sequence[str], case: Case, earlier: Sequence[Turn] = ()
) -> str | None:
    """The words that speak of the member the line is addressed to as someone absent, or None.

    A bare he/she of the addressee's gender means the addressee unless someone else could be meant: before it in the
    line, a person word, another member of that gender or another name; failing that, and unless the line named the
    addressee before it ("Marek, he always knows"), the person the lines just before last named, when that is not the
    addressee (`_someone_else_before`: `earlier` is the transcript before the line). Why the lines before: on a grief
    card the absent person is the subject of the whole session, and Meera's "we're coping without him", said to
    Arjun, means Rohan, whom her own last line named (issue 42). Why no further: the rule reads names, not sense ("I
    keep his room as it was" is Rohan's room only to a reader of the card), so where the reach names no one the
    pronoun is still read as the addressee. The lines before only ever take a flag away, never add one."""
    to = [a for a in addressees if a in case.member_names and a != speaker]
    if len(to) != 1:
        return None
    name = to[0]
    plain = text.replace("\u2019", "'")
    m = re.search(
        rf"(?<![\w']){re.escape(name)}(?:'s\b| (?:(?:{_ADVERBS}|\w+ly) )?(?:{_SELF_VERBS}|says|thinks|never|always)\b)",
        plain,
    )
    if m:
        return m[0]
    if m := _subject_of(plain, (name, *_kin_words(case, name))):
        return m
    if m := re.search(rf"\b(?:{_TO_SOMEONE}) {re.escape(name)}(?= [\w£$€₦])", plain):
        return m[0]  # "I have been giving Avi £200", said to Avi (issue 42 (13))
    pronouns = pronoun_of(case, name)
    if pronouns is None:
        return None
    ws = words(plain)
    lex = room_lexicon()
    others = {n.lower() for n in case.member_names if n != name and pronoun_of(case, n) == pronouns}
    for i, w in enumerate(ws):
        if w not in pronouns:
            continue
        before = ws[:i]
        # another person the pronoun could mean: a person word, another member of that gender, or a name
        if any(b in lex.person_groups or b in others for b in before):
            return None
        if _other_name_before(plain, i, case):
            return None
        if name.lower() not in before and _someone_else_before(name, pronouns, case, earlier, speaker):
            return None
        return " ".join(ws[max(0, i - 3) : i + 3])
    return None


# A name after one of these, with the sentence going on, is the one a thing is done to or for, not the one spoken
# to ("giving Avi £200", "worried about Avi all week"); a name spoken to stands apart ("I'm giving you this, Avi").
_TO_SOMEONE = (
    "give|giving|gave|given|tell|telling|told|send|sending|sent|pay|paying|paid|show|showing|showed|buy|buying|"
    "bought|lend|lending|lent|blame|blaming|blamed|protect|protecting|protected|defend|defending|defended|about|"
    "against|with|from"
)
# What a member's children call them: said as the subject of a sentence to that member ("Mum thinks she's a burden",
# to Ayse), the word speaks of them as absent, like their name.
_KIN = {
    "mother": ("mum", "mom", "mama", "mummy", "mommy", "umma", "ma"),
    "father": ("dad", "daddy", "papa", "appa", "baba", "pa"),
    "grandmother": ("grandma", "granny", "nana", "gran"),
    "grandfather": ("grandpa", "grandad", "granddad"),
}
# A subject at a sentence's start or after a joining word, and a verb after it: the name (or kin word) is spoken of
# ("Sujin goes back to work at six weeks, ... and then Sujin decides"), not to ("Sujin, ..." is an address).
_SUBJECT_START = r"(?:^|[.!?;:]\s+|\b(?i:and|but|then|so|because|when|while|if|until|that|now)\s+)"
_THIRD_VERB = rf"(?:(?:{_ADVERBS}|\w+ly) )?(?:{_SELF_VERBS}|[a-z]+[^su\W]s|[a-z]+ed|will|would|won't|wouldn't)\b"


# Pasts a narrator tells a member's story with that `_THIRD_VERB`'s -ed does not reach ("Shane swore he would never
# be that man", the card's sentence said by Shane).
_TOLD_PAST = (
    "swore|were|went|made|kept|left|lost|took|gave|told|found|got|came|saw|grew|paid|spent|sent|met|stood|bought|"
    "held|ran|began|brought|became|fought|sat|wrote|drove|quit|hid|can|cannot|could|gotta|gonna|should|never|always"
)


def self_named(text: str, speaker: str) -> str | None:
    """The words that speak of the speaker by their own name as someone absent, outside quotation marks: the name
    before one of `_SELF_VERBS` anywhere ("I guess Theo is just tired", said by Theo), or as a sentence's subject
    before any third-person verb ("... and Shane swore he would never be that man", said by Shane: a member reading
    their card aloud; "... and Theo going silent or leaving the room", README command 1's Theo reading the
    problem aloud, with a verb in -ing). The name after a word that is not a joining word ("Mum tells everyone Shane is ...") is
    reported speech, and passes, unless its verb is one of `_SELF_VERBS`."""
    plain = unquoted(text)
    name = re.escape(speaker)
    m = re.search(rf"(?<![\w']){name}(?: (?:{_ADVERBS}|\w+ly))? (?:{_SELF_VERBS})\b", plain)
    if m:
        return m[0]
    return _subject_of(
        plain, (speaker,), rf"(?:(?:{_ADVERBS}|\w+ly) )?(?:(?:{_TOLD_PAST})\b|{_THIRD_VERB}|[a-z]{{2,}}ing\b)"
    )


def _kin_words(case: Case, name: str) -> tuple[str, ...]:
    role = words(case.member(name).role)[:1]
    return _KIN.get(role[0], ()) if role else ()


def _subject_of(text: str, names: Sequence[str], verb: str = _THIRD_VERB) -> str | None:
    """`name verb` with the name as a sentence's subject, for any of `names` (case-blind for kin words), or None."""
    for n in names:
        flags = 0 if n[:1].isupper() else re.IGNORECASE
        if m := re.search(rf"{_SUBJECT_START}({re.escape(n)}) ({verb})", text, flags):
            return f"{m[1]} {m[2]}"
    return None


def _other_name_before(text: str, index: int, case: Case) -> bool:
    """Whether a capitalised word that is not a member, not `I` and not a sentence start comes before the
    `index`-th word: someone else the pronoun may mean ("my boss Mark ... he")."""
    members = set(case.member_names)
    tokens = re.findall(r"[^\W_]+(?:'[^\W_]+)*|[.!?]", text)
    seen = 0
    start = True
    for tok in tokens:
        if tok in ".!?":
            start = True
            continue
        if seen >= index:
            break
        if not start and tok[0].isupper() and tok not in members and tok not in ("I", "I'm", "I've", "I'd", "I'll"):
            return True
        start = False
        seen += 1
    return False


def _longest_run(a: Sequence[str], b: Sequence[str]) -> int:
    best = 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            if x == y:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


DIRECTION_RUN = 5  # words in a row of a stage direction's own wording (not the card's) that read it out


def read_out(text: str, scaffold: str) -> str | None:
    """The words of a private stage direction a line reads out, if it has DIRECTION_RUN in a row of the
    direction's own wording (`scaffold`: the direction with the card's words left out, which may be said): issue
    42 (9), Eleni said "The notes speak of Eleni by name; I say it of themself with 'I' and 'my'"."""
    line, own = words(text), words(scaffold)
    runs = {tuple(own[n : n + DIRECTION_RUN]) for n in range(len(own) - DIRECTION_RUN + 1)}
    for n in range(len(line) - DIRECTION_RUN + 1):
        if tuple(line[n : n + DIRECTION_RUN]) in runs:
            return " ".join(line[n : n + DIRECTION_RUN])
    return None


@dataclass(frozen=True)
class Echo:
    turn: Turn
    how: str  # "verbatim", "overlap 62%", "7 words in a row"


# A line re-said from the other side ("All you've ever asked is that I'm honest with you", to "All I've ever asked
# is that you're honest with me") shares few word runs with the line it re-says until both are read with I and you
# as one seat: 3 of the 6 echoes of room_lines_blind.yaml were so. Read that way, most of the line itself must be
# the other's words: a reply that concedes a charge and answers it ("I fell in the bathroom in February, yes, and
# I got up by myself") shares most of the charge, not most of itself.
_SEAT = {
    **dict.fromkeys(("i", "me", "you"), "@"),
    **dict.fromkeys(("my", "your", "mine", "yours"), "@s"),
    **dict.fromkeys(("myself", "yourself"), "@self"),
    **dict.fromkeys(("i'm", "you're"), "@'re"),
    **dict.fromkeys(("i've", "you've"), "@'ve"),
    **dict.fromkeys(("i'd", "you'd"), "@'d"),
    **dict.fromkeys(("i'll", "you'll"), "@'ll"),
    **dict.fromkeys(("am", "are"), "are"),
    **dict.fromkeys(("was", "were"), "were"),
}


def seatless(ws: Sequence[str]) -> list[str]:
    """Words with the speaker's and the listener's seats made one (I and you, my and your, am and are)."""
    return [_SEAT.get(w, w) for w in ws]


def _echo_of(text: str, speaker: str, earlier: Sequence[Turn]) -> Echo | None:
    ws = words(text)
    if len(ws) < 4:
        return None
    run_min = room_lexicon().echo_run
    mine = trigrams(seatless(ws))
    for t in reversed(earlier):
        if t.speaker == speaker or not t.text:
            continue
        theirs = words(t.text)
        if theirs == ws:
            return Echo(t, "verbatim")
        shared = trigrams(ws) & trigrams(theirs)
        ov = overlap(text, t.text)
        if ov >= NEAR_DUPLICATE_OVERLAP and len(shared) >= ECHO_MIN_TRIGRAMS:
            return Echo(t, f"overlap {ov:.0%}")
        run = _longest_run(ws, theirs)
        if run >= run_min:
            return Echo(t, f"{run} words in a row")
        flipped = mine & trigrams(seatless(theirs))
        share = len(flipped) / len(mine) if mine else 0.0
        if share >= NEAR_DUPLICATE_OVERLAP and len(flipped) >= ECHO_MIN_TRIGRAMS:
            return Echo(t, f"{share:.0%} of it with I and you swapped")
    return None


def _root(word: str) -> str:
    """A word cut to what its forms share (rise/rising/rises, voice/voices, side/sides), for telling a paraphrase;
    `stem`, which grounding and `given_away` read with, keeps the -ing and -ed that a paraphrase changes."""
    for end in ("ing", "ed", "es", "s", "e"):
        if len(word) > len(end) + 2 and word.endswith(end):
            word = word[: -len(end)]
            break
    return word[:5]


def _said_words(text: str) -> set[str]:
    """The roots of a line's words that say something: not function words, not one- or two-letter words."""
    skip = lexicon().function_words
    return {_root(w) for w in words(unquoted(text)) if w not in skip and len(w) >= 3}


def counsellor_paraphrase(text: str, speaker: str, earlier: Sequence[Turn]) -> tuple[Turn, list[str]] | None:
    """The counsellor line, among the last three, that this member line re-says in other words, with the roots they
    share: at least `room.paraphrase_words` of them, and at least `room.paraphrase_share` of the counsellor line's.
    Kayla, after the counsellor's "each time this comes up, voices rise and the same people end up on opposite
    sides": "every time this comes back up, voices are rising and the same members end up on either side" (issue 42
    (4)'s carter run; the echo rule, which needs the same words, passed it). A member answering in a few of the
    counsellor's words ("voices rise at home too") shares too few."""
    lex = room_lexicon()
    mine = _said_words(text)
    counsellor = [t for t in earlier if t.kind == "supporter" and t.text][-3:]
    for t in reversed(counsellor):
        theirs = _said_words(t.text)
        shared = mine & theirs
        if len(shared) >= lex.paraphrase_words and len(shared) >= lex.paraphrase_share * len(theirs):
            return t, sorted(shared)
    return None


def echo_of(text: str, speaker: str, earlier: Sequence[Turn]) -> Echo | None:
    """The latest earlier line of another speaker that this line re-says, with how, or None."""
    return _echo_of(text, speaker, earlier)


@dataclass(frozen=True)
class CounsellorVoice:
    """One way a member line speaks in the counsellor's voice: `how` says which (`phrase`, `self_address`, `echo`,
    `paraphrase`), `words` what shows it (the phrase; the shared roots of a paraphrase), `turn` the counsellor line
    re-said (echo, paraphrase)."""

    how: str
    words: str
    turn: Turn | None = None

    @property
    def reading(self) -> str:
        """What the room measure records."""
        if self.how == "echo" and self.turn is not None:
            return f"re-says the counsellor's turn {self.turn.index}"
        if self.how == "paraphrase" and self.turn is not None:
            return f"re-says the counsellor's turn {self.turn.index} in other words ({self.words})"
        return self.words


def counsellor_voices(text: str, speaker: str, earlier: Sequence[Turn], echo: Echo | None) -> list[CounsellorVoice]:
    """Every counsellor-voice reading of a member line, in the one order the room measure (its first) and the live
    re-ask (each as a flag) both read: the counsellor's stock phrase, the speaker's own name said as an address, the
    echo of a counsellor line (`echo`, `_echo_of`'s reading of the line), and only when none of those holds, a
    counsellor line said again in other words. An echo of a member does not hide a paraphrase of the counsellor."""
    found = []
    if (phrase := counsellor_phrase(text)) is not None:
        found.append(CounsellorVoice("phrase", phrase))
    if (address := self_address(text, speaker)) is not None:
        found.append(CounsellorVoice("self_address", address))
    if echo is not None and echo.turn.kind == "supporter":
        found.append(CounsellorVoice("echo", echo.how, echo.turn))
    if not found and (said := counsellor_paraphrase(text, speaker, earlier)) is not None:
        found.append(CounsellorVoice("paraphrase", ", ".join(said[1]), said[0]))
    return found


_SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "you're", "you've", "you'd", "you'll"})
# I, my and we as the one a clause is about; "without a word to me" is still about "you".
_FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "my", "mine", "myself", "we", "we're", "we've", "our"})
_SENTENCE_END = re.compile(r"[.!?;]+")
# Where a sentence's clauses part: "I understand that | your father was absent", "I know | you did three years".
_CONJUNCTION = r"\b(?:that|and|but|because|when|while|since|after|before|so|if)\b"
_KNOWING = (  # "I know ...", "I've heard (about how) ...", "I've been told ...": what follows is said of someone
    r"\bI(?:'ve| have)? (?:know|understand|realise|realize|remember|think|guess|get|see|believe|heard|hear|noticed|"
    r"notice|been told|read)\b"
)
_CLAUSE_BREAK = re.compile(rf"[:,]+|{_CONJUNCTION}|{_KNOWING}", re.I)
_PLAIN_BREAK = re.compile(rf"{_CONJUNCTION}|{_KNOWING}", re.I)  # a sentence with no I, my or we: commas keep it
_OPENS_ON_PRONOUN = re.compile(r"(?:he|she|they|his|her|their|him|them)\b", re.I)
# The one a secret is kept from is not what it is about: "... and has not told Shane".
_TOLD = re.compile(r"\b(?:told|tell|tells|telling|asked|asking)\s+(?:\w+\s+)?$", re.I)


def _named(text: str, who: str) -> bool:
    return any(not _TOLD.search(text[: m.start()]) for m in re.finditer(rf"\b{re.escape(who)}\b", text))


def member_facts(case: Case, name: str) -> list[str]:
    """What the card tells of `name` as theirs: the presenting problem's and history's clauses that open on them
    ("Yumiko met Haru secretly every month") or name them and no other member and open on no pronoun ("He phones
    his grandmother every night, will not call Abena 'Mum'" is Kojo's), and their own background, core fear and
    private knowledge; a clause after theirs that opens on their he/she ("Abena's visa and salary could not support
    bringing Kojo sooner; she sent money every month") is theirs too. A clause naming several members but opening on
    none ("Every attempt to talk ends with Dana listing what he missed and Theo going silent") is no one member's."""
    others = [n for n in case.member_names if n != name]

    def theirs(clause: str) -> bool:
        if re.match(rf"{re.escape(name)}\b", clause):
            return True
        alone = _named(clause, name) and not any(_named(clause, o) for o in others)
        return alone and not _OPENS_ON_PRONOUN.match(clause)

    own = set(pronoun_of(case, name) or ())
    clauses: list[str] = []
    for text in (case.presenting_problem, case.history):
        for sentence in card_sentences(text):
            before = False  # a clause opening on the speaker's he/she goes on from theirs ("...; she sent money")
            for clause in re.split(r";\s+", sentence):
                opener = words(clause)[:1]
                before = theirs(clause) or (before and bool(opener) and opener[0] in own)
                if before:
                    clauses.append(clause)
    member = case.member(name)
    return clauses + [t for t in (member.background, member.core_fear, *member.private_knowledge) if t.strip()]


def _about(fact: str, member: Member, owner: str) -> bool:
    """Whether a fact of `owner` is also about `member`: it names them (not as the one told), or speaks of them
    by their role ("boys mocked his mother", a fact of Kojo's, is about Abena, the mother)."""
    role = words(member.role)[:1]
    kin = bool(role) and re.search(rf"\b(?:his|her|their) {re.escape(role[0])}\b", fact, re.I) is not None
    return member.name != owner and (_named(fact, member.name) or kin)


@functools.lru_cache(maxsize=256)
def _fact_stems(card_key: str, name: str) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """(the other members a fact is about, its content stems) for each of `name`'s facts."""
    case = Case.model_validate_json(card_key)
    return tuple(
        (
            frozenset(m.name for m in case.members if _about(f, m, name)),
            frozenset(stem(w) for w in content_words(f, case.member_names)),
        )
        for f in member_facts(case, name)
    )


def _handed(stems: set[str], case: Case, speaker: str, to: Sequence[str]) -> set[str]:
    """The content stems a clause shares with one of the speaker's own facts that is not about `to`, less every
    stem of `to`'s own facts ("you took six hundred from the kids' savings" is Niamh's own fact, kept from Shane;
    "you needed the money for the band's van", said by Yumiko to Haru, is about him too)."""
    facts = [f for about, f in _fact_stems(_card_key(case), speaker) if not about.intersection(to)]
    theirs = {w for m in to for _, f in _fact_stems(_card_key(case), m) for w in f}
    return max((stems & f for f in facts), key=len, default=set()) - theirs


def _clauses(text: str, case: Case) -> list[tuple[str, bool]]:
    """The line's clauses, each with whether it is said of "you": its own "you", or, with no person in it, the one
    of the clause before it in the sentence ("you came to England in 2017 and | sent money home every month").
    A sentence with I, my or we is cut at its commas too; one without keeps them ("You'd know yourself, after
    nineteen years as a machine technician, ...")."""
    out: list[tuple[str, bool]] = []
    people = _FIRST_PERSON | _SECOND_PERSON | GENDERED_PRONOUNS | {n.lower() for n in case.member_names}
    for sentence in _SENTENCE_END.split(text):
        cut = _CLAUSE_BREAK if _FIRST_PERSON.intersection(words(sentence)) else _PLAIN_BREAK
        you = False
        for clause in cut.split(sentence):
            ws = set(words(clause))
            you = bool(_SECOND_PERSON & ws) or (you and not people & ws)
            out.append((clause, you))
    return out


def given_away(text: str, speaker: str, addressees: Sequence[str], case: Case) -> tuple[str, str] | None:
    """The clause and whom it hands the speaker's own fact to, when a line does: Theo, whose father was absent
    through long shifts, told the counsellor "I understand that your father was absent through long shifts"
    (README command 1); Yumiko, who met Haru secretly every month, told Kenji "you were secretly meeting with Haru
    every month" (issue 42's nakamura run). A clause with no I, my or we that says "you" (or names another member)
    and shares ITEM_WORDS content words with one of the speaker's own facts (`member_facts`), words no fact of the
    one it is handed to has, gives the fact away ("you lost your job over a credit card", said by Niamh, who found
    the card, to Shane, whose card it is, does not). Quoted words are not the speaker's."""
    names = case.member_names
    for clause, you in _clauses(unquoted(text), case):
        ws = words(clause)
        if not ws or _FIRST_PERSON.intersection(ws):
            continue
        stems = {stem(w) for w in content_words(clause, names)}
        if you:
            to = [a for a in addressees if a in names and a != speaker]
            if len(_handed(stems, case, speaker, to)) >= ITEM_WORDS:
                return clause.strip(), ", ".join(addressees) or "the listener"
        for other in names:  # told of another member by name (not spoken to by it: "So what's the app, Shane?")
            if other != speaker and _named(clause, other) and not _said_to(clause.strip(), other):
                if len(_handed(stems, case, speaker, [other])) >= ITEM_WORDS:
                    return clause.strip(), other
    return None


_SELF = frozenset({"i", "i'm", "i've", "i'd", "i'll", "my", "mine", "myself"})  # not we: a couple's "we" is shared
# he/she as someone the clause is about; "his" and "her" may be the speaker's own ("my father had his stroke")
_SOMEONE_ELSE = GENDERED_PRONOUNS - {"his", "her"}


def _fact_words(text: str, names: Sequence[str]) -> set[str]:
    """A text's content stems, kin words as their group ("dad" and "father" are one word here)."""
    groups = room_lexicon().person_groups
    return {stem(groups.get(w.lower(), w)) for w in content_words(text, names)}


@functools.lru_cache(maxsize=256)
def _claimable(card_key: str, name: str) -> tuple[tuple[frozenset[str], frozenset[str], str | None], ...]:
    """(the members a fact is about, its content stems, its head) for each of `name`'s facts (`member_facts`).
    The head is what a clause of the problem or history does or has after its subject, "Theo('s)" or "he": "took"
    in "Theo took a promotion", "father" in "Theo's father was absent"; a background, fear or secret has none, as
    it is all its owner's."""
    case = Case.model_validate_json(card_key)
    member = case.member(name)
    whole = {t for t in (member.background, member.core_fear, *member.private_knowledge) if t.strip()}
    out = []
    for f in member_facts(case, name):
        head = None
        if f not in whole:
            rest = re.sub(rf"^(?:{re.escape(name)}(?:'s)?|he|she|they|his|her|their)\b", "", f.strip(), flags=re.I)
            first = content_words(rest, case.member_names)[:1]
            head = min(_fact_words(first[0], ()), default=None) if first else None
        about = frozenset(m.name for m in case.members if _about(f, m, name))
        out.append((about, frozenset(_fact_words(f, case.member_names)), head))
    return tuple(out)


def claimed(text: str, speaker: str, case: Case) -> tuple[str, str] | None:
    """The clause and whose fact it is, when a line tells another member's fact as the speaker's own: in README
    command 1 Dana told Theo's absent father as hers; in issue 42's runs Kojo told of "my visa", his mother's. A
    clause with I or my, and no "you", he/she or other member in it (his or her may be the speaker's own: "my
    father had his stroke"), that shares ITEM_WORDS content words (kin words by their group: "dad" is "father")
    with another member's fact (not one about the speaker), less every word of the speaker's own facts, claims it; of a fact of the problem or history, the shared words must hold
    its head ("I took a promotion" claims Theo's "Theo took a promotion"; "since the promotion I eat alone" does
    not). Quoted words are not the speaker's."""
    names = case.member_names
    key = _card_key(case)
    own = {w for _, f, _ in _claimable(key, speaker) for w in f}
    others = {n.lower() for n in names if n != speaker}
    for clause, you in _clauses(unquoted(text), case):
        ws = set(words(clause))
        if you or not _SELF & ws or _SECOND_PERSON & ws or _SOMEONE_ELSE & ws or others & ws:
            continue
        said = _fact_words(clause, names)
        for other in names:
            if other == speaker:
                continue
            for about, fact, head in _claimable(key, other):
                shared = (said - own) & fact  # the head may be the speaker's too ("father"): the rest may not
                if speaker not in about and len(shared) >= ITEM_WORDS and (head is None or head in said):
                    return clause.strip(), other
    return None


@dataclass(frozen=True)
class RoomReading:
    """The room measures of one member line, each with the words that show it (None: it does not hold)."""

    grounded: str | None
    counsellor_voice: str | None
    third_person: str | None
    echo: str | None
    echo_turn: int | None = None
    wrong_address: str | None = None
    given_away: str | None = None
    invented_figure: str | None = None
    claimed: str | None = None


def read_line(
    text: str,
    speaker: str,
    addressees: Sequence[str],
    case: Case,
    earlier: Sequence[Turn],
    given: Sequence[str] = (),
) -> RoomReading:
    """All the room measures of one member line, against the turns before it and what the member was `given`."""
    echo = _echo_of(text, speaker, earlier)
    voices = counsellor_voices(text, speaker, earlier, echo)
    return RoomReading(
        grounded=grounding(text, case),
        counsellor_voice=voices[0].reading if voices else None,
        third_person=third_person(text, speaker, addressees, case, earlier) or self_named(text, speaker),
        echo=f"turn {echo.turn.index} ({echo.turn.speaker}): {echo.how}" if echo else None,
        echo_turn=echo.turn.index if echo else None,
        wrong_address=f"speaks to {name}" if (name := wrong_address(text, speaker, addressees, case)) else None,
        given_away=f'"{gave[0]}", told of {gave[1]}' if (gave := given_away(text, speaker, addressees, case)) else None,
        invented_figure=invented_figure(text, case, earlier, given),
        claimed=f'"{took[0]}", {took[1]}\'s' if (took := claimed(text, speaker, case)) else None,
    )
