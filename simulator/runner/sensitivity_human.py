"""The `human` reference beside the ladder (`sensitivity --human RUN_DIR`): sessions a person played as the
counsellor (`rescue-sim play`, serve's play page; supporter `human` or `human:<name>`), read, never simulated.

Pairing is honest: a human session is paired with the ladder's sessions of the same case x seed x perturbation (the
play page and `play` run unperturbed, so they pair with the ladder's `none` sessions) that ran the same number of
member turns with the same member model; anything else is listed as unmatched with its reason, and so are the
ladder's units no human played. The reference is unranked (see the ladder data's `references`): per metric its mean
and its paired distance to each rung, never an order check, so it never changes the exit code.

Judged like the rungs, by refusal rather than on the fly: `sensitivity` never writes into a folder it reads as a
reference, and `--report-only` runs nothing, so an unjudged human session is refused with the `rescue-sim judge`
line to run, and one judged by another panel, mode or rubric than the ladder's is refused the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judges import FaultTally, mean_ci
from personas.common.errors import Param, ParameterError
from simulator.records import SessionRecord, SessionStatus
from simulator.runfolder import RunFolder
from simulator.runner.sensitivity_ladder import Ladder, Reference
from simulator.runner.sensitivity_stats import (
    CONFIDENCE,
    HumanDistance,
    HumanMetric,
    HumanReference,
    Values,
    pair_stat,
)
from simulator.runner.sensitivity_values import collect_values, mean_by_unit, metric_values

HUMAN = "human"
SHOWN_UNITS = 6  # ladder units without a human session listed by name; the rest are counted
DIRS = Param("dirs")  # `load_human_sessions`'s folders (sensitivity's --human)


@dataclass
class HumanSession:
    folder: RunFolder
    record: SessionRecord
    judgment: Any  # judges.SessionJudgment | None


def pair_unit(case_id: str, seed: int, perturbation: str | None) -> str:
    """The unit a human session pairs on: case x seed x perturbation (`none` when unperturbed)."""
    return f"{case_id}|s{seed}|{perturbation or 'none'}"


def _run_folders(path: Path) -> list[Path]:
    """`path` itself when it is a run folder, else the run folders directly inside it (a RUNS_DIR of plays)."""
    if not path.is_dir():
        raise ParameterError(DIRS, f" {path}: no such folder; give a run folder written by `rescue-sim play` or serve")
    if (path / "manifest.json").is_file():
        return [path]
    inside = sorted(p for p in path.iterdir() if (p / "manifest.json").is_file())
    if not inside:
        raise ParameterError(
            DIRS,
            f" {path}: not a run folder (no manifest.json, nor run folders in it); give a folder written by "
            "`rescue-sim play` or serve's play page",
        )
    return inside


def load_human_sessions(
    dirs: Sequence[str | Path], reference: Reference, *, judges: Sequence[str] = (), judge_mode: str = "checklist"
) -> list[HumanSession]:
    """Every session of the folders, checked: each was played by a person (else refused), and each completed one is
    judged when `judges` is given (else refused with the `rescue-sim judge` line to run, in the ladder's
    `judge_mode`). One-line ParameterErrors naming `dirs`."""
    from judges import read_judgment

    out: list[HumanSession] = []
    for given in dirs:
        for path in _run_folders(Path(given)):
            folder = RunFolder(path)
            unjudged = []
            for stored in folder.read_sessions():
                sid, record = stored.session_id, stored.loaded()
                if not reference.takes(record.supporter):
                    raise ParameterError(
                        DIRS,
                        f" {path}: session {sid} was played by supporter {record.supporter!r}, not by a person "
                        f"(`{reference.spec_prefix}` or `{reference.spec_prefix}:<name>`); give only folders of played "
                        "sessions",
                    )
                judgment = read_judgment(folder, sid) if folder.has_judgment(sid) else None
                if judges and judgment is None and record.status == SessionStatus.COMPLETED:
                    unjudged.append(sid)
                out.append(HumanSession(folder, record, judgment))
            if unjudged:
                raise ParameterError(
                    DIRS,
                    f" {path}: {len(unjudged)} completed session(s) not judged ({unjudged[0]}); run "
                    f"`rescue-sim judge {path} --judges {','.join(judges)} --judge-mode {judge_mode}` first (the ladder's "
                    "judges and mode)",
                )
    if not out:
        raise ParameterError(DIRS, f" {', '.join(str(d) for d in dirs)}: no sessions in it; play one first")
    return out


def _judge_signature(judgment: Any) -> tuple[tuple[str, ...], str, str, str]:
    return (tuple(judgment.judges), judgment.judge_mode, judgment.mode, judgment.rubric_digest)


def _rejudge_line(folder: RunFolder, signature: tuple[tuple[str, ...], str, str, str]) -> str:
    judges, judge_mode, mode, _ = signature
    how = "--per-intervention" if mode == "per_intervention" else "--whole-session"
    return f"rescue-sim judge {folder.path} --judges {','.join(judges)} --judge-mode {judge_mode} {how}"


def place_human(
    ladder: Ladder,
    model: str,
    config: Any,
    matrix: Any,
    folder: RunFolder,
    humans: Sequence[HumanSession],
    *,
    reference: Reference,
    folders: Sequence[str],
    include_faults: bool = False,
) -> tuple[HumanReference, dict[str, HumanMetric]]:
    """The reference's pairing and, per metric with human values, its mean and distance to each rung."""
    from judges import faulted, read_judgment

    specs = list(matrix.specs)
    ladder_values: Values = collect_values(
        ladder,
        model,
        folder,
        specs,
        include_faults=include_faults,
        unit=lambda s: pair_unit(s.case.id, s.seed, s.perturbation),
    )
    rung_specs = set(ladder.specs(model).values())
    completed: dict[str, Any] = {}  # unit -> one completed ladder spec (its room: turns and member model)
    for s in specs:
        if s.supporter in rung_specs and folder.status(s.session_id) == SessionStatus.COMPLETED:
            completed.setdefault(pair_unit(s.case.id, s.seed, s.perturbation), s)
    ladder_units = {pair_unit(s.case.id, s.seed, s.perturbation) for s in specs}
    signatures = {
        _judge_signature(j)
        for s in completed.values()
        if folder.has_judgment(s.session_id) and (j := read_judgment(folder, s.session_id)) is not None
    }
    rooms: dict[str, str | None] = {}
    acc: dict[str, dict[str, dict[str, list[float]]]] = {m.id: {} for m in ladder.metrics}
    unmatched: list[str] = []
    faults: FaultTally | None = None
    for h in humans:
        rec = h.record
        unit = pair_unit(rec.case.id, rec.seed, rec.perturbation)
        where = f"{rec.session_id} ({unit})"
        if rec.status != SessionStatus.COMPLETED:
            end = f", {rec.end_reason.value}" if rec.end_reason is not None else ""
            unmatched.append(f"{where}: {rec.status.value}{end}; only completed sessions are paired")
            continue
        if unit not in ladder_units:
            unmatched.append(f"{where}: the ladder ran no session of this case x seed x perturbation")
            continue
        if unit not in completed:
            unmatched.append(f"{where}: no ladder session of this unit completed")
            continue
        if rec.max_turns != config.turns:
            unmatched.append(f"{where}: played {rec.max_turns} member turns, the ladder {config.turns}")
            continue
        if unit not in rooms:
            rooms[unit] = folder.load_session(completed[unit].session_id).models.get("member")
        if rec.models.get("member") != rooms[unit]:
            unmatched.append(f"{where}: members played by {rec.models.get('member')}, the ladder's by {rooms[unit]}")
            continue
        if h.judgment is not None and signatures and _judge_signature(h.judgment) not in signatures:
            raise ParameterError(
                Param("humans"),
                f" {h.folder.path}: session {rec.session_id} was judged otherwise than the ladder; re-judge "
                f"it as the ladder was: `{_rejudge_line(h.folder, next(iter(sorted(signatures))))}`",
            )
        fault = faulted(rec, h.judgment)
        if fault is not None:
            faults = faults or FaultTally(included=include_faults)
            faults.add(fault)
            if not include_faults:
                unmatched.append(f"{where}: the simulated room malfunctioned ({fault.kinds[0]}); left out")
                continue
        for metric, value in metric_values(ladder, rec, h.judgment, None).items():
            acc[metric].setdefault(HUMAN, {}).setdefault(unit, []).append(value)
    human_values = mean_by_unit(acc)
    paired = sorted({u for rungs in human_values.values() for u in rungs.get(HUMAN, {})})
    alone = sorted(ladder_units - {pair_unit(h.record.case.id, h.record.seed, h.record.perturbation) for h in humans})
    if alone:
        shown = ", ".join(alone[:SHOWN_UNITS]) + (
            f" and {len(alone) - SHOWN_UNITS} more" if len(alone) > SHOWN_UNITS else ""
        )
        unmatched.append(f"ladder units no human played: {shown}")
    metrics: dict[str, HumanMetric] = {}
    for m in ladder.metrics:
        mine = human_values.get(m.id, {}).get(HUMAN, {})
        if not mine:
            continue
        sign = 1.0 if m.higher_is_better else -1.0
        distances = []
        for rung in ladder.rungs:
            theirs = ladder_values.get(m.id, {}).get(rung.id, {})
            if not theirs:
                continue
            stat = pair_stat(HUMAN, rung.id, {HUMAN: mine, rung.id: theirs}, sign)
            distances.append(
                HumanDistance(
                    rung=rung.id,
                    shared_units=stat.shared_units,
                    difference=stat.difference,
                    low=stat.low,
                    high=stat.high,
                    separates=stat.separates,
                    note=stat.note,
                )
            )
        metrics[m.id] = HumanMetric(ci=mean_ci(list(mine.values()), confidence=CONFIDENCE), distances=distances)
    placed = HumanReference(
        beside=reference.beside,
        folders=list(folders),
        sessions=len(humans),
        units=paired,
        unmatched=unmatched,
        simulator_faults=faults,
    )
    return placed, metrics
