"""Rating in a browser: the items of an `export --format jsonl` batch, one at a time, with the batch's own
instructions and anchors. The server reads only the items file (already blinded: aliases, no model names); it
refuses a key file and never looks for one.

Each rating is saved when it is given, into `<batch>.<rater>.ratings.jsonl` beside the batch (one line per item
and dimension, `item_id`, `rater`, `dimension`, `value`: a form `rescue-sim ratings import FILE --run RUN` reads
unchanged, and the batch's inclusion probabilities come from the run's record of the export, as for any import).
A changed rating replaces the earlier one; the file is rewritten atomically each time.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judges.ratings import RaterItem
from personas.common.errors import Param
from personas.common.files import atomic_write_text
from simulator.serve._runs import ServeError

RATE = Param("rate")  # the batches come in as `serve`'s and `build_app`'s `rate`

RATER = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")


class RatingGiven(BaseModel):
    """One rating as the page sends it."""

    model_config = ConfigDict(extra="forbid")

    rater: str = Field(pattern=RATER.pattern)
    item_id: str = Field(min_length=1, max_length=200)
    dimension: str = Field(min_length=1, max_length=100)
    value: int


class RatingRefused(Exception):
    """A rating that does not fit the batch (unknown item or dimension, off the scale): one line for the page."""


@dataclass
class RatingBatch:
    path: Path
    instructions: str
    dimensions: dict[str, dict[str, Any]]
    items: list[RaterItem]

    @property
    def name(self) -> str:
        return self.path.name

    def sheet_path(self, rater: str) -> Path:
        stem = self.path.name.removesuffix(".jsonl")
        return self.path.with_name(f"{stem}.{rater}.ratings.jsonl")

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "instructions": self.instructions,
            "dimensions": self.dimensions,
            "items": [i.model_dump(mode="json") for i in self.items],
        }


def load_batch(path: str | Path) -> RatingBatch:
    """An exported JSONL batch (instructions line, then items); a ServeError names the file, line and fix."""
    path = Path(path)
    hint = "pass the items file of `rescue-sim export --format jsonl` (never its .key.json)"
    if path.name.endswith(".key.json"):
        raise ServeError(RATE, f" {path}: that is the unblinding key; {hint}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, IsADirectoryError):
        raise ServeError(RATE, f" {path}: no such file; {hint}") from None
    try:
        head = json.loads(lines[0]) if lines else {}
    except ValueError:
        head = {}
    if not isinstance(head, dict) or head.get("kind") != "instructions":
        raise ServeError(RATE, f" {path}:1: no instructions line; {hint}")
    items = []
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if raw.pop("kind", None) != "item":
                raise ValueError("not an item line")
            items.append(RaterItem.model_validate(raw))
        except (ValueError, ValidationError) as err:
            raise ServeError(RATE, f" {path}:{n}: not an exported item ({str(err).splitlines()[0]}); {hint}") from None
    dims = {d["id"]: d for d in head.get("dimensions", [])}
    return RatingBatch(path=path, instructions=str(head.get("text", "")), dimensions=dims, items=items)


class RatingSheets:
    """The batches this server rates, and each rater's sheet."""

    def __init__(self, batch_files: list[str | Path]):
        self.batches = [load_batch(p) for p in batch_files]
        self._lock = threading.Lock()

    def batch(self, index: str) -> RatingBatch:
        if not index.isdigit() or int(index) >= len(self.batches):
            raise KeyError(index)
        return self.batches[int(index)]

    def given(self, batch: RatingBatch, rater: str) -> list[dict[str, Any]]:
        if not RATER.match(rater):
            raise RatingRefused("rater: letters, digits, `_`, `.` or `-`, at most 40")
        try:
            text = batch.sheet_path(rater).read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def save(self, batch: RatingBatch, rating: RatingGiven) -> int:
        """Check the rating against the batch and store it (replacing an earlier one); returns the sheet's size."""
        item = next((i for i in batch.items if i.item_id == rating.item_id), None)
        if item is None:
            raise RatingRefused(f"item_id {rating.item_id!r}: not an item of {batch.name}")
        if rating.dimension not in item.dimensions:
            raise RatingRefused(f"dimension {rating.dimension!r}: rate one of {', '.join(item.dimensions)}")
        dim = batch.dimensions.get(rating.dimension, {})
        lo, hi = dim.get("min"), dim.get("max")
        if lo is not None and hi is not None and not lo <= rating.value <= hi:
            raise RatingRefused(f"value {rating.value}: {rating.dimension} is rated {lo}-{hi}")
        with self._lock:
            rows = [
                r
                for r in self.given(batch, rating.rater)
                if (r["item_id"], r["dimension"]) != (rating.item_id, rating.dimension)
            ]
            rows.append(rating.model_dump())
            atomic_write_text(
                batch.sheet_path(rating.rater), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            )
        return len(rows)
