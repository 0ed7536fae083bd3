"""Perturbations: named stressors for stress runs, defined as YAML data and validated with pydantic.

A perturbation changes what a session is made of in one or more of three ways:

- `inject`: a private stage direction for one member turn (`simulator.session_state.StageDirection`), absolute
  (`at_member_turn`) or relative (`at: early|middle|late|fraction`, see `injection_turn`): the floor gives that
  member the turn, spoken to whom `to` names, and only their prompts see the direction; the turn records it as
  `directive`, and whether the line really said it is decided after the session (`judges.stress_checks` delivery);
- `card`: a change to the case card (a member's style, private knowledge, a risk flag) that yields a new, valid
  Case; only fields the supporter's intake never shows are changed, so the supporter cannot learn that a
  perturbation exists;
- `session`: a change to the session's length (a very long session).

Each carries its `check`: which facts of the record are required (the supporter responds within `within`
decisions, addresses the member concerned, never says a forbidden phrase...) and, where judgment is needed, a
rubric for an LLM verdict. The check itself runs in `judges` (see `judges.check_session`).

Member selectors (`speaker`, `target`, `who`): a member name, `role:<role>`, or one of `first`, `second`,
`last`, `eldest`, `youngest`, `most_distressed`, `least_distressed`, `other` (the first member who is not the
speaker), `youngest_other`, `eldest_other`. Resolving them depends only on names, roles, ages, generations and
baseline intensities, which card changes never touch, so a plan computed from the perturbed case equals the
plan computed from the original one.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from personas.common.errors import UserError
from personas.taxonomy import RiskKind
from simulator.records import FidelityCheck

PERTURBATION_SCHEMA_VERSION = 1
NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
SELECTORS = (
    "first",
    "second",
    "last",
    "eldest",
    "youngest",
    "most_distressed",
    "least_distressed",
    "other",
    "youngest_other",
    "eldest_other",
)
# Member fields a card change may set or extend: private to the persona, never in the supporter's intake.
PRIVATE_FIELDS = (
    "personality",
    "communication_style",
    "core_need",
    "core_fear",
    "triggers",
    "softeners",
    "private_knowledge",
)
_LIST_FIELDS = ("triggers", "softeners", "private_knowledge")


class PerturbationError(UserError, ValueError):
    """A perturbation file that cannot be used; `str()` is one line naming the file, the key and the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def _check_selector(value: str | None) -> str | None:
    if value is None or value in SELECTORS or value.startswith("role:") or re.match(r"^[A-Z][\w' -]*$", value):
        return value
    raise ValueError(
        f"{value!r} is not a member selector; use a member name, role:<role>, or one of {', '.join(SELECTORS)}"
    )


# Relative injection points: the share of the turns in which the stressor can play (see `injection_turn`).
POSITIONS: dict[str, float] = {"early": 0.25, "middle": 0.5, "late": 0.75}


class Injection(_Strict):
    """A private stage direction played by one member at one member turn."""

    at_member_turn: int | None = Field(
        default=None,
        ge=1,
        description="Absolute 1-based member turn. A session too short for it (and the `check.within` supporter "
        "decisions after it) is rejected when the matrix is built. Neither this nor `at`: member turn 2.",
    )
    at: Literal["early", "middle", "late"] | float | None = Field(
        default=None,
        description="Relative member turn: `early`, `middle`, `late` (0.25, 0.5, 0.75) or a fraction 0 < f <= 1 of "
        "the member turns in which the stressor can still be followed by `check.within` supporter decisions "
        "(turns 1 .. T - within + 1 of a T-turn session): turn ceil(f x (T - within + 1)); 1.0 is the last of them.",
    )
    speaker: str = Field(default="most_distressed", description="Who plays the direction (a member selector).")
    target: str | None = Field(
        default=None,
        description="Whom the stressor concerns, when not the speaker (the person at risk, the one blamed).",
    )
    to: Literal["counsellor", "target", "group"] | None = Field(
        default=None,
        description="Whom the directed line is spoken to (the floor's usual choice when unset): a direction to "
        "press the counsellor cannot be played in a line the prompt addresses to another member.",
    )
    text: str = Field(
        min_length=1,
        description="The direction. Placeholders: $speaker, $target, $group_label, $private (the speaker's first "
        "private-knowledge item, else `private_fallback`).",
    )
    private_fallback: str = Field(default="something you have kept from the others", description="See `text`.")
    opening: str | None = Field(
        default=None,
        description="Words the directed line starts with on its last re-ask, when every earlier try left out all of "
        "`check.said_if`'s wordings (they should contain one): a stressor that is never said tests nothing. The "
        "turn records its re-asks, so a line begun this way is visible as such.",
    )
    allow: list[FidelityCheck] = Field(
        default_factory=list,
        description="Fidelity checks the directed line is exempt from because the direction asks for what they "
        "catch (`language_switch` for a switch of language); otherwise the line would be re-asked until it is not said.",
    )

    _v_speaker = field_validator("speaker", "target")(classmethod(lambda cls, v: _check_selector(v)))

    @field_validator("at", mode="before")
    @classmethod
    def _at(cls, v: object) -> object:
        if isinstance(v, str) and v not in POSITIONS:
            raise ValueError(f"{v!r}: use early, middle, late or a fraction above 0 and at most 1")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not 0 < v <= 1:
            raise ValueError("a fraction must be above 0 and at most 1; or use early, middle or late")
        return v

    @model_validator(mode="after")
    def _one_point(self) -> Injection:
        if self.at is not None and self.at_member_turn is not None:
            raise ValueError("at: give either `at` (relative) or `at_member_turn` (absolute), not both")
        if self.to == "target" and self.target is None:
            raise ValueError("to: `target` needs inject.target; set it or speak to the counsellor or group")
        return self


class MemberChange(_Strict):
    """Set or extend private fields of one member's card."""

    who: str = Field(description="Member selector (often `speaker` or `target` of the injection).")
    set: dict[str, str] = Field(default_factory=dict, description="Text fields to replace.")
    add: dict[str, list[str]] = Field(default_factory=dict, description="List fields to extend.")

    @field_validator("who")
    @classmethod
    def _who(cls, v: str) -> str:
        return v if v in ("speaker", "target") else _check_selector(v)  # type: ignore[return-value]

    @model_validator(mode="after")
    def _fields(self) -> MemberChange:
        for key in self.set:
            if key not in PRIVATE_FIELDS:
                raise ValueError(f"set.{key}: only private member fields can change ({', '.join(PRIVATE_FIELDS)})")
        for key in self.add:
            if key not in _LIST_FIELDS:
                raise ValueError(f"add.{key}: only list fields can be extended ({', '.join(_LIST_FIELDS)})")
        return self


class RiskChange(_Strict):
    """A risk flag added to the card (the engine's safety tracking and the judges read it; the intake does not)."""

    kind: RiskKind
    who: str | None = Field(default="speaker", description="Member selector, `speaker`, `target`, or null (group).")
    description: str = Field(min_length=1)

    @field_validator("who")
    @classmethod
    def _who(cls, v: str | None) -> str | None:
        return v if v in (None, "speaker", "target") else _check_selector(v)


class CardChange(_Strict):
    members: list[MemberChange] = Field(default_factory=list)
    risk_flags: list[RiskChange] = Field(default_factory=list)


class SessionChange(_Strict):
    turns_factor: float = Field(default=1.0, ge=1.0, le=20.0, description="Multiply the config's member turns.")
    max_turns: int = Field(default=200, ge=1, le=200, description="Upper bound after multiplying.")


class CheckSpec(_Strict):
    """What the behavioural check requires. Facts are checked on the record; `rubric` asks an LLM."""

    within: int = Field(default=2, ge=1, le=50, description="Supporter decisions after the trigger (pass included).")
    respond: bool = Field(default=True, description="The supporter must speak within `within` decisions.")
    address: Literal["speaker", "target", "none"] = Field(
        default="none", description="A response must be addressed to (or name) this member."
    )
    forbid: list[str] = Field(default_factory=list, description="Phrases no supporter turn may contain (canaries).")
    landed: str | None = Field(
        default=None,
        description="What the directed line must do for the stressor to count as said, asked of the check model "
        "with a quote from that line (small member models often ignore directions): e.g. `a hint at self-harm`. "
        "Unset: the perturbation's `description`. Not said: `directed_not_said`, a simulator fault, never a fail "
        "of the supporter.",
    )
    expect: list[str] = Field(
        default_factory=list,
        description="Phrases the directed line must contain for the stressor to count as said (a canary); when "
        "set they decide alone, without the check model. Missing: `directed_not_said`.",
    )
    said_if: list[str] = Field(
        default_factory=list,
        description="Phrases any one of which, found in the directed line (case and spacing ignored, whole words), "
        "shows the stressor was said: decided as a fact, without the check model. None found: the check model "
        "decides, as without them. For stressors with recognisable wordings (self-harm hints), where a small check "
        "model misses what a line says outright.",
    )
    late_speech: bool = Field(default=False, description="Long sessions: the supporter still speaks in the last third.")
    max_repeat_share: float | None = Field(
        default=None, ge=0, le=1, description="Long sessions: most a single repeated supporter line may make up."
    )
    rubric: str | None = Field(default=None, description="LLM verdict: what a pass requires. None: facts only.")
    judge_probe: bool = Field(
        default=False, description="Also re-judge with the injected turn neutralised; scores must not move."
    )
    probe_tolerance: float = Field(default=1.0, gt=0, description="Largest allowed shift of a scale dimension.")


class Perturbation(_Strict):
    """One named stressor: what changes and how the supporter's handling of it is checked."""

    schema_version: int = PERTURBATION_SCHEMA_VERSION
    name: str = Field(description="Lower-case id, e.g. `crisis_disclosure`; the file stem by convention.")
    title: str = Field(min_length=1)
    description: str = Field(min_length=1)
    critical: bool = Field(default=False, description="A failed check counts as a critical safety failure.")
    groups: list[Literal["couple", "family"]] = Field(default_factory=lambda: ["couple", "family"])
    inject: Injection | None = None
    card: CardChange | None = None
    session: SessionChange | None = None
    check: CheckSpec = Field(default_factory=CheckSpec)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("use lower-case letters, digits and underscores, starting with a letter")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Perturbation:
        if self.inject is None and self.card is None and self.session is None:
            raise ValueError("inject, card or session: a perturbation must change something; add one of them")
        uses_target = self.check.address == "target" or any(
            c.who == "target" for c in (self.card.members if self.card else [])
        )
        if uses_target and (self.inject is None or self.inject.target is None):
            raise ValueError("check.address: `target` needs inject.target; set it or address the speaker")
        if self.check.judge_probe and self.inject is None:
            raise ValueError("check.judge_probe: needs an injected turn to neutralise; add inject or drop it")
        return self


class PerturbationPlan(BaseModel):
    """A perturbation resolved against one case and turn budget: who plays what, when, and what is checked."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    at_member_turn: int | None = Field(default=None, description="Member turn of the injection; None: no injection.")
    speaker: str | None = Field(default=None, description="Member who plays the injection.")
    target: str | None = Field(default=None, description="Member the stressor concerns (defaults to the speaker).")
    directive: str | None = Field(default=None, description="The rendered stage direction.")
    addressees: list[str] = Field(
        default_factory=list, description="Whom the directed line is spoken to; empty: the floor's choice."
    )
    max_turns: int = Field(description="Member turns of the perturbed session.")
    card_changes: list[str] = Field(default_factory=list, description="Human-readable list of card changes.")

    @property
    def concerned(self) -> str | None:
        return self.target or self.speaker
