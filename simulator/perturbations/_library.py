"""Perturbations: loading the YAML (built-ins and users' files), resolving one against a case and a turn
budget (who plays what, at which member turn, spoken to whom) and applying it to a case and session config.
The YAML's shape is `simulator.perturbations._schema`."""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from string import Template
from typing import Any

from pydantic import ValidationError

from personas.case import Case
from personas.common.yamlfile import YamlFileError, load_yaml
from personas.taxonomy import SUPPORTER_NAME, RiskKind
from simulator.perturbations._schema import (
    POSITIONS,
    Perturbation,
    PerturbationError,
    PerturbationPlan,
)
from simulator.session_state import SessionConfig, StageDirection

BUILTIN_DIR = Path(__file__).parent / "builtin"


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
        data = load_yaml(path)
    except YamlFileError as err:
        if err.kind == "missing":
            raise PerturbationError(f"{path}: no such perturbation file; check the path") from None
        raise PerturbationError(f"{path}: {err.where}: not valid YAML ({err.problem})") from None
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
        how = f"at_member_turn: {at}" + ("" if inj.at_member_turn else ", the default")
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
    disclosed: list[RiskKind] = []  # risk kinds the card change flags on the stressor's speaker
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
            if who is not None and who == plan.speaker:
                disclosed.append(rc.kind)
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
                said_if=tuple(p.check.said_if),
                opening=p.inject.opening if p.inject else None,
                text=plan.directive,
                source=p.name,
                discloses=tuple(disclosed),
            ),
        )
    new_config = config.model_copy(update={"max_turns": plan.max_turns, "directions": directions})
    return new_case, SessionConfig.model_validate(new_config.model_dump()), plan


def _fill(text: str, case: Case, plan: PerturbationPlan) -> str:
    return Template(text).safe_substitute(
        speaker=plan.speaker or "", target=plan.target or plan.speaker or "", group_label=case.group_label
    )
