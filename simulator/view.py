"""What the supporter under test is shown: what a counsellor in the room would know, as frozen copies.

By default (`knows="intake"`) that is an intake (who came, their roles and ages, the setting, the presenting
problem and the history as told at intake) and the public transcript: speaker, addressees, text and turn
index. Members' inner states, private knowledge, needs, fears, triggers, softeners, the gold relation pattern,
risk flags, numeric warmth and tension, stage directions and the tracker's readings are not in it.
`knows="oracle"` (for ablations only; recorded in the run manifest and never ranked beside `intake`) adds a
deep copy of the case card and the tracker's latest view.

Everything here is a new, frozen object built for each decision: nothing a supporter does to what it receives
can reach the engine's state or the saved record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from personas.case import Case
from personas.graph import RelationSnapshot
from simulator.records import TrackerState, Turn

SupporterKnows = Literal["intake", "oracle"]
KNOWS_CHOICES: tuple[str, ...] = ("intake", "oracle")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class IntakeMember(_Frozen):
    """One person as the intake form records them."""

    name: str
    role: str
    age: int | None = None
    generation: int = Field(description="0 = eldest generation present, 1 = their children, ...")
    background: str = ""


class Intake(_Frozen):
    """What the counsellor was told before the session."""

    group: Literal["couple", "family"]
    group_label: str = Field(description="How to address everyone at once: `Couple` or `Family`.")
    setting: str
    presenting_problem: str
    history: str = Field(description="The history as told at intake.")
    members: tuple[IntakeMember, ...]

    @property
    def member_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.members)


class PublicTurn(_Frozen):
    """One line of the public transcript: what everyone in the room heard."""

    index: int
    speaker: str
    kind: Literal["member", "supporter"]
    addressees: tuple[str, ...] = ()
    text: str


class OracleKnowledge(_Frozen):
    """Only with `--supporter-knows oracle`: the case card and the tracker's latest reading."""

    case: Case
    observer: RelationSnapshot | None = None
    tracker: TrackerState | None = None


class SessionView(_Frozen):
    """Everything a supporter receives for one decision."""

    knows: SupporterKnows = "intake"
    intake: Intake
    transcript: tuple[PublicTurn, ...]
    member_turns: int = Field(description="Member turns so far.")
    max_turns: int = Field(description="Member-turn limit of the session.")
    oracle: OracleKnowledge | None = None

    @property
    def last_turn(self) -> PublicTurn | None:
        return self.transcript[-1] if self.transcript else None

    @property
    def after_turn(self) -> int:
        return self.transcript[-1].index if self.transcript else 0

    @property
    def member_names(self) -> tuple[str, ...]:
        return self.intake.member_names

    @property
    def group_label(self) -> str:
        return self.intake.group_label


def intake_of(case: Case) -> Intake:
    return Intake(
        group=case.group,
        group_label=case.group_label,
        setting=case.setting,
        presenting_problem=case.presenting_problem,
        history=case.history,
        members=tuple(
            IntakeMember(name=m.name, role=m.role, age=m.age, generation=m.generation, background=m.background)
            for m in case.members
        ),
    )


def public_transcript(turns: Sequence[Turn]) -> tuple[PublicTurn, ...]:
    return tuple(
        PublicTurn(index=t.index, speaker=t.speaker, kind=t.kind, addressees=tuple(t.addressees), text=t.text)
        for t in turns
    )


def build_view(
    case: Case,
    turns: Sequence[Turn],
    *,
    member_turns: int,
    max_turns: int,
    knows: SupporterKnows = "intake",
    observer: RelationSnapshot | None = None,
) -> SessionView:
    """A fresh view for one decision; `oracle` extras are deep copies."""
    oracle = None
    if knows == "oracle":
        tracker = next((t.tracker for t in reversed(turns) if t.tracker is not None), None)
        oracle = OracleKnowledge(
            case=case.model_copy(deep=True),
            observer=observer.model_copy(deep=True) if observer is not None else None,
            tracker=tracker.model_copy(deep=True) if tracker is not None else None,
        )
    return SessionView(
        knows=knows,
        intake=intake_of(case),
        transcript=public_transcript(turns),
        member_turns=member_turns,
        max_turns=max_turns,
        oracle=oracle,
    )
