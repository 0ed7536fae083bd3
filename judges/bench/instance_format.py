"""The benchmark's instance format: the six tasks, what one instance holds (the rows the model may see, the
question and the gold answer), what building them dropped, and counting and limiting them per task. Built from
RESCUE samples (`judges.bench.instances`) or simulated sessions (`judges.bench.probe`) alike.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Literal

from pydantic import Field

from personas.common.records import Record
from personas.taxonomy import Group, TargetKind

INSTANCE_VERSION = 1


class Task(StrEnum):
    """The six RESCUE-BENCH tasks, in the paper's order of Table 5."""

    ITP = "itp"
    RPP = "rpp"
    STP = "stp"
    SSP = "ssp"
    ER = "er"
    VP = "vp"


TASKS: tuple[Task, ...] = tuple(Task)
TASK_TITLES: dict[Task, str] = {
    Task.ITP: "intervention time prediction",
    Task.RPP: "relation pattern prediction",
    Task.STP: "support target prediction",
    Task.SSP: "support strategy prediction",
    Task.ER: "emotion recognition",
    Task.VP: "viewpoint prediction",
}

SubgroupMode = Literal["keep", "collapse"]
SUBGROUP_MODES: tuple[SubgroupMode, ...] = ("keep", "collapse")
SUBGROUP_NOTES: dict[str, str] = {
    "keep": "subgroups kept: a multi-person target that is not the whole group is its own label (e.g. 'Ben & Heather')",
    "collapse": "subgroups collapsed: every multi-person target is scored as the group label (released scripts)",
}
SUBGROUP_JOINER = " & "


class Row(Record):
    """One transcript row as the model sees it."""

    index: int = Field(description="1-based position in the sample or session.")
    speaker: str
    to: list[str] = Field(default_factory=list, description="Addressees as annotated.")
    text: str


class ViewpointTriple(Record):
    source: str
    target: str
    viewpoint: str


class Instance(Record):
    """One benchmark item: what the model may see, what it is asked about, and the gold answer."""

    id: str = Field(description="`<task>:<sample_id>:<row>`; unique within a benchmark.")
    task: Task
    origin: Literal["rescue", "probe"] = Field(description="Gold from RESCUE annotations or from a simulated session.")
    sample_id: str = Field(description="RESCUE sample id, or `<run folder>/<session id>` in probe mode.")
    group: Group
    members: list[str] = Field(description="People in the room (never the therapist).")
    row: int = Field(
        description="The row the instance is about: ITP the last member row before the decision, "
        "RPP/STP/SSP the therapist row to predict, ER/VP the row read."
    )
    context: list[Row] = Field(description="Rows the model sees, oldest first; nothing after the decision point.")
    omitted_rows: int = Field(default=0, description="Earlier rows cut by the context size.")
    speaker: str = Field(default="", description="ER/VP: whose emotion or viewpoints are asked for.")
    candidates: list[str] = Field(default_factory=list, description="Allowed labels (RPP, STP, SSP).")
    known_target: str = Field(default="", description="SSP: the gold support target, given to the model.")
    gold_label: str = Field(default="", description="ITP yes/no; RPP pattern; STP target label; SSP strategy.")
    gold_target_kind: TargetKind | None = Field(default=None, description="STP/SSP: kind of the gold target.")
    gold_emotion: str = ""
    gold_intensity: float | None = None
    gold_viewpoints: list[ViewpointTriple] = Field(default_factory=list)

    def fingerprint(self) -> str:
        """Hash of everything the model sees and is scored against: a changed instance is never resumed."""
        blob = f"{INSTANCE_VERSION}\n{self.model_dump_json()}"
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


class BuildStats(Record):
    """What instance construction dropped, and why (reported with the counts)."""

    samples: int = 0
    itp_samples_dropped: int = Field(default=0, description="Samples lacking a yes or a no candidate.")
    rpp_no_dominant: int = Field(default=0, description="Therapist rows whose pattern is `` (excluded).")
    rpp_off_taxonomy: int = Field(default=0, description="Therapist rows with a label outside the group taxonomy.")
    rpp_field_disagreements: int = Field(default=0, description="Therapist rows where the two pattern fields differ.")
    stp_unresolved: int = Field(default=0, description="Strategy rows whose target is not in the closed target set.")
    ssp_off_taxonomy: int = Field(default=0, description="Strategy rows whose first strategy is not in the taxonomy.")
    er_candidates: int = 0
    vp_candidates: int = 0


class BuildResult(Record):
    instances: list[Instance]
    stats: BuildStats
    subgroups: SubgroupMode


def count_instances(instances: Iterable[Instance]) -> dict[str, dict[str, int]]:
    """Instances per task and scenario: {task: {"couple": n, "family": n, "samples_couple": n, ...}}."""
    out: dict[str, dict[str, int]] = {}
    samples: dict[tuple[str, str], set[str]] = {}
    for inst in instances:
        row = out.setdefault(inst.task.value, {"couple": 0, "family": 0})
        row[inst.group] += 1
        samples.setdefault((inst.task.value, inst.group), set()).add(inst.sample_id)
    for (task, group), ids in samples.items():
        out[task][f"samples_{group}"] = len(ids)
    for row in out.values():
        row.setdefault("samples_couple", 0)
        row.setdefault("samples_family", 0)
    return out


def limit_instances(instances: Sequence[Instance], limit: int | None, seed: int) -> list[Instance]:
    """At most `limit` instances per task: a seeded permutation's prefix, kept in build order.

    A larger limit is a superset of a smaller one, so a rerun with a larger --limit resumes the smaller run.
    """
    if not limit or limit <= 0:
        return list(instances)
    keep: set[str] = set()
    by_task: dict[Task, list[Instance]] = {}
    for inst in instances:
        by_task.setdefault(inst.task, []).append(inst)
    for task, items in by_task.items():
        ids = [i.id for i in items]
        random.Random(f"{seed}:limit:{task.value}").shuffle(ids)
        keep.update(ids[:limit])
    return [i for i in instances if i.id in keep]
