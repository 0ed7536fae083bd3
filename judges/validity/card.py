"""Validity cards: what `rescue-sim gold sessions` measured about one instrument, keyed by model id and prompt
digest.

An instrument is the `tracker` (simulator/tracker.py: `simulator.tracker.prompt_digest()`) or the `judge`
(judges/prompts + rubric: `judges.scoring._render.prompt_digest(rubric_digest)`, measured with the default rubric).
Cards are stored as `<validity dir>/<instrument>-<model slug>-<digest>.json`, where the validity dir is
`simulator.llm.embedded.cache_dir()/validity/` (`RESCUE_SIM_HOME` moves it). A later run of `gold sessions` for
the same key replaces the card. Cards for the embedded model ship in `judges/validity/shipped/` (package data) and are
found after the user's own. `validity_for(instrument, model, digest)` is the one lookup that leaderboards, bench
reports and the HTML report use: it returns a `ValidityNote` that says "not validated" when no card matches.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError

from judges.scoring._validity_note import NOT_VALIDATED, Instrument, ValidityNote
from judges.validity._labels import JudgeValidation, TargetValidation
from judges.validity.replay import Checkpoint, ReplaySettings
from judges.validity.scores import (
    EmotionScores,
    JitterScores,
    PatternScores,
    RiskScores,
    ViewpointItem,
    ViewpointScores,
)
from personas.common.errors import UserError
from personas.common.files import atomic_write_text
from personas.common.records import Record
from simulator.llm.embedded import cache_dir

if TYPE_CHECKING:
    from judges.bench import BenchPlan, BenchReport

CARD_SCHEMA_VERSION = 1

# Which measure of which instrument vouches for a leaderboard or bench number. Anything else is "not validated".
DIMENSION_MEASURES: dict[str, tuple[Instrument, str]] = {
    "strategy": ("judge", "strategy"),
    "target_fit": ("judge", "target"),
    "delta_tension_observer": ("tracker", "jitter"),
    "observer_pattern": ("tracker", "pattern"),
    "observer_emotion": ("tracker", "emotions"),
    "observer_viewpoints": ("tracker", "viewpoints"),
    "safety_signals": ("tracker", "risk"),
}


class CardError(UserError):
    """A card file that cannot be read (one line: file and problem)."""


class DataSource(Record):
    path: str = Field(description="The RESCUE-format file or folder, as given.")
    samples: list[str] = Field(description="Sample ids measured.")
    skipped: dict[str, str] = Field(default_factory=dict, description="Sample id -> why it was not replayed.")


class TrackerValidity(Record):
    """The tracker replayed over RESCUE transcripts as in a session, scored against the gold rows."""

    settings: ReplaySettings = Field(description="Cadence, window and seed of the replay (session defaults).")
    checkpoints: int = Field(description="Tracker calls made.")
    failed: int = Field(description="Calls that failed after the client's attempts (excluded everywhere).")
    failures: list[str] = Field(default_factory=list, description="Up to 5 distinct failure reasons.")
    pattern: PatternScores = Field(description="Group pattern at checkpoints with gold (RPP metrics).")
    emotions: EmotionScores = Field(description="Emotion intensity per annotated person.")
    viewpoints: ViewpointScores = Field(description="Directed viewpoints: pairing and VP judge.")
    risk: RiskScores = Field(description="Risk flags against gold marks, and how often any was raised.")
    jitter: JitterScores = Field(description="Warmth/tension change per turn, tracker vs gold.")
    items: list[Checkpoint] = Field(default_factory=list, description="Every tracker call, for audit.")
    viewpoint_items: list[ViewpointItem] = Field(default_factory=list, description="VP-scored checkpoints.")


class JudgeValidity(Record):
    strategy: JudgeValidation | None = Field(default=None, description="Strategy labels of given therapist turns.")
    target: TargetValidation | None = Field(default=None, description="Preferred target of the next therapist turn.")


class ValidityCard(Record):
    """One instrument's validity against RESCUE gold, for one model id and prompt digest."""

    schema_version: int = Field(default=CARD_SCHEMA_VERSION, description="Version of this record's layout.")
    kind: Literal["validity"] = Field(default="validity", description="Marks the file as a validity card.")
    instrument: Instrument = Field(description="`tracker` or `judge`.")
    model: str = Field(description="Model id the instrument ran on.")
    digest: str = Field(description="Prompt digest of the instrument (prompt files + schema + settings).")
    judge_mode: Literal["verdict", "checklist"] | None = Field(
        default=None,
        description="Judge cards: how the judge read strategy and target (`judge --judge-mode`); None on cards "
        "written before checklist validation, which measured verdicts.",
    )
    data: DataSource = Field(description="The RESCUE-format data measured against.")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC), description="When it was measured.")
    wall_s: float = Field(default=0.0, description="Wall time spent on this instrument in the run.")
    calls: int = Field(default=0, description="Model calls made for this instrument (cache hits included).")
    cached_calls: int = Field(default=0, description="Of `calls`, answered from the disk cache.")
    tracker: TrackerValidity | None = Field(default=None, description="Tracker results (instrument `tracker`).")
    judge: JudgeValidity | None = Field(default=None, description="Judge results (instrument `judge`).")
    notes: list[str] = Field(default_factory=list, description="How it was measured, in words.")

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.instrument, self.model, self.digest)

    def headlines(self) -> dict[str, str]:
        """measure -> one short line with its counts (what a leaderboard or report shows next to a number)."""
        return headlines(self)


# ---- text -----------------------------------------------------------------------------------------------------


def _pct(k: int, n: int) -> str:
    return f"{k}/{n}" + (f" ({k / n:.0%})" if n >= 10 else "")


def _f(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def headlines(card: ValidityCard) -> dict[str, str]:
    out: dict[str, str] = {}
    if card.tracker is not None:
        t = card.tracker
        p, e, v, r, j = t.pattern, t.emotions, t.viewpoints, t.risk, t.jitter
        out["pattern"] = (
            f"pattern = gold {_pct(p.correct, p.n)}, macro-F1 {_f(p.macro_f1)}"
            if p.n
            else "pattern: no gold checkpoint"
        )
        out["emotions"] = (
            f"intensity MAE {_f(e.mae)}, Spearman {_f(e.spearman)} (n={e.n})" if e.n else "intensity: no gold pair"
        )
        vp = f", VP judge viewpoint {_f(v.viewpoint)}/4 (n={v.judged})" if v.viewpoint is not None else ""
        out["viewpoints"] = (
            f"gold pairs named {_pct(v.gold_pairs.k, v.gold_pairs.n)}{vp}" if v.items else "viewpoints: no gold"
        )
        if r.gold_marked:
            out["risk"] = (
                f"risk flags: {r.tp} hits, {r.fp} false alarms, {r.fn} missed ({r.scored_pairs} member checks)"
            )
        else:
            out["risk"] = (
                f"gold marks no risk; tracker flagged someone at {r.flagged_checkpoints}/{r.checkpoints} calls"
            )
        out["jitter"] = (
            f"warmth change/turn {_f(j.tracker_warmth.per_turn)} vs gold {_f(j.gold_warmth.per_turn)}, "
            f"tension {_f(j.tracker_tension.per_turn)} vs {_f(j.gold_tension.per_turn)} "
            f"(steps {j.tracker_warmth.steps} / {j.gold_warmth.steps})"
        )
    if card.judge is not None:
        s, g = card.judge.strategy, card.judge.target
        if s is not None:
            correct = round((s.accuracy or 0) * s.scored)
            out["strategy"] = f"strategy labels = gold {_pct(correct, s.scored)}, macro-F1 {_f(s.macro_f1)}" + (
                f", {s.failed} failed" if s.failed else ""
            )
        if g is not None:
            out["target"] = f"preferred target = gold {_pct(g.correct, g.scored)}" + (
                f", {g.failed} failed" if g.failed else ""
            )
    return out


def _share(k: int, n: int) -> str:
    return f"{k / n:.0%}" if n >= 10 else f"{k}/{n}"


def briefs(card: ValidityCard) -> dict[str, str]:
    """measure -> a few words with n against RESCUE gold, for a cell beside a number (`headlines` has the full
    line)."""
    out = dict(headlines(card))
    if card.tracker is not None and card.tracker.pattern.n:
        p = card.tracker.pattern
        out["pattern"] = f"pattern accuracy {_share(p.correct, p.n)} (n={p.n})"
    if card.judge is not None:
        s, g = card.judge.strategy, card.judge.target
        if s is not None and s.scored:
            correct = round((s.accuracy or 0) * s.scored)
            out["strategy"] = f"strategy accuracy {_share(correct, s.scored)} (n={s.scored})"
        if g is not None and g.scored:
            out["target"] = f"target accuracy {_share(g.correct, g.scored)} (n={g.scored})"
    return out


# ---- store ----------------------------------------------------------------------------------------------------


def validity_dir() -> Path:
    """Where cards are kept: `cache_dir()/validity` (RESCUE_SIM_HOME, else ~/.cache/rescue-sim)."""
    return cache_dir() / "validity"


def shipped_dir() -> Path:
    """Cards measured on the embedded model and shipped with the package (numbers only, no RESCUE text); looked
    up after the user's own. A prompt or rubric change changes the digest, so a stale shipped card never matches."""
    return Path(str(files("judges.validity") / "shipped"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"


def card_path(instrument: str, model: str, digest: str, folder: Path | None = None) -> Path:
    return (folder or validity_dir()) / f"{instrument}-{_slug(model)}-{_slug(digest)}.json"


def write_card(card: ValidityCard, folder: Path | None = None) -> Path:
    """Store a card under its key (atomic; replaces an older card for the same key)."""
    path = card_path(card.instrument, card.model, card.digest, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, card.model_dump_json(indent=2) + "\n")
    return path


def scored_nothing(card: ValidityCard) -> bool:
    """True when the card's instrument has no number: every tracker call failed, or the judge scored no item."""
    if card.tracker is not None and card.tracker.checkpoints == card.tracker.failed:
        return True
    judge = card.judge
    return judge is not None and not any(x is not None and x.scored for x in (judge.strategy, judge.target))


def cards_json(cards: Sequence[ValidityCard]) -> str:
    """The cards as one indented JSON list (what `gold sessions --card` writes and `--json` prints)."""
    return json.dumps([json.loads(c.model_dump_json()) for c in cards], indent=2)


def write_cards(cards: Sequence[ValidityCard], path: Path) -> None:
    """All the cards, as one JSON list, in the file `path` (its folder made when missing)."""
    from personas.common.files import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, cards_json(cards) + "\n")


def numbers_only(card: ValidityCard) -> ValidityCard:
    """The card with every per-item record, sample id, person name and model reply removed: what may ship with
    the package (RESCUE's text stays out of the repository). Headlines read the same from it."""
    path = f"RESCUE-format data ({len(card.data.samples)} samples)" if card.data.samples else card.data.path
    data = card.data.model_copy(update={"path": path, "samples": [], "skipped": {}})
    update: dict[str, Any] = {"data": data}
    if card.tracker is not None:
        t = card.tracker
        update["tracker"] = t.model_copy(
            update={
                "items": [],
                "viewpoint_items": [],
                "failures": [],
                "emotions": t.emotions.model_copy(update={"per_person": {}}),
            }
        )
    if card.judge is not None:
        j = card.judge
        update["judge"] = j.model_copy(
            update={
                "strategy": j.strategy.model_copy(update={"results": []}) if j.strategy else None,
                "target": j.target.model_copy(update={"results": []}) if j.target else None,
            }
        )
    return card.model_copy(update=update)


def read_card(path: str | Path) -> ValidityCard:
    path = Path(path)
    try:
        card = ValidityCard.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise CardError(f"{path}: cannot read validity card: {err.strerror}") from None
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(k) for k in first["loc"]) or "file"
        raise CardError(f"{path}: not a validity card ({loc}: {first['msg']})") from None
    if card.schema_version != CARD_SCHEMA_VERSION:
        raise CardError(f"{path}: schema_version {card.schema_version} is not {CARD_SCHEMA_VERSION}; rerun validate")
    return card


def read_cards(paths: Iterable[str | Path]) -> list[ValidityCard]:
    """Cards from files; a folder contributes every `*.json` in it."""
    out: list[ValidityCard] = []
    for p in paths:
        p = Path(p)
        files = sorted(p.glob("*.json")) if p.is_dir() else [p]
        out.extend(read_card(f) for f in files)
    return out


def find_card(
    instrument: str, model: str, digest: str, *, cards: Sequence[ValidityCard] = (), folder: Path | None = None
) -> tuple[ValidityCard | None, str | None]:
    """(card, where): a matching card among `cards` (later ones win), else the user's stored one, else a shipped
    one (`shipped_dir`); (None, None) if none."""
    for card in reversed(list(cards)):
        if card.key == (instrument, model, digest):
            return card, "given card"
    for where, path in (
        (None, card_path(instrument, model, digest, folder)),
        ("shipped card", card_path(instrument, model, digest, shipped_dir())),
    ):
        if path.is_file():
            try:
                card = read_card(path)
            except CardError:
                continue
            if card.key == (instrument, model, digest):
                return card, f"{where} {path.name}" if where else str(path)
    return None, None


def validity_for(
    instrument: Instrument,
    model: str | None,
    digest: str | None,
    *,
    measure: str | None = None,
    cards: Sequence[ValidityCard] = (),
    folder: Path | None = None,
) -> ValidityNote:
    """The validity of `instrument` on `model` with prompt `digest`, for `measure` (None: every measure).

    "not validated" when model or digest is unknown (older records), when no card has that key, or when the card
    does not measure `measure`.
    """
    base = {"instrument": instrument, "model": model, "digest": digest, "measure": measure}
    if not model or not digest:
        return ValidityNote(
            **base, validated=False, text=f"{NOT_VALIDATED} (no prompt digest recorded)", brief=NOT_VALIDATED
        )
    card, where = find_card(instrument, model, digest, cards=cards, folder=folder)
    if card is None:
        return ValidityNote(
            **base, validated=False, text=f"{NOT_VALIDATED} (no card for {model} @ {digest})", brief=NOT_VALIDATED
        )
    lines = card.headlines()
    if measure is not None:
        if measure not in lines:
            text = f"{NOT_VALIDATED} ({measure} not measured)"
            return ValidityNote(**base, validated=False, text=text, card=where, brief=NOT_VALIDATED)
        return ValidityNote(**base, validated=True, text=lines[measure], card=where, brief=briefs(card)[measure])
    text = "; ".join(lines.values())
    return ValidityNote(**base, validated=True, text=text, card=where, brief=text)


def dimension_validity(
    dimension: str,
    model: str | None,
    digest: str | None,
    *,
    instrument: Instrument = "judge",
    cards: Sequence[ValidityCard] = (),
    folder: Path | None = None,
) -> ValidityNote:
    """Validity next to one leaderboard/bench dimension; dimensions no RESCUE gold measures are not validated."""
    if dimension not in DIMENSION_MEASURES:
        return ValidityNote(
            instrument=instrument,
            model=model,
            digest=digest,
            measure=None,
            validated=False,
            text=f"{NOT_VALIDATED} (no RESCUE gold measures {dimension})",
            brief=NOT_VALIDATED,
        )
    inst, measure = DIMENSION_MEASURES[dimension]
    return validity_for(inst, model, digest, measure=measure, cards=cards, folder=folder)


# ---- bench reports ---------------------------------------------------------------------------------------------

BENCH_JUDGE_NOTE = (
    f"{NOT_VALIDATED} (the benchmark's ER/VP judge prompts are not measured by `rescue-sim gold sessions`)"
)
PROBE_TRACKER_GOLD: dict[str, str] = {"rpp": "pattern", "vp": "viewpoints"}  # probe-mode gold read from the tracker


def bench_validity(
    task: str,
    *,
    origin: str,
    judge_model: str,
    tracker_sources: Iterable[tuple[str | None, str | None]] = (),
    cards: Sequence[ValidityCard] = (),
    folder: Path | None = None,
) -> list[ValidityNote]:
    """Validity next to one bench task: the tracker behind probe-mode gold (RPP, VP) and the ER/VP judge.

    RESCUE-mode gold is human annotation and the model's answers are scored exactly, so RPP/STP/SSP/ITP need no
    instrument there; ER and VP scores come from the benchmark's judge, which `validate` does not measure.
    """
    notes: list[ValidityNote] = []
    if origin == "probe" and task in PROBE_TRACKER_GOLD:
        for model, digest in sorted(set(tracker_sources), key=lambda s: (s[0] or "", s[1] or "")):
            notes.append(
                validity_for("tracker", model, digest, measure=PROBE_TRACKER_GOLD[task], cards=cards, folder=folder)
            )
    if task in ("er", "vp"):
        notes.append(
            ValidityNote(instrument="judge", model=judge_model, digest=None, measure=None, validated=False,
                         text=BENCH_JUDGE_NOTE)
        )  # fmt: skip
    return notes


def with_bench_validity(report: BenchReport, plan: BenchPlan, **kwargs: Any) -> BenchReport:
    """The bench report with each task's validity notes filled in (see `bench_validity`); the bench itself
    knows nothing of validity cards, so whoever runs it (the CLI, a script) adds them."""
    for name, task_report in report.tasks.items():
        task_report.validity = bench_validity(
            name,
            origin=plan.origin,
            judge_model=plan.settings.judge_model,
            tracker_sources=plan.tracker_sources,
            **kwargs,
        )
    return report
