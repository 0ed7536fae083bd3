"""What a re-asked model is told after a failed check, and which earlier lines the re-ask of a repeat must not
copy (simulator.members re-asks each part of a turn once).
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.records import FidelityCheck, FidelityFlag, Turn

REPEATS = (FidelityCheck.DUPLICATE, FidelityCheck.NEAR_DUPLICATE, FidelityCheck.ECHO)
# Checks whose flag on a kept line is a simulator fault by itself (simulator.faults): out of role, or another
# language. A repeat kept after its re-ask is one too (REPEATS).
FAULTING = (
    FidelityCheck.SPEAKING_AS_OTHER,
    FidelityCheck.THIRD_PERSON,
    FidelityCheck.WRONG_ADDRESS,
    FidelityCheck.GIVEN_AWAY,
    FidelityCheck.LANGUAGE_SWITCH,
)


def repeated_texts(flags: Sequence[FidelityFlag], turns: Sequence[Turn]) -> tuple[str, ...]:
    """What the re-ask of a line that repeated an earlier turn must not copy: that turn first, then every other
    earlier line (a small model asked in words alone often wrote the same line again, and kept from that one it
    copied another)."""
    cited = [f.turn for f in flags if f.check in REPEATS]
    if not cited:
        return ()
    first = [t.text for t in turns if t.index in cited and t.text]
    return tuple(dict.fromkeys([*first, *(t.text for t in reversed(turns) if t.text)]))


def invented_figures(flags: Sequence[FidelityFlag]) -> tuple[str, ...]:
    """What the re-ask of a line with an invented figure may not write: the figure after the words that led to
    it (a decoding ban on the embedded model, like a repeated line's words)."""
    return tuple(f.evidence for f in flags if f.check == FidelityCheck.INVENTED_FIGURE and f.evidence)


def reask_note(flags: Sequence[FidelityFlag]) -> str:
    """What a re-asked model is told: the reasons its last answer was not accepted."""
    reasons = "; ".join(dict.fromkeys(f.detail for f in flags))
    return f"Your last answer was not used: {reasons}. Answer again, fixing that."
