"""Language checks: the language a session is held in (from its case card), and a line or field that switches
to another (a character of another script, or for longer text more function words of another language).
"""

from __future__ import annotations

import functools
import re

from personas.case import Case
from simulator.records import FidelityCheck, FidelityFlag
from simulator.turn_checks._text import _flag, lexicon, words

LANGUAGE_MIN_WORDS = 5
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
