"""Checks on a member's self-report: a language switch, a cut-off or prompt-copying field, a word that names no
feeling or an intensity the feeling does not allow, and a softening move the counsellor's last turn did not earn.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from personas.taxonomy import SOFTENING_MOVES, SUPPORTER_NAME
from simulator.llm.structured import MID_PHRASE
from simulator.records import FidelityCheck, FidelityFlag, Turn
from simulator.turn_checks._language import language_switch
from simulator.turn_checks._text import _TERMINAL, _flag, _tag, lexicon, words

SOFTENING_CUE_OVERLAP = 0.6
# Character caps of the self-report schema before it had word caps: a field exactly this long was cut by the
# grammar. Used only when auditing records made before moves existed (turn.move is None).
LEGACY_CHAR_CAPS = {"landed": 60, "reason": 60, "emotion": 32}
STATE_TEXT_FIELDS = ("landed", "cue", "emotion", "reason")
_ANNOTATION = re.compile(r"\s*\[[^\]]*\]\s*$")  # guard notes appended to `reason`, e.g. " [softening capped]"
_SHORT_STEM_ENDINGS = ("", "s", "ed", "ing", "ful", "y", "ness")  # a stem of 4 letters or fewer matches only these


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
    for rx in _RENDERINGS:
        if m := rx.search(value):
            return m[0].strip()
    # a tag opens the field or a sentence; "understanding of Lena: Lena feels..." (the member restating the
    # verdict its prompt gave it, which names it mid-sentence) is not a transcript line
    for name in dict.fromkeys(names):
        if m := re.search(rf"(?:^|[.!?\n\"“]\s*)(?P<tag>{_tag(name)})", value):
            return m["tag"].strip()
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
    stop = lexicon().function_words
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
    `reading` is what the member said the counsellor's last words did (`set_off` rules out softening; `softened`
    earns it, the appraisal having found the counsellor's words understanding, so no quoted cue is needed)."""
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
    elif not rng[0] - lexicon().intensity_tolerance <= intensity <= rng[1] + lexicon().intensity_tolerance:
        flags.append(
            _flag(
                FidelityCheck.INTENSITY_MISMATCH,
                f"intensity {intensity} does not fit '{emotion}' (it fits {rng[0]}-{rng[1]})",
                f"{emotion} ({intensity}/10)",
                "intensity",
            )
        )
    if move in SOFTENING_MOVES and reading != "softened":  # `softened`: the appraisal found the cause
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
