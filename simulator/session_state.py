"""What one session is made of while it runs: its config (with the stage directions perturbations inject),
the LangGraph state and its reducers, and the seeds derived from it. The engine (`simulator.engine`) and its nodes
(`simulator.nodes`) share these; nothing here calls a model."""

from __future__ import annotations

import operator
from enum import Enum
from typing import Annotated, TypedDict, get_args

from pydantic import BaseModel, ConfigDict, Field

from personas.case import Case
from personas.graph import RelationGraph, RelationSnapshot
from personas.taxonomy import RiskKind
from simulator.floor import rng_for
from simulator.records import (
    EndReason,
    FidelityCheck,
    SafetyEvent,
    SupporterDecision,
    Turn,
)
from simulator.view import SupporterKnows


class StageDirection(BaseModel):
    """A private direction injected into one member turn (how perturbations enter a live session)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at_member_turn: int = Field(ge=1, description="1-based member turn that plays the direction.")
    member: str | None = Field(default=None, description="Who speaks that turn; None = whoever the floor picks.")
    to: tuple[str, ...] = Field(
        default=(), description="Whom that turn is spoken to (members or the Therapist); empty = the floor's choice."
    )
    text: str = Field(min_length=1, description="What the member is to do, e.g. 'hint at thoughts of self-harm'.")
    said_if: tuple[str, ...] = Field(
        default=(),
        description="Wordings that show the direction was carried out; a line with none of them is re-asked "
        "(FidelityCheck.DIRECTION_IGNORED). Empty: not checked here (the delivery check decides after the session).",
    )
    opening: str | None = Field(
        default=None, description="Start of the last re-ask of a line that keeps leaving out `said_if`'s wordings."
    )
    allow: tuple[FidelityCheck, ...] = Field(
        default=(), description="Fidelity checks the directed turn is exempt from (what the direction asks for)."
    )
    source: str = Field(default="", description="Name of the perturbation it comes from.")
    discloses: tuple[RiskKind, ...] = Field(
        default=(),
        description="Risks the perturbation flags on this member, which the directed line makes public: before "
        "this turn the flag is not live (nothing in the room shows it), and saying the line opens a safety event.",
    )


class SessionConfig(BaseModel):
    """How one session runs. Stored in the run manifest; everything that changes the transcript is here."""

    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(default=6, ge=1, le=200, description="Member turns before the session ends.")
    seed: int = 0
    tracker_every: int = Field(
        default=3, ge=0, description="Run the tracker every N member turns and at the end (0 = only at the end)."
    )
    window: int = Field(default=16, ge=2, description="Transcript turns shown to models.")
    supporter_knows: SupporterKnows = Field(
        default="intake", description="What the supporter is shown: `intake` (default) or `oracle` (ablations)."
    )
    directions: tuple[StageDirection, ...] = Field(
        default=(), description="Stage directions for given member turns (perturbations)."
    )

    def direction_for(self, member_turn: int) -> StageDirection | None:
        return next((d for d in self.directions if d.at_member_turn == member_turn), None)


def add_turns(left: list[Turn], right: list[Turn]) -> list[Turn]:
    """Append turns; a turn whose index already exists replaces it (e.g. the tracker annotating a turn)."""
    merged = {t.index: t for t in left}
    for t in right:
        merged[t.index] = t
    return [merged[i] for i in sorted(merged)]


def merge_safety(left: list[SafetyEvent], right: list[SafetyEvent]) -> list[SafetyEvent]:
    merged = {(e.member, e.signalled_at): e for e in left}
    for e in right:
        merged[(e.member, e.signalled_at)] = e
    return sorted(merged.values(), key=lambda e: (e.signalled_at, e.member))


def _types_within(*roots: type) -> tuple[type, ...]:
    """The models and enums reachable from `roots` through their fields' annotations, roots included."""
    found: dict[type, None] = {}
    todo = list(roots)
    while todo:
        t = todo.pop()
        if t in found:
            continue
        found[t] = None
        if isinstance(t, type) and issubclass(t, BaseModel):
            for field in t.model_fields.values():
                todo.extend(_named_types(field.annotation))
    return tuple(found)


def _named_types(annotation: object) -> list[type]:
    if isinstance(annotation, type):
        return [annotation] if issubclass(annotation, BaseModel | Enum) else []
    return [t for arg in get_args(annotation) for t in _named_types(arg)]


# The record types a session's state holds, and those inside them: a checkpointer (human play) revives these and
# nothing else. LangGraph warns on any type not named, and will refuse them in a later release.
STATE_TYPES = _types_within(Turn, SupporterDecision, RelationSnapshot, SafetyEvent, EndReason)


class SessionState(TypedDict, total=False):
    turns: Annotated[list[Turn], add_turns]
    decisions: Annotated[list[SupporterDecision], operator.add]
    self_report: Annotated[list[RelationSnapshot], operator.add]
    observer: Annotated[list[RelationSnapshot], operator.add]
    safety: Annotated[list[SafetyEvent], merge_safety]
    next_speaker: str
    next_addressees: list[str]
    next_floor: str
    end_reason: EndReason | None
    failure: str | None


def initial_state(case: Case) -> SessionState:
    snap = RelationGraph.from_case(case).snapshot(turn=0, view="initial")
    return {
        "turns": [],
        "decisions": [],
        "self_report": [snap],
        "observer": [snap],
        "safety": [],
        "end_reason": None,
        "failure": None,
    }


def derive_seed(seed: int, *parts: object) -> int:
    return rng_for(seed, *parts).randrange(2**31)
