"""RESCUE-bench's released ER/VP instance files (`data/er.jsonl`, `data/vp.jsonl` of its repository).

One instance per line: `instance_id`, `sample_id`, `row_index`, `speaker`, the row's own `dialogue`,
`prior_context` (every earlier row: `row_index`, `primary_speaker`, `target`, `dialogue_cleaned`, ...), and the
gold: `gold_internal_emotion` + `gold_intensity_score` (ER) or `gold_viewpoints` (VP; `source`, `target`,
`viewpoint`, `attitude`). Scoring exactly these instances reproduces the paper's ER/VP instance set, instead of
our own checkpoint sampling over full transcripts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judges.bench.instance_format import BuildResult, BuildStats, Instance, Row, Task, ViewpointTriple
from judges.bench.instance_rules import clean_names, instance_id, valid_intensity, vp_targets, window
from personas.common.errors import UserError
from personas.taxonomy import GROUP_TARGET_LABELS, SUPPORTER_NAME

_NOT_MEMBERS = {SUPPORTER_NAME, *GROUP_TARGET_LABELS.values(), ""}


class ReleasedFormatError(UserError):
    pass


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PriorRow(_Lenient):
    row_index: int
    primary_speaker: str
    target: list[str] = Field(default_factory=list)
    dialogue_cleaned: str = ""


class GoldViewpoint(_Lenient):
    source: str
    target: str
    viewpoint: str
    attitude: str = ""


class ReleasedInstance(_Lenient):
    """One line of a released ER or VP file, as far as scoring needs it (video and clip fields are ignored)."""

    instance_id: str
    sample_id: str
    row_index: int = Field(ge=1)
    speaker: str = Field(min_length=1)
    target: list[str] = Field(default_factory=list)
    dialogue: str
    prior_context: list[PriorRow]
    task: str | None = None
    scenario: str | None = None
    participants: list[str] = Field(default_factory=list)
    gold_internal_emotion: str | None = None
    gold_intensity_score: float | None = None
    gold_viewpoints: list[GoldViewpoint] | None = None


def looks_released(path: str | Path) -> bool:
    """A .jsonl whose first record is a released instance (has `instance_id` and `prior_context`)."""
    p = Path(path)
    if not p.is_file() or p.suffix != ".jsonl":
        return False
    with open(p, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    first = json.loads(line)
                except json.JSONDecodeError:
                    return False
                return isinstance(first, dict) and "instance_id" in first and "prior_context" in first
    return False


def _task_of(inst: ReleasedInstance, where: str) -> Task:
    declared = (inst.task or "").lower()
    if declared in ("er", "vp"):
        task = Task(declared)
    elif inst.gold_viewpoints is not None:
        task = Task.VP
    elif inst.gold_internal_emotion is not None:
        task = Task.ER
    else:
        raise ReleasedFormatError(
            f"{where}: no gold; an ER line needs gold_internal_emotion, a VP line gold_viewpoints"
        )
    if task is Task.ER and (not (inst.gold_internal_emotion or "").strip() or inst.gold_intensity_score is None):
        raise ReleasedFormatError(
            f"{where}: field gold_internal_emotion / gold_intensity_score: an ER instance needs both"
        )
    if task is Task.VP and not inst.gold_viewpoints:
        raise ReleasedFormatError(f"{where}: field gold_viewpoints: a VP instance needs at least one viewpoint")
    return task


def _members(inst: ReleasedInstance) -> list[str]:
    names: list[str] = []
    for name in [*inst.participants, inst.speaker, *inst.target]:
        if name.strip() not in _NOT_MEMBERS and name.strip() not in names:
            names.append(name.strip())
    for r in inst.prior_context:
        for name in (r.primary_speaker, *r.target):
            if name.strip() not in _NOT_MEMBERS and name.strip() not in names:
                names.append(name.strip())
    return names


def _group(inst: ReleasedInstance, raw: dict[str, Any]) -> str:
    if inst.scenario in ("couple", "family"):
        return inst.scenario
    return "family" if "family" in raw and "couple" not in raw else "couple"


def load_released(path: str | Path, *, context_size: int) -> BuildResult:
    """Exactly the instances of a released ER/VP file, in file order; bad lines raise a one-line UserError."""
    p = Path(path)
    instances: list[Instance] = []
    seen: dict[str, int] = {}
    samples: set[str] = set()
    stats = BuildStats()
    with open(p, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{p}: line {n}"
            try:
                raw = json.loads(line)
                inst = ReleasedInstance.model_validate(raw)
            except json.JSONDecodeError as err:
                raise ReleasedFormatError(f"{where}: not JSON ({err.msg}); one instance per line") from None
            except ValidationError as err:
                first = err.errors()[0]
                field = ".".join(str(x) for x in first["loc"]) or "(root)"
                raise ReleasedFormatError(f"{where}: field {field}: {first['msg']}") from None
            task = _task_of(inst, where)
            rid = instance_id(task, inst.sample_id, inst.row_index)
            if rid in seen:
                raise ReleasedFormatError(
                    f"{where}: instance {inst.instance_id!r} repeats line {seen[rid]} (same sample and row); "
                    "remove the duplicate"
                )
            seen[rid] = n
            prior = sorted(inst.prior_context, key=lambda r: r.row_index)
            if any(r.row_index >= inst.row_index for r in prior):
                raise ReleasedFormatError(f"{where}: field prior_context: rows must come before row {inst.row_index}")
            rows = [
                Row(
                    index=r.row_index,
                    speaker=r.primary_speaker.strip(),
                    to=clean_names(r.target),
                    text=r.dialogue_cleaned.strip(),
                )
                for r in prior
            ]
            rows.append(
                Row(
                    index=inst.row_index,
                    speaker=inst.speaker.strip(),
                    to=clean_names(inst.target),
                    text=inst.dialogue.strip(),
                )
            )
            shown, omitted = window(rows, len(rows), context_size)
            group = _group(inst, raw)
            members = _members(inst)
            fields: dict[str, Any] = {}
            if task is Task.ER:
                intensity = valid_intensity(inst.gold_intensity_score)
                if intensity is None:
                    raise ReleasedFormatError(f"{where}: field gold_intensity_score: use a number from 0 to 10")
                fields = {"gold_emotion": (inst.gold_internal_emotion or "").strip(), "gold_intensity": intensity}
                stats.er_candidates += 1
            else:
                fields = {
                    "gold_viewpoints": [
                        ViewpointTriple(source=v.source.strip(), target=v.target.strip(), viewpoint=v.viewpoint.strip())
                        for v in inst.gold_viewpoints or []
                    ],
                    "candidates": vp_targets(members, group, inst.speaker.strip()),  # type: ignore[arg-type]
                }
                stats.vp_candidates += 1
            samples.add(inst.sample_id)
            instances.append(
                Instance(
                    id=rid,
                    task=task,
                    origin="rescue",
                    sample_id=inst.sample_id,
                    group=group,  # type: ignore[arg-type]
                    members=members,
                    row=inst.row_index,
                    context=shown,
                    omitted_rows=omitted,
                    speaker=inst.speaker.strip(),
                    **fields,
                )
            )
    if not instances:
        raise ReleasedFormatError(f"{p}: no instances; expected one released ER/VP instance per line")
    stats.samples = len(samples)
    return BuildResult(instances=instances, stats=stats, subgroups="keep")
