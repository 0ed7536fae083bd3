"""Human ratings in a run folder: `ratings.json`, one versioned file, rewritten atomically on every export and import.

Each export records its batch here (every item of this run it holds, with the item's inclusion probability), and
each imported rating takes its item's probability and design from the latest batch that exported it, so the
leaderboard can weight it by 1/pi, or keep it out of means when the probability is unknown.

Schema 1 (no batches, no pi) reads as schema 2 with every rating of unknown probability.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from personas.common.files import atomic_write_text
from personas.common.records import Record
from simulator.runfolder import RunFolder, RunFolderError, refuse_newer

RATINGS_SCHEMA_VERSION = 2
RATINGS_FILE = "ratings.json"


class StoredRating(Record):
    """One human rating of one item on one dimension."""

    item_id: str = Field(description="Export item id (`it-...`).")
    session_id: str
    unit: str = Field(description="`session` or `intervention`.")
    turn: int | None = Field(default=None, description="Intervention turn, for intervention units.")
    dimension: str
    rater: str = Field(description="Rater name or id as the rating tool gave it.")
    value: int
    import_id: str = Field(description="The import this rating came with (`RatingsImport.id`).")
    batch: str | None = Field(default=None, description="The export batch that sent the item out; None: unknown.")
    design: str = Field(
        default="unknown-probability", description="`random`, `stratified`, `active` or `unknown-probability`."
    )
    pi: float | None = Field(default=None, description="The item's inclusion probability in that batch; None: unknown.")


class RatingsImport(Record):
    id: str = Field(description="sha256 prefix of the imported file's bytes.")
    file: str
    format: str
    imported_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    ratings: int = Field(description="Ratings this import added to this run.")


class BatchItem(Record):
    strategy: str
    pi: float | None = Field(description="Inclusion probability; None for deterministic picks.")


class ExportBatch(Record):
    """One export, as far as this run's items go."""

    id: str = Field(description="Batch id (also in the key file).")
    created_at: datetime
    file: str = Field(description="The rater file written.")
    key: str = Field(description="Its key file.")
    items: dict[str, BatchItem] = Field(description="Item id -> strategy and inclusion probability.")
    probabilities: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Design strategy -> item id -> the probability that design gave (or would have given) each "
        "of this run's units, drawn or not: ratings of several batches are weighted by their union.",
    )

    def designs(self) -> dict[str, int]:
        """Design -> items (`unknown-probability` for deterministic picks)."""
        out: dict[str, int] = {}
        for it in self.items.values():
            d = it.strategy if it.pi is not None else "unknown-probability"
            out[d] = out.get(d, 0) + 1
        return out


class RatingsFile(Record):
    schema_version: int = RATINGS_SCHEMA_VERSION
    batches: list[ExportBatch] = Field(default_factory=list, description="Exports of this run's items, oldest first.")
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
    refuse_newer(path, text, RATINGS_SCHEMA_VERSION, "ratings")
    try:
        return RatingsFile.model_validate_json(text)
    except ValueError as err:
        raise RunFolderError(f"{path}: not a valid ratings file ({str(err).splitlines()[0]})") from None


def write_ratings(folder: RunFolder | str | Path, ratings: RatingsFile) -> Path:
    path = ratings_path(folder)
    ratings = ratings.model_copy(update={"schema_version": RATINGS_SCHEMA_VERSION})
    atomic_write_text(path, ratings.model_dump_json(indent=1))
    return path


def rated_item_ids(run_dirs: Sequence[str | Path]) -> set[str]:
    """Item ids with at least one stored rating in any of the runs (export skips them)."""
    return {r.item_id for d in run_dirs for r in read_ratings(d).ratings}


def batch_item(rf: RatingsFile, item_id: str) -> tuple[ExportBatch, BatchItem] | None:
    """The latest batch of this run that exported the item, with the item's entry there."""
    for batch in reversed(rf.batches):
        if item_id in batch.items:
            return batch, batch.items[item_id]
    return None


class BatchSummary(Record):
    """One export batch across the runs it drew from: its design(s) and how much of it came back rated."""

    id: str
    created_at: datetime
    file: str
    designs: dict[str, int] = Field(description="Design -> items sent out (`unknown-probability`: deterministic).")
    items: int = Field(description="Items sent out.")
    rated: int = Field(description="Items with at least one rating stored.")
    ratings: int = Field(description="Ratings stored for the batch's items.")

    @property
    def design(self) -> str:
        """The batch's design in one word, or `mixed: a + b` when strategies of several designs were combined."""
        return next(iter(self.designs)) if len(self.designs) == 1 else "mixed: " + " + ".join(self.designs)


def batch_summaries(run_dirs: Sequence[str | Path]) -> list[BatchSummary]:
    """Every export batch recorded in the runs, oldest first (a batch over several runs is one entry)."""
    merged: dict[str, BatchSummary] = {}
    for d in run_dirs:
        rf = read_ratings(d)
        counts: dict[tuple[str, str], int] = {}
        for r in rf.ratings:
            if r.batch is not None:
                counts[(r.batch, r.item_id)] = counts.get((r.batch, r.item_id), 0) + 1
        for b in rf.batches:
            s = merged.setdefault(
                b.id,
                BatchSummary(id=b.id, created_at=b.created_at, file=b.file, designs={}, items=0, rated=0, ratings=0),
            )
            for design, k in b.designs().items():
                s.designs[design] = s.designs.get(design, 0) + k
            s.items += len(b.items)
            s.rated += sum(1 for i in b.items if counts.get((b.id, i)))
            s.ratings += sum(counts.get((b.id, i), 0) for i in b.items)
    return sorted(merged.values(), key=lambda s: s.created_at)


def union_probabilities(run_dirs: Sequence[str | Path]) -> dict[str, float]:
    """Item id -> the probability that any known-probability batch of the runs would draw it: 1 - prod(1 - pi_b).

    Weighting every rating by this one number (rather than by the pi of the batch that happened to draw it) keeps
    ratings of several batches on one footing: a small pilot and a large active batch then count by what each
    contributes, as if drawn by their mixture (the balance heuristic of multiple importance sampling).
    """
    miss: dict[str, float] = {}
    for d in run_dirs:
        for b in read_ratings(d).batches:
            for probs in b.probabilities.values():
                for item, p in probs.items():
                    miss[item] = miss.get(item, 1.0) * (1.0 - p)
    return {item: 1.0 - q for item, q in miss.items()}
