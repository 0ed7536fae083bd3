"""`export_items`: choose units from run folders, blind them, render a format, check for leaks, write atomically;
record the batch (each item's inclusion probability) in the key file and in each run's ratings store."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from judges.ratings._blind import (
    DEFAULT_WINDOW,
    BlindingError,
    ExportKey,
    aliases_for,
    find_leaks,
    key_item,
    model_strings,
    rater_item,
    secrets_of,
)
from judges.ratings._formats import FORMATS, render, sibling
from judges.ratings._select import Selection, SelectionError, parse_caps, parse_quotas, select_units
from judges.ratings._store import BatchItem, ExportBatch, rated_item_ids, read_ratings, write_ratings
from judges.ratings._units import UnitKind, collect_units
from judges.scoring._store import read_judgment
from personas.common.errors import Param, ParameterError
from personas.common.files import atomic_write_text
from simulator.runfolder import RunFolder


class ExportError(ParameterError):
    """An export that cannot be made (nothing to export, bad option)."""


class ExportResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: list[str] = Field(description="Files written for raters.")
    key: str = Field(description="The unblinding key file (keep it away from raters).")
    items: int
    selection: Selection
    skipped_sessions: dict[str, int] = Field(default_factory=dict, description="Reason -> sessions not exportable.")
    by_strategy: dict[str, int] = Field(default_factory=dict)
    batch: str = Field(default="", description="Batch id, in the key file and each run's ratings.json.")
    by_design: dict[str, int] = Field(default_factory=dict, description="Design -> items (see judges.ratings).")


def _manifest_models(folder: RunFolder) -> set[str]:
    config = folder.read_manifest().config
    out: set[str] = set()
    for key in ("supporter",):
        if isinstance(config.get(key), str):
            out.add(config[key])
    for key in ("models",):
        if isinstance(config.get(key), dict):
            out.update(v for v in config[key].values() if isinstance(v, str))
    for key in ("judges",):
        if isinstance(config.get(key), list):
            out.update(v for v in config[key] if isinstance(v, str))
    return out


def export_items(
    run_dirs: Sequence[str | Path],
    *,
    select: Sequence[str],
    out: str | Path,
    fmt: str = "jsonl",
    n: int | None = None,
    unit: UnitKind = "session",
    window: int = DEFAULT_WINDOW,
    seed: int = 0,
    caps: Sequence[str] = (),
    dimensions: Sequence[str] | None = None,
    budgets: dict[str, int] | None = None,
) -> ExportResult:
    """Select, blind and write rater items; returns what was written. Raises a UserError on bad input.

    Nothing is written when anything fails (including the leak check), and every file is written atomically.
    `budgets` (supporter -> expected picks, from `ratings plan`) sizes the `active` strategy per supporter.
    """
    if fmt not in FORMATS:
        raise ExportError(Param("fmt"), f" {fmt}: choose from {', '.join(FORMATS)}")
    if unit not in ("session", "intervention"):
        raise ExportError(Param("unit"), f" {unit}: choose session or intervention")
    if window < 0:
        raise ExportError(Param("window"), ": must be 0 or more turns")
    out = Path(out)
    if budgets is not None:
        select = _with_budget(select, budgets)
    quotas = parse_quotas(select, n)
    if budgets is not None:
        quotas = [q.model_copy(update={"budgets": budgets}) if q.strategy == "active" else q for q in quotas]
    cap_map = parse_caps(caps)
    pool = collect_units(run_dirs, unit)
    if dimensions:
        unknown = [d for d in dimensions if d not in pool.dimensions]
        if unknown:
            raise ExportError(
                Param("dimensions"),
                f" {unknown[0]}: not a rated {unit} dimension here; choose from {', '.join(pool.dimensions) or 'none'}",
            )
        keep = set(dimensions)
        for u in pool.units:
            u.dimensions = [d for d in u.dimensions if d in keep]
        pool.units = [u for u in pool.units if u.dimensions]
    if not pool.units:
        why = ", ".join(f"{n} {r}" for r, n in pool.skipped.items()) or "no sessions"
        raise ExportError(f"{', '.join(map(str, run_dirs))}: nothing to export ({why}); run and judge sessions first")
    exclude = rated_item_ids(run_dirs)
    selection = select_units(pool.units, quotas, seed=seed, exclude=exclude, caps=cap_map)
    if not selection.picks and [q.strategy for q in quotas] == ["active"] and not selection.shortfall:
        raise SelectionError(
            Param("select"),
            " active: the Poisson draw picked no item this time (each is drawn with a small probability); ask for more (",
            Param("n"),
            ") or try another ",
            Param("seed"),
        )
    if not selection.picks:
        raise SelectionError(
            "nothing selected: every candidate was already rated, capped or did not fit the strategies"
            + (f" ({selection.already_rated} already rated)" if selection.already_rated else "")
        )
    aliases = aliases_for(u.supporter for u in pool.units)
    strings: set[str] = set()
    folders = {str(d): RunFolder(d) for d in run_dirs}
    for folder in folders.values():
        strings |= _manifest_models(folder)
    records = {}
    for u in pool.units:
        folder = folders[u.run]
        record = folder.load_session(u.session_id)
        strings |= model_strings(record, read_judgment(folder, u.session_id))
        records[(u.run, u.session_id)] = record
    secrets = secrets_of(strings)
    items = [
        rater_item(p, records[(p.unit.run, p.unit.session_id)], aliases[p.unit.supporter], secrets, window)
        for p in selection.picks
    ]
    used = [d for d in pool.dimensions if any(d in i.dimensions for i in items)]
    files = render(fmt, out, items, [pool.dimensions[d] for d in used])
    for path, text in files.items():
        leaks = find_leaks(text, secrets)
        if leaks:
            raise BlindingError(f"{path}: would name the model {leaks[0]!r}; nothing was written")
    created = datetime.now(UTC)
    batch_id = hashlib.sha256(f"{out}|{created.isoformat()}|{seed}".encode()).hexdigest()[:12]
    key = ExportKey(
        batch=batch_id,
        created_at=created,
        format=fmt,
        file=str(out),
        runs=[str(d) for d in run_dirs],
        seed=seed,
        window=window,
        aliases={alias: spec for spec, alias in aliases.items()},
        items=[key_item(p, aliases[p.unit.supporter]) for p in selection.picks],
    )
    for path, text in files.items():
        atomic_write_text(path, text)
    key_path = sibling(out, ".key.json")
    atomic_write_text(key_path, key.model_dump_json(indent=1))
    for run in run_dirs:
        mine = {
            p.unit.item_id: BatchItem(strategy=p.strategy, pi=p.pi) for p in selection.picks if p.unit.run == str(run)
        }
        if mine:
            rf = read_ratings(run)
            ours = {u.item_id for u in pool.units if u.run == str(run)}
            probabilities = {
                strategy: {i: p for i, p in probs.items() if i in ours}
                for strategy, probs in selection.probabilities.items()
            }
            rf.batches.append(
                ExportBatch(
                    id=batch_id,
                    created_at=created,
                    file=str(out),
                    key=str(key_path),
                    items=mine,
                    probabilities=probabilities,
                )
            )
            write_ratings(run, rf)
    by: dict[str, int] = {}
    designs: dict[str, int] = {}
    for p in selection.picks:
        by[p.strategy] = by.get(p.strategy, 0) + 1
        designs[p.design] = designs.get(p.design, 0) + 1
    return ExportResult(
        files=[str(p) for p in files],
        key=str(key_path),
        items=len(items),
        selection=selection,
        skipped_sessions=pool.skipped,
        by_strategy=by,
        batch=batch_id,
        by_design=designs,
    )


def _with_budget(select: Sequence[str], budgets: dict[str, int]) -> list[str]:
    """`--select active` with a plan: the plan says how many (`active:<total>`)."""
    names = [s.partition(":")[0].strip() for s in select]
    if "active" not in names:
        raise ExportError(Param("budgets"), ": sizes the `active` strategy; add `", Param("select"), " active`")
    total = sum(budgets.values())
    if total < 1:
        raise ExportError(Param("budgets"), ": asks for no more ratings (every CI is already within the target width)")
    return [f"active:{total}" if s.strip() == "active" else s for s in select]
