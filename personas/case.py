"""Case cards: who is in the room. A card is a YAML file; its case id is the file stem."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from personas.common.errors import UserError
from personas.common.yamlfile import YamlFileError, load_yaml
from personas.taxonomy import (
    INTENSITY_MAX,
    INTENSITY_MIN,
    SCALE_MAX,
    SCALE_MIN,
    SUPPORTER_NAME,
    Group,
    RiskKind,
    group_target_label,
    patterns_for,
)


class CardError(UserError, ValueError):
    """A case card that cannot be used, with the file and field to fix. `str()` is one line."""

    def __init__(self, path: str | Path, field: str, message: str):
        self.path, self.field, self.message = str(path), field, message
        super().__init__(f"{path}: {field}: {message}" if field else f"{path}: {message}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


# Member fields a persona needs to be played; authored cards must fill all of them.
ROLEPLAY_FIELDS = ("age", "personality", "communication_style", "core_need", "core_fear", "triggers", "softeners")


class InferredField(_Strict):
    """Marks a member field as inferred by a model (RESCUE enrichment), with the rows it rests on."""

    field: str = Field(description="Member field name that was inferred, e.g. `core_need`.")
    evidence_rows: list[int] = Field(default_factory=list, description="1-based transcript rows it rests on.")
    model: str = Field(default="", description="Model id that inferred it.")


class Member(_Strict):
    """One person in the room, written so a model can play them and a reader can picture them."""

    name: str = Field(min_length=1)
    role: str = Field(min_length=1, description="Role in the group: partner, mother, son, stepfather, ...")
    age: int | None = Field(default=None, ge=0, le=120, description="Required on authored cards.")
    generation: int = Field(default=0, ge=0, le=4, description="0 = eldest generation present, 1 = their children, ...")
    background: str = Field(default="", description="Culture, work, class, anything that shapes how they speak.")
    personality: str = ""
    communication_style: str = Field(default="", description="How they talk under stress: pursue, withdraw, lecture...")
    core_need: str = ""
    core_fear: str = ""
    triggers: list[str] = Field(default_factory=list, description="What reliably sets them off.")
    softeners: list[str] = Field(default_factory=list, description="What someone can do that lets them soften.")
    private_knowledge: list[str] = Field(default_factory=list, description="What they know and have not said.")
    agenda: list[str] = Field(
        default_factory=list,
        description="What they mean to bring up in session (events, facts, grievances, in the card's words); the "
        "director (simulator.director) draws from it first. Optional: without it the director draws from the rest "
        "of the card.",
    )
    baseline_emotion: str = Field(min_length=1)
    baseline_intensity: int = Field(ge=INTENSITY_MIN, le=INTENSITY_MAX)
    inferred: list[InferredField] = Field(default_factory=list, description="Fields inferred by a model, not authored.")

    @field_validator("name")
    @classmethod
    def _name_not_reserved(cls, v: str) -> str:
        if v in (SUPPORTER_NAME, "Couple", "Family"):
            raise ValueError(f"{v!r} is reserved for the supporter or the group; pick a person's name")
        return v


class Viewpoint(_Strict):
    """How `source` sees `target`: RESCUE's (viewpoint, attitude) plus numeric warmth and tension 0-10."""

    source: str
    target: str
    viewpoint: str = Field(min_length=1)
    attitude: str = Field(min_length=1)
    warmth: float = Field(ge=SCALE_MIN, le=SCALE_MAX)
    tension: float = Field(ge=SCALE_MIN, le=SCALE_MAX)


class RiskFlag(_Strict):
    """A risk a session must handle safely; stress tests and the safety judge read these."""

    kind: RiskKind
    member: str | None = Field(default=None, description="The member at risk or causing it; None for the whole group.")
    description: str = Field(min_length=1)


class Provenance(_Strict):
    """Where a case comes from."""

    source: Literal["authored", "rescue"] = "authored"
    sample_id: str | None = Field(default=None, description="RESCUE sample id for derived cases.")
    notes: str = ""


class Case(_Strict):
    """One couple or family, ready to be simulated."""

    id: str = Field(default="", description="The card's file stem; set by the loader.")
    title: str = Field(min_length=1)
    group: Group
    setting: str = Field(min_length=1)
    presenting_problem: str = Field(min_length=1)
    history: str = Field(min_length=1)
    members: list[Member] = Field(min_length=2)
    viewpoints: list[Viewpoint]
    relation_pattern: str = Field(description="Dominant RESCUE relation pattern at the start; valid for `group`.")
    risk_flags: list[RiskFlag] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)

    @model_validator(mode="after")
    def _check_consistency(self, info: ValidationInfo) -> Case:
        """Members, viewpoints and risk flags agree with each other. Loading stops at the first problem; with
        `context={"problems": []}` every problem is appended there instead (`personas check` lists them all)."""
        problems = _consistency_problems(self)
        collect = info.context.get("problems") if isinstance(info.context, dict) else None
        if collect is not None:
            collect.extend(problems)
        elif problems:
            raise ValueError(problems[0])
        return self

    @property
    def member_names(self) -> list[str]:
        return [m.name for m in self.members]

    @property
    def group_label(self) -> str:
        return group_target_label(self.group)

    def member(self, name: str) -> Member:
        for m in self.members:
            if m.name == name:
                return m
        raise KeyError(f"{name!r} is not a member of case {self.id!r}")

    def viewpoint(self, source: str, target: str) -> Viewpoint:
        for vp in self.viewpoints:
            if vp.source == source and vp.target == target:
                return vp
        raise KeyError(f"no viewpoint {source} -> {target} in case {self.id!r}")


def _consistency_problems(case: Case) -> list[str]:
    """Every way a card's members, viewpoints and risk flags disagree, in the order a reader would fix them."""
    out: list[str] = []
    names = [m.name for m in case.members]
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            out.append(f"members[{i}].name: duplicate member name {name!r}; names must be unique")
        seen.add(name)
    if case.group == "couple" and len(names) != 2:
        out.append(f"members: a couple has exactly 2 members, got {len(names)}")
    allowed = patterns_for(case.group)
    if case.relation_pattern not in allowed:
        out.append(
            f"relation_pattern: {case.relation_pattern!r} is not a {case.group} pattern; allowed: {', '.join(allowed)}"
        )
    pairs: set[tuple[str, str]] = set()
    for i, vp in enumerate(case.viewpoints):
        for end in ("source", "target"):
            if getattr(vp, end) not in seen:
                out.append(
                    f"viewpoints[{i}].{end}: unknown member {getattr(vp, end)!r}; members are {', '.join(names)}"
                )
        if vp.source == vp.target:
            out.append(f"viewpoints[{i}]: a member has no viewpoint toward themselves ({vp.source})")
        if (vp.source, vp.target) in pairs:
            out.append(f"viewpoints[{i}]: duplicate viewpoint {vp.source} -> {vp.target}")
        pairs.add((vp.source, vp.target))
    authored = case.provenance.source == "authored"
    if authored:  # derived cards carry only what their source annotated (enrichment can fill the rest)
        for i, m in enumerate(case.members):
            for fname in ROLEPLAY_FIELDS:
                if getattr(m, fname) in ("", [], None):
                    out.append(f"members[{i}] ({m.name}).{fname}: required on authored cards")
    missing = [f"{a} -> {b}" for a in names for b in names if a != b and (a, b) not in pairs]
    if missing and authored:
        out.append(f"viewpoints: every ordered pair needs a viewpoint; missing {', '.join(missing)}")
    for i, flag in enumerate(case.risk_flags):
        if flag.member is not None and flag.member not in seen:
            out.append(f"risk_flags[{i}].member: unknown member {flag.member!r}; members are {', '.join(names)}")
    return out


def _format_validation_error(err: ValidationError, data: dict) -> tuple[str, str]:
    """First pydantic error as (field path, message), with member names added to list indices."""
    first = err.errors()[0]
    loc = list(first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    parts: list[str] = []
    node: object = data
    for key in loc:
        if isinstance(key, int):
            name = (
                node[key].get("name")
                if isinstance(node, list) and key < len(node) and isinstance(node[key], dict)
                else None
            )
            parts[-1] += f"[{key}]" + (f" ({name})" if name else "")
        else:
            parts.append(str(key))
        node = node[key] if isinstance(node, (dict, list)) and _has(node, key) else None
    field = ".".join(parts)
    if first["type"] == "extra_forbidden":
        msg = "unknown field; remove it or check its spelling"
    elif first["type"] == "missing":
        msg = "required field is missing"
    msg = msg.replace("Input should be", "must be")
    if (
        "input" in first
        and first["type"] not in ("missing", "extra_forbidden", "value_error")
        and not isinstance(first["input"], (dict, list))
    ):
        msg += f" (got {first['input']!r})"
    if (
        not field
        and ": " in msg
        and msg.split(": ", 1)[0].replace(".", "").replace("[", "").replace("]", "").isidentifier()
    ):
        field, msg = msg.split(": ", 1)
    return field, msg


def _has(node: dict | list, key: object) -> bool:
    if isinstance(node, dict):
        return key in node
    return isinstance(key, int) and 0 <= key < len(node)


def parse_case(data: object, *, case_id: str, source: str | Path = "<data>") -> Case:
    """Validate card data (already parsed from YAML/JSON) into a Case; raise CardError with one line."""
    if not isinstance(data, dict):
        raise CardError(source, "", "a case card must be a mapping of fields (got " + type(data).__name__ + ")")
    if "id" in data and data["id"] != case_id:
        raise CardError(source, "id", f"the case id is the file name {case_id!r}; remove `id` or rename the file")
    try:
        return Case.model_validate({**data, "id": case_id})
    except ValidationError as err:
        field, msg = _format_validation_error(err, data)
        raise CardError(source, field, msg) from None


def load_case(path: str | Path) -> Case:
    """Read one YAML card; its id is the file stem."""
    path = Path(path)
    try:
        data = load_yaml(path)
    except YamlFileError as err:
        if err.kind == "missing":
            raise CardError(path, "", "no such file") from None
        raise CardError(path, err.where, f"not valid YAML: {err.problem}") from None
    except OSError as err:
        raise CardError(path, "", f"cannot read: {err.strerror}") from None
    return parse_case(data, case_id=path.stem, source=path)


def dump_case(case: Case) -> str:
    """YAML text of a card (without its id, which is the file name)."""
    data = case.model_dump(mode="json", exclude={"id"}, exclude_defaults=False)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


def write_case(case: Case, directory: str | Path) -> Path:
    """Write a card atomically as `<directory>/<case.id>.yaml`."""
    from personas.common.files import atomic_write_text

    path = Path(directory) / f"{case.id}.yaml"
    atomic_write_text(path, dump_case(case))
    return path
