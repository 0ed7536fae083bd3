"""Repeated judgments and how stable they are: `rescue-sim judge --repeat K`.

Storage (simple on purpose, so other tools can read it without this module):

- trial 0 is the ordinary judgment, `judgments/<session_id>.json`;
- trials 1..K-1 are `judgments/trials/<session_id>/<trial>.json`, each a complete `SessionJudgment` whose
  `trial` field says which repeat it is (distinct seed and cache key, same rubric and panel);
- the stability summary of the last `--repeat` run is `judge_stability.json` in the run folder (`JudgeStability`).

Stability is measured per dimension over items, where an item is (session, judge model, scored item such as
`t3` or `session`), using every trial that produced a value for it (failed or unsupported entries give none):

- `flip_rate`: the share of items whose trials do not all agree (any two trials differ);
- `pairwise_disagreement`: over all pairs of trials of an item, the share that differ, averaged over items;
- `mean_spread` (scales): the mean over items of max - min across trials.
Only items with at least two trial values count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from judges.scoring._records import JudgmentStatus, SessionJudgment
from judges.scoring._store import judgment_path, read_judgment
from personas.common.files import atomic_write_text
from simulator.runfolder import RunFolder, RunFolderError

STABILITY_SCHEMA_VERSION = 1


class DimensionStability(BaseModel):
    """How stable one dimension's verdicts are across repeated trials."""

    model_config = ConfigDict(extra="forbid")

    dimension: str = Field(description="Rubric dimension id.")
    kind: Literal["scale", "label"] = Field(description="Scales compare scores; labels compare labels.")
    items: int = Field(description="Items with at least two trial values.")
    flip_rate: float | None = Field(description="Share of items whose trials do not all agree.")
    pairwise_disagreement: float | None = Field(description="Mean over items of the share of trial pairs that differ.")
    mean_spread: float | None = Field(default=None, description="Scales: mean over items of max - min.")


class JudgeStability(BaseModel):
    """The stability of a run's judgments over K trials. Written to `<run folder>/judge_stability.json`."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(default=STABILITY_SCHEMA_VERSION, description="Version of this record's layout.")
    trials: int = Field(description="K: trials per session (trial 0 included).")
    temperature: float = Field(description="Temperature the repeats ran at (0: only provider nondeterminism).")
    judges: list[str] = Field(description="Judge model ids.")
    sessions: int = Field(description="Sessions with at least two trials.")
    dimensions: list[DimensionStability] = Field(description="Over all sessions.")
    by_supporter: dict[str, list[DimensionStability]] = Field(
        default_factory=dict, description="Supporter spec -> the same per dimension, over its sessions."
    )
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC), description="UTC time.")

    def dimension(self, dim_id: str) -> DimensionStability | None:
        return next((d for d in self.dimensions if d.dimension == dim_id), None)


def trial_path(folder: RunFolder | str | Path, session_id: str, trial: int) -> Path:
    if trial == 0:
        return judgment_path(folder, session_id)
    base = judgment_path(folder, session_id)  # validates the id
    return base.parent / "trials" / base.stem / f"{trial}.json"


def write_trial(folder: RunFolder | str | Path, judgment: SessionJudgment) -> Path:
    path = trial_path(folder, judgment.session_id, judgment.trial)
    atomic_write_text(path, judgment.model_dump_json(indent=1))
    return path


def read_trials(
    folder: RunFolder | str | Path, session_id: str, *, first: SessionJudgment | None = None
) -> list[SessionJudgment]:
    """Every stored trial of a session's judgment, trial 0 first (missing ones left out). `first`: trial 0 already
    read by the caller (not read again)."""
    out = []
    first = first if first is not None else read_judgment(folder, session_id)
    if first is not None:
        out.append(first)
    trials_dir = trial_path(folder, session_id, 1).parent
    if trials_dir.is_dir():
        for path in sorted(trials_dir.glob("*.json"), key=lambda p: int(p.stem) if p.stem.isdigit() else 10**9):
            try:
                out.append(SessionJudgment.model_validate_json(path.read_text(encoding="utf-8")))
            except ValueError as err:
                raise RunFolderError(f"{path}: not a valid judgment trial ({str(err).splitlines()[0]})") from None
    return out


def _values(judgment: SessionJudgment) -> dict[tuple[str, str, str], tuple[str, int | str]]:
    """(judge, item, dimension) -> (kind, value) for every valid score of a judgment."""
    kinds = {d.id: d.kind for d in judgment.rubric.active}
    out: dict[tuple[str, str, str], tuple[str, int | str]] = {}
    for v in judgment.verdicts:
        if v.status == JudgmentStatus.FAILED:
            continue
        for s in v.scores:
            kind = kinds.get(s.dimension)
            if kind == "scale" and s.score is not None:
                out[(v.judge, s.item, s.dimension)] = ("scale", s.score)
            elif kind is not None and kind != "scale" and s.label is not None:
                out[(v.judge, s.item, s.dimension)] = ("label", s.label)
    return out


def dimension_stability(groups: Iterable[Sequence[SessionJudgment]]) -> list[DimensionStability]:
    """Stability per dimension over sessions, each given as its list of trials (see the module docstring)."""
    per_dim: dict[str, list[list[int | str]]] = {}
    kinds: dict[str, str] = {}
    order: list[str] = []
    for trials in groups:
        items: dict[tuple[str, str, str], list[int | str]] = {}
        for j in trials:
            for key, (kind, value) in _values(j).items():
                items.setdefault(key, []).append(value)
                kinds[key[2]] = kind
        for (_, _, dim), vals in items.items():
            if len(vals) >= 2:
                per_dim.setdefault(dim, []).append(vals)
                if dim not in order:
                    order.append(dim)
    out = []
    for dim in order:
        lists = per_dim[dim]
        flips = [len(set(v)) > 1 for v in lists]
        pairs = [sum(a != b for a, b in combinations(v, 2)) / (len(v) * (len(v) - 1) / 2) for v in lists]
        spread = None
        if kinds[dim] == "scale":
            spread = sum(max(v) - min(v) for v in lists) / len(lists)  # type: ignore[type-var,operator]
        out.append(
            DimensionStability(
                dimension=dim,
                kind=kinds[dim],  # type: ignore[arg-type]
                items=len(lists),
                flip_rate=sum(flips) / len(flips),
                pairwise_disagreement=sum(pairs) / len(pairs),
                mean_spread=spread,
            )
        )
    return out


def judge_stability(
    trials_by_session: dict[str, Sequence[SessionJudgment]], *, trials: int, temperature: float
) -> JudgeStability:
    groups = {sid: list(t) for sid, t in trials_by_session.items() if len(t) >= 2}
    supporters: dict[str, list[list[SessionJudgment]]] = {}
    for t in groups.values():
        supporters.setdefault(t[0].supporter, []).append(t)
    judges = list(dict.fromkeys(m for t in groups.values() for j in t for m in j.judges))
    return JudgeStability(
        trials=trials,
        temperature=temperature,
        judges=judges,
        sessions=len(groups),
        dimensions=dimension_stability(groups.values()),
        by_supporter={s: dimension_stability(g) for s, g in supporters.items()},
    )


def stability_path(folder: RunFolder | str | Path) -> Path:
    f = folder if isinstance(folder, RunFolder) else RunFolder(folder)
    return f.path / "judge_stability.json"


def write_stability(folder: RunFolder | str | Path, stability: JudgeStability) -> Path:
    path = stability_path(folder)
    atomic_write_text(path, stability.model_dump_json(indent=1))
    return path


def read_stability(folder: RunFolder | str | Path) -> JudgeStability | None:
    path = stability_path(folder)
    if not path.is_file():
        return None
    try:
        return JudgeStability.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise RunFolderError(f"{path}: unreadable ({str(err).splitlines()[0]}); rerun `judge --repeat`") from None
