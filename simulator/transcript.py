"""How a session is shown to models: the shared case context and the transcript lines, rendered in one place."""

from __future__ import annotations

import re
from collections.abc import Sequence

from personas.case import Case
from personas.common.prompts import render_prompt
from personas.taxonomy import patterns_for, strategies_for
from simulator.records import SUPPORTER, Turn
from simulator.turn_checks._text import unquoted

DEFAULT_WINDOW = 16  # turns of transcript shown to models; older turns are summarised by count


_CODEBOOK = "\n\nCodebook ("  # where personas/prompts/case_context.md's codebook begins


def case_context(case: Case, *, codebook: bool = True) -> str:
    """What everyone in the room knows, plus the RESCUE codebook for the supporter and the observer.

    It heads every prompt and is processed once per session per form (llama.cpp's prefix cache, hosted
    providers' prompt caching); role-specific text comes after the transcript. Members get it without the
    codebook (`codebook=False`): the support strategies at the head of a 1.5B member's prompt are the counsellor's
    vocabulary, and "the people in the room never see it" did not keep it out of their lines (issue 42 (8)).
    """
    people = ", ".join(f"{m.name} ({m.role}{f', {m.age}' if m.age is not None else ''})" for m in case.members)
    context = render_prompt(
        "case_context",
        group_kind="couples" if case.group == "couple" else "family",
        setting=case.setting,
        people_line=people,
        supporter=SUPPORTER,
        problem=case.presenting_problem,
        patterns=_codebook(patterns_for(case.group)),
        strategies=_codebook(strategies_for(case.group)),
    )
    return context if codebook else context.split(_CODEBOOK, 1)[0]


def _codebook(labels: dict[str, str]) -> str:
    return "\n".join(f"- {k}: {v}" for k, v in labels.items())


def turn_line(turn: Turn) -> str:
    to = f" (to {', '.join(turn.addressees)})" if turn.addressees else ""
    return f'{turn.speaker}{to}: "{turn.text}"'


def render_transcript(turns: Sequence[Turn], window: int = DEFAULT_WINDOW) -> str:
    """The most recent turns as script lines: between window/2 and window of them.

    The window slides in steps of half its size, so the first shown line (and with it the cached prompt
    prefix) stays put for several turns instead of changing on every turn.
    """
    step = max(1, window // 2)
    start = 0 if not window or len(turns) <= window else ((len(turns) - window) // step + 1) * step
    shown = list(turns)[start:]
    lines = []
    if len(turns) > len(shown):
        lines.append(f"[{len(turns) - len(shown)} earlier turns not shown]")
    lines.extend(turn_line(t) for t in shown)
    return "\n".join(lines) if lines else "(the session is just starting; nobody has spoken yet)"


def shared_context(case: Case, turns: Sequence[Turn], window: int = DEFAULT_WINDOW, *, codebook: bool = True) -> str:
    return f"{case_context(case, codebook=codebook)}\n\nTranscript so far:\n{render_transcript(turns, window)}"


def last_line(turns: Sequence[Turn]) -> str:
    return turn_line(turns[-1]) if turns else "(nothing yet: the counsellor has just invited them to begin)"


_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


def said_phrase(phrases: Sequence[str], text: str) -> str | None:
    """The line's own words for the earliest of `phrases` it contains as whole words (case, spacing and curly
    apostrophes ignored), else None: how a stage direction with recognisable wordings is known to be said."""
    plain = text.replace("\u2019", "'")
    found = []
    for phrase in phrases:
        words = phrase.replace("\u2019", "'").split()
        hit = re.search(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)", plain, re.IGNORECASE)
        if words and hit:
            found.append((hit.start(), -hit.end()))
    if not found:
        return None
    start, end = min(found)
    return text[start:-end]


def sentences(text: str) -> list[str]:
    """The sentences of a turn, whitespace collapsed: what judges cite and a local safety checker quotes."""
    return [x for x in _SENTENCE_END.split(" ".join(text.split())) if x]


# A counsellor speaks about the members, not about its own hurt. On RESCUE's real sessions this matches 1 of 59
# therapist turns (a "for me" in a request to re-enact a fight) and 38 of 124 member turns; on the 1.5B's ladder
# lines it matched the ones written as a member ("It's hurting me too", "you made me feel judged").
_MEMBER_VOICE = re.compile(
    r"\b(?<!tell )(?<!help )(?<!let )(?<!show )(?<!give )me\b"
    r"|\b(?:my|myself|mine)\b"
    r"|\bI(?:'m| am)? (?:feel|felt|hurt|tired|exhausted|scared|afraid|sad|angry|drained|lonely|sick)\b"
    r"|\bI can(?:'t|not) (?:stand|take)\b",
    re.IGNORECASE,
)


def member_voice(text: str) -> str | None:
    """The words by which a counsellor line speaks of the speaker's own hurt or life, as a member would ("talk to
    me", "my potential", "I feel so drained"), if it does; quoted words are someone else's and do not count."""
    found = _MEMBER_VOICE.search(unquoted(text))
    return found[0] if found else None


def in_member_voice(text: str) -> bool:
    """Whether a counsellor line is said as a member (`member_voice`): a ladder rung's line like that is not the
    counsellor it is meant to be."""
    return member_voice(text) is not None
