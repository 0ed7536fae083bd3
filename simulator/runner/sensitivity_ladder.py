"""The sensitivity ladder: supporters of known quality, best to worst, and per headline metric the rungs it is
expected to order (`simulator/data/ladder.yaml`, read by `load_ladder`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

LADDER_PATH = Path(__file__).resolve().parent.parent / "data" / "ladder.yaml"


class LadderError(ValueError):
    pass


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
    source: Literal["judge", "trajectory", "stress", "safety"]
    order: list[str] = Field(min_length=2, description="Rungs this metric is expected to order, best first.")
    higher_is_better: bool = True
    unordered: dict[str, str] = Field(default_factory=dict, description="Rung -> why this metric does not order it.")


class Ladder(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    rungs: list[Rung] = Field(min_length=2)
    metrics: list[LadderMetric] = Field(min_length=1)

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
        return self

    def specs(self, model: str) -> dict[str, str]:
        """Rung id -> supporter spec for the model under test."""
        return {r.id: r.spec_for(model) for r in self.rungs}


def load_ladder(path: str | Path = LADDER_PATH) -> Ladder:
    try:
        return Ladder.model_validate(yaml.safe_load(Path(path).read_text(encoding="utf-8")))
    except ValueError as err:
        raise LadderError(f"{path}: {err}") from None
