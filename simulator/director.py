"""The director: what a member brings up on their turn, chosen from the card by a seeded rule (issue 42).

A 1.5B member left to itself drifts to feeling-talk that would fit any couple ("I just feel like I'm drowning")
and off its own case: over 84 held-out member turns, 14 said anything found only in their own card. So before each
member line the director picks one piece of the card for that member to bring up now, and hands it to them as a
private stage direction (stressors show the 1.5B plays these: 24 of 24 delivered). The supporter never sees it;
the turn records it (`Turn.beat`).

The rule, in order, seeded by (session seed, member, turn) so a replay makes the same choices:
1. `reply`: the last line was another member's, spoke to or about this member, and brought up something of the
   case: answer it, from their own side;
2. `trigger`: the last line touched one of this member's triggers (shares a word with it that is specific to
   the case): react to that;
3. otherwise one piece of the card this member has not brought up yet (its grounding words not yet in their
   earlier lines), drawn with weights: `agenda` (the card's declared agenda for this member) 4, `grievance` (their
   viewpoints of the others) 2, `fact` (the presenting problem, the history where it names them, their
   background; of a sentence about several members only the clauses naming this one, `own_part`) 2, `secret`
   (private knowledge; only from their third turn on, as secrets come out late if at all) 1. When everything has
   been brought up, any piece may come back (an open grievance is raised again).
Pieces with no word specific to the case ("nothing he does is enough for her") are left out unless the card
declares them as agenda: said aloud they would still be generic.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Sequence
from typing import NamedTuple

from personas.case import Case
from simulator.records import Beat, Turn
from simulator.turn_checks import (
    GENDERED_PRONOUNS,
    ITEM_WORDS,
    card_sentences,
    case_words,
    content_words,
    grounding,
    pronoun_of,
    stem,
    words,
)

WEIGHTS = {"agenda": 4, "grievance": 2, "fact": 2, "secret": 1}
SECRET_FROM_TURN = 3  # a member's own turn from which private knowledge may be drawn


def _material(case: Case, text: str) -> list[str]:
    """The words of `text` that would ground a line bringing it up: its words specific to the case, when it has
    any, else its content words when there are ITEM_WORDS of them (simulator.turn_checks.grounding reads both)."""
    ws = list(dict.fromkeys(content_words(text, case.member_names)))
    specific = case_words(case).specific
    own = [w for w in ws if stem(w) in specific]
    return own or (ws if len({stem(w) for w in ws}) >= ITEM_WORDS else [])


def _names(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


_LEANS_BACK = re.compile(r"(?:her|his|their|he|she|they|it|its|this|that)\b", re.IGNORECASE)


def _leans_on_another(clause: str, speaker: str, case: Case) -> bool:
    """Whether a clause needs the one before it: it opens on a pronoun, or holds a he/she that is not the
    speaker's ("Thuy came from Saigon at 24 to marry him")."""
    own = set(pronoun_of(case, speaker) or ())
    return bool(_LEANS_BACK.match(clause)) or any(w in GENDERED_PRONOUNS and w not in own for w in words(clause))


def own_part(sentence: str, speaker: str, case: Case, *, anyone: bool = True) -> str | None:
    """What of a card sentence is `speaker`'s to bring up. A sentence about several members loses, at its `;`, the
    clauses about other members only: README command 1 handed Dana "Theo's father was absent through long shifts;
    Dana's parents divorced when she was nine", and she told Theo's father's story as hers ("I miss how he was
    there for me"). A clause that leans on one cut away ("...; her mother Thuy has known for ten months", "Thuy
    came from Saigon to marry him") keeps the sentence whole: alone it says nothing or something wrong (issue 42's
    nguyen run). A sentence naming only other members is theirs (None); one naming no member is everyone's,
    unless `anyone` is False (the history: then only what names the speaker)."""
    names = case.member_names
    named = [n for n in names if _names(sentence, n)]
    if speaker not in named:
        return sentence if anyone and not named else None
    clauses = [c.strip() for c in re.split(r";\s+", sentence.rstrip(".!? "))]
    keep = [_names(c, speaker) or not any(_names(c, n) for n in names) for c in clauses]
    if all(keep) or any(k and _leans_on_another(c, speaker, case) for c, k in zip(clauses, keep, strict=True)):
        return sentence
    return "; ".join(c for c, k in zip(clauses, keep, strict=True) if k) + "."


def card_beats(case: Case, speaker: str) -> list[Beat]:
    """Every piece of the card this member could bring up (not `reply` or `trigger`: those answer the room)."""
    i = case.member_names.index(speaker)
    member = case.members[i]
    beats: list[Beat] = []

    def add(kind: str, text: str, source: str, *, always: bool = False) -> None:
        words = _material(case, text)
        if words or always:
            beats.append(Beat(kind=kind, text=text, source=source, words=words))

    for j, item in enumerate(member.agenda):
        add("agenda", item, f"members[{i}].agenda[{j}]", always=True)
    for j, vp in enumerate(case.viewpoints):
        if vp.source == speaker:
            add("grievance", f"about {vp.target}: {vp.viewpoint}", f"viewpoints[{j}]")
    for j, sent in enumerate(card_sentences(case.presenting_problem)):  # why they came: theirs unless it is another's
        part = own_part(sent, speaker, case)
        if part is not None:
            add("fact", part, f"presenting_problem[{j}]")
    history = card_sentences(case.history)
    mine = [(j, p) for j, s in enumerate(history) if (p := own_part(s, speaker, case, anyone=False))]
    for j, part in mine or list(enumerate(history)):
        add("fact", part, f"history[{j}]")
    for j, sent in enumerate(card_sentences(member.background)):
        add("fact", sent, f"members[{i}].background[{j}]")
    for j, item in enumerate(member.private_knowledge):
        add("secret", item, f"members[{i}].private_knowledge[{j}]")
    return beats


def brought_up(beat: Beat, said: Sequence[str]) -> bool:
    """Whether lines already said bring up this piece (two of its words, or its only one)."""
    if not beat.words:
        return False
    stems = {stem(w) for t in said for w in re.findall(r"[^\W_]+", t.lower())}
    hits = sum(stem(w) in stems for w in beat.words)
    return hits >= min(2, len(beat.words))


def choose_beat(case: Case, turns: Sequence[Turn], speaker: str, seed: int) -> Beat | None:
    """What `speaker` brings up on this turn (see the module docstring), or None when the card offers nothing."""
    rng = random.Random(f"director:{seed}:{speaker}:{len(turns)}")
    i = case.member_names.index(speaker)
    member = case.members[i]
    last = turns[-1] if turns else None
    if last is not None and last.kind == "member" and last.speaker != speaker:
        about = speaker in last.addressees or _names(last.text, speaker)
        grounded = grounding(last.text, case)
        if about and grounded:
            return Beat(
                kind="reply",
                text=f'{last.speaker} just said: "{last.text}"',
                source=f"turn {last.index}",
                words=_material(case, last.text),
            )
    if last is not None and last.text:
        heard = {stem(w) for w in content_words(last.text, case.member_names)}
        specific = case_words(case).specific
        for j, trigger in enumerate(member.triggers):
            touched = [w for w in content_words(trigger, case.member_names) if stem(w) in heard & specific]
            if touched:
                return Beat(kind="trigger", text=trigger, source=f"members[{i}].triggers[{j}]", words=touched)
    own_turns = [t.text for t in turns if t.speaker == speaker and t.kind == "member"]
    beats = [b for b in card_beats(case, speaker) if b.kind != "secret" or len(own_turns) + 1 >= SECRET_FROM_TURN]
    if not beats:
        return None
    fresh = [b for b in beats if not brought_up(b, own_turns)]
    pool = fresh or beats
    return rng.choices(pool, weights=[WEIGHTS[b.kind] for b in pool], k=1)[0]


def _told_of(text: str, names: Sequence[str]) -> str | None:
    """The member a card sentence is about when it opens on them ("Abena's visa and salary ...", "Akua raised
    ..."), else None."""
    return next((n for n in names if re.match(rf"{re.escape(n)}\b", text)), None)


def beat_direction(beat: Beat, speaker: str, addressees: Sequence[str], members: Sequence[str] = ()) -> str:
    """The private stage direction a beat becomes, in the member's own terms. A fact that opens on another member
    is said to be theirs: in issue 42's runs Kojo told of "my visa" (his mother's) and Paolo of the medication
    reversal his sister did."""
    to = ", ".join(addressees) or "the room"
    owner = _told_of(beat.text, members) if beat.kind == "fact" else None
    whose = (
        f" This is {owner}'s part of the story, not {speaker}'s: {speaker} speaks of it as {owner}'s."
        if owner and owner != speaker
        else ""
    )
    what = {
        "agenda": f"bring up this, which {speaker} came to say: {beat.text}",
        "reply": f"answer what was just said about {speaker}, from {speaker}'s own side, with the facts as "
        f"{speaker} sees them. {beat.text}",
        "trigger": f"that last line touched what sets {speaker} off ({beat.text}); react to it, naming it",
        "grievance": f"bring up what {speaker} holds {beat.text.removeprefix('about ')}, with something that happened",
        "fact": f"bring up this, from the notes on the family, as {speaker} lives it: {beat.text}",
        "secret": f"let slip or hint at what {speaker} has kept back: {beat.text}",
    }[beat.kind]
    return (
        f"In this line to {to}, {what.rstrip('.')}.{whose} The notes speak of {speaker} by name; {speaker} says it of themself "
        f"with 'I' and 'my', and says 'you' to {to}. One or two short sentences."
    )


OPENER_WORDS = 8  # at most this many of the card's words begin the line; the member says the rest
_MIN_OPENER = 3
_ADVERBS = frozenset({"also", "still", "never", "always", "often", "now", "only", "just", "already", "sometimes", "then",
                      "even", "really", "once", "secretly", "quietly", "not"})  # fmt: skip
_AGREE = {
    "I": {"is": "am", "isn't": "am not", "has": "have", "hasn't": "haven't", "does": "do", "doesn't": "don't",
          "says": "say"},
    "you": {"is": "are", "isn't": "aren't", "was": "were", "wasn't": "weren't", "has": "have", "hasn't": "haven't",
            "does": "do", "doesn't": "don't", "says": "say"},
}  # fmt: skip
_OBJECT_AFTER = frozenset({"to", "in", "on", "at", "for", "with", "about", "from", "and", "but", "or", "that", "when",
                           "if", "because", "the", "a", "an", "out", "up", "down", "back", "off", "again", "too", "so",
                           "as", "into", "over", "alone", "anything", "everything"})  # fmt: skip
_PEOPLE = frozenset({"father", "mother", "dad", "mum", "mom", "brother", "sister", "son", "daughter", "husband", "wife",
                     "partner", "friend", "colleague", "boss", "grandmother", "grandfather", "uncle", "aunt", "cousin",
                     "boyfriend", "girlfriend", "ex", "lawyer", "doctor", "teacher", "man", "woman", "boy", "girl",
                     "stepfather", "stepmother", "fiancée", "fiancé", "sponsor", "parents", "children", "kids"})  # fmt: skip
_FORMS = {"I": {"his": "my", "her": "my", "hers": "mine", "him": "me", "himself": "myself", "herself": "myself"},
          "you": {"his": "your", "her": "your", "hers": "yours", "him": "you", "himself": "yourself",
                  "herself": "yourself"}}  # fmt: skip
_NOT_VERBS = frozenset({"was", "his", "its", "this", "perhaps", "always", "less", "yes", "unless", "towards",
                        "afterwards", "whereas", "sometimes", "besides", "as"})  # fmt: skip
_STRIP = ".,;:!?\"“”'’()"
# An opener ending on one of these asks the member to finish the card's phrase, and the 1.5B finishes it wrong
# (issue 42 (13): "the Port Talbot steelworks last" + "39 years ago"): it ends before them, and before a
# possessive ("why Avi's").
_NEEDS_MORE = frozenset({"a", "an", "the", "and", "but", "or", "to", "of", "in", "on", "at", "by", "for", "from",
                         "with", "into", "about", "as", "than", "that", "which", "who", "whose", "my", "your", "our",
                         "his", "her", "their", "its", "last", "next", "every", "each", "this", "these", "those",
                         "some", "any", "no", "whole", "other", "after", "before", "during", "since", "until",
                         "while", "when", "if", "because", "so", "not", "very", "more", "most", "over", "under",
                         "between", "without", "within", "through", "against", "toward", "towards", "behind",
                         "why", "how", "what", "where", "whether"})  # fmt: skip
_BOUNDARY = re.compile(r"[,;:()\"“”—–.!?]")


def _agree(verb: str, subject: str) -> str:
    """The verb after `I` or `you` for a third-person verb of the card ("keeps" -> "keep", "has" -> "have")."""
    if verb in _AGREE[subject]:
        return _AGREE[subject][verb]
    if not re.fullmatch(r"(?:[a-z]+-)?[a-z]{2,}s", verb) or verb in _NOT_VERBS or verb.endswith(("ss", "us", "is")):
        return verb  # past tense, or not a verb in -s
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
        return verb[:-2]
    return verb[:-1]


class _Opening(NamedTuple):
    """How a card piece opens on who it is about."""

    lead: str  # what comes before the subject: a time ("On 12 June") or a frame ("I keep thinking about")
    subject: str  # "I", "My", "you", "your", as the card wrote it ("I'm"), or "" after a frame
    rest: str  # the card's words after it
    whose: str  # the member its he/she-words belong to
    agree: bool  # the next verb is the card's third person, to be agreed with the subject ("keeps" -> "keep")


_TIME = r"((?:On|In|Since|From|Until|Last|After|Before|By|Once)\b[^,;:.]{1,25}?),?\s+"
_WHEN = re.compile(
    r"\d|\b(?:January|February|March|April|May|June|July|August|September|October|November|December|Monday|Tuesday"
    r"|Wednesday|Thursday|Friday|Saturday|Sunday|spring|summer|autumn|winter|year|month|week|night|morning|evening"
    r"|session|weekend|Christmas|Easter|Ramadan|Diwali)s?\b"
)  # a time, not "Every attempt to talk ends with"
_NOUN_PHRASE_STARTS = frozenset({"the", "a", "an", "what", "that", "being", "his", "her", "their", "our", "how", "why",
                                 "when", "whether"})  # fmt: skip
_FRAMES = ("I want to talk about", "I keep thinking about", "I can't get past")


# A finite verb among a piece's first words makes it a clause, which a frame takes only after "how" ("I keep
# thinking about how the phone rang during the seder"; issue 42 (13) heard "I keep thinking about the phone rang").
_FINITE = re.compile(
    r"(?:was|were|is|are|has|have|had|did|does|do|will|would|can|could|never|rang|ran|went|came|took|gave|told|"
    r"said|left|lost|kept|made|found|got|saw|sent|paid|spent|met|fell|broke|put|sold|won|heard|knew|thought|felt|"
    r"bought|brought|began|became|wrote|drove|stood|sat|hid|quit|let|asks|says|wants|thinks|knows|keeps|goes|"
    r"comes|makes|takes|gets|needs|calls|tells|works|lives|seems|feels|refuses|expects|believes|[a-z]{3,}ed)",
)
_CLAUSE_REACH = 6  # the verb is looked for among this many words
_DETERMINERS = frozenset({"the", "a", "an", "his", "her", "their", "our", "my", "your", "that", "this"})
_SUBJECTS = frozenset({"i", "you", "he", "she", "we", "they"})


def _is_clause(phrase: str) -> bool:
    """Whether an agenda item is a statement ("Rhiannon was in a terrible state", "A student played the clip",
    "In forty-one years they have never had a holiday") rather than a noun phrase ("The night of 9 March, when
    ...", "The anniversary dinner Theo cancelled"): a finite verb after its first word, before a clause boundary,
    that is not a relative clause's. A word in -ed first or after a determiner is an adjective ("The promised
    holiday")."""
    ws = [w.strip(_STRIP) for w in _BOUNDARY.split(phrase, maxsplit=1)[0].split()[:_CLAUSE_REACH]]
    determined = bool(ws) and ws[0].lower() in _DETERMINERS
    for i, w in enumerate(ws[1:], start=1):
        if _FINITE.fullmatch(w.lower()) and not (i == 1 and determined and w.lower().endswith("ed")):
            # "The anniversary dinner Theo cancelled": a verb after a name or pronoun in a determined phrase is
            # its relative clause, and the whole a noun phrase
            return not (determined and (ws[i - 1][:1].isupper() or ws[i - 1].lower() in _SUBJECTS))
    return False


def _listener(addressees: Sequence[str], case: Case) -> str | None:
    """The one member a line is said to, if it is said to one member (not the counsellor, not several)."""
    return addressees[0] if len(addressees) == 1 and addressees[0] in case.member_names else None


def _whose_pronoun(word: str, beat: Beat, speaker: str, case: Case) -> str | None:
    """The member a he/she-word that opens a piece stands for: the speaker for their own background or secrets,
    else the one member the card speaks of so (a couple's "he")."""
    low = word.lower()
    if beat.source.startswith(f"members[{case.member_names.index(speaker)}].") and low in (
        pronoun_of(case, speaker) or ()
    ):
        return speaker
    owners = [n for n in case.member_names if low in (pronoun_of(case, n) or ())]
    return owners[0] if len(owners) == 1 else None


def _statement(text: str, beat: Beat, speaker: str, addressees: Sequence[str], case: Case) -> _Opening | None:
    """A sentence that opens on the speaker or the one spoken to, by name or he/she, after a time at most:
    "Arjun bought ..." -> I; "Dana's parents ..." -> My; "In July she accepted ..." -> In July I; "On 12 June he
    booked ...", said to him -> On 12 June you. Else None."""
    lead = ""
    to = _listener(addressees, case)
    who = "|".join(re.escape(n) for n in (speaker, to) if n)
    if (m := re.match(rf"{_TIME}(?=(?:{who}|[Hh]e|[Ss]he)\b)", text)) and _WHEN.search(m.group(1)):
        lead, text = m.group(1), text[m.end() :]
    first = text.split()[0] if text.split() else ""
    for name, subject in ((speaker, "I"), (to, "you")):
        if name is None:
            continue
        if m := re.match(rf"{re.escape(name)}(,\s*\d+,)?\s+(?!and\b|&)(.*)", text):
            if m.group(1) and re.match(r"(?:the|a|an|one)\b", m.group(2)):  # "Avi, 21, the eldest" -> "I am the"
                return _Opening(lead, subject, f"{'am' if subject == 'I' else 'are'} {m.group(2)}", name, False)
            return _Opening(lead, subject, m.group(2), name, True)
        if m := re.match(rf"{re.escape(name)}['’]s\s+(.*)", text):
            return _Opening(lead, "My" if subject == "I" else "your", m.group(1), name, False)
        if first.lower() in ("he", "she") and _whose_pronoun(first, beat, speaker, case) == name:
            return _Opening(lead, subject, text.split(None, 1)[1] if " " in text else "", name, True)
    return None


def _subject(beat: Beat, speaker: str, addressees: Sequence[str], case: Case) -> _Opening | None:
    """How a card piece opens in the member's voice: a statement on them or the one spoken to (`_statement`); a
    grievance "about Theo: he has chosen ..." said to Theo -> you; a piece already in their voice ("I want ...",
    an agenda may be) as it is; a background line that opens on its verb ("Plays dominoes at ...") -> I; an
    agenda "That Solveig has stopped ..." as the statement after its "That"; any other agenda item, a noun
    phrase ("The night of 9 March, when ..."), after a frame ("I keep thinking about the night of 9 March").
    Else None."""
    text = beat.text
    if beat.kind == "grievance":
        target, _, view = text.removeprefix("about ").partition(": ")
        m = re.match(r"(he|she)\s+(.*)", view)
        if m and list(addressees) == [target] and m.group(1) in (pronoun_of(case, target) or ()):
            return _Opening("", "you", m.group(2), target, True)
        return None
    if beat.kind not in ("fact", "secret", "agenda"):
        return None
    if m := re.match(r"(I|I'm|I've|My)\s+(.*)", text):  # written in their voice already (an agenda may be)
        return _Opening("", m.group(1), m.group(2), speaker, False)
    clause = beat.kind == "agenda" and (m := re.match(r"That\s+(.*)", text)) is not None
    if clause:
        text = m.group(1)
    if opened := _statement(text, beat, speaker, addressees, case):
        return opened
    first, second, *_ = [*text.split(), "", ""]
    own_background = beat.source.startswith(f"members[{case.member_names.index(speaker)}].background")
    plural_subject = first.lower() != "has" and (
        first.lower().endswith("ics") or re.fullmatch(r"\w+ed|are|were|have|had|live", second) is not None
    )
    if own_background and first[:1].isupper() and _agree(first.lower(), "I") != first.lower() and not plural_subject:
        return _Opening("", "I", text, speaker, True)
    if beat.kind != "agenda" or clause:
        return None
    if re.search(r"\b(?:I|me|my|I'm|I've)\b", text) and first.lower() not in _NOUN_PHRASE_STARTS:
        return _Opening("", "", text, speaker, False)  # a clause in their voice ("Mereana asked me last week why")
    name = re.escape(re.sub(r"['’]s$", "", first))
    # a name stays capitalised after a frame ("Pauline's", "Coach Darren Pike")
    proper = first.lower() not in _NOUN_PHRASE_STARTS and (
        re.search(rf"[a-z,;:] {name}\b", case.model_dump_json())
        or second[:1].isupper()
        or (first[:1].isupper() and re.search(r"['’]s$", first) is not None)  # "Deshawn's mother"
    )
    phrase = text if proper else first.lower() + text[len(first) :]
    frame = _FRAMES[zlib.crc32(beat.source.encode()) % len(_FRAMES)]
    # a that- or wh-clause is whole after a frame: "I can't get past that the calls were lies", "... how thin you
    # have become" (issue 42 (15) heard "how how thin")
    how = _is_clause(phrase) and first.lower() not in ("that", "how", "what", "why", "when", "where", "whether")
    return _Opening(f"{frame} how" if how else frame, "", phrase, speaker, False)


def beat_opener(beat: Beat, speaker: str, addressees: Sequence[str], case: Case) -> str | None:
    """The first words of the line, the card's own, turned to the member's voice: issue 42's "a reply opened with
    the card's own words". Over issue 42's runs the 1.5B said a beat in 23 of 72 lines: handed "Arjun bought Rohan
    the motorbike", it took it as a topic and spoke of feelings. So a piece that opens on this member or on the one
    it is said to (after a time, "In July she ..."), or an agenda item (after a frame when it is a noun phrase,
    `_subject`), begins the line in their voice ("I bought Rohan the motorbike for", "In July I accepted"):
    at most OPENER_WORDS words, cut at the first clause boundary, before a he/she-word the rule cannot place (a
    name or a person stands before it) and before a second verb it would have to conjugate ("and runs"); the
    one spoken to becomes "you". The member says the rest. None when the piece does not open on them, or under
    _MIN_OPENER words are left."""
    opened = _subject(beat, speaker, addressees, case)
    if opened is None:
        return None
    lead, subject, rest, whose, agree = opened
    you = subject in ("you", "your")
    forms = _FORMS["you" if you else "I"]
    mine = set(pronoun_of(case, whose) or ())
    to = _listener(addressees, case)
    tokens = rest.split()
    if len(case.members) == 2:  # a couple's "their" is the speaker's too
        forms = {**forms, "their": "our", "them": "us", "theirs": "ours"}
    start = subject.lower() if lead and subject != "I" else subject  # "In 2018 my brother"
    out, someone, joined = [*lead.split(), *start.split()], False, False
    given = len(out)
    pending = ("you" if you else "I") if agree else None
    for k, token in enumerate(tokens):
        word = token.strip(_STRIP)
        if not word or len(out) - given >= OPENER_WORDS - 1 or _BOUNDARY.match(token):
            break
        low = word.lower()
        if low in GENDERED_PRONOUNS:
            if someone or low not in mine or low not in forms:
                break  # a he/she-word the rule cannot place, or a subject it would have to conjugate
            after = tokens[k + 1].strip(_STRIP).lower() if k + 1 < len(tokens) else ""
            object_her = low == "her" and (not after or after in _OBJECT_AFTER or _BOUNDARY.search(token))
            word = ("you" if you else "me") if object_her else forms[low]
        elif word in (speaker, f"{speaker}'s", f"{speaker}’s"):
            break  # the speaker by name, in a piece that opens on another: not the rule's to turn
        elif low in forms and not someone:
            word = forms[low]
        elif to is not None and word in (to, f"{to}'s", f"{to}’s"):
            word, pending = ("you", "you") if word == to else ("your", pending)
        elif pending and low not in _ADVERBS:
            agreed = _agree(low, pending)
            if joined and agreed != low and low not in _AGREE[pending]:
                break  # "and runs": a verb or a plural noun; the rule cannot tell
            word, pending, joined = agreed, None, False
        elif low in ("and", "but", "or"):
            if someone:
                break  # whose verb follows is not the rule's to tell ("I know Jordan is withdrawing and fears")
            pending, joined = ("you" if you else "I"), True
        elif word[0].isupper() or low in _PEOPLE:
            someone = True
        out.append(word)
        if _BOUNDARY.search(token[len(token.rstrip(_STRIP)) :]):
            break
    while len(out) > given and (out[-1].lower() in _NEEDS_MORE or re.search(r"['’]s$", out[-1])):
        out.pop()  # "... the whole time the" + "2016 caravan holiday": the member fills what it asks for
    if len(out) - given < _MIN_OPENER - 1:
        return None
    line = " ".join(out)
    return line[0].upper() + line[1:]
