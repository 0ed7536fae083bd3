"""How much of the floor one member holds in real sessions: the RESCUE figures behind the `member_dominates`
threshold (simulator/data/fidelity.yaml, `faults.dominant_share`), recomputed from the samples.

The share is counted as `simulator.faults` counts it in a simulated session (`speaking_turns`: consecutive rows of
one speaker are one speech), over every window of `window` consecutive member speaking turns of each sample, so a
threshold for short simulated sessions is read from stretches of real sessions just as short. Numbers only: no
RESCUE text is kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from personas.rescue import RescueSample, load_rescue
from simulator.faults import largest_share, speaking_turns

SHARE_WINDOW = 6  # member speaking turns: the shortest session the room faults are counted on
SHARE_PERCENTILE = 95


class GroupShares(BaseModel):
    """The largest member's share of member speaking turns in one group's real sessions."""

    model_config = ConfigDict(extra="forbid")

    group: str = Field(description="`couple` or `family`.")
    samples: int = Field(description="RESCUE samples of this group that had a full window.")
    window: int = Field(description="Member speaking turns per window.")
    shares: list[float] = Field(description="The largest member's share in every window, ascending.")
    silent_windows: int = Field(description="Windows in which some member of the sample never spoke.")
    whole_sample: list[float] = Field(description="The largest member's share over each whole sample, ascending.")

    def percentile(self, p: float) -> float | None:
        """Nearest-rank percentile of the window shares (None when there are none)."""
        if not self.shares:
            return None
        return self.shares[max(0, math.ceil(p / 100 * len(self.shares)) - 1)]

    def threshold(self, p: float = SHARE_PERCENTILE) -> float | None:
        """The percentile rounded up to three decimals, as written in fidelity.yaml (a share equal to the
        percentile itself stays under it)."""
        value = self.percentile(p)
        return None if value is None else math.ceil(value * 1000 - 1e-9) / 1000


def _member_turns(sample: RescueSample) -> list[str]:
    return speaking_turns([r.primary_speaker for r in sample.rows], sample.members)


def group_shares(samples: Sequence[RescueSample], window: int = SHARE_WINDOW) -> dict[str, GroupShares]:
    """Per group: the largest member's share over every window of `window` member speaking turns, and over each
    whole sample."""
    out: dict[str, GroupShares] = {}
    for group in sorted({s.group for s in samples}):
        shares: list[float] = []
        whole: list[float] = []
        silent = counted = 0
        for s in samples:
            if s.group != group:
                continue
            turns = _member_turns(s)
            if (top := largest_share(turns)) is not None:
                whole.append(top[1])
            starts = range(len(turns) - window + 1)
            counted += bool(starts)
            for i in starts:
                part = turns[i : i + window]
                shares.append(largest_share(part)[1])  # type: ignore[index]
                silent += len(set(part)) < len(s.members)
        out[group] = GroupShares(
            group=group,
            samples=counted,
            window=window,
            shares=sorted(shares),
            silent_windows=silent,
            whole_sample=sorted(whole),
        )
    return out


def rescue_speaker_shares(source: str | Path, window: int = SHARE_WINDOW) -> dict[str, GroupShares]:
    """`group_shares` of the RESCUE samples at `source` (a .jsonl file or folder, read with personas.load_rescue)."""
    return group_shares(load_rescue(source), window)
