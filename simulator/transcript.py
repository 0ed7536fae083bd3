"""How a session is shown to models: the shared case context and the transcript lines, rendered in one place."""

from __future__ import annotations

from collections.abc import Sequence

from personas.case import Case
from personas.prompts import render_prompt
from simulator.records import SUPPORTER, Turn

DEFAULT_WINDOW = 16  # turns of transcript shown to models; older turns are summarised by count


def case_context(case: Case) -> str:
    """What everyone in the room knows; identical for every role, so it heads every prompt (prefix cache)."""
    people = ", ".join(f"{m.name} ({m.role}{f', {m.age}' if m.age is not None else ''})" for m in case.members)
    return render_prompt(
        "case_context",
        group_kind="couples" if case.group == "couple" else "family",
        setting=case.setting,
        people_line=people,
        supporter=SUPPORTER,
        problem=case.presenting_problem,
    )


def turn_line(turn: Turn) -> str:
    to = f" (to {', '.join(turn.addressees)})" if turn.addressees else ""
    return f'{turn.speaker}{to}: "{turn.text}"'


def render_transcript(turns: Sequence[Turn], window: int = DEFAULT_WINDOW) -> str:
    """The last `window` turns as script lines."""
    shown = list(turns)[-window:] if window else list(turns)
    lines = []
    if len(turns) > len(shown):
        lines.append(f"[{len(turns) - len(shown)} earlier turns not shown]")
    lines.extend(turn_line(t) for t in shown)
    return "\n".join(lines) if lines else "(the session is just starting; nobody has spoken yet)"


def shared_context(case: Case, turns: Sequence[Turn], window: int = DEFAULT_WINDOW) -> str:
    return f"{case_context(case)}\n\nTranscript so far:\n{render_transcript(turns, window)}"


def last_line(turns: Sequence[Turn]) -> str:
    return turn_line(turns[-1]) if turns else "(nothing yet: the counsellor has just invited them to begin)"
