"""Per-turn fidelity checks on member turns: cheap, deterministic, no model call.

A member turn is checked before it is accepted (simulator.members re-asks a failing part with the reason, then
accepts it flagged), and the same functions audit saved sessions after the fact (judges.fidelity), so old and
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
  the finish reason is unknown.
- false reference: "you mentioned X" to the counsellor when the counsellor never spoke, or never said anything
  like X.
- unearned softening: a softening move (personas.taxonomy.SOFTENING_MOVES) needs a supporter turn since the
  member last spoke, and the member's `cue` must be words from it (SOFTENING_CUE_OVERLAP of its content words).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from personas.case import Case
from personas.taxonomy import SOFTENING_MOVES, SUPPORTER_NAME
from simulator.llm.structured import MID_PHRASE
from simulator.records import FidelityCheck, FidelityFlag, Turn

LEXICON_PATH = Path(__file__).parent / "data" / "fidelity.yaml"
NEAR_DUPLICATE_OVERLAP = 0.5
MIN_REPEAT_WORDS = 4
LANGUAGE_MIN_WORDS = 5
SOFTENING_CUE_OVERLAP = 0.6
# Character caps of the self-report schema before it had word caps: a field exactly this long was cut by the
# grammar. Used only when auditing records made before moves existed (turn.move is None).
LEGACY_CHAR_CAPS = {"landed": 60, "reason": 60, "emotion": 32}
STATE_TEXT_FIELDS = ("landed", "cue", "emotion", "reason")

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_TERMINAL = re.compile(r"[.!?…。！？)\]\"'”’*—–-]\s*$")
_ANNOTATION = re.compile(r"\s*\[[^\]]*\]\s*$")  # guard notes appended to `reason`, e.g. " [softening capped]"
# Scripts other than Latin, by Unicode ranges; a language code for the ones a session could be held in.
_SCRIPTS: dict[str, tuple[str, str]] = {
    "zh": ("Chinese", r"[\u4e00-\u9fff\u3400-\u4dbf]"),
    "ja": ("Japanese", r"[\u3040-\u30ff]"),
    "ko": ("Korean", r"[\uac00-\ud7af\u1100-\u11ff]"),
    "ru": ("Cyrillic", r"[\u0400-\u04ff]"),
    "ar": ("Arabic", r"[\u0600-\u06ff]"),
    "he": ("Hebrew", r"[\u0590-\u05ff]"),
    "el": ("Greek", r"[\u0370-\u03ff]"),
    "hi": ("Devanagari", r"[\u0900-\u097f]"),
    "th": ("Thai", r"[\u0e00-\u0e7f]"),
}
_SCRIPT_RE = {code: re.compile(rx) for code, (_, rx) in _SCRIPTS.items()}
LANGUAGE_NAMES = {"en": "English", "es": "Spanish", "fr": "French", "de": "German", "pt": "Portuguese",
                  "it": "Italian", "nl": "Dutch", **{c: n for c, (n, _) in _SCRIPTS.items()}}  # fmt: skip


@dataclass(frozen=True)
class Lexicon:
    """simulator/data/fidelity.yaml, loaded once."""

    version: str
    emotions: dict[str, tuple[int, int]]
    weakeners: tuple[str, ...]
    strengtheners: tuple[str, ...]
    weakened_max: int
    strengthened_min: int
    dangling: frozenset[str]
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
        dangling=frozenset(str(w) for w in data["dangling"]),
        counsellor_phrases=tuple(data["counsellor_phrases"]),
        reference_verbs=tuple(data["reference_verbs"]),
        stopwords={k: frozenset(v) for k, v in data["stopwords"].items()},
    )


# ---- text helpers -------------------------------------------------------------------------------------------


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


# ---- language ---------------------------------------------------------------------------------------------------


def detect_language(text: str) -> str | None:
    """A language code from the script, else from function words; None when the text says too little."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return None
    for code, rx in _SCRIPT_RE.items():
        if len(rx.findall(text)) > len(letters) / 2:
            return code
    ws = words(text)
    hits = {lang: sum(w in sw for w in ws) for lang, sw in lexicon().stopwords.items()}
    best = max(hits, key=lambda k: hits[k])
    return best if hits[best] >= 2 else None


@functools.lru_cache(maxsize=256)
def _case_language(text: str) -> str:
    return detect_language(text) or "en"


def session_language(case: Case) -> str:
    """The language the case card is written in (the session is held in it); English when unclear."""
    return _case_language(f"{case.presenting_problem} {case.history} {case.setting}")


def foreign_script(text: str, language: str) -> str | None:
    """The first run of characters from a script the session's language does not use, if any."""
    for code, rx in _SCRIPT_RE.items():
        if code == language:
            continue
        m = rx.search(text)
        if m:
            start = m.start()
            end = start
            while end < len(text) and rx.match(text[end]):
                end += 1
            return f"{_SCRIPTS[code][0]} {text[start:end]!r}"
    return None


def language_switch(text: str, language: str, *, field: str = "text") -> FidelityFlag | None:
    want = LANGUAGE_NAMES.get(language, language)
    it = "it" if field == "text" else f"`{field}`"
    script = foreign_script(text, language)
    if script:
        return _flag(FidelityCheck.LANGUAGE_SWITCH, f"{it} contains {script}; keep to {want}", text, field)
    ws = words(text)
    stop = lexicon().stopwords
    if len(ws) >= LANGUAGE_MIN_WORDS and language in stop:
        hits = {lang: sum(w in sw for w in ws) for lang, sw in stop.items()}
        other = max((k for k in hits if k != language), key=lambda k: hits[k])
        if hits[other] >= 3 and hits[other] > hits[language]:
            name = LANGUAGE_NAMES.get(other, other)
            return _flag(FidelityCheck.LANGUAGE_SWITCH, f"{it} is in {name}; keep to {want}", text, field)
    return None


# ---- repeats ----------------------------------------------------------------------------------------------------


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


# ---- the line ---------------------------------------------------------------------------------------------------


def _tag(name: str) -> str:
    return rf"(?<![\w'’]){re.escape(name)}\s*(?:\(to [^)]*\))?\s*:"


def tagged_speaker(text: str, names: Sequence[str]) -> str | None:
    """The first of `names` whose transcript speaker tag (`Ben:`, `Therapist (to Ana):`) occurs in `text`."""
    return next((n for n in names if re.search(_tag(n), text)), None)


_ADVERBS = "always|never|just|really|also|still|only|even|again|actually"
_SHORT_STEM_ENDINGS = ("", "s", "ed", "ing", "ful", "y", "ness")  # a stem of 4 letters or fewer matches only these
_SELF_VERBS = (
    "feels|felt|thinks|thought|wants|wanted|needs|needed|knows|knew|believes|is|was|has|had|says|said|does|did|"
    "doesn't|didn't|can't|won't|isn't|wasn't|tries|tried|works|worked"
)


def check_line(
    text: str,
    *,
    speaker: str,
    case: Case,
    turns: Sequence[Turn],
    addressees: Sequence[str],
    language: str,
    finish_reason: str | None = None,
) -> list[FidelityFlag]:
    """Every check on what a member said, against the turns before it."""
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
    low = " ".join(words(text))
    phrase = next((p for p in lexicon().counsellor_phrases if " ".join(words(p)) in low), None)
    if phrase:
        flags.append(
            _flag(FidelityCheck.SPEAKING_AS_OTHER, f"'{phrase}' is the counsellor's voice, not {speaker}'s", phrase)
        )
    m = re.search(  # "Theo always has these lists", said by Theo: one adverb may sit between name and verb
        rf"(?<![\w'’]){re.escape(speaker)}(?: (?:{_ADVERBS}|\w+ly))? (?:{_SELF_VERBS})\b", text
    )
    if m:
        flags.append(
            _flag(FidelityCheck.SPEAKING_AS_OTHER, f"{speaker} speaks about {speaker} as someone else; use I", m[0])
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


def _line_cut_off(text: str, finish_reason: str | None) -> str | None:
    if finish_reason == "length":
        return "it stopped at the length limit; say it in one or two short, complete sentences"
    if _TERMINAL.search(text):
        return None
    ws = words(text)
    if finish_reason is None or (ws and ws[-1] in lexicon().dangling):
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
    stop = lexicon().dangling | lexicon().stopwords["en"]
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


# ---- the self-report --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _EmotionMatcher:
    """The lexicon's emotion stems indexed for lookup (built once, not for every self-report checked): one-word
    stems by length (a word names a stem when it starts with it; a stem of up to 4 letters only with one of
    `_SHORT_STEM_ENDINGS` after it), multi-word stems as patterns, weakeners and strengtheners one pattern each."""

    long: dict[int, dict[str, tuple[int, int]]]
    short: dict[int, dict[str, tuple[int, int]]]
    phrases: tuple[tuple[re.Pattern[str], tuple[int, int]], ...]
    weakener: re.Pattern[str]
    strengthener: re.Pattern[str]


@functools.lru_cache(maxsize=1)
def _emotion_matcher() -> _EmotionMatcher:
    lex = lexicon()
    long: dict[int, dict[str, tuple[int, int]]] = {}
    short: dict[int, dict[str, tuple[int, int]]] = {}
    phrases = []
    for stem, rng in lex.emotions.items():
        if " " in stem:
            phrases.append((re.compile(rf"\b{re.escape(stem)}"), rng))
        else:
            (short if len(stem) <= 4 else long).setdefault(len(stem), {})[stem] = rng

    def any_of(ws: Sequence[str]) -> re.Pattern[str]:
        return re.compile("|".join(rf"\b{re.escape(w)}\b" for w in ws) or "(?!)")

    return _EmotionMatcher(long, short, tuple(phrases), any_of(lex.weakeners), any_of(lex.strengtheners))


def emotion_range(emotion: str) -> tuple[int, int] | None:
    """The intensity range the emotion words allow (the union over the emotions named), or None if none named."""
    lex, m = lexicon(), _emotion_matcher()
    ws = words(emotion)
    text = " ".join(ws)
    ranges = [rng for pattern, rng in m.phrases if pattern.search(text)]
    for w in ws:
        ranges += [by[w[:n]] for n, by in m.long.items() if w[:n] in by]
        ranges += [by[w[:n]] for n, by in m.short.items() if w[:n] in by and w[n:] in _SHORT_STEM_ENDINGS]
    if not ranges:
        return None
    lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    if m.weakener.search(text):
        hi = min(hi, lex.weakened_max)
        lo = min(lo, hi)
    if m.strengthener.search(text):
        lo = max(lo, lex.strengthened_min)
        hi = max(hi, lo)
    return lo, hi


def field_cut_off(value: str, *, word_cap: int | None = None, char_cap: int | None = None) -> str | None:
    """Why a self-report field looks cut off, or None."""
    v = _ANNOTATION.sub("", value).strip()
    if not v:
        return None
    ws = words(v)
    if char_cap is not None and len(v) >= char_cap:
        return f"it is exactly {char_cap} characters long (cut by the length limit)"
    if re.search(f"[{MID_PHRASE}]$", v) or (ws and ws[-1] in lexicon().dangling and not _TERMINAL.search(v)):
        return f"it stops mid-phrase ('{' '.join(v.split()[-3:])}')"
    if word_cap is not None and len(v.split()) >= word_cap:  # the grammar ended it there, full stop or not
        return f"it runs to the {word_cap}-word limit; say it in fewer words"
    return None


_RENDERINGS = (
    re.compile(r"(?:[\w'’]+\s*)?\(to [^)]*\)\s*:"),  # a transcript line: `Therapist (to Couple):`
    re.compile(r"\(\s*\d+\s*/\s*10\s*\)"),  # a state: `lonely (7/10)`
    re.compile(r"^\W*the last line (?:was|is)\b", re.IGNORECASE),  # the self-report prompt's own opening
)


def copied_rendering(value: str, names: Sequence[str]) -> str | None:
    """The piece of the prompt's own rendering a self-report field copied (a speaker tag, a `(7/10)` score, the
    prompt's 'the last line was'), or None: a field should say in the member's words how they are."""
    for rx in (*_RENDERINGS, *(re.compile(_tag(n)) for n in dict.fromkeys(names))):
        m = rx.search(value)
        if m:
            return m[0].strip()
    return None


def softening_cause(turns: Sequence[Turn], speaker: str) -> Turn | None:
    """The supporter's last turn, if it came after `speaker` last spoke: what a softening move can answer to."""
    for t in reversed(turns):
        if t.kind == "supporter" and t.text:
            return t
        if t.speaker == speaker:
            return None
    return None


def cue_in(cue: str, said: str) -> bool:
    """Are the cue's content words (mostly) the supporter's own words?"""
    stop = lexicon().dangling | lexicon().stopwords["en"]
    content = [w for w in words(cue) if len(w) >= 3 and w not in stop]
    if not content:
        return False
    spoken = {w[:5] for w in words(said)}
    return sum(w[:5] in spoken for w in content) / len(content) >= SOFTENING_CUE_OVERLAP


def check_state(
    fields: dict[str, str],
    *,
    intensity: int,
    move: str | None,
    speaker: str,
    turns: Sequence[Turn],
    language: str,
    word_caps: dict[str, int] | None = None,
    char_caps: dict[str, int] | None = None,
    reading: str | None = None,
) -> list[FidelityFlag]:
    """Every check on a member's self-report: `fields` holds its text fields (landed, cue, emotion, reason);
    `reading` is what the member said the counsellor's last words did (`set_off` rules out softening)."""
    flags: list[FidelityFlag] = []
    names = [speaker, SUPPORTER_NAME, *{t.speaker for t in turns}]
    for name, value in fields.items():
        if not value:
            continue
        switch = language_switch(value, language, field=name)
        if switch:
            flags.append(switch)
        cut = field_cut_off(value, word_cap=(word_caps or {}).get(name), char_cap=(char_caps or {}).get(name))
        if cut:
            flags.append(_flag(FidelityCheck.CUT_OFF, f"`{name}` {cut}", value, name))
        copied = None if name == "cue" else copied_rendering(value, names)  # a cue quotes the counsellor by design
        if copied:
            detail = f"`{name}` copies the prompt's rendering ('{copied}'); say it in {speaker}'s own words"
            flags.append(_flag(FidelityCheck.COPIED_TAG, detail, value, name))
    emotion = fields.get("emotion", "")
    rng = emotion_range(emotion)
    if rng is None:
        flags.append(
            _flag(
                FidelityCheck.NOT_AN_EMOTION,
                f"`emotion` must name a feeling in a few words (e.g. hurt, angry, anxious), not {emotion!r}",
                emotion,
                "emotion",
            )
        )
    elif not rng[0] <= intensity <= rng[1]:
        flags.append(
            _flag(
                FidelityCheck.INTENSITY_MISMATCH,
                f"intensity {intensity} does not fit '{emotion}' (it fits {rng[0]}-{rng[1]})",
                f"{emotion} ({intensity}/10)",
                "intensity",
            )
        )
    if move in SOFTENING_MOVES:
        if reading == "set_off":
            detail = f"`{move}` after a counsellor turn that set {speaker} off (reading `set_off`); pick another move"
            unearned = _flag(FidelityCheck.UNEARNED_SOFTENING, detail, move, "move")
        else:
            unearned = unearned_softening(move, fields.get("cue", ""), turns, speaker)
        if unearned:
            flags.append(unearned)
    return flags


def unearned_softening(move: str, cue: str, turns: Sequence[Turn], speaker: str) -> FidelityFlag | None:
    cause = softening_cause(turns, speaker)
    if cause is None:
        detail = f"the counsellor has not spoken since {speaker} last did, so `{move}` has no cause; pick another move"
        return _flag(FidelityCheck.UNEARNED_SOFTENING, detail, move, "move")
    if not cue.strip():
        detail = f"`{move}` needs `cue`: the counsellor's words that did something from {speaker}'s softeners"
        return _flag(FidelityCheck.UNEARNED_SOFTENING, detail, move, "cue")
    if not cue_in(cue, cause.text):
        detail = (
            f"`cue` ('{cue}') is not what the counsellor said in turn {cause.index}; quote them or pick another move"
        )
        return _flag(FidelityCheck.UNEARNED_SOFTENING, detail, cue, "cue")
    return None


REPEATS = (FidelityCheck.DUPLICATE, FidelityCheck.NEAR_DUPLICATE)


def repeated_texts(flags: Sequence[FidelityFlag], turns: Sequence[Turn]) -> tuple[str, ...]:
    """What the re-ask of a line that repeated an earlier turn must not copy: that turn first, then every other
    earlier line (a small model asked in words alone often wrote the same line again, and kept from that one it
    copied another)."""
    cited = [f.turn for f in flags if f.check in REPEATS]
    if not cited:
        return ()
    first = [t.text for t in turns if t.index in cited and t.text]
    return tuple(dict.fromkeys([*first, *(t.text for t in reversed(turns) if t.text)]))


def reask_note(flags: Sequence[FidelityFlag]) -> str:
    """What a re-asked model is told: the reasons its last answer was not accepted."""
    reasons = "; ".join(dict.fromkeys(f.detail for f in flags))
    return f"Your last answer was not used: {reasons}. Answer again, fixing that."
