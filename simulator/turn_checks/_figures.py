"""Figures a member states that neither the card nor the room gave them (`invented_figure`, issue 42).

The blind raters of issue 42's runs (11) and (12) called most own-case lines muddled: a right detail of the card
beside a wrong one, and the wrong one is often a figure. "He has not once asked about April 2016" (a year the card
does not hold), "the ₦15 million given to Chief Okonkwo 2009" (the right fact with a wrong year), "I did two years
of pills 10/2 years ago", and README command 1's Theo opening on "6/10", his self-report's intensity. Unlike the
rest of a muddle, a figure can be checked by a rule: it must be one the card holds in some wording ("nine" for 9,
"£4k" for £4,000, "R2.8 million" for R2,800,000), one said earlier in the room, one the member's own stage
direction gave, or the number of years between two years the card holds (or since one, counted to a year from
the card's last to NOW_SLACK after it: a card never says what year it is now).

What the rule reads as a figure: every number written in digits, and a number written in words when a unit
follows it ("twelve years", "four thousand pounds"); a score out of ten ("6/10") is never speech unless the room
spoke of a scale. Idioms are not figures ("24/7", "100%", "a hundred times", "one more time"). It cannot see a
figure worked out from two others (an age from a birth year), nor a wrong figure the card happens to hold
elsewhere.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from personas.case import Case
from simulator.records import Turn

_UNITS_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000,
           "lakh": 100_000, "crore": 10_000_000}  # fmt: skip
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
             "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "twentieth": 20, "thirtieth": 30,
             "fortieth": 40, "fiftieth": 50, "sixtieth": 60, "seventieth": 70, "eightieth": 80}  # fmt: skip
_MULTIPLIERS = {"k": 1_000, "grand": 1_000, "m": 1_000_000, "bn": 1_000_000_000, **_SCALES}
# a number in words is a figure only before one of these ("twelve years"; "one of us" is not a figure)
_UNIT_NOUNS = (
    r"years?|months?|weeks?|days?|hours?|nights?|decades?|kids?|children|sons?|daughters?|grandchildren|dollars?|"
    r"pounds?|quid|euros?|rand|naira|rupees?|yen|grand|percent|per cent|%|years?-old|year-olds?|times"
)
_NUMBER_WORD = "|".join(sorted([*_UNITS_WORDS, *_SCALES], key=len, reverse=True))
_AND = r"(?:(?:(?<=hundred)|(?<=thousand)|(?<=million))[\s-]+and)?"  # "two hundred and fifty", not "twelve and eight"
_SPELLED = re.compile(rf"\b(?:{_NUMBER_WORD})(?:{_AND}[\s-]+(?:{_NUMBER_WORD}))*\b", re.IGNORECASE)
_SPELLED_FIGURE = re.compile(rf"(?P<n>{_SPELLED.pattern})(?=[\s-]+(?:{_UNIT_NOUNS})\b)", re.IGNORECASE)
# ... and in these places, where a number in words can only be a figure: an age ("you're forty"), a time of day
# ("at eight last night"), one with a scale word ("five hundred", not "a hundred times"); "one" is never read
# there ("I was one of them", "at one point")
_SPELLED_AGE = re.compile(
    rf"\b(?:I'm|I am|you're|you are|he's|she's|he is|she is|was|were|turned|turning|aged|age)\s+"
    rf"(?P<n>(?!one\b){_SPELLED.pattern})(?![\s-]+(?:of|to|more|times?|things?|ways?|days?\s+a)\b)",
    re.IGNORECASE,
)
_SPELLED_TIME = re.compile(
    rf"\b(?:at|till|until|by|past|around|after|before|since)\s+(?P<n>(?!one\b){_SPELLED.pattern})"
    r"(?=\s*(?:o'clock|in the (?:morning|evening|afternoon)|at night|last night|tonight|every|most|[.,;!?]|$))",
    re.IGNORECASE,
)
_SPELLED_SCALED = re.compile(
    rf"(?P<n>\b(?!(?:{'|'.join(_SCALES)})\b)(?:{_NUMBER_WORD})(?:{_AND}[\s-]+(?:{_NUMBER_WORD}))+\b)",
    re.IGNORECASE,
)
_ORDINAL = re.compile(rf"\b(?:{'|'.join(_ORDINALS)})\b", re.IGNORECASE)
_DIGITS = re.compile(
    r"(?<![\d.,A-QS-Za-qs-z_])(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:st|nd|rd|th|s|am|pm)?"
    r"(?:\s?(?P<mult>k|m|bn|grand|thousand|million|billion|lakh|crore)\b)?",
    re.IGNORECASE,
)
_SCORE = re.compile(
    rf"(?<![\w/])\d{{1,2}}\s?/\s?10\b|\b(?:{'|'.join(_UNITS_WORDS)}|\d{{1,2}})\s+out of (?:ten|10)\b", re.IGNORECASE
)
_SCALE_TALK = re.compile(r"\bscale\b|\bout of (?:10|ten)\b", re.IGNORECASE)
_IDIOMS = re.compile(
    r"\b24\s?/\s?7\b|\b(?:100|110)\s?(?:%|percent|per cent)|\b50\s?/\s?50\b|\b9\s?(?:-|to)\s?5\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
NOW_SLACK = 2


def _spelled_value(phrase: str) -> float | None:
    """ "twenty-three" -> 23, "four thousand" -> 4000, "two hundred and fifty" -> 250, "twenty seventeen" -> 2017;
    None for a lone scale
    word ("hundred"), which is idiom ("a hundred times") more often than figure."""
    parts = [p for p in re.split(r"[\s-]+", phrase.lower()) if p and p != "and"]
    if not parts or parts[0] in _SCALES:
        return None
    if parts[0] in ("nineteen", "twenty") and len(parts) > 1 and all(p in _UNITS_WORDS for p in parts[1:]):
        rest = sum(_UNITS_WORDS[p] for p in parts[1:])
        if rest >= 10:  # a year: "twenty seventeen", "nineteen eighty-one" ("twenty-three" is 23)
            return float(_UNITS_WORDS[parts[0]] * 100 + rest)
    total = current = 0
    for p in parts:
        if p in _UNITS_WORDS:
            current += _UNITS_WORDS[p]
        elif p == "hundred":
            current = max(current, 1) * 100
        else:
            total += max(current, 1) * _SCALES[p]
            current = 0
    return float(total + current)


def _digit_values(text: str) -> list[tuple[int, str, float]]:
    """Each number in digits, where it starts and its value, a multiplier applied ("£4k" -> 4000, "R2.8 million"
    -> 2.8e6). Idioms are blanked to spaces of their own length, so a start is a place in `text`."""
    out = []
    text = _IDIOMS.sub(lambda m: " " * len(m[0]), text)
    for m in _DIGITS.finditer(text):
        value = float(m["n"].replace(",", ""))
        mult = (m["mult"] or "").lower()
        sign = text[m.start() - 1] if m.start() and text[m.start() - 1] in "$£€₦¥R'’" else ""
        out.append((m.start(), sign + m[0].strip(), value * _MULTIPLIERS[mult] if mult else value))
    return out


def _readings(phrase: str, value: float) -> set[float]:
    """What a figure may stand for: "'81" is 1981 or 2081."""
    return {1900 + value, 2000 + value} if phrase[:1] in "'’" and value < 100 else {value}


def _values(text: str) -> set[float]:
    """Every number `text` holds, in any wording, with the parts of a time or decimal ("7.30" -> 7, 30)."""
    out = set().union(*(_readings(p, v) for _, p, v in _digit_values(text)), set())
    out |= {v for m in _SPELLED.finditer(text) if (v := _spelled_value(m[0])) is not None}
    out |= {float(_ORDINALS[m[0].lower()]) for m in _ORDINAL.finditer(text)}
    for m in re.finditer(r"\b(\d{1,2})[.:](\d{2})\b", text):
        out |= {float(m[1]), float(m[2])}
    return out


def _card_strings(value: object) -> Iterable[str]:
    """Every text of a dumped card; its numeric fields are scales of the simulation (intensity, tension), not
    what its people know, and are left out."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _card_strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _card_strings(v)


@functools.lru_cache(maxsize=64)
def _card_values(card_json: str) -> frozenset[float]:
    """The numbers a card holds (every field, ages included), and the years between the years it holds."""
    case = Case.model_validate_json(card_json)
    texts = [*_card_strings(case.model_dump(mode="json")), *(str(m.age) for m in case.members if m.age is not None)]
    values = set().union(*(_values(t) for t in texts)) if texts else set()
    years = {int(y) for t in texts for y in _YEAR.findall(t)}
    # the years between two the card holds, or since one of them: "now" is unstated, so any year from the
    # card's last to NOW_SLACK after it ("came to the UK in 2017" -> "seven years" in 2024)
    nows = range(max(years), max(years) + NOW_SLACK + 1) if years else range(0)
    values |= {float(abs(a - b)) for a in years for b in [*years, *nows] if a != b}
    return frozenset(values)


def line_figures(text: str) -> list[tuple[str, float]]:
    """The figures a line states: numbers in digits (idioms aside), and numbers in words before a unit ("five
    grand" is 5,000), as an age or a time of day, or with a scale word. In the order they are said."""
    found = _digit_values(text)
    spans: set[tuple[int, int]] = set()
    for pattern in (_SPELLED_FIGURE, _SPELLED_AGE, _SPELLED_TIME, _SPELLED_SCALED):
        for m in pattern.finditer(text):
            if m.span("n") in spans or (v := _spelled_value(m["n"])) is None:
                continue
            spans.add(m.span("n"))
            grand = re.match(r"[\s-]+grand\b", text[m.end("n") :], re.IGNORECASE)
            found.append((m.start("n"), m["n"], v * 1_000 if grand else v))
    return [(p, v) for _, p, v in sorted(found, key=lambda f: f[0])]


def invented_figure(text: str, case: Case, earlier: Sequence[Turn], given: Sequence[str] = ()) -> str | None:
    """The first figure of `text` that the card, the earlier turns and what the member was `given` (their stage
    direction) never state; a score out of ten unless the room spoke of a scale. None: every figure is supported."""
    said = [t.text for t in earlier if t.text] + [g for g in given if g]
    score = _SCORE.search(text)
    if score and not any(_SCALE_TALK.search(s) for s in said):
        return score[0]
    figures = line_figures(_SCORE.sub(" ", text))  # a score answering a scale the room spoke of is no fact
    if not figures:
        return None
    supported = _card_values(case.model_dump_json()) | set().union(*(_values(s) for s in said))
    return next((phrase for phrase, value in figures if not _readings(phrase, value) & supported), None)
