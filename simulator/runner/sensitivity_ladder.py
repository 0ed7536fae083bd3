"""The sensitivity ladder: supporters of known quality, best to worst, and per headline metric the rungs it is
expected to order (`simulator/data/ladder.yaml`, read by `load_ladder`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from personas.common.errors import Param, ParameterError

LADDER_PATH = Path(__file__).resolve().parent.parent / "data" / "ladder.yaml"


class LadderError(ParameterError, ValueError):
    """A ladder file or a rung selection that cannot be used; one line naming the fix."""


class Rung(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    spec: str = Field(min_length=1, description="Supporter spec; `{model}` is replaced by the model under test.")
    description: str = ""

    def spec_for(self, model: str) -> str:
        return self.spec.replace("{model}", model)


class LadderMetric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    source: Literal["judge", "trajectory", "room", "stress", "safety"]
    order: list[str] = Field(min_length=2, description="Rungs this metric is expected to order, best first.")
    higher_is_better: bool = True
    unordered: dict[str, str] = Field(default_factory=dict, description="Rung -> why this metric does not order it.")


class Reference(BaseModel):
    """A supporter read from recorded sessions (never simulated) and placed beside a rung, not on the ladder: its
    distance to each rung is reported, no metric orders it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    beside: str = Field(description="The rung it is shown beside (not above or below: it is unranked).")
    spec_prefix: str = Field(min_length=1, description="Recorded supporter specs it takes: `P` or `P:<name>`.")
    description: str = ""

    def takes(self, supporter: str) -> bool:
        return supporter == self.spec_prefix or supporter.startswith(f"{self.spec_prefix}:")


class Ladder(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    rungs: list[Rung] = Field(min_length=2)
    metrics: list[LadderMetric] = Field(min_length=1)
    default_rungs: list[str] = Field(
        default_factory=list, description="Rungs `sensitivity` runs unless --rungs says otherwise (empty: all)."
    )
    references: list[Reference] = Field(
        default_factory=list, description="Unranked references read from folders (`human`), beside a rung."
    )

    @model_validator(mode="after")
    def _known_rungs(self) -> Ladder:
        ids = [r.id for r in self.rungs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"rung ids repeat: {ids}")
        for m in self.metrics:
            unknown = [r for r in [*m.order, *m.unordered] if r not in ids]
            if unknown:
                raise ValueError(f"metric {m.id}: unknown rung(s) {unknown}; rungs are {ids}")
            if len(set(m.order)) != len(m.order) or set(m.order) & set(m.unordered):
                raise ValueError(f"metric {m.id}: a rung is listed twice in order/unordered")
        for ref in self.references:
            if ref.id in ids or ref.beside not in ids:
                raise ValueError(f"reference {ref.id}: its id must not be a rung and `beside` must name one of {ids}")
        unknown = [r for r in self.default_rungs if r not in ids]
        if unknown:
            raise ValueError(f"default_rungs: unknown rung(s) {unknown}; rungs are {ids}")
        return self

    def subset(self, ids: list[str] | None = None) -> Ladder:
        """The ladder restricted to `ids` (None: `default_rungs`, else all), in the ladder's order; each metric
        keeps the rungs it orders among them, and a metric left with fewer than two is dropped. A rung that is
        not on the ladder, or fewer than two rungs, is a LadderError."""
        known = [r.id for r in self.rungs]
        wanted = ids if ids is not None else (self.default_rungs or known)
        unknown = [r for r in wanted if r not in known]
        if unknown:
            raise LadderError(f"rungs: unknown rung(s) {', '.join(unknown)}; the ladder has {', '.join(known)}")
        keep = [r for r in known if r in wanted]
        if len(keep) < 2:
            raise LadderError(f"rungs: {', '.join(keep) or 'none'}; name at least two of {', '.join(known)}")
        metrics = [
            m.model_copy(
                update={
                    "order": [r for r in m.order if r in keep],
                    "unordered": {r: why for r, why in m.unordered.items() if r in keep},
                }
            )
            for m in self.metrics
            if sum(r in keep for r in m.order) >= 2
        ]
        if not metrics:
            raise LadderError(f"rungs: {', '.join(keep)} order no headline metric; add the top or bottom rung")
        rungs = [r for r in self.rungs if r.id in keep]
        refs = [ref for ref in self.references if ref.beside in keep]
        return Ladder(version=self.version, rungs=rungs, metrics=metrics, default_rungs=[], references=refs)

    def reference(self, ref_id: str) -> Reference:
        """The reference `ref_id`; a LadderError when the ladder (or this subset of it) does not declare it."""
        for ref in self.references:
            if ref.id == ref_id:
                return ref
        declared = next((r for r in load_ladder().references if r.id == ref_id), None)
        where = (f"; it sits beside {declared.beside}: include that rung in ", Param("rungs")) if declared else ()
        raise LadderError(f"reference {ref_id}: not declared in this ladder", *where)

    def specs(self, model: str) -> dict[str, str]:
        """Rung id -> supporter spec for the model under test."""
        return {r.id: r.spec_for(model) for r in self.rungs}


def load_ladder(path: str | Path = LADDER_PATH) -> Ladder:
    try:
        return Ladder.model_validate(yaml.safe_load(Path(path).read_text(encoding="utf-8")))
    except ValueError as err:
        raise LadderError(f"{path}: {err}") from None
