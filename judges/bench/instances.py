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

The instance format lives in `judges.bench.instance_format` and the rules RESCUE and probe mode share in
`judges.bench.instance_rules`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from judges.bench.instance_format import (
    TASKS,
    BuildResult,
    BuildStats,
    Instance,
    Row,
    SubgroupMode,
    Task,
    ViewpointTriple,
)
from judges.bench.instance_rules import (
    DEFAULT_CONTEXT_SIZE,
    DEFAULT_SEED,
    EARLY_ROWS,
    add_checkpoints,
    add_itp,
    add_targets_and_strategies,
    clean_names,
    instance_id,
    is_very_short,
    target_label,
    valid_intensity,
    window,
)
from personas.rescue import PatternField, RescueRow, RescueSample
from personas.taxonomy import GROUP_TARGET_LABELS, SUPPORTER_NAME, patterns_for

__all__ = ["RPP_FIELD_ORDER", "build_rescue_instances", "rpp_label"]

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
