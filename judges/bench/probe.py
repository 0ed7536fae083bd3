"""Probe mode: the six instance kinds built from simulated sessions, with gold from what the simulator knows.

Sessions are read from run folders (completed sessions only) and turned into the same `Instance`s as RESCUE
samples, so metrics are shared. The rules mirror `judges.bench.instances`; only the gold source differs
(`PROBE_GOLD_SOURCES`, stated in every probe report).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

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
    instance_id,
    is_very_short,
    target_label,
    valid_intensity,
    window,
)
from personas.common.errors import UserError
from personas.taxonomy import SUPPORTER_NAME, patterns_for
from simulator.records import SessionRecord, SessionStatus
from simulator.runfolder import RunFolder

RESCUE_GOLD_SOURCES: dict[str, str] = {
    "itp": "RESCUE rows: whether the therapist spoke next",
    "rpp": "RESCUE therapist rows: relation_cycle_state, else relation_pattern",
    "stp": "RESCUE therapist rows: first support_strategy target, else the row target",
    "ssp": "RESCUE therapist rows: first support_strategy strategy_type",
    "er": "RESCUE internal_emotion of the speaker",
    "vp": "RESCUE viewpoints_attitudes with source = speaker",
}
PROBE_GOLD_SOURCES: dict[str, str] = {
    "itp": "simulated turns: whether the supporter actually spoke after the member turn",
    "rpp": "tracker: the latest Turn.tracker.pattern before each supporter turn (observer view)",
    "stp": "supporter decision.targets of each supporter turn",
    "ssp": "supporter decision.strategy, where the supporter labelled it",
    "er": "member self-report: Turn.inner emotion and intensity (insider view)",
    "vp": "tracker: ObservedViewpoint with source = speaker, on member turns where the tracker ran",
}


def load_run_sessions(run_dirs: Sequence[str | Path]) -> list[tuple[str, SessionRecord]]:
    """(`<folder name>/<session id>`, record) for every completed session of each run folder."""
    out: list[tuple[str, SessionRecord]] = []
    for d in run_dirs:
        folder = RunFolder(d)
        if not folder.exists():
            raise UserError(f"{d}: not a run folder (no manifest.json)")
        for record in folder.sessions():
            if record.status is SessionStatus.COMPLETED:
                out.append((f"{Path(d).name}/{record.session_id}", record))
    if not out:
        raise UserError(f"no completed sessions in {', '.join(str(d) for d in run_dirs)}")
    return out


def build_probe_instances(
    sessions: Sequence[tuple[str, SessionRecord]],
    *,
    tasks: Iterable[Task] = TASKS,
    context_size: int = DEFAULT_CONTEXT_SIZE,
    subgroups: SubgroupMode = "keep",
    seed: int = DEFAULT_SEED,
) -> BuildResult:
    """Instances from simulated sessions, grouped by task in session then turn order."""
    wanted = set(tasks)
    stats = BuildStats(samples=len(sessions))
    out: dict[Task, list[Instance]] = {t: [] for t in TASKS}
    for sid, record in sessions:
        for task, items in _session_instances(sid, record, wanted, context_size, subgroups, seed, stats).items():
            out[task].extend(items)
    return BuildResult(instances=[i for t in TASKS for i in out[t]], stats=stats, subgroups=subgroups)


def _session_instances(
    sid: str,
    record: SessionRecord,
    wanted: set[Task],
    context_size: int,
    subgroups: SubgroupMode,
    seed: int,
    stats: BuildStats,
) -> dict[Task, list[Instance]]:
    case, turns = record.case, record.turns
    group, members = case.group, case.member_names
    rows = [Row(index=i, speaker=t.speaker, to=list(t.addressees), text=t.text) for i, t in enumerate(turns, start=1)]
    is_supporter = [t.kind == "supporter" or t.speaker == SUPPORTER_NAME for t in turns]
    out: dict[Task, list[Instance]] = {t: [] for t in TASKS}

    def make(task: Task, row: int, end: int, **fields: object) -> Instance:
        shown, omitted = window(rows, end, context_size)
        return Instance(
            id=instance_id(task, sid, row),
            task=task,
            origin="probe",
            sample_id=sid,
            group=group,
            members=members,
            row=row,
            context=shown,
            omitted_rows=omitted,
            **fields,
        )

    add_itp(out, wanted, is_supporter, make, seed, sid, stats)

    allowed_patterns = patterns_for(group)
    seen: list[str] = []
    labelled: list[tuple[int, str, str | None]] = []
    last_pattern: str | None = None
    for pos, turn in enumerate(turns, start=1):
        if is_supporter[pos - 1]:
            if Task.RPP in wanted and last_pattern is not None:
                if last_pattern in allowed_patterns:
                    out[Task.RPP].append(
                        make(Task.RPP, pos, pos - 1, gold_label=last_pattern, candidates=list(allowed_patterns))
                    )
                else:
                    stats.rpp_off_taxonomy += 1
            decision = turn.decision
            if decision is not None and decision.targets:
                label = target_label(decision.targets, members, group, subgroups)
                if label is None:
                    stats.stp_unresolved += 1
                else:
                    if label not in seen:
                        seen.append(label)
                    labelled.append((pos, label, decision.strategy))
        if turn.tracker is not None and turn.tracker.pattern:
            last_pattern = turn.tracker.pattern

    add_targets_and_strategies(out, wanted, labelled, seen, make, members, group, stats)

    er_gold: dict[int, tuple[str, float]] = {}
    vp_gold: dict[int, list[ViewpointTriple]] = {}
    for pos, turn in enumerate(turns, start=1):
        if pos <= EARLY_ROWS or is_supporter[pos - 1] or turn.speaker not in members or is_very_short(turn.text):
            continue
        if turn.inner is not None and turn.inner.emotion.strip():
            intensity = valid_intensity(turn.inner.intensity)
            if intensity is not None:
                er_gold[pos] = (turn.inner.emotion.strip(), intensity)
        if turn.tracker is not None:
            triples = [
                ViewpointTriple(source=turn.speaker, target=v.target.strip(), viewpoint=v.viewpoint.strip())
                for v in turn.tracker.viewpoints
                if v.source.strip() == turn.speaker and v.target.strip() and v.viewpoint.strip()
            ]
            if triples:
                vp_gold[pos] = triples
    add_checkpoints(out, wanted, er_gold, vp_gold, [t.speaker for t in turns], make, members, group, seed, sid, stats)
    return out
