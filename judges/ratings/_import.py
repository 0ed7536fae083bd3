"""`import_ratings`: read a ratings file, validate every rating against the runs' items, store them atomically.

Validation reports every problem with its line, and stores nothing when there is any: an unknown item id, a
dimension the item is not rated on, a value that is not a whole number on the dimension's scale, a rating given
twice in the file (same item, dimension and rater), a rating already stored by an earlier import, a file that
was imported before. Each stored rating takes its item's inclusion probability and design from the latest export
batch of its run that holds the item (unknown when none does).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from judges.ratings._agreement import HumanAgreement, RatingPair, agreement_by_dimension
from judges.ratings._parse import Problem, parse_ratings_file
from judges.ratings._store import RatingsImport, StoredRating, batch_item, read_ratings, write_ratings
from judges.ratings._units import Unit, collect_units
from judges.scoring._rubric import Dimension
from personas.common.errors import Param, ParameterError, UserError

MAX_LISTED = 20


class RatingsError(UserError):
    """Ratings that cannot be stored; `problems` lists each with its line. Nothing was stored."""

    def __init__(self, path: Path, problems: list[Problem]):
        self.path = path
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        super().__init__(f"{path}:{first.line}: {first.message}{more}; nothing was stored")

    def lines(self, limit: int = MAX_LISTED) -> list[str]:
        out = [f"{self.path}:{p.line}: {p.message}" for p in self.problems[:limit]]
        if len(self.problems) > limit:
            out.append(f"... {len(self.problems) - limit} more")
        return out


class ItemIndex(BaseModel):
    """Every ratable item of some runs: item id -> unit, and dimension id -> rubric entry."""

    model_config = ConfigDict(extra="forbid")

    units: dict[str, Unit]
    dimensions: dict[str, Dimension]


def item_index(run_dirs: Sequence[str | Path]) -> ItemIndex:
    units: dict[str, Unit] = {}
    dims: dict[str, Dimension] = {}
    for kind in ("session", "intervention"):
        pool = collect_units(run_dirs, kind)  # type: ignore[arg-type]
        units.update({u.item_id: u for u in pool.units})
        for d, dim in pool.dimensions.items():
            dims.setdefault(d, dim)
    return ItemIndex(units=units, dimensions=dims)


class ImportResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    format: str
    added: dict[str, int] = Field(description="Run folder -> ratings stored.")
    raters: list[str]
    by_design: dict[str, int] = Field(
        default_factory=dict, description="Design -> ratings added (`unknown-probability`: agreement only)."
    )
    agreement: list[HumanAgreement] = Field(description="Over all stored ratings of the runs, per dimension.")


def _value(raw: object, dim: Dimension) -> tuple[int | None, str | None]:
    lo, hi = dim.min or 0, dim.max or 0
    value: int | None = None
    if isinstance(raw, bool):
        value = None
    elif isinstance(raw, int):
        value = raw
    elif isinstance(raw, float) and raw.is_integer():
        value = int(raw)
    elif isinstance(raw, str):
        head = raw.strip().split(":", 1)[0].strip()
        if head.lstrip("-").isdigit():
            value = int(head)
        else:
            try:
                f = float(head)
            except ValueError:
                f = None
            if f is not None and f.is_integer():
                value = int(f)
    if value is None:
        return None, f"{dim.id}: {raw!r} is not a whole number on the {lo}-{hi} scale"
    if not lo <= value <= hi:
        return None, f"{dim.id}: {value} is outside the {lo}-{hi} scale"
    return value, None


def import_ratings(path: str | Path, run_dirs: Sequence[str | Path], fmt: str | None = None) -> ImportResult:
    """Validate and store the ratings in `path` into the run folders their items belong to."""
    path = Path(path)
    if not run_dirs:
        raise ParameterError(Param("run_dirs"), ": give the run folder(s) the rated items came from")
    parsed, data = parse_ratings_file(path, fmt)
    import_id = hashlib.sha256(data).hexdigest()[:12]
    index = item_index(run_dirs)
    stored = {str(d): read_ratings(d) for d in run_dirs}
    for run, rf in stored.items():
        done = next((imp for imp in rf.imports if imp.id == import_id), None)
        if done is not None:
            raise RatingsError(
                path,
                [
                    Problem(
                        line=1,
                        message=(f"this file was already imported into {run} on {done.imported_at:%Y-%m-%d %H:%M} UTC"),
                    )
                ],
            )
    earlier = {(r.item_id, r.dimension, r.rater): run for run, rf in stored.items() for r in rf.ratings}
    problems = list(parsed.problems)
    seen: dict[tuple[str, str, str], int] = {}
    new: dict[str, list[StoredRating]] = {str(d): [] for d in run_dirs}
    for r in parsed.ratings:
        if not r.item_id:
            problems.append(Problem(line=r.line, message="no item id (`item_id`); keep the exported id with each item"))
            continue
        unit = index.units.get(r.item_id)
        if unit is None:
            problems.append(Problem(line=r.line, message=f"unknown item id {r.item_id!r}: not an item of these runs"))
            continue
        if not r.rater:
            problems.append(Problem(line=r.line, message=f"{r.item_id}: no rater given"))
            continue
        if r.dimension not in unit.dimensions:
            problems.append(
                Problem(
                    line=r.line,
                    message=(
                        f"{r.item_id}: {r.dimension!r} is not rated on this item; "
                        f"its dimensions: {', '.join(unit.dimensions)}"
                    ),
                )
            )
            continue
        value, err = _value(r.value, index.dimensions[r.dimension])
        if err is not None:
            problems.append(Problem(line=r.line, message=f"{r.item_id}: {err}"))
            continue
        key = (r.item_id, r.dimension, r.rater)
        if key in seen:
            problems.append(
                Problem(
                    line=r.line,
                    message=(
                        f"duplicate rating of {r.item_id} / {r.dimension} by {r.rater} (first on line {seen[key]})"
                    ),
                )
            )
            continue
        if key in earlier:
            problems.append(
                Problem(
                    line=r.line,
                    message=(f"{r.item_id} / {r.dimension} by {r.rater} was already imported into {earlier[key]}"),
                )
            )
            continue
        seen[key] = r.line
        assert value is not None
        sent = batch_item(stored[unit.run], r.item_id)
        new[unit.run].append(
            StoredRating(
                item_id=r.item_id,
                session_id=unit.session_id,
                unit=unit.unit,
                turn=unit.turn,
                dimension=r.dimension,
                rater=r.rater,
                value=value,
                import_id=import_id,
                batch=sent[0].id if sent else None,
                design=sent[1].strategy if sent and sent[1].pi is not None else "unknown-probability",
                pi=sent[1].pi if sent else None,
            )
        )
    if problems:
        raise RatingsError(path, sorted(problems, key=lambda p: p.line))
    if not any(new.values()):
        raise RatingsError(path, [Problem(line=1, message="no ratings found in this file")])
    for run, ratings in new.items():
        if not ratings:
            continue
        rf = stored[run]
        rf.imports.append(RatingsImport(id=import_id, file=str(path), format=parsed.format, ratings=len(ratings)))
        rf.ratings.extend(ratings)
        write_ratings(run, rf)
    return ImportResult(
        file=str(path),
        format=parsed.format,
        added={run: len(r) for run, r in new.items()},
        raters=sorted({r.rater for rs in new.values() for r in rs}),
        by_design=_count_designs([r for rs in new.values() for r in rs]),
        agreement=runs_agreement(run_dirs, index),
    )


def _count_designs(ratings: list[StoredRating]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in ratings:
        out[r.design] = out.get(r.design, 0) + 1
    return out


def rating_pairs(run_dirs: Sequence[str | Path], index: ItemIndex | None = None) -> tuple[list[RatingPair], ItemIndex]:
    """Every stored human rating of the runs with the judge panel's score beside it."""
    index = index or item_index(run_dirs)
    pairs = []
    for d in run_dirs:
        for r in read_ratings(d).ratings:
            unit = index.units.get(r.item_id)
            if unit is None or r.dimension not in unit.judge:
                continue  # the item was re-judged away or its session removed: nothing to compare with
            pairs.append(
                RatingPair(
                    item_id=r.item_id,
                    dimension=r.dimension,
                    rater=r.rater,
                    human=r.value,
                    judge=unit.judge[r.dimension],
                )
            )
    return pairs, index


def runs_agreement(run_dirs: Sequence[str | Path], index: ItemIndex | None = None) -> list[HumanAgreement]:
    """Judge-human agreement per dimension over every rating stored in the runs."""
    pairs, index = rating_pairs(run_dirs, index)
    scales = {d: (dim.min or 0, dim.max or 0) for d, dim in index.dimensions.items()}
    return agreement_by_dimension(pairs, scales, [d for d in index.dimensions if any(p.dimension == d for p in pairs)])
