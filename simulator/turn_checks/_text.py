"""The fidelity lexicon (simulator/data/fidelity.yaml, loaded once) and the word measures every check uses:
words, word trigrams and their overlap, the transcript's speaker-tag pattern, and the flag every check returns.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from simulator.records import FidelityCheck, FidelityFlag

LEXICON_PATH = Path(__file__).parent.parent / "data" / "fidelity.yaml"

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
NEAR_DUPLICATE_OVERLAP = 0.5
# "Theo always has these lists": a name, at most one adverb, then a third-person verb
_ADVERBS = "always|never|just|really|also|still|only|even|again|actually"
_SELF_VERBS = (
    "feels|felt|thinks|thought|wants|wanted|needs|needed|knows|knew|believes|is|was|has|had|says|said|does|did|"
    "doesn't|didn't|can't|won't|isn't|wasn't|tries|tried|works|worked"
)
_TERMINAL = re.compile(r"[.!?…。！？)\]\"'”’*—–-]\s*$")


@dataclass(frozen=True)
class Lexicon:
    """simulator/data/fidelity.yaml, loaded once."""

    version: str
    emotions: dict[str, tuple[int, int]]
    weakeners: tuple[str, ...]
    strengtheners: tuple[str, ...]
    weakened_max: int
    strengthened_min: int
    intensity_tolerance: int
    dangling: frozenset[str]  # a field or line ending on one stopped mid-phrase
    function_words: frozenset[str]  # not content: `dangling`, the words that may end a phrase, English stopwords
    counsellor_phrases: tuple[str, ...]
    reference_verbs: tuple[str, ...]
    stopwords: dict[str, frozenset[str]]


@functools.lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    data = yaml.safe_load(LEXICON_PATH.read_text(encoding="utf-8"))
    return Lexicon(
        version=data["version"],
        emotions={str(k): (int(v[0]), int(v[1])) for k, v in data["emotions"].items()},
        weakeners=tuple(data["weakeners"]),
        strengtheners=tuple(data["strengtheners"]),
        weakened_max=int(data["weakened_max"]),
        strengthened_min=int(data["strengthened_min"]),
        intensity_tolerance=int(data["intensity_tolerance"]),
        dangling=frozenset(str(w) for w in data["dangling"]),
        function_words=frozenset(str(w) for w in [*data["dangling"], *data["phrase_final"], *data["stopwords"]["en"]]),
        counsellor_phrases=tuple(data["counsellor_phrases"]),
        reference_verbs=tuple(data["reference_verbs"]),
        stopwords={k: frozenset(v) for k, v in data["stopwords"].items()},
    )


# Words in quotation marks are someone else's: "they always told me 'no matter what, we're here for you'" quotes
# Dana's parents, and "you said 'I feel invisible in my own home'" quotes a member; so are the words a counsellor
# reports without marks, up to the clause's end ("when you say you just want him to look at me, what ...").
_QUOTED = re.compile(
    r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|(?<![\w'])'[^']*'(?![\w'])"
    r"|\byou(?:'re| are)? (?:say|said|saying|mean|meant)\b[^,.;:!?]*",
    re.IGNORECASE,
)


def unquoted(text: str) -> str:
    """The text with what it quotes (in double, curly or single quotation marks, or reported after "you say") taken
    out: the speaker's own words."""
    return _QUOTED.sub(" ", text.replace("\u2019", "'"))


# A sentence's end: its mark, any closing quote or bracket, then a space or the end. A title ("Mr.", "St.") or an
# initial ("J.") ends nothing.
_SENTENCE_MARK = re.compile(
    r"(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bMt)(?<!\bJr)(?<!\bSr)(?<!\bvs)(?<!\b[A-Z])"
    r"(?:[!?…]+|\.+)['\"’”)]*(?=\s|$)"
)


def whole_sentences(text: str) -> tuple[str, str]:
    """The text up to the end of its last full sentence, and the unfinished words after it ("" when it ends on
    one; the whole text after "" when it has no full sentence)."""
    ends = [m.end() for m in _SENTENCE_MARK.finditer(text)]
    if not ends:
        return "", text.strip()
    return text[: ends[-1]].strip(), text[ends[-1] :].strip()


_CARD_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def card_sentences(text: str) -> list[str]:
    """A card field's sentences, whole (not cut at ';': a piece cut there read "to stay sane.", issue 42), its
    spacing made single. Cards are written, so a plain mark and a space end a sentence."""
    return [s.strip() for s in _CARD_SENTENCE.split(" ".join(text.split())) if s.strip()]


def words(text: str) -> list[str]:
    """Lower-cased words (letters and digits, inner apostrophes kept)."""
    return [w.replace("’", "'") for w in _WORD.findall(text.lower())]


def trigrams(ws: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(ws[i : i + 3]) for i in range(len(ws) - 2)}


def overlap(a: str, b: str) -> float:
    """Overlap coefficient of the two texts' word-trigram sets (0 when either has none)."""
    ta, tb = trigrams(words(a)), trigrams(words(b))
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / min(len(ta), len(tb))


def _flag(
    check: FidelityCheck, detail: str, evidence: str = "", field: str = "text", turn: int | None = None
) -> FidelityFlag:
    return FidelityFlag(check=check, field=field, detail=detail, evidence=evidence[:200], turn=turn)


def _tag(name: str) -> str:
    return rf"(?<![\w'’]){re.escape(name)}\s*(?:\(to [^)]*\))?\s*:"
