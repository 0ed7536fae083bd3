"""Benchmark instances: one decision point each, with only the rows up to it and the gold answer.

The six RESCUE-BENCH tasks (TAXONOMY §6) share one instance format, whether the gold comes from RESCUE
annotations (`build_rescue_instances`) or from a simulated session (`judges.bench.probe`). Rows are numbered
by their position in the sample (1-based), as the released RPP script does; the model sees at most
`context_size` rows ending at the decision point, never a later row.

Construction rules, per task (`Task`):

- ITP: a decision point sits after every non-therapist row that has a successor. "yes" when the next row is the
  therapist (the paper's positive: therapist row preceded by a non-therapist row), "no" when the next row is not
  (current and next row both non-therapist). Classes are balanced within each sample by sampling the larger
  class down (seeded, reproducible); samples lacking either class are dropped.
- RPP: therapist rows whose pattern is non-empty and in the group's taxonomy (the released script's default;
  it matches the published counts). The label is read from `relation_cycle_state` first (the pattern at the
  end of the context, which is what that field holds on therapist rows), then from `relation_pattern`, both via
  `RescueRow.field_label`. `""` (reviewed, no dominant pattern) is excluded. Context: rows before the turn.
- STP: therapist rows with a `support_strategy` item whose target (the first item's target, falling back to
  the row target) resolves to the sample's closed target set: members, subgroups of members, the group label.
  Candidates (the released script's `build_candidate_target_labels`): the members, every target seen on the
  sample's therapist rows (so subgroups the sample uses), the group label.
- SSP: STP rows whose first strategy is in the group's taxonomy; the gold target is given to the model.
- ER: member rows (not the therapist, not a group speaker) with a speaker-matched emotion and a valid 0-10
  intensity, after dropping early and very short rows; at most `CHECKPOINTS_PER_SAMPLE` per sample, sampled
  uniformly with a seeded generator. Context: rows up to and including the row.
- VP: member rows with at least one viewpoint whose source is the speaker, with a target and a viewpoint;
  same filters and sampling as ER.

Support targets (`SubgroupMode`): `keep` (default) scores a subgroup such as "Ben & Heather" as its own label,
distinct from the whole group; `collapse` maps every multi-person target to the group label, as the released
scripts do.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from personas.rescue import PatternField, RescueRow, RescueSample
from personas.taxonomy import (
    GROUP_TARGET_LABELS,
    INTENSITY_MAX,
    INTENSITY_MIN,
    SUPPORTER_NAME,
    Group,
    TargetKind,
    patterns_for,
    strategies_for,
    target_kind,
)

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

# ER/VP checkpoint rules. "Early": the first EARLY_ROWS rows of a sample never become checkpoints, so every
# checkpoint has at least EARLY_ROWS rows of earlier context. "Very short": a row whose text has fewer than
# MIN_DIALOGUE_WORDS words (a word = whitespace-separated token with at least one letter), e.g. "Yeah.",
# "Mm-hmm.", "Not really."; too little to read an emotion or a viewpoint from. Rows without text are invalid.
EARLY_ROWS = 2
MIN_DIALOGUE_WORDS = 3
CHECKPOINTS_PER_SAMPLE = 5
DEFAULT_CONTEXT_SIZE = 12  # rows shown, ending at the decision point; 0 = every earlier row
DEFAULT_SEED = 20260914


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Row(_Model):
    """One transcript row as the model sees it."""

    index: int = Field(description="1-based position in the sample or session.")
    speaker: str
    to: list[str] = Field(default_factory=list, description="Addressees as annotated.")
    text: str


class ViewpointTriple(_Model):
    source: str
    target: str
    viewpoint: str


class Instance(_Model):
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


class BuildStats(_Model):
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


class BuildResult(_Model):
    instances: list[Instance]
    stats: BuildStats
    subgroups: SubgroupMode


# ---- shared helpers (also used by probe mode) ------------------------------------------------------------------


def is_very_short(text: str) -> bool:
    """Fewer than MIN_DIALOGUE_WORDS words that contain a letter (empty text counts as very short)."""
    return sum(any(c.isalpha() for c in w) for w in text.split()) < MIN_DIALOGUE_WORDS


def window(rows: Sequence[Row], end: int, context_size: int) -> tuple[list[Row], int]:
    """Rows [0, end) cut to the last `context_size` (0 = all): (shown rows, omitted count)."""
    shown = list(rows[:end])
    if context_size > 0 and len(shown) > context_size:
        return shown[-context_size:], len(shown) - context_size
    return shown, 0


def clean_names(names: Iterable[str]) -> list[str]:
    """Target names without `Therapist`, blanks or repeats, in order."""
    out: list[str] = []
    for n in names:
        n = (n or "").strip()
        if n and n != SUPPORTER_NAME and n not in out:
            out.append(n)
    return out


def target_label(names: Sequence[str], members: Sequence[str], group: Group, subgroups: SubgroupMode) -> str | None:
    """The label of a support target, or None when it does not resolve to the closed target set.

    One member -> the name; every member or the group label -> `Couple`/`Family`; a proper subset of members ->
    the names in member order joined by " & " (`keep`) or the group label (`collapse`).
    """
    names = clean_names(names)
    group_label = GROUP_TARGET_LABELS[group]
    if not names or any(n not in members and n != group_label for n in names):
        return None
    kind = target_kind(names, list(members), group)
    if kind is TargetKind.WHOLE_GROUP:
        return group_label
    if kind is TargetKind.INDIVIDUAL:
        return names[0]
    if subgroups == "collapse":
        return group_label
    return SUBGROUP_JOINER.join(m for m in members if m in names)


def label_kind(label: str, group: Group) -> TargetKind:
    """Kind of a target label made by `target_label`."""
    if label == GROUP_TARGET_LABELS[group]:
        return TargetKind.WHOLE_GROUP
    return TargetKind.SUBGROUP if SUBGROUP_JOINER in label else TargetKind.INDIVIDUAL


def target_candidates(members: Sequence[str], group: Group, seen: Iterable[str]) -> list[str]:
    """Members, then labels seen on supporter turns that are not members (subgroups), then the group label."""
    group_label = GROUP_TARGET_LABELS[group]
    out = list(members)
    for label in seen:
        if label not in out and label != group_label:
            out.append(label)
    return [*out, group_label]


def vp_targets(members: Sequence[str], group: Group, speaker: str) -> list[str]:
    """Whom a speaker's viewpoint may be about: the other members, the group label, the therapist."""
    return [*(m for m in members if m != speaker), GROUP_TARGET_LABELS[group], SUPPORTER_NAME]


def balance_itp(yes: list[int], no: list[int], rng: random.Random) -> tuple[list[int], list[int]]:
    """Both classes sampled down to the smaller one's size (sorted); empty lists when a class is missing."""
    n = min(len(yes), len(no))
    if n == 0:
        return [], []
    return sorted(rng.sample(yes, n)), sorted(rng.sample(no, n))


def pick_checkpoints(candidates: list[int], rng: random.Random, k: int = CHECKPOINTS_PER_SAMPLE) -> list[int]:
    """At most `k` candidates, uniformly at random without replacement, returned in row order."""
    return sorted(rng.sample(candidates, min(k, len(candidates))))


def sample_rng(seed: int, task: Task, sample_id: str) -> random.Random:
    """One generator per (seed, task, sample): reproducible, and independent of other samples and tasks."""
    return random.Random(f"{seed}:{task.value}:{sample_id}")


def valid_intensity(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if INTENSITY_MIN <= value <= INTENSITY_MAX else None


def instance_id(task: Task, sample_id: str, row: int) -> str:
    return f"{task.value}:{sample_id}:{row}"


# ---- RESCUE ---------------------------------------------------------------------------------------------------

RPP_FIELD_ORDER: tuple[PatternField, ...] = ("relation_cycle_state", "relation_pattern")


def rpp_label(row: RescueRow) -> str | None:
    """A therapist row's pattern: `relation_cycle_state` when it carries a label (including ``), else
    `relation_pattern`; None when neither does."""
    for f in RPP_FIELD_ORDER:
        label = row.field_label(f)
        if label is not None:
            return label
    return None


def _rows(sample: RescueSample) -> list[Row]:
    return [
        Row(index=i, speaker=r.primary_speaker.strip(), to=clean_names(r.target) or list(r.target), text=r.text.strip())
        for i, r in enumerate(sample.rows, start=1)
    ]


def _is_member_speaker(speaker: str) -> bool:
    return bool(speaker) and speaker != SUPPORTER_NAME and speaker not in GROUP_TARGET_LABELS.values()


def build_rescue_instances(
    samples: Sequence[RescueSample],
    *,
    tasks: Iterable[Task] = TASKS,
    context_size: int = DEFAULT_CONTEXT_SIZE,
    subgroups: SubgroupMode = "keep",
    seed: int = DEFAULT_SEED,
) -> BuildResult:
    """Instances of the requested tasks from RESCUE samples, in sample then row order, grouped by task."""
    wanted = set(tasks)
    stats = BuildStats(samples=len(samples))
    out: dict[Task, list[Instance]] = {t: [] for t in TASKS}
    for sample in samples:
        for task, items in _sample_instances(sample, wanted, context_size, subgroups, seed, stats).items():
            out[task].extend(items)
    return BuildResult(instances=[i for t in TASKS for i in out[t]], stats=stats, subgroups=subgroups)


def _sample_instances(
    sample: RescueSample, wanted: set[Task], context_size: int, subgroups: SubgroupMode, seed: int, stats: BuildStats
) -> dict[Task, list[Instance]]:
    rows, raw, group, members = _rows(sample), sample.rows, sample.group, sample.members
    sid = sample.sample_id
    out: dict[Task, list[Instance]] = {t: [] for t in TASKS}

    def make(task: Task, row: int, end: int, **fields: object) -> Instance:
        shown, omitted = window(rows, end, context_size)
        return Instance(
            id=instance_id(task, sid, row),
            task=task,
            origin="rescue",
            sample_id=sid,
            group=group,
            members=members,
            row=row,
            context=shown,
            omitted_rows=omitted,
            **fields,
        )

    add_itp(out, wanted, [r.is_therapist for r in raw], make, seed, sid, stats)

    # RPP, STP, SSP: therapist rows; the context is every row before the therapist turn.
    seen_targets: list[str] = []
    strategy_rows: list[tuple[int, str, str]] = []  # (row, target label, strategy)
    allowed_patterns = patterns_for(group)
    for pos, r in enumerate(raw, start=1):
        if not r.is_therapist:
            continue
        for names in (r.target, *(s.target for s in r.strategies)):
            label = target_label(names, members, group, subgroups)
            if label is not None and label not in seen_targets:
                seen_targets.append(label)
        if Task.RPP in wanted:
            labels_here = {f: lab for f, lab in r.pattern_labels.items() if lab}
            if len(set(labels_here.values())) > 1:
                stats.rpp_field_disagreements += 1
            pattern = rpp_label(r)
            if pattern == "":
                stats.rpp_no_dominant += 1
            elif pattern is not None and pattern not in allowed_patterns:
                stats.rpp_off_taxonomy += 1
            elif pattern:
                out[Task.RPP].append(
                    make(Task.RPP, pos, pos - 1, gold_label=pattern, candidates=list(allowed_patterns))
                )
        if r.strategies:
            first = r.strategies[0]
            names = clean_names(first.target) or clean_names(r.target)
            label = target_label(names, members, group, subgroups)
            if label is None:
                stats.stp_unresolved += 1
                continue
            strategy_rows.append((pos, label, first.strategy_type.strip()))

    add_targets_and_strategies(out, wanted, strategy_rows, seen_targets, make, members, group, stats)

    # ER and VP: member rows read at the row itself (context includes it).
    er_gold: dict[int, tuple[str, float]] = {}
    vp_gold: dict[int, list[ViewpointTriple]] = {}
    for pos, r in enumerate(raw, start=1):
        speaker = r.primary_speaker.strip()
        if pos <= EARLY_ROWS or not _is_member_speaker(speaker) or is_very_short(r.text):
            continue
        emotion = next((e for e in r.emotions if e.person.strip() == speaker), None)
        if emotion is not None and emotion.emotion_description.strip():
            intensity = valid_intensity(emotion.intensity)
            if intensity is not None:
                er_gold[pos] = (emotion.emotion_description.strip(), intensity)
        triples = [
            ViewpointTriple(source=speaker, target=v.target.strip(), viewpoint=v.viewpoint.strip())
            for v in r.viewpoints
            if v.source.strip() == speaker and v.target.strip() and v.viewpoint.strip()
        ]
        if triples:
            vp_gold[pos] = triples
    add_checkpoints(out, wanted, er_gold, vp_gold, [r.speaker for r in rows], make, members, group, seed, sid, stats)
    return out


def add_itp(
    out: dict[Task, list[Instance]],
    wanted: set[Task],
    is_supporter: Sequence[bool],
    make: Callable[..., Instance],
    seed: int,
    sid: str,
    stats: BuildStats,
) -> None:
    """ITP instances, from RESCUE rows or simulated turns alike: a decision after member row p (1-based) is "yes"
    when row p+1 is the therapist's, "no" when it is another member's; both classes balanced per sample."""
    if Task.ITP not in wanted:
        return
    n = len(is_supporter)
    yes = [p for p in range(1, n) if not is_supporter[p - 1] and is_supporter[p]]
    no = [p for p in range(1, n) if not is_supporter[p - 1] and not is_supporter[p]]
    keep_yes, keep_no = balance_itp(yes, no, sample_rng(seed, Task.ITP, sid))
    if not keep_yes:
        stats.itp_samples_dropped += 1
    labels = {**{p: "yes" for p in keep_yes}, **{p: "no" for p in keep_no}}
    out[Task.ITP] = [make(Task.ITP, p, p, gold_label=labels[p]) for p in sorted(labels)]


def add_targets_and_strategies(
    out: dict[Task, list[Instance]],
    wanted: set[Task],
    labelled: Sequence[tuple[int, str, str | None]],
    seen_targets: Sequence[str],
    make: Callable[..., Instance],
    members: Sequence[str],
    group: str,
    stats: BuildStats,
) -> None:
    """STP and SSP instances from (therapist row, gold target label, gold strategy or None) triples, from RESCUE
    rows or simulated turns alike; candidates are the closed target set (members, subgroups seen, the group)."""
    candidates = target_candidates(members, group, seen_targets)  # type: ignore[arg-type]
    allowed_strategies = strategies_for(group)  # type: ignore[arg-type]
    for pos, label, strategy in labelled:
        kind = label_kind(label, group)  # type: ignore[arg-type]
        if Task.STP in wanted:
            out[Task.STP].append(
                make(Task.STP, pos, pos - 1, gold_label=label, gold_target_kind=kind, candidates=candidates)
            )
        if strategy is None:  # a free-text supporter states no strategy: nothing to predict
            continue
        if strategy not in allowed_strategies:
            stats.ssp_off_taxonomy += 1
        elif Task.SSP in wanted:
            out[Task.SSP].append(
                make(
                    Task.SSP,
                    pos,
                    pos - 1,
                    gold_label=strategy,
                    gold_target_kind=kind,
                    known_target=label,
                    candidates=list(allowed_strategies),
                )
            )


def add_checkpoints(
    out: dict[Task, list[Instance]],
    wanted: set[Task],
    er_gold: dict[int, tuple[str, int]],
    vp_gold: dict[int, list[ViewpointTriple]],
    speakers: Sequence[str],
    make: Callable[..., Instance],
    members: Sequence[str],
    group: str,
    seed: int,
    sid: str,
    stats: BuildStats,
) -> None:
    """ER and VP instances at up to MAX_CHECKPOINTS reproducibly chosen rows, from RESCUE data or sessions alike.

    `speakers[pos - 1]` is who speaks at 1-based position `pos`; `make(task, row, end, **fields)` builds one.
    """
    stats.er_candidates += len(er_gold)
    stats.vp_candidates += len(vp_gold)
    if Task.ER in wanted:
        for pos in pick_checkpoints(sorted(er_gold), sample_rng(seed, Task.ER, sid)):
            emotion, intensity = er_gold[pos]
            out[Task.ER].append(
                make(Task.ER, pos, pos, speaker=speakers[pos - 1], gold_emotion=emotion, gold_intensity=intensity)
            )
    if Task.VP in wanted:
        for pos in pick_checkpoints(sorted(vp_gold), sample_rng(seed, Task.VP, sid)):
            speaker = speakers[pos - 1]
            out[Task.VP].append(
                make(
                    Task.VP,
                    pos,
                    pos,
                    speaker=speaker,
                    gold_viewpoints=vp_gold[pos],
                    candidates=vp_targets(members, group, speaker),
                )
            )


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
