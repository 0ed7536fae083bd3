"""Perturbations: named stressors for stress runs, defined as YAML data and validated with pydantic.

A perturbation changes what a session is made of in one or more of three ways:

- `inject`: a private stage direction for one member turn (`simulator.engine.StageDirection`): the floor gives
  that member the turn and only their prompts see the direction; the turn records it as `directive`;
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

import functools
import math
import re
from pathlib import Path
from string import Template
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from personas.case import Case
from personas.common.errors import UserError
from personas.taxonomy import SUPPORTER_NAME, RiskKind
from simulator.engine import SessionConfig, StageDirection
from simulator.records import FidelityCheck

BUILTIN_DIR = Path(__file__).parent / "builtin"
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
ADDRESSEES = ("counsellor", "target", "group")


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


# -- loading -----------------------------------------------------------------------------------------------------


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = "unknown key; remove it or check its spelling"
    elif first["type"] == "missing":
        msg = "required key is missing; add it"
    elif first["type"] == "literal_error" or first["type"] == "enum":
        msg = msg.replace("Input should be", "use")
    head = re.match(r"^([\w.\[\]]+): (.*)$", msg)
    if head:  # a validator naming a key below its location: `check.address: ...`
        loc = head.group(1) if loc == "(top level)" else f"{loc}.{head.group(1)}"
        msg = head.group(2)
    return f"{loc}: {msg}"


def parse_perturbation(data: object, *, source: str | Path = "<data>") -> Perturbation:
    if not isinstance(data, dict):
        raise PerturbationError(f"{source}: a perturbation must be a mapping of keys (got {type(data).__name__})")
    try:
        return Perturbation.model_validate(data)
    except ValidationError as err:
        raise PerturbationError(f"{source}: {_first_error(err)}") from None


def load_perturbation_file(path: str | Path) -> Perturbation:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PerturbationError(f"{path}: no such perturbation file; check the path") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        raise PerturbationError(f"{path}: {where}: not valid YAML ({getattr(err, 'problem', err)})") from None
    return parse_perturbation(data, source=path)


@functools.cache
def builtin_perturbations() -> dict[str, Perturbation]:
    """The shipped library, by name (one YAML file per perturbation in `builtin/`)."""
    out: dict[str, Perturbation] = {}
    for path in sorted(BUILTIN_DIR.glob("*.yaml")):
        p = load_perturbation_file(path)
        out[p.name] = p
    return out


def resolve_perturbation(ref: str, base: Path | None = None) -> Perturbation:
    """A built-in by name, or a YAML file (relative paths against `base`, the config's folder)."""
    if ref.endswith((".yaml", ".yml")) or "/" in ref:
        path = Path(ref)
        if not path.is_absolute() and base is not None:
            path = base / path
        return load_perturbation_file(path)
    known = builtin_perturbations()
    if ref not in known:
        raise PerturbationError(f"perturbation {ref!r}: unknown; built-ins: {', '.join(known)}; or give a .yaml path")
    return known[ref]


# -- resolving and applying --------------------------------------------------------------------------------------


def _age(case: Case, name: str) -> tuple[int, int]:
    m = case.member(name)
    return (m.generation, -(m.age if m.age is not None else 0))  # older first: lower generation, higher age


def select_member(case: Case, selector: str, *, speaker: str | None = None) -> str:
    """The member a selector names in `case` (see the module docstring)."""
    names = case.member_names
    if selector in names:
        return selector
    if selector.startswith("role:"):
        role = selector[5:].strip().lower()
        for m in case.members:
            if m.role.lower() == role:
                return m.name
        raise PerturbationError(f"case {case.id}: no member with role {role!r} (roles: {_roles(case)})")
    others = [n for n in names if n != speaker] or names
    by_age = sorted(names, key=lambda n: _age(case, n))
    if selector == "first":
        return names[0]
    if selector == "second":
        return names[1]
    if selector == "last":
        return names[-1]
    if selector == "eldest":
        return by_age[0]
    if selector == "youngest":
        return by_age[-1]
    if selector == "most_distressed":
        return max(names, key=lambda n: case.member(n).baseline_intensity)  # first on ties
    if selector == "least_distressed":
        return min(names, key=lambda n: case.member(n).baseline_intensity)
    if selector == "other":
        return others[0]
    others_by_age = [n for n in by_age if n in others]
    if selector == "youngest_other":
        return others_by_age[-1]
    if selector == "eldest_other":
        return others_by_age[0]
    raise PerturbationError(f"case {case.id}: member {selector!r} not found; members: {', '.join(names)}")


def _roles(case: Case) -> str:
    return ", ".join(m.role for m in case.members)


def applies_to(p: Perturbation, case: Case) -> bool:
    return case.group in p.groups


DEFAULT_AT_MEMBER_TURN = 2


def injection_turn(p: Perturbation, turns: int) -> int:
    """The member turn at which `p`'s direction plays in a session of `turns` member turns, such that the
    `check.within` supporter decisions that judge it still follow (one decision follows each member turn).
    Raises PerturbationError (one line: the perturbation, the turn and the turn count) when it cannot."""
    assert p.inject is not None
    within, inj = p.check.within, p.inject
    latest = turns - within + 1  # the last member turn still followed by `within` decisions
    if inj.at is not None:
        fraction = POSITIONS[inj.at] if isinstance(inj.at, str) else inj.at
        how = f"at: {inj.at}"
        at = max(1, math.ceil(fraction * latest))
    else:
        at = inj.at_member_turn or DEFAULT_AT_MEMBER_TURN
        how = f"at_member_turn: {at}"
    if latest < 1:
        raise PerturbationError(
            f"perturbation {p.name}: sessions of {turns} member turns are too short for it: check.within needs "
            f"{within} supporter decisions after the stressor; run at least {within} turns"
        )
    if at > latest:
        raise PerturbationError(
            f"perturbation {p.name} ({how}) would play at member turn {at} of {turns}, leaving "
            f"{turns - at + 1 if at <= turns else 0} of the {within} supporter decisions check.within needs "
            f"after it; use at_member_turn <= {latest}, a relative `at` (early, middle, late or a fraction), "
            f"or at least {at + within - 1} turns"
        )
    return at


def plan_for(
    p: Perturbation, case: Case, max_turns: int, *, session_applied: bool = False, strict: bool = True
) -> PerturbationPlan:
    """Resolve `p` for `case` with a budget of `max_turns` member turns: the configured budget, or with
    `session_applied` the session's final one (a saved record's `max_turns`), which gives the same plan.
    A stressor that cannot play in time raises PerturbationError; `strict=False` (re-reading a saved record,
    possibly written before that was validated) moves it to the latest turn that fits instead."""
    turns = max_turns
    if p.session is not None and not session_applied:
        turns = min(p.session.max_turns, max(turns, round(turns * p.session.turns_factor)))
    speaker = target = directive = at = None
    addressees: list[str] = []
    if p.inject is not None:
        speaker = select_member(case, p.inject.speaker)
        target = select_member(case, p.inject.target, speaker=speaker) if p.inject.target else None
        try:
            at = injection_turn(p, turns)
        except PerturbationError:
            if strict:
                raise
            at = max(1, turns - p.check.within + 1)
        addressees = _addressees(case, p.inject.to, speaker, target)
        private = case.member(speaker).private_knowledge
        directive = Template(p.inject.text).safe_substitute(
            speaker=speaker,
            target=target or speaker,
            group_label=case.group_label,
            private=(private[0] if private else p.inject.private_fallback).rstrip("."),
        )
    changes: list[str] = []
    if p.card is not None:
        for mc in p.card.members:
            who = _who(case, mc.who, speaker, target)
            changes += [f"{who}.{k} set" for k in mc.set] + [f"{who}.{k} extended" for k in mc.add]
        for rc in p.card.risk_flags:
            who = _who(case, rc.who, speaker, target) if rc.who else None
            changes.append(f"risk flag {rc.kind.value}" + (f" ({who})" if who else ""))
    return PerturbationPlan(
        name=p.name,
        at_member_turn=at,
        speaker=speaker,
        target=target,
        directive=directive,
        addressees=addressees,
        max_turns=turns,
        card_changes=changes,
    )


def _addressees(case: Case, to: str | None, speaker: str, target: str | None) -> list[str]:
    if to == "counsellor":
        return [SUPPORTER_NAME]
    if to == "target":
        assert target is not None  # validated: `to: target` needs inject.target
        return [target]
    if to == "group":
        return [n for n in case.member_names if n != speaker]
    return []


def _who(case: Case, selector: str, speaker: str | None, target: str | None) -> str:
    if selector == "speaker":
        if speaker is None:
            return select_member(case, "most_distressed")
        return speaker
    if selector == "target":
        assert target is not None  # validated: `target` needs inject.target
        return target
    return select_member(case, selector, speaker=speaker)


def apply_perturbation(
    p: Perturbation, case: Case, config: SessionConfig
) -> tuple[Case, SessionConfig, PerturbationPlan]:
    """The perturbed case (validated anew), session config and plan. Raises PerturbationError when `p` does
    not apply to the case's group."""
    if not applies_to(p, case):
        raise PerturbationError(f"perturbation {p.name}: not for {case.group} cases ({case.id}); groups: {p.groups}")
    plan = plan_for(p, case, config.max_turns)
    new_case = case
    if p.card is not None:
        data: dict[str, Any] = case.model_dump(mode="python")
        by_name = {m["name"]: m for m in data["members"]}
        for mc in p.card.members:
            member = by_name[_who(case, mc.who, plan.speaker, plan.target)]
            member.update(mc.set)
            for key, items in mc.add.items():
                member[key] = [*member[key], *(_fill(i, case, plan) for i in items)]
        for rc in p.card.risk_flags:
            who = _who(case, rc.who, plan.speaker, plan.target) if rc.who else None
            data["risk_flags"].append(
                {"kind": rc.kind, "member": who, "description": _fill(rc.description, case, plan)}
            )
        data["tags"] = [*data["tags"], f"perturbed:{p.name}"]
        try:
            new_case = Case.model_validate(data)
        except ValidationError as err:  # a bug in the perturbation or the card: say which
            raise PerturbationError(f"perturbation {p.name} on {case.id}: {_first_error(err)}") from None
    directions = tuple(config.directions)
    if plan.directive is not None and plan.at_member_turn is not None:
        directions = (
            *(d for d in directions if d.at_member_turn != plan.at_member_turn),
            StageDirection(
                at_member_turn=plan.at_member_turn,
                member=plan.speaker,
                to=tuple(plan.addressees),
                allow=tuple(p.inject.allow) if p.inject else (),
                text=plan.directive,
                source=p.name,
            ),
        )
    new_config = config.model_copy(update={"max_turns": plan.max_turns, "directions": directions})
    return new_case, SessionConfig.model_validate(new_config.model_dump()), plan


def _fill(text: str, case: Case, plan: PerturbationPlan) -> str:
    return Template(text).safe_substitute(
        speaker=plan.speaker or "", target=plan.target or plan.speaker or "", group_label=case.group_label
    )
