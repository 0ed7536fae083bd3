"""Validity notes under a table: which instrument produced each number and how it fared against RESCUE gold."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judges import Leaderboard, SessionJudgment
    from judges.validity import ValidityNote

INTRO = "validity (`rescue-sim gold sessions` cards, matched by model and prompt digest):"


def note_line(label: str, note: ValidityNote) -> str:
    who = f"{note.instrument} {note.model or '?'}" + (f" @ {note.digest}" if note.digest else "")
    return f"  {label} — {who}: {note.text}"


def validity_lines(board: Leaderboard, header: Callable[[str], str] = str) -> list[str]:
    """One line per (dimension, instrument, model, digest) across the board's rows, in column order."""
    seen: list[str] = []
    for dim_id in board.dimensions:
        for row in board.rows:
            summary = row.dimension(dim_id)
            for note in summary.validity if summary is not None else []:
                line = note_line(header(dim_id), note)
                if line not in seen:
                    seen.append(line)
    for row in board.rows:
        for note in row.observer_validity:
            line = note_line("Δtension (observer)", note)
            if line not in seen:
                seen.append(line)
    return [INTRO, *seen] if seen else []


def notes_lines(label: str, notes: Iterable[ValidityNote]) -> list[str]:
    return [note_line(label, n) for n in notes]


def judgment_briefs(judgment: SessionJudgment, dimensions: Iterable[str]) -> dict[str, str]:
    """Dimension -> what its number is worth on the judge that produced it (`briefs` of the matching card, the
    user's or a shipped one), or "not validated"; one entry per distinct judge note, joined, for a panel."""
    from judges.validity import dimension_validity

    out: dict[str, str] = {}
    for dim_id in dimensions:
        texts = [dimension_validity(dim_id, j, judgment.prompt_digest).brief for j in judgment.judges]
        out[dim_id] = "; ".join(dict.fromkeys(texts))
    return out
