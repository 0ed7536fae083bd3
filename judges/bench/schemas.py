"""Answer schemas: label lists are `Literal` enums in the JSON schema (so a grammar-constrained model can only
emit valid labels), while validation stays lenient so that what a free model gets wrong is counted, not lost.

A reply is sorted out before validation: labels are matched case- and separator-insensitively ("Goal-Align"
-> `goal_align`; "Heather & Ben" -> "Ben & Heather"), anything that matches no allowed label is moved to the
hidden `off_taxonomy` list, and list answers are then cleaned by `clean_ranking` (duplicates removed keeping the
first, cut to the top 3, both counted). In a batch reply, answers for ids that were not asked are dropped and
counted (`unknown_ids`); ids answered twice or not at all are the caller's to fail.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from judges.bench.instance_format import SUBGROUP_JOINER, Task
from personas.taxonomy import INTENSITY_MAX, INTENSITY_MIN

TOP_K = 3
EMOTION_MAX_CHARS = 100
VIEWPOINT_MAX_CHARS = 160
MAX_VIEWPOINTS = 4
JUDGE_REASON_MAX_CHARS = 160


def label_key(text: str) -> str:
    """Case- and separator-insensitive key of a taxonomy label: " Goal-Align" -> "goal_align"."""
    return re.sub(r"[\s_\-]+", "_", text.strip().lower()).strip("_")


def target_key(text: str) -> str:
    """Order-insensitive key of a target label: "Heather & Ben", "ben and heather" -> "ben&heather"."""
    parts = re.split(r"\s*(?:&|\+|/|,|\band\b)\s*", text.strip().lower())
    return "&".join(sorted(p.strip() for p in parts if p.strip()))


def canonical_map(allowed: Sequence[str], key: Callable[[str], str]) -> dict[str, str]:
    return {key(a): a for a in allowed}


@dataclass(frozen=True)
class Cleaned:
    """A ranked label list after cleaning, with what was removed."""

    labels: list[str]
    off_taxonomy: list[str] = field(default_factory=list)
    duplicates: int = 0
    truncated: int = 0

    @property
    def missing(self) -> bool:
        return not self.labels


def clean_ranking(
    raw: Sequence[object], allowed: Sequence[str], *, key: Callable[[str], str] = label_key, k: int = TOP_K
) -> Cleaned:
    """Map each entry to an allowed label; drop (and count) off-taxonomy entries and repeats (first kept); keep k.

    An empty result is a missing prediction, which metrics score as wrong.
    """
    canon = canonical_map(allowed, key)
    labels: list[str] = []
    off: list[str] = []
    duplicates = 0
    for item in raw:
        label = canon.get(key(item)) if isinstance(item, str) else None
        if label is None:
            off.append(str(item))
        elif label in labels:
            duplicates += 1
        else:
            labels.append(label)
    return Cleaned(labels=labels[:k], off_taxonomy=off, duplicates=duplicates, truncated=max(0, len(labels) - k))


# ---- pydantic answer models ---------------------------------------------------------------------------------


class _Answer(BaseModel):
    """Base of every answer: sorts out-of-list labels into `off_taxonomy` before validation."""

    model_config = ConfigDict(extra="ignore")

    # field name -> (canonical map, key function); filled per generated class
    _labels: ClassVar[dict[str, tuple[dict[str, str], Callable[[str], str]]]] = {}
    # list-of-triples field -> (source name map, target name map)
    _triples: ClassVar[dict[str, tuple[dict[str, str], dict[str, str]]]] = {}

    off_taxonomy: SkipJsonSchema[list[str]] = Field(default_factory=list, description="Entries outside the lists.")

    @model_validator(mode="before")
    @classmethod
    def _sort_out(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = {k: v for k, v in data.items() if k != "off_taxonomy"}
        off: list[str] = []
        for name, (canon, key) in cls._labels.items():
            if name not in data:
                continue
            value = data[name]
            if isinstance(value, list):
                kept = []
                for item in value:
                    label = canon.get(key(item)) if isinstance(item, str) else None
                    if label is None:
                        off.append(str(item))
                    else:
                        kept.append(label)
                data[name] = kept
            else:
                label = canon.get(key(value)) if isinstance(value, str) else None
                if label is None:
                    off.append(str(value))
                data[name] = label
        for name, (sources, targets) in cls._triples.items():
            value = data.get(name)
            if not isinstance(value, list):
                continue
            kept = []
            for item in value:
                if not isinstance(item, dict):
                    off.append(str(item))
                    continue
                src = sources.get(label_key(str(item.get("source", ""))))
                tgt = targets.get(label_key(str(item.get("target", ""))))
                if src is None or tgt is None:
                    off.append(f"{item.get('source')} -> {item.get('target')}")
                    continue
                kept.append({**item, "source": src, "target": tgt})
            data[name] = kept
        data["off_taxonomy"] = off
        return data


def _enum(values: Sequence[str]) -> Any:
    return Literal[tuple(values)]  # type: ignore[valid-type]


def _ranked(values: Sequence[str]) -> tuple[Any, Any]:
    extra = {"minItems": min(TOP_K, len(values)), "maxItems": TOP_K}
    return (list[_enum(values)], Field(description="Top 3, most likely first.", json_schema_extra=extra))


class _Probability(_Answer):
    @field_validator("confidence", mode="before", check_fields=False)
    @classmethod
    def _clamp01(cls, v: Any) -> Any:
        if isinstance(v, int | float) and not isinstance(v, bool):
            v = v / 100 if 1 < v <= 100 else v  # "85" meant as a percentage
            return min(1.0, max(0.0, float(v)))
        return v


class _Intensity(_Answer):
    @field_validator("intensity", mode="before", check_fields=False)
    @classmethod
    def _clamp_intensity(cls, v: Any) -> Any:
        if isinstance(v, int | float) and not isinstance(v, bool):
            return int(round(min(INTENSITY_MAX, max(INTENSITY_MIN, float(v)))))
        return v


def _fields(task: Task, labels: tuple[str, ...], names: tuple[str, ...], targets: tuple[str, ...]) -> tuple[dict, type]:
    """(pydantic field definitions, base class) of one answer."""
    if task is Task.ITP:
        yes_no = (_enum(("yes", "no")) | SkipJsonSchema[None], Field(description="Should the Therapist speak next?"))
        conf = (float, Field(description="0-1", json_schema_extra={"minimum": 0, "maximum": 1}))
        return {"intervene": yes_no, "confidence": conf}, _Probability
    if task is Task.RPP:
        return {"patterns": _ranked(labels)}, _Answer
    if task is Task.STP:
        return {"targets": _ranked(labels)}, _Answer
    if task is Task.SSP:
        return {"strategies": _ranked(labels)}, _Answer
    if task is Task.ER:
        emotion = (
            str,
            Field(
                description="Short phrase, e.g. 'feels cornered and defensive'.",
                json_schema_extra={"maxLength": EMOTION_MAX_CHARS},
            ),
        )
        intensity = (
            int,
            Field(description="0-10", json_schema_extra={"minimum": INTENSITY_MIN, "maximum": INTENSITY_MAX}),
        )
        return {"emotion": emotion, "intensity": intensity}, _Intensity
    if task is Task.VP:
        triple = create_model(
            "ViewpointAnswer",
            source=(_enum(names), ...),
            target=(_enum(targets), ...),
            viewpoint=(str, Field(json_schema_extra={"maxLength": VIEWPOINT_MAX_CHARS})),
        )
        vps = (list[triple], Field(json_schema_extra={"minItems": 1, "maxItems": MAX_VIEWPOINTS}))  # type: ignore[valid-type]
        return {"viewpoints": vps}, _Answer
    raise ValueError(task)


LIST_FIELD: dict[Task, str] = {Task.RPP: "patterns", Task.STP: "targets", Task.SSP: "strategies"}


def _configure(
    model: type[_Answer], task: Task, labels: tuple[str, ...], names: tuple[str, ...], targets: tuple[str, ...]
) -> type[_Answer]:
    if task is Task.ITP:
        model._labels = {"intervene": (canonical_map(("yes", "no"), label_key), label_key)}
    elif task in LIST_FIELD:
        key = target_key if task is Task.STP else label_key
        model._labels = {LIST_FIELD[task]: (canonical_map(labels, key), key)}
    elif task is Task.VP:
        model._triples = {"viewpoints": (canonical_map(names, label_key), canonical_map(targets, label_key))}
    return model


@functools.lru_cache(maxsize=512)
def answer_schema(
    task: Task, labels: tuple[str, ...] = (), names: tuple[str, ...] = (), targets: tuple[str, ...] = ()
) -> type[BaseModel]:
    """The schema of one answer. `labels`: RPP patterns, STP candidate targets or SSP strategies; `names`,
    `targets`: VP sources (members) and targets."""
    fields, base = _fields(task, labels, names, targets)
    model = create_model(f"{task.value.title()}Answer", __base__=base, **fields)
    return _configure(model, task, labels, names, targets)


class _Batch(BaseModel):
    model_config = ConfigDict(extra="ignore")
    _ids: ClassVar[frozenset[str]] = frozenset()

    unknown_ids: SkipJsonSchema[list[str]] = Field(default_factory=list, description="Answers for ids not asked.")

    @model_validator(mode="before")
    @classmethod
    def _drop_unknown(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
            return data
        kept, unknown = [], []
        for item in data["answers"]:
            item_id = str(item.get("id", "")).strip() if isinstance(item, dict) else ""
            if item_id in cls._ids:
                kept.append({**item, "id": item_id})
            else:
                unknown.append(item_id or str(item))
        return {"answers": kept, "unknown_ids": unknown}


@functools.lru_cache(maxsize=512)
def batch_schema(
    task: Task,
    ids: tuple[str, ...],
    labels: tuple[str, ...] = (),
    names: tuple[str, ...] = (),
    targets: tuple[str, ...] = (),
) -> type[BaseModel]:
    """Several answers in one reply, each keyed by its instance's short id."""
    fields, base = _fields(task, labels, names, targets)
    item = create_model(f"{task.value.title()}Item", __base__=base, id=(_enum(ids), ...), **fields)
    _configure(item, task, labels, names, targets)
    extra = {"minItems": len(ids), "maxItems": len(ids)}
    model = create_model(
        f"{task.value.title()}Batch",
        __base__=_Batch,
        answers=(list[item], Field(description="One entry per id.", json_schema_extra=extra)),  # type: ignore[valid-type]
    )
    model._ids = frozenset(ids)
    return model


# ---- judges -----------------------------------------------------------------------------------------------


class ErJudgement(BaseModel):
    """ER judge: how well the predicted emotion description matches the gold one."""

    reason: str = Field(description="One short sentence.", json_schema_extra={"maxLength": JUDGE_REASON_MAX_CHARS})
    score: Literal[1, 2, 3, 4, 5]


class VpJudgement(BaseModel):
    """VP judge: who-toward-whom match (0-2) and viewpoint content match (0-4)."""

    reason: str = Field(description="One short sentence.", json_schema_extra={"maxLength": JUDGE_REASON_MAX_CHARS})
    source_target: Literal[0, 1, 2]
    viewpoint: Literal[0, 1, 2, 3, 4]


__all__ = [
    "LIST_FIELD",
    "SUBGROUP_JOINER",
    "TOP_K",
    "Cleaned",
    "ErJudgement",
    "VpJudgement",
    "answer_schema",
    "batch_schema",
    "clean_ranking",
    "label_key",
    "target_key",
]
