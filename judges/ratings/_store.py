"""Human ratings in a run folder: `ratings.json`, one versioned file, rewritten atomically on every import."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from personas.common.files import atomic_write_text
from simulator.runfolder import RunFolder, RunFolderError

RATINGS_SCHEMA_VERSION = 1
RATINGS_FILE = "ratings.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StoredRating(_Record):
    """One human rating of one item on one dimension."""

    item_id: str = Field(description="Export item id (`it-...`).")
    session_id: str
    unit: str = Field(description="`session` or `intervention`.")
    turn: int | None = Field(default=None, description="Intervention turn, for intervention units.")
    dimension: str
    rater: str = Field(description="Rater name or id as the rating tool gave it.")
    value: int
    import_id: str = Field(description="The import this rating came with (`RatingsImport.id`).")


class RatingsImport(_Record):
    id: str = Field(description="sha256 prefix of the imported file's bytes.")
    file: str
    format: str
    imported_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    ratings: int = Field(description="Ratings this import added to this run.")


class RatingsFile(_Record):
    schema_version: int = RATINGS_SCHEMA_VERSION
    imports: list[RatingsImport] = Field(default_factory=list)
    ratings: list[StoredRating] = Field(default_factory=list)


def ratings_path(folder: RunFolder | str | Path) -> Path:
    f = folder if isinstance(folder, RunFolder) else RunFolder(folder)
    return f.path / RATINGS_FILE


def read_ratings(folder: RunFolder | str | Path) -> RatingsFile:
    """The run's ratings (empty when none were imported). An unreadable file is a RunFolderError."""
    path = ratings_path(folder)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return RatingsFile()
    try:
        version = json.loads(text).get("schema_version", 0)
    except (ValueError, AttributeError):
        version = 0
    if isinstance(version, int) and version > RATINGS_SCHEMA_VERSION:
        raise RunFolderError(f"{path}: written by a newer rescue-sim (ratings schema {version}); upgrade to read it")
    try:
        return RatingsFile.model_validate_json(text)
    except ValueError as err:
        raise RunFolderError(f"{path}: not a valid ratings file ({str(err).splitlines()[0]})") from None


def write_ratings(folder: RunFolder | str | Path, ratings: RatingsFile) -> Path:
    path = ratings_path(folder)
    atomic_write_text(path, ratings.model_dump_json(indent=1))
    return path


def rated_item_ids(run_dirs: Sequence[str | Path]) -> set[str]:
    """Item ids with at least one stored rating in any of the runs (export skips them)."""
    return {r.item_id for d in run_dirs for r in read_ratings(d).ratings}
