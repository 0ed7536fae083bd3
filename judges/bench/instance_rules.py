"""The construction rules RESCUE samples and simulated sessions share: which rows become decision points,
the context window, support-target labels and candidates, ITP class balancing, seeded ER/VP checkpoints, and the
task adders (`add_itp`, `add_targets_and_strategies`, `add_checkpoints`) that turn gold answers into instances.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence

from judges.bench.instance_format import (
    SUBGROUP_JOINER,
    BuildStats,
    Instance,
    Row,
    SubgroupMode,
    Task,
    ViewpointTriple,
)
from personas.taxonomy import (
    GROUP_TARGET_LABELS,
    INTENSITY_MAX,
    INTENSITY_MIN,
    SUPPORTER_NAME,
    Group,
    TargetKind,
    strategies_for,
    target_kind,
)

# ER/VP checkpoint rules. "Early": the first EARLY_ROWS rows of a sample never become checkpoints, so every
# checkpoint has at least EARLY_ROWS rows of earlier context. "Very short": a row whose text has fewer than
# MIN_DIALOGUE_WORDS words (a word = whitespace-separated token with at least one letter), e.g. "Yeah.",
# "Mm-hmm.", "Not really."; too little to read an emotion or a viewpoint from. Rows without text are invalid.
EARLY_ROWS = 2
MIN_DIALOGUE_WORDS = 3
CHECKPOINTS_PER_SAMPLE = 5
DEFAULT_CONTEXT_SIZE = 12  # rows shown, ending at the decision point; 0 = every earlier row
DEFAULT_SEED = 20260914


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
