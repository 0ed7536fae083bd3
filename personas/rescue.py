"""RESCUE-format data: one parser for the case importer and the benchmark.

Reading (`load_rescue`) gives `RescueSample`s whose `RescueRow`s smooth over the quirks of the published data
(see the RESCUE notes, TAXONOMY §4 and §9):

- the relation pattern sits in `relation_pattern`, in `relation_cycle_state`, or in both, depending on the
  sample; `RescueRow.pattern` is the first non-null of the two, in that order. `""` means "reviewed, no dominant
  pattern" and stays distinct from `None` ("no label"). One exception: a `""` whose own reason field is present
  but blank and whose evidence list is empty is a blank placeholder (family client rows carry
  `relation_cycle_state: ""` with an empty reason on every row), so it reads as `None`;
- therapist rows are rows whose `primary_speaker` is `Therapist`;
- support targets keep subgroups (`["Heather", "Ben"]`) distinct from the whole-group label (`["Family"]`);
- the group comes from `scenario`, else from a `family_therapy/` id prefix or a `Family` label in the rows.

Deriving: `gold_from_sample` turns a sample into a `GoldTrajectory` (versioned, what a benchmark scores
against); `case_from_sample` turns it into a case card; `import_rescue` writes both for every sample.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from personas.case import Case, parse_case, write_case
from personas.common.errors import UserError
from personas.taxonomy import (
    GROUP_TARGET_LABELS,
    INTENSITY_MAX,
    INTENSITY_MIN,
    SUPPORTER_NAME,
    Group,
    TargetKind,
    patterns_for,
    target_kind,
)

GOLD_SCHEMA_VERSION = 1
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


# ---- gold trajectory ------------------------------------------------------------------------------------------


class _Gold(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GoldEmotion(_Gold):
    person: str
    emotion: str = Field(description="RESCUE `emotion_description`.")
    intensity: int | float | None = Field(description="0-10 as annotated; None when missing.")


class GoldViewpoint(_Gold):
    source: str
    target: str
    viewpoint: str
    attitude: str


class GoldStrategy(_Gold):
    provider: str
    targets: list[str] = Field(description="As annotated: names, a subgroup, or the group label.")
    target_kind: TargetKind | None = Field(description="Individual, subgroup or whole group; None without target.")
    strategy: str = Field(description="RESCUE `strategy_type`.")
    content: str = Field(description="RESCUE `strategy_content`.")


class GoldRow(_Gold):
    """One annotated row of the gold trajectory, quirks resolved."""

    row_index: int = Field(description="1-based row index.")
    speaker: str = Field(description="`primary_speaker`; `Therapist` for supporter turns.")
    targets: list[str] = Field(description="Row addressees as annotated (may include `Therapist`).")
    text: str = Field(description="`dialogue_cleaned`.")
    utterance_type: str = Field(description="Client rows: accusation, defense, ...; `` on therapist rows.")
    emotions: list[GoldEmotion]
    viewpoints: list[GoldViewpoint]
    relation_pattern: str | None = Field(
        description="Pattern at this row: a label, `` = reviewed with no dominant pattern, None = no label."
    )
    relation_pattern_field: PatternField | None = Field(description="Which RESCUE field `relation_pattern` came from.")
    pattern_fields: dict[str, str] = Field(
        description="Every pattern field that carries a label on this row, as read (they can disagree)."
    )
    support_strategies: list[GoldStrategy]


class GoldTrajectory(_Gold):
    """A RESCUE sample as a versioned trajectory: what benchmarks and trajectory metrics score against."""

    schema_version: int = Field(default=GOLD_SCHEMA_VERSION, description="Bumped when the layout changes.")
    sample_id: str
    case_id: str = Field(description="Id of the case card derived from the same sample.")
    group: Group
    participants: list[str] = Field(description="Members (never the therapist).")
    rows: list[GoldRow]
    source: str = Field(description="File (and line) the sample was read from.")


def gold_from_sample(sample: RescueSample) -> GoldTrajectory:
    """The sample's annotated rows as a GoldTrajectory."""
    rows = []
    for r in sample.rows:
        rows.append(
            GoldRow(
                row_index=r.row_index or 0,
                speaker=r.primary_speaker,
                targets=r.targets,
                text=r.text,
                utterance_type=r.utterance_type,
                emotions=[
                    GoldEmotion(person=e.person, emotion=e.emotion_description, intensity=e.intensity)
                    for e in r.internal_emotion
                ],
                viewpoints=[
                    GoldViewpoint(source=v.source, target=v.target, viewpoint=v.viewpoint, attitude=v.attitude)
                    for v in r.viewpoints_attitudes
                ],
                relation_pattern=r.pattern,
                relation_pattern_field=r.pattern_field,
                pattern_fields=r.pattern_labels,
                support_strategies=[
                    GoldStrategy(
                        provider=s.provider,
                        targets=list(s.target),
                        target_kind=sample.target_kind(s.target),
                        strategy=s.strategy_type,
                        content=s.strategy_content,
                    )
                    for s in r.support_strategy
                ],
            )
        )
    return GoldTrajectory(
        sample_id=sample.sample_id,
        case_id=rescue_case_id(sample.sample_id),
        group=sample.group,
        participants=sample.members,
        rows=rows,
        source=sample.source,
    )


def load_gold(path: str | Path) -> GoldTrajectory:
    """Read a `<case_id>.gold.json` written by `import_rescue`."""
    path = Path(path)
    try:
        gold = GoldTrajectory.model_validate_json(_read(path))
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(k) for k in first["loc"])
        raise RescueFormatError(path, f"{loc or 'file'}: {first['msg']}") from None
    if gold.schema_version != GOLD_SCHEMA_VERSION:
        raise RescueFormatError(path, f"schema_version {gold.schema_version} is not {GOLD_SCHEMA_VERSION}")
    return gold


# ---- warmth and tension from attitude text --------------------------------------------------------------------

LEXICON_VERSION = "attitude-lexicon-v1"
# RESCUE annotates attitudes as short phrases ("blaming and resentful"), not numbers. Each word of the attitude
# is matched against these stems (longest stem wins); its (warmth, tension) deltas are added to the 5/5 start.
# `slightly`/`mildly`/`somewhat` halve the next matched word, `very`/`deeply`/`profoundly`/`extremely` scale it
# by 1.5. Results are clamped to 0-10 and rounded to 0.5. Deterministic, and deliberately coarse.
ATTITUDE_LEXICON: dict[str, tuple[float, float]] = {
    # hostility and blame: tension up, warmth down
    "blam": (-1.0, 2.0),
    "accus": (-1.0, 2.0),
    "resent": (-1.5, 2.0),
    "contempt": (-2.5, 2.5),
    "hostil": (-2.5, 2.5),
    "condemn": (-2.0, 2.5),
    "bitter": (-1.5, 2.0),
    "angr": (-1.0, 2.0),
    "anger": (-1.0, 2.0),
    "furious": (-1.5, 3.0),
    "critic": (-1.0, 1.5),
    "judg": (-1.0, 1.5),
    "demand": (-0.5, 1.5),
    "frustrat": (-0.5, 1.5),
    "irritat": (-0.5, 1.5),
    "annoy": (-0.5, 1.0),
    "control": (-0.5, 1.5),
    "superior": (-1.5, 1.5),
    "condescend": (-1.5, 1.5),
    "mock": (-1.5, 2.0),
    "sarcas": (-1.0, 1.5),
    "dismiss": (-1.5, 1.0),
    "invalid": (-1.5, 1.0),
    "rejecting": (-2.5, 1.5),
    "reject": (-2.0, 1.5),
    "defensiv": (-0.5, 1.5),
    "incredul": (-0.5, 1.0),
    "betray": (-1.5, 2.0),
    # mistrust and hurt: some tension, less warmth
    "suspic": (-1.0, 1.5),
    "mistrust": (-1.5, 1.5),
    "distrust": (-1.5, 1.5),
    "untrust": (-1.5, 1.5),
    "doubt": (-0.5, 1.0),
    "wary": (-1.0, 1.0),
    "guarded": (-1.0, 1.0),
    "disappoint": (-1.0, 1.0),
    "hurt": (-0.5, 1.0),
    "devalu": (-1.0, 1.0),
    "jealous": (-0.5, 1.5),
    "fearful": (-0.5, 1.0),
    # distance and giving up: warmth down
    "disconnect": (-2.0, 0.5),
    "withdraw": (-1.5, 0.5),
    "distant": (-2.0, 0.0),
    "detached": (-2.0, 0.0),
    "cold": (-2.0, 0.5),
    "indifferen": (-2.5, 0.0),
    "avoid": (-1.0, 0.5),
    "resign": (-1.0, 0.0),
    "hopeless": (-2.0, 0.5),
    "despair": (-2.0, 1.0),
    "intellectualiz": (-1.0, 0.0),
    "analytical": (-0.5, 0.0),
    # warmth
    "affection": (2.5, -1.0),
    "apprecia": (2.0, -1.0),
    "hopeful": (1.5, -0.5),
    "understand": (1.5, -1.0),
    "lov": (2.5, -1.0),
    "warm": (2.0, -0.5),
    "support": (2.0, -0.5),
    "admir": (2.0, -0.5),
    "sympath": (2.0, -0.5),
    "respect": (1.5, -0.5),
    "encourag": (1.5, -0.5),
    "accept": (1.5, -1.0),
    "caring": (2.0, -0.5),
    "empath": (2.0, -0.5),
    "compassion": (2.0, -1.0),
    "tender": (2.0, -1.0),
    "grateful": (2.0, -1.0),
    "gratitude": (2.0, -1.0),
    "protect": (1.5, 0.0),
    "desir": (1.5, 0.0),
    "flirt": (2.0, -0.5),
    "trusting": (1.5, -1.0),
    "open": (1.0, -0.5),
    "curious": (1.0, -0.5),
    "concern": (1.0, 0.5),
    "seeking": (1.0, 0.0),
    "allian": (1.0, 0.0),
    "reassur": (1.5, -1.0),
    "forgiv": (2.0, -1.5),
    "apologetic": (1.0, -1.0),
    "remorse": (1.0, -0.5),
    "validat": (1.5, -1.0),
}
_SOFTEN = {"slightly": 0.5, "mildly": 0.5, "somewhat": 0.5, "a-bit": 0.5}
_STRENGTHEN = {"very": 1.5, "deeply": 1.5, "profoundly": 1.5, "extremely": 1.5, "intensely": 1.5}
_STEMS = sorted(ATTITUDE_LEXICON, key=len, reverse=True)


def warmth_tension(attitude: str) -> tuple[float, float]:
    """Warmth and tension (0-10) read from RESCUE attitude text with `ATTITUDE_LEXICON`; 5/5 when nothing matches.

    RESCUE has no numeric warmth or tension; this is our documented, deterministic approximation.
    """
    warmth, tension, scale = 5.0, 5.0, 1.0
    for word in re.findall(r"[a-z]+", attitude.lower()):
        if word in _SOFTEN or word in _STRENGTHEN:
            scale = _SOFTEN.get(word) or _STRENGTHEN[word]
            continue
        stem = next((s for s in _STEMS if word.startswith(s)), None)
        if stem is not None:
            dw, dt = ATTITUDE_LEXICON[stem]
            warmth, tension = warmth + scale * dw, tension + scale * dt
        scale = 1.0
    return _half_step(warmth), _half_step(tension)


def _half_step(x: float) -> float:
    return min(10.0, max(0.0, round(x * 2) / 2))


# ---- case cards -----------------------------------------------------------------------------------------------

HISTORY_TEXT = "Derived from RESCUE-BENCH; persona traits not annotated (use --enrich)."
# Role words a family participant may be named by, with a generation level (parents 0, children 1,
# grandparents -1 before shifting so the eldest generation present is 0).
ROLE_WORDS: dict[str, tuple[str, int]] = {
    "father": ("father", 0),
    "dad": ("father", 0),
    "mother": ("mother", 0),
    "mom": ("mother", 0),
    "mum": ("mother", 0),
    "stepfather": ("stepfather", 0),
    "stepmother": ("stepmother", 0),
    "parent": ("parent", 0),
    "aunt": ("aunt", 0),
    "uncle": ("uncle", 0),
    "son": ("son", 1),
    "daughter": ("daughter", 1),
    "stepson": ("stepson", 1),
    "stepdaughter": ("stepdaughter", 1),
    "child": ("child", 1),
    "brother": ("brother", 1),
    "sister": ("sister", 1),
    "grandfather": ("grandfather", -1),
    "grandmother": ("grandmother", -1),
    "grandpa": ("grandfather", -1),
    "grandma": ("grandmother", -1),
    "grandson": ("grandson", 2),
    "granddaughter": ("granddaughter", 2),
}
# When a sample has no usable pattern label at all, the card starts from the label RESCUE reports as most
# frequent for the group (TAXONOMY §8), tagged `pattern-unlabelled` so nobody mistakes it for an annotation.
FALLBACK_PATTERNS: dict[str, str] = {"couple": "pursue_withdraw", "family": "cooperative_family_alliance"}


def rescue_case_id(sample_id: str) -> str:
    """`rescue-` + the sample id lower-cased, `/` -> `-`, anything outside [a-z0-9_-] dropped."""
    return f"rescue-{_slug(sample_id)}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "", text.strip().lower().replace("/", "-")).strip("-")


def case_from_sample(sample: RescueSample) -> Case:
    """A case card derived from a RESCUE sample, validated like any card (raises CardError if it cannot be).

    - members: the participants, never the therapist; couple members are `partner`s; a family member named by a
      role word (Father, Mother, Son, ...) takes it as role and generation, others are `participant`, generation 0;
    - baseline emotion and intensity: each member's earliest `internal_emotion`;
    - viewpoints: the earliest annotation of each ordered pair; pairs never annotated are left out;
    - warmth and tension: not in RESCUE; read from the attitude text by `warmth_tension` (ATTITUDE_LEXICON);
    - relation pattern: the first non-empty, in-taxonomy label of the sample (either field);
    - title, setting, presenting problem and history: plain summaries of what the sample annotates.
    """
    group, names = sample.group, sample.members
    notes: list[str] = [
        f"warmth/tension derived from attitude text by {LEXICON_VERSION} (not annotated in RESCUE)",
        "baselines are each member's earliest internal_emotion",
    ]
    if group == "couple" and len(names) != 2:
        raise RescueFormatError(
            sample.source, f"sample {sample.sample_id!r}: a couple needs exactly 2 participants, got {', '.join(names)}"
        )

    roles = _roles(names, group)
    if group == "family" and all(r == "participant" for r, _ in roles.values()):
        notes.append("family roles and generations not annotated (all generation 0)")
    members = []
    for name in names:
        emotion, intensity = _baseline(sample, name)
        if emotion is None:
            notes.append(f"no internal_emotion for {name}: baseline is a neutral placeholder")
        role, generation = roles[name]
        members.append(
            {
                "name": name,
                "role": role,
                "generation": generation,
                "baseline_emotion": emotion or "not annotated in the sample",
                "baseline_intensity": intensity if intensity is not None else 5,
            }
        )

    viewpoints = _first_viewpoints(sample, names)
    pattern, tags = _starting_pattern(sample), ["rescue", group, _slug(sample.sample_id.split("/")[0])]
    if pattern is None:
        pattern = FALLBACK_PATTERNS[group]
        tags.append("pattern-unlabelled")
        notes.append(f"no pattern label in the sample; starting pattern {pattern} is the group's most frequent label")

    data = {
        "title": f"{_join_names(names)} (RESCUE {sample.sample_id})",
        "group": group,
        "setting": f"RESCUE sample {sample.sample_id}: recorded {group} therapy session segment, "
        f"{len(sample.rows)} rows ({len(sample.therapist_rows)} therapist turns).",
        "presenting_problem": _presenting_problem(sample, viewpoints),
        "history": HISTORY_TEXT,
        "members": members,
        "viewpoints": viewpoints,
        "relation_pattern": pattern,
        "tags": tags,
        "provenance": {"source": "rescue", "sample_id": sample.sample_id, "notes": "; ".join(notes) + "."},
    }
    return parse_case(data, case_id=rescue_case_id(sample.sample_id), source=sample.source or sample.sample_id)


def _roles(names: list[str], group: str) -> dict[str, tuple[str, int]]:
    if group == "couple":
        return {n: ("partner", 0) for n in names}
    known = {n: ROLE_WORDS[n.lower()] for n in names if n.lower() in ROLE_WORDS}
    shift = -min((g for _, g in known.values()), default=0)
    return {n: (known[n][0], known[n][1] + shift) if n in known else ("participant", 0) for n in names}


def _baseline(sample: RescueSample, name: str) -> tuple[str | None, int | None]:
    for row in sample.rows:
        for e in row.internal_emotion:
            if e.person.strip() == name and e.intensity is not None and e.emotion_description.strip():
                intensity = int(round(min(INTENSITY_MAX, max(INTENSITY_MIN, float(e.intensity)))))
                return e.emotion_description.strip(), intensity
    return None, None


def _first_viewpoints(sample: RescueSample, names: list[str]) -> list[dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for row in sample.rows:
        for v in row.viewpoints_attitudes:
            pair = (v.source.strip(), v.target.strip())
            if pair in out or pair[0] == pair[1] or pair[0] not in names or pair[1] not in names:
                continue
            if not v.viewpoint.strip():
                continue
            attitude = v.attitude.strip() or "not annotated"
            warmth, tension = warmth_tension(v.attitude)
            out[pair] = {
                "source": pair[0],
                "target": pair[1],
                "viewpoint": v.viewpoint.strip(),
                "attitude": attitude,
                "warmth": warmth,
                "tension": tension,
            }
    return list(out.values())


def _starting_pattern(sample: RescueSample) -> str | None:
    allowed = patterns_for(sample.group)
    for row in sample.rows:
        for f in PATTERN_FIELDS:
            label = row.field_label(f)
            if label and label in allowed:
                return label
    return None


def _presenting_problem(sample: RescueSample, viewpoints: list[dict[str, Any]]) -> str:
    if viewpoints:
        parts = [f"{v['source']} on {v['target']}: {v['viewpoint']} ({v['attitude']})" for v in viewpoints[:3]]
        return "Opening viewpoints as annotated. " + "; ".join(parts) + "."
    opening = []
    for name in sample.members:
        emotion, intensity = _baseline(sample, name)
        if emotion:
            opening.append(f"{name}: {emotion} ({intensity}/10)")
    if opening:
        return "No viewpoints annotated. Opening emotions: " + "; ".join(opening) + "."
    return "Not annotated in the RESCUE sample."


def _join_names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# ---- import ---------------------------------------------------------------------------------------------------


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


class ImportReport(BaseModel):
    """Result of `import_rescue`: one SampleCounts per sample, in input order."""

    model_config = ConfigDict(extra="forbid")

    source: str
    out_dir: str
    samples: list[SampleCounts]

    def totals(self) -> dict[str, int]:
        keys = ("rows", "therapist_rows", "no_dominant_pattern", "strategies", "viewpoints", "emotions")
        out = {k: sum(getattr(s, k) for s in self.samples) for k in keys}
        for f in PATTERN_FIELDS:
            out[f] = sum(s.pattern_labels.get(f, 0) for s in self.samples)
        return out


# Extension point: enrichment. An Enricher takes a derived card and its sample and returns a fuller card, e.g. a
# model that infers age, personality, needs, fears, triggers and softeners from the transcript and records each
# inferred field in `Member.inferred` (with evidence rows and model id). `import_rescue(..., enrich=...)` calls it
# once per card and re-validates the result. The CLI's future `--enrich --model M` builds one; none ships yet.
Enricher = Callable[[Case, RescueSample], Case]


def import_rescue(src: str | Path, out_dir: str | Path, *, enrich: Enricher | None = None) -> ImportReport:
    """Write `<out>/<case_id>.yaml` and `<out>/<case_id>.gold.json` for every sample in `src` (atomic writes)."""
    from personas.common.files import atomic_write_text

    samples = load_rescue(src)
    ids: dict[str, str] = {}
    for s in samples:
        cid = rescue_case_id(s.sample_id)
        if cid in ids:
            problem = f"sample ids {ids[cid]!r} and {s.sample_id!r} both map to case id {cid!r}"
            raise RescueFormatError(s.source, problem)
        ids[cid] = s.sample_id

    derived = []
    for s in samples:  # derive everything first: a bad sample fails the import before any file is written
        case = case_from_sample(s)
        if enrich is not None:
            enriched = enrich(case, s)
            case = parse_case(enriched.model_dump(mode="json", exclude={"id"}), case_id=case.id, source=s.source)
        derived.append((s, case, gold_from_sample(s)))

    out = Path(out_dir)
    report = ImportReport(source=str(src), out_dir=str(out), samples=[])
    for s, case, gold in derived:
        case_path = write_case(case, out)
        gold_path = out / f"{case.id}.gold.json"
        atomic_write_text(gold_path, gold.model_dump_json(indent=2) + "\n")
        report.samples.append(s.counts().model_copy(update={"case_path": str(case_path), "gold_path": str(gold_path)}))
    return report


__all__ = [
    "ATTITUDE_LEXICON",
    "GOLD_SCHEMA_VERSION",
    "PATTERN_FIELDS",
    "Enricher",
    "GoldEmotion",
    "GoldRow",
    "GoldStrategy",
    "GoldTrajectory",
    "GoldViewpoint",
    "ImportReport",
    "RescueEmotion",
    "RescueFormatError",
    "RescueRow",
    "RescueSample",
    "RescueStrategy",
    "RescueViewpoint",
    "SampleCounts",
    "case_from_sample",
    "gold_from_sample",
    "import_rescue",
    "load_gold",
    "load_rescue",
    "rescue_case_id",
    "warmth_tension",
]
