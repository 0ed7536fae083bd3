"""Rating units: what a human can be asked to rate, read from run folders with the judges' scores beside it.

A unit is a whole session or one supporter intervention (with the turns before it as context). Each unit has a
stable id, `it-<12 hex>`, hashed from the run's config hash, the session id and the unit (`session` or
`t<turn>`): the same unit of the same run gets the same id in every export, and the id names no model (session
ids do not either, but the config hash is what tells two supporters' runs apart).

Only completed, judged sessions without a simulator fault (judges.scoring._faults) give units, and only the rubric's scale
dimensions about the supporter at the unit's level are rated (labels and simulator checks are not).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from judges.scoring._faults import faulted
from judges.scoring._records import JudgmentStatus, SessionJudgment
from judges.scoring._repeat import read_trials, trial_path
from judges.scoring._rubric import Dimension
from judges.scoring._store import read_judgment
from simulator.records import SessionRecord, SessionStatus
from simulator.runfolder import RunFolder

UnitKind = Literal["session", "intervention"]
LEVEL_OF: dict[str, str] = {"session": "session", "intervention": "intervention"}


class Unit(BaseModel):
    """One ratable unit with everything selection needs. Internal: it names the supporter (never exported)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str = Field(description="Stable id `it-<hash>` joining ratings back.")
    run: str = Field(description="Run folder, as given.")
    session_id: str
    unit: UnitKind
    turn: int | None = Field(default=None, description="Intervention turn, for intervention units.")
    case_id: str
    group: str
    supporter: str = Field(description="Supporter spec (blinded before export).")
    knows: str = Field(default="intake", description="What the supporter was shown: `intake` or `oracle`.")
    seed: int
    trial: int = 0
    perturbation: str | None = None
    dimensions: list[str] = Field(description="Scale dimensions rated for this unit, rubric order.")
    judge: dict[str, float] = Field(description="Dimension -> the panel's mean score.")
    spread: dict[str, int] = Field(default_factory=dict, description="Dimension -> max - min across judges.")
    judges: int = Field(description="Judges that scored the unit.")
    repeat_spread: dict[str, int] = Field(
        default_factory=dict, description="Dimension -> max - min across repeated judgments (`judge --repeat`)."
    )
    repeats: int = Field(default=0, description="Repeated judgments found for the session (0: none).")

    @property
    def mean_score(self) -> float:
        vals = [self.judge[d] for d in self.dimensions if d in self.judge]
        return sum(vals) / len(vals) if vals else 0.0

    @property
    def label(self) -> str:
        """The supporter as the leaderboard names it (an oracle supporter is its own row)."""
        return self.supporter if self.knows == "intake" else f"{self.supporter} [oracle]"

    @property
    def key(self) -> str:
        return "session" if self.unit == "session" else f"t{self.turn}"


def item_id(run_hash: str, session_id: str, key: str) -> str:
    return "it-" + hashlib.sha256(f"{run_hash}|{session_id}|{key}".encode()).hexdigest()[:12]


def rated_dimensions(judgment: SessionJudgment, unit: UnitKind) -> list[Dimension]:
    """The scale dimensions about the supporter at the unit's level (what a human rates)."""
    return [
        d for d in judgment.rubric.active if d.kind == "scale" and d.about == "supporter" and d.level == LEVEL_OF[unit]
    ]


def repeated_judgments(folder: RunFolder, session_id: str) -> list[SessionJudgment]:
    """The repeated trials of a session's judgment (`rescue-sim judge --repeat K`: trials 1..K-1), oldest first;
    [] when the session was judged once."""
    if not trial_path(folder, session_id, 1).parent.is_dir():
        return []
    return [j for j in read_trials(folder, session_id) if j.trial != 0]


def _spread(values: Sequence[float]) -> int:
    return round(max(values) - min(values)) if len(values) >= 2 else 0


def session_units(
    run: str,
    run_hash: str,
    record: SessionRecord,
    judgment: SessionJudgment,
    unit: UnitKind,
    repeats: Sequence[SessionJudgment] = (),
) -> list[Unit]:
    """The units of one judged session."""
    dims = rated_dimensions(judgment, unit)
    if not dims:
        return []
    keys = ["session"] if unit == "session" else [f"t{t}" for t in judgment.interventions]
    out = []
    for key in keys:
        judge: dict[str, float] = {}
        spread: dict[str, int] = {}
        n = 0
        for d in dims:
            agg = judgment.aggregate(key, d.id)
            if agg is None or agg.mean is None:
                continue
            judge[d.id] = agg.mean
            spread[d.id] = agg.spread or 0
            n = max(n, agg.n)
        if not judge:
            continue
        repeat_spread: dict[str, int] = {}
        for d in dims:
            vals = [a.mean for r in repeats if (a := r.aggregate(key, d.id)) is not None and a.mean is not None]
            if d.id in judge and vals:
                repeat_spread[d.id] = _spread([judge[d.id], *vals])
        out.append(
            Unit(
                item_id=item_id(run_hash, record.session_id, key),
                run=run,
                session_id=record.session_id,
                unit=unit,
                turn=None if key == "session" else int(key[1:]),
                case_id=record.case.id,
                group=record.case.group,
                supporter=record.supporter,
                knows=record.supporter_knows,
                seed=record.seed,
                trial=record.trial,
                perturbation=record.perturbation,
                dimensions=[d.id for d in dims if d.id in judge],
                judge=judge,
                spread=spread,
                judges=n,
                repeat_spread=repeat_spread,
                repeats=len(repeats),
            )
        )
    return out


class UnitPool(BaseModel):
    """Every unit of some run folders, with the dimensions (rubric entries) they are rated on."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    units: list[Unit]
    dimensions: dict[str, Dimension] = Field(description="Dimension id -> rubric entry (first judgment's).")
    skipped: dict[str, int] = Field(default_factory=dict, description="Reason -> sessions left out.")


def collect_units(run_dirs: Sequence[str | Path], unit: UnitKind = "session") -> UnitPool:
    """Read every completed, judged session of `run_dirs` into units. Raises RunFolderError for a bad folder."""
    units: list[Unit] = []
    dims: dict[str, Dimension] = {}
    skipped: dict[str, int] = {}

    def skip(reason: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1

    for run_dir in run_dirs:
        folder = RunFolder(run_dir)
        manifest = folder.read_manifest()
        for stored in folder.read_sessions():
            sid, record = stored.session_id, stored.loaded()
            if record.status != SessionStatus.COMPLETED:
                skip(f"not completed ({record.status.value})")
                continue
            judgment = read_judgment(folder, sid)
            if judgment is None:
                skip("not judged")
                continue
            if judgment.status == JudgmentStatus.FAILED:
                skip("judgment failed")
                continue
            fault = faulted(record, judgment)
            if fault is not None:  # the room malfunctioned: nothing to rate about the supporter
                skip(f"simulator fault ({', '.join(fault.kinds)})")
                continue
            for d in rated_dimensions(judgment, unit):
                dims.setdefault(d.id, d)
            units += session_units(
                str(run_dir), manifest.config_hash, record, judgment, unit, repeated_judgments(folder, sid)
            )
    return UnitPool(units=units, dimensions=dims, skipped=skipped)
