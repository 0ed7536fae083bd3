"""The RESCUE format, read leniently: `RescueSample`s and their rows from JSON or JSONL files (see the package
docstring for the quirks smoothed over)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from personas.common.errors import UserError
from personas.taxonomy import (
    GROUP_TARGET_LABELS,
    SUPPORTER_NAME,
    Group,
    TargetKind,
    target_kind,
)

PatternField = Literal["relation_pattern", "relation_cycle_state"]
PATTERN_FIELDS: tuple[PatternField, ...] = ("relation_pattern", "relation_cycle_state")
_REASON_FIELDS: dict[str, tuple[str, str]] = {
    "relation_pattern": ("relation_pattern_reason", "relation_pattern_evidence_rows"),
    "relation_cycle_state": ("relation_cycle_reason", "relation_cycle_evidence_rows"),
}
_GROUP_LABELS = frozenset(GROUP_TARGET_LABELS.values())
_NOT_MEMBERS = _GROUP_LABELS | {SUPPORTER_NAME}


class RescueFormatError(UserError, ValueError):
    """RESCUE input that cannot be read. `str()` is one line: file, line number for JSONL, and the problem."""

    def __init__(self, source: str | Path, problem: str, line: int | None = None):
        self.source, self.problem, self.line = str(source), problem, line
        where = f"{source}:{line}" if line is not None else str(source)
        super().__init__(f"{where}: {problem}")


# ---- the RESCUE format, read leniently ------------------------------------------------------------------------


class _Lenient(BaseModel):
    """RESCUE objects keep every field they carry (extra fields allowed); list fields accept null as empty."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _nulls_to_empty(cls, data: Any) -> Any:
        if isinstance(data, dict):
            fields = cls.model_fields.items()
            nulls = [k for k, f in fields if k in data and data[k] is None and get_origin(f.annotation) is list]
            data = {**data, **{k: [] for k in nulls}}
        return data


def _as_list(v: Any) -> Any:
    """A single name where a list of names belongs becomes a one-item list."""
    return [v] if isinstance(v, str) else v


class RescueEmotion(_Lenient):
    """One `internal_emotion` entry: how a person feels at that row."""

    person: str
    emotion_description: str = ""
    intensity: int | float | None = Field(default=None, description="0-10 as annotated; None when missing.")

    @property
    def emotion(self) -> str:
        return self.emotion_description


class RescueViewpoint(_Lenient):
    """One `viewpoints_attitudes` entry: how `source` sees `target` at that row."""

    source: str
    target: str = ""
    viewpoint: str = ""
    attitude: str = ""


class RescueStrategy(_Lenient):
    """One `support_strategy` entry of a therapist row."""

    provider: str = SUPPORTER_NAME
    target: list[str] = Field(default_factory=list)
    strategy_type: str = ""
    strategy_content: str = ""

    @field_validator("target", mode="before")
    @classmethod
    def _target_list(cls, v: Any) -> Any:
        return _as_list(v)

    @property
    def targets(self) -> list[str]:
        """Targets without `Therapist` or blanks, in the annotated order."""
        return _clean_targets(self.target)

    @property
    def content(self) -> str:
        return self.strategy_content


class RescueRow(_Lenient):
    """One transcript row (a speaker turn) with its annotations."""

    row_index: int | None = Field(default=None, description="1-based; filled from the position when missing.")
    primary_speaker: str = ""
    target: list[str] = Field(default_factory=list)
    dialogue_cleaned: str = ""
    utterance_type: str = ""
    internal_emotion: list[RescueEmotion] = Field(default_factory=list)
    viewpoints_attitudes: list[RescueViewpoint] = Field(default_factory=list)
    support_strategy: list[RescueStrategy] = Field(default_factory=list)
    relation_pattern: str | None = None
    relation_pattern_reason: str | None = None
    relation_pattern_evidence_rows: list[int] = Field(default_factory=list)
    relation_cycle_state: str | None = None
    relation_cycle_reason: str | None = None
    relation_cycle_evidence_rows: list[int] = Field(default_factory=list)

    @field_validator("target", mode="before")
    @classmethod
    def _target_list(cls, v: Any) -> Any:
        return _as_list(v)

    @field_validator("utterance_type", "dialogue_cleaned", mode="before")
    @classmethod
    def _none_to_blank(cls, v: Any) -> Any:
        return "" if v is None else v

    @property
    def speaker(self) -> str:
        return self.primary_speaker

    @property
    def is_therapist(self) -> bool:
        return self.primary_speaker == SUPPORTER_NAME

    @property
    def targets(self) -> list[str]:
        """The row's addressees as annotated (may include `Therapist`)."""
        return list(self.target)

    @property
    def text(self) -> str:
        return self.dialogue_cleaned

    @property
    def emotions(self) -> list[RescueEmotion]:
        return list(self.internal_emotion)

    @property
    def viewpoints(self) -> list[RescueViewpoint]:
        return list(self.viewpoints_attitudes)

    @property
    def strategies(self) -> list[RescueStrategy]:
        return list(self.support_strategy)

    def field_label(self, field: PatternField) -> str | None:
        """The label one pattern field carries: a label, `` (reviewed, no dominant pattern) or None (no label)."""
        value = getattr(self, field)
        if value is None:
            return None
        value = value.strip()
        if value == "":
            reason_field, evidence_field = _REASON_FIELDS[field]
            blank_reason = reason_field in self.model_fields_set and not (getattr(self, reason_field) or "").strip()
            if blank_reason and not getattr(self, evidence_field):
                return None  # a placeholder, not a review (family client rows)
        return value

    @property
    def pattern_labels(self) -> dict[str, str]:
        """Every pattern field that carries a label (including ``), field -> label."""
        return {f: label for f in PATTERN_FIELDS if (label := self.field_label(f)) is not None}

    @property
    def pattern_field(self) -> PatternField | None:
        """Which field `pattern` comes from: `relation_pattern` first, then `relation_cycle_state`."""
        for f in PATTERN_FIELDS:
            if self.field_label(f) is not None:
                return f
        return None

    @property
    def pattern(self) -> str | None:
        """The row's relation pattern: a label, `` (reviewed, no dominant pattern) or None (no label)."""
        field = self.pattern_field
        return None if field is None else self.field_label(field)


class RescueSample(_Lenient):
    """One RESCUE sample: a recorded therapy segment with its participants and annotated rows."""

    sample_id: str = Field(min_length=1)
    scenario: str | None = Field(default=None, description="`couple` or `family` when given.")
    participants: list[str] = Field(default_factory=list)
    rows: list[RescueRow] = Field(default_factory=list)
    _source: str = PrivateAttr(default="")

    @model_validator(mode="after")
    def _fill_row_index(self) -> RescueSample:
        for i, row in enumerate(self.rows, start=1):
            if row.row_index is None:
                row.row_index = i
        return self

    @property
    def source(self) -> str:
        """Where the sample was read from (`file` or `file:line`)."""
        return self._source

    @property
    def group(self) -> Group:
        """`scenario` when it names a group; else family for a `family_therapy/` id or a `Family` label (§4)."""
        scenario = (self.scenario or "").strip().lower()
        if scenario in ("couple", "family"):
            return scenario  # type: ignore[return-value]
        if self.sample_id.startswith("family_therapy/"):
            return "family"
        family = GROUP_TARGET_LABELS["family"]
        for row in self.rows:
            names = [row.primary_speaker, *row.target, *(t for s in row.support_strategy for t in s.target)]
            if family in names:
                return "family"
        return "couple"

    @property
    def group_label(self) -> str:
        return GROUP_TARGET_LABELS[self.group]

    @property
    def members(self) -> list[str]:
        """Participants who are people in the room: never `Therapist` or a group label; first mention wins."""
        names = self.participants or [r.primary_speaker for r in self.rows]
        out: list[str] = []
        for n in names:
            n = n.strip()
            if n and n not in _NOT_MEMBERS and n not in out:
                out.append(n)
        return out

    @property
    def therapist_rows(self) -> list[RescueRow]:
        return [r for r in self.rows if r.is_therapist]

    def target_kind(self, targets: list[str]) -> TargetKind | None:
        """Individual, subgroup or whole group; None when nothing is left after dropping `Therapist` and blanks."""
        names = _clean_targets(targets)
        return target_kind(names, self.members, self.group) if names else None

    def counts(self) -> SampleCounts:
        """What the sample holds, for import reports and benchmark sanity checks."""
        return SampleCounts(
            sample_id=self.sample_id,
            case_id=rescue_case_id(self.sample_id),
            group=self.group,
            members=self.members,
            rows=len(self.rows),
            therapist_rows=len(self.therapist_rows),
            pattern_labels={f: sum(1 for r in self.rows if r.field_label(f)) for f in PATTERN_FIELDS},
            no_dominant_pattern=sum(1 for r in self.rows if r.pattern == ""),
            strategies=sum(len(r.support_strategy) for r in self.rows),
            viewpoints=sum(len(r.viewpoints_attitudes) for r in self.rows),
            emotions=sum(len(r.internal_emotion) for r in self.rows),
        )


def _clean_targets(targets: Iterable[str]) -> list[str]:
    return [t.strip() for t in targets if t and t.strip() and t.strip() != SUPPORTER_NAME]


# ---- loading --------------------------------------------------------------------------------------------------


def load_rescue(src: str | Path) -> list[RescueSample]:
    """Read RESCUE samples from a JSONL file, a .json file, or a folder of them (searched recursively).

    In a folder, a .json file without `sample_id` takes its path relative to the folder, without the suffix,
    as its id (the layout of RESCUE's per-sample files). Sample ids must be unique across all inputs.
    Bad input raises `RescueFormatError` naming the file (and line, for JSONL) and the problem.
    """
    src = Path(src)
    if src.is_dir():
        files = sorted(
            p
            for p in src.rglob("*")
            if p.suffix in (".json", ".jsonl")
            and p.is_file()
            and not any(part.startswith(".") for part in p.relative_to(src).parts)
        )
        if not files:
            raise RescueFormatError(src, "folder holds no .json or .jsonl files")
        samples = [s for f in files for s in _load_file(f, root=src)]
    elif src.is_file():
        samples = _load_file(src, root=None)
    else:
        raise RescueFormatError(src, "no such file or folder")
    seen: dict[str, str] = {}
    for s in samples:
        if s.sample_id in seen:
            raise RescueFormatError(s.source, f"duplicate sample_id {s.sample_id!r} (also in {seen[s.sample_id]})")
        seen[s.sample_id] = s.source
    return samples


def _load_file(path: Path, root: Path | None) -> list[RescueSample]:
    if path.suffix == ".jsonl":
        return _load_jsonl(path)
    if path.suffix != ".json":
        raise RescueFormatError(path, "expected a .jsonl or .json file")
    try:
        data = json.loads(_read(path))
    except json.JSONDecodeError as err:
        raise RescueFormatError(path, f"not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})") from None
    default_id = path.relative_to(root).with_suffix("").as_posix() if root is not None else path.stem
    if isinstance(data, list) and data and all(isinstance(x, dict) and "rows" not in x for x in data):
        data = {"rows": data}  # a bare list of rows: one sample
    if isinstance(data, dict):
        return [_parse_sample(data, str(path), default_id=default_id)]
    if isinstance(data, list) and data:
        return [_parse_sample(x, f"{path} [item {i}]") for i, x in enumerate(data)]
    got = type(data).__name__ + (" (empty)" if not data else "")
    raise RescueFormatError(path, f"expected a sample object, got {got}")


def _load_jsonl(path: Path) -> list[RescueSample]:
    samples = []
    for lineno, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            raise RescueFormatError(path, f"not valid JSON: {err.msg} (column {err.colno})", line=lineno) from None
        samples.append(_parse_sample(data, f"{path}:{lineno}", error_source=(path, lineno)))
    if not samples:
        raise RescueFormatError(path, "file holds no samples")
    return samples


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise RescueFormatError(path, f"not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise RescueFormatError(path, f"cannot read: {err.strerror}") from None


def _parse_sample(
    data: Any, source: str, *, default_id: str | None = None, error_source: tuple[Path, int] | None = None
) -> RescueSample:
    def fail(problem: str) -> RescueFormatError:
        if error_source:
            return RescueFormatError(error_source[0], problem, line=error_source[1])
        return RescueFormatError(source, problem)

    if not isinstance(data, dict):
        raise fail(f"expected a sample object, got {type(data).__name__}")
    if "sample_id" not in data and default_id is not None:
        data = {**data, "sample_id": default_id}
    try:
        sample = RescueSample.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        keys = list(first["loc"])
        union_branch = keys[-1] if keys and keys[-1] in ("int", "float", "str", "none") else None
        if union_branch:  # pydantic names the union member it tried last (`intensity.int`); report the field
            keys.pop()
        loc = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys).lstrip(".")
        if first["type"] == "missing":
            msg = "required field is missing"
        elif union_branch in ("int", "float"):
            msg = f"must be a number (got {first.get('input')!r})"
        else:
            msg = first["msg"]
        sid = data.get("sample_id")
        prefix = f"sample {sid!r}: " if isinstance(sid, str) and sid else ""
        raise fail(f"{prefix}{loc or 'sample'}: {msg}") from None
    if not sample.rows:
        raise fail(f"sample {sample.sample_id!r}: has no rows")
    if len(sample.members) < 2:
        raise fail(
            f"sample {sample.sample_id!r}: needs at least 2 participants besides the therapist, "
            f"got {sample.members or 'none'}"
        )
    sample._source = source
    return sample


def rescue_case_id(sample_id: str) -> str:
    """`rescue-` + the sample id lower-cased, `/` -> `-`, anything outside [a-z0-9_-] dropped."""
    return f"rescue-{_slug(sample_id)}"


class SampleCounts(BaseModel):
    """What one sample holds (and, after an import, where its files went)."""

    model_config = ConfigDict(extra="forbid")

    sample_id: str
    case_id: str
    group: Group
    members: list[str]
    rows: int
    therapist_rows: int
    pattern_labels: dict[str, int] = Field(description="Rows with a non-empty label, per RESCUE field.")
    no_dominant_pattern: int = Field(description="Rows whose pattern is `` (reviewed, no dominant pattern).")
    strategies: int = Field(description="`support_strategy` entries.")
    viewpoints: int = Field(description="`viewpoints_attitudes` entries.")
    emotions: int = Field(description="`internal_emotion` entries (therapist entries included).")
    case_path: str = ""
    gold_path: str = ""


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "", text.strip().lower().replace("/", "-")).strip("-")
