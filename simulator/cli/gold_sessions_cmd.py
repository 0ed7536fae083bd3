"""`rescue-sim gold sessions --data RESCUE_FILE`: the tracker and the judge measured against RESCUE's gold
(`rescue-sim validate`, its old name, still runs it).

Writes one validity card per instrument under the validity folder (`judges.validity.validity_dir()`), where
`leaderboard` and `bench` find them, and optionally all cards to `--card PATH`. Tests replace the module-level
`make_client` with a fake-client factory.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from personas.common.errors import UserError
from simulator.cli._common import EXIT_FAILED, JudgeModeChoice, console, err_console, user_errors
from simulator.cli._models import make_client, model_settings

if TYPE_CHECKING:
    from judges.validity import CallEstimate, ValidityCard


def _f(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _kn(k: int, n: int) -> str:
    """k/n, with a percentage only when n is large enough for one to mean something."""
    return f"{k}/{n}" + (f" ({k / n:.0%})" if n >= 10 else "")


def _tracker_tables(card: ValidityCard) -> list[Table | str]:
    t = card.tracker
    assert t is not None
    p, e, v, r, j = t.pattern, t.emotions, t.viewpoints, t.risk, t.jitter
    s = t.settings
    out: list[Table | str] = [
        (
            f"[bold]tracker {escape(card.model)}[/] (prompt digest {card.digest}): {len(card.data.samples)} samples, "
            f"tracker every {s.tracker_every} member turns, window {s.window}; "
            f"calls {t.checkpoints}, failed {t.failed} (excluded), from cache {card.cached_calls}/{card.calls}"
        ),
    ]
    if card.data.skipped:
        out.append(f"skipped samples: {escape('; '.join(f'{k}: {x}' for k, x in card.data.skipped.items()))}")
    main = Table(title="tracker vs RESCUE gold", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("measure", "value", "n"):
        main.add_column(col, justify="left" if col == "measure" else "right")
    main.add_row("pattern = gold (RPP top-1)", _kn(p.correct, p.n), str(p.n))
    main.add_row("pattern macro-F1 (taxonomy)", _f(p.macro_f1), str(p.n))
    for g, c in p.by_group.items():
        main.add_row(f"  {g}", _kn(c.k, c.n), str(c.n))
    main.add_row("emotion intensity MAE (0-10)", _f(e.mae), str(e.n))
    main.add_row("emotion intensity Spearman", _f(e.spearman), str(e.n))
    main.add_row("viewpoint pairs named", _kn(v.gold_pairs.k, v.gold_pairs.n), str(v.items))
    if v.viewpoint is not None:
        main.add_row("viewpoint meaning, VP judge 0-4", _f(v.viewpoint), str(v.judged))
        main.add_row("viewpoint pairing, VP judge 0-2", _f(v.source_target), str(v.judged))
    if r.gold_marked:
        main.add_row("risk: hits / false alarms / missed", f"{r.tp} / {r.fp} / {r.fn}", str(r.scored_pairs))
    else:
        main.add_row(
            "risk: calls flagging anyone (gold: none)", _kn(r.flagged_checkpoints, r.checkpoints), str(r.checkpoints)
        )
    main.add_row("warmth change per turn: tracker", _f(j.tracker_warmth.per_turn), str(j.tracker_warmth.steps))
    main.add_row("warmth change per turn: gold", _f(j.gold_warmth.per_turn), str(j.gold_warmth.steps))
    main.add_row("tension change per turn: tracker", _f(j.tracker_tension.per_turn), str(j.tracker_tension.steps))
    main.add_row("tension change per turn: gold", _f(j.gold_tension.per_turn), str(j.gold_tension.steps))
    out.append(main)
    if p.per_label:
        labels = Table(title="pattern per gold label (correct/support)", title_justify="left", box=box.SIMPLE_HEAD)
        for col in ("label", "correct/support", "tracker said"):
            labels.add_column(col, justify="left" if col == "label" else "right")
        for lab, s_ in sorted(p.per_label.items(), key=lambda kv: -kv[1].support):
            labels.add_row(lab, f"{s_.correct}/{s_.support}" if s_.support else "-", str(s_.predicted))
        out.append(labels)
    if p.no_gold or p.no_dominant or p.off_taxonomy:
        out.append(
            f"pattern checkpoints left out: {p.no_gold} without a label there, {p.no_dominant} 'no dominant "
            f"pattern', {p.off_taxonomy} off-taxonomy; viewpoints about the therapist or group left out: "
            f"{v.excluded_targets}; annotated emotions the tracker did not report: {e.not_reported}"
        )
    if e.per_person:
        out.append(
            "intensity MAE per person: "
            + ", ".join(f"{escape(k)} {x.mae:.2f} (n={x.n})" for k, x in e.per_person.items())
        )
    for reason in t.failures:
        out.append(f"[red]failed:[/] {escape(reason)}")
    return out


def _judge_tables(card: ValidityCard) -> list[Table | str]:
    jv = card.judge
    assert jv is not None
    out: list[Table | str] = [
        (
            f"[bold]judge {escape(card.model)}[/] ({card.judge_mode or 'verdict'} mode, prompt digest "
            f"{card.digest}): calls {card.calls}, "
            f"from cache {card.cached_calls}"
        )
    ]
    table = Table(title="judge vs RESCUE gold", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("measure", "value", "scored", "failed"):
        table.add_column(col, justify="left" if col == "measure" else "right")
    if (s := jv.strategy) is not None:
        correct = round((s.accuracy or 0) * s.scored)
        table.add_row("strategy label = gold (given turn)", _kn(correct, s.scored), str(s.scored), str(s.failed))
        table.add_row("strategy macro-F1", _f(s.macro_f1), str(s.scored), str(s.failed))
    if (g := jv.target) is not None:
        table.add_row("preferred target = gold (next turn)", _kn(g.correct, g.scored), str(g.scored), str(g.failed))
        for kind, k in g.by_kind.items():
            if k.support:
                hits = g.confusion.get(kind, {})
                table.add_row(
                    f"  gold {kind}: judge chose that kind", f"{hits.get(kind, 0)}/{k.support}", str(k.support), ""
                )
    out.append(table)
    if s is not None and s.labels:
        out.append(
            "strategy per gold label (correct/support): "
            + ", ".join(f"{x.label} {round((x.recall or 0) * x.support)}/{x.support}" for x in s.labels if x.support)
        )
    return out


def render(card: ValidityCard) -> list[Table | str]:
    return _tracker_tables(card) if card.instrument == "tracker" else _judge_tables(card)


# -- options (one line each in the signature below) ------------------------------------------------------------

DataOpt = Annotated[Path, typer.Option("--data", help="RESCUE-format data: a .jsonl/.json file or a folder.")]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", "-m", help="Default model for both instruments (else RESCUE_SIM_MODEL, else local)."),
]
TrackerModelOpt = Annotated[
    str | None, typer.Option("--tracker-model", envvar="RESCUE_SIM_TRACKER_MODEL", help="Tracker model.")
]
JudgeModelOpt = Annotated[
    str | None, typer.Option("--judge-model", envvar="RESCUE_SIM_JUDGE_MODEL", help="Judge model.")
]
OnlyOpt = Annotated[str | None, typer.Option("--only", help="Measure only `tracker` or only `judge`.")]
TrackerEveryOpt = Annotated[
    int, typer.Option("--tracker-every", min=0, help="Tracker cadence in member turns (session default 3).")
]
WindowOpt = Annotated[int, typer.Option("--window", min=2, help="Turns shown to the tracker (session default).")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Session seed the tracker calls derive theirs from.")]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, help="At most N judge items per check.")]
ValidateJudgeModeOpt = Annotated[
    JudgeModeChoice,
    typer.Option(
        "--judge-mode",
        help="Read the judge's strategy and target as `judge` does: from checklist items' answer "
        "probabilities (default) or structured verdicts.",
    ),
]
NoVpJudgeOpt = Annotated[
    bool, typer.Option("--no-vp-judge", help="Score viewpoints by pairing only (no VP judge calls).")
]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", min=1, help="Samples replayed at once.")]
CardOpt = Annotated[Path | None, typer.Option("--card", help="Also write the cards (a JSON list) to this file.")]
NoStoreOpt = Annotated[bool, typer.Option("--no-store", help="Do not store cards in the validity folder.")]
ShipOpt = Annotated[
    Path | None,
    typer.Option(
        "--ship",
        help="Also write numbers-only copies (no sample ids, text or names) to this folder, e.g. "
        "judges/validity/shipped to regenerate the cards the package ships.",
    ),
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Count the model calls; call nothing.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Bypass the model-call disk cache.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the cards as JSON.")]


def _instruments(only: str | None, ship: Path | None, card: Path | None) -> list[str]:
    """The instruments to measure; a UserError for `--only`, `--ship` or `--card` values that cannot work."""
    from judges.validity import INSTRUMENTS

    if only is not None and only not in INSTRUMENTS:
        raise UserError(f"--only: {only!r} is not one of {', '.join(INSTRUMENTS)}")
    if ship is not None and ship.exists() and not ship.is_dir():
        raise UserError(f"--ship {ship}: is a file; give the folder the numbers-only cards go to")
    if card is not None and card.is_dir():
        raise UserError(f"--card {card}: is a folder; give a file name such as {card / 'validity.json'}")
    return [only] if only else list(INSTRUMENTS)


def _estimate_line(samples: int, estimate: CallEstimate) -> str:
    return (
        f"{samples} samples: at most {estimate.total} model calls (tracker {estimate.tracker}, "
        f"VP judge {estimate.vp_judge}, strategy {estimate.strategy}, target {estimate.target})"
    )


def _print_estimate(estimate: CallEstimate, line: str, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({**estimate.model_dump(), "total": estimate.total}))
    else:
        console.print(line)


def _save_cards(
    cards: list[ValidityCard], *, no_store: bool, ship: Path | None, card: Path | None
) -> tuple[list[Path], list[Path]]:
    """(cards stored in the validity folder, numbers-only copies shipped); the list to `card` as well."""
    from judges.validity import numbers_only, write_card, write_cards

    stored = [] if no_store else [write_card(c) for c in cards]
    shipped = [write_card(numbers_only(c), ship) for c in cards] if ship is not None else []
    if card is not None:
        write_cards(cards, card)
    return stored, shipped


def _print_cards(
    cards: list[ValidityCard], wall: float, stored: list[Path], card: Path | None, shipped: list[Path]
) -> None:
    from judges.validity import validity_dir

    for c in cards:
        for part in render(c):
            console.print(part)
    console.print(f"wall time {wall:.1f} s")
    if stored:
        console.print(f"cards stored in {escape(str(validity_dir()))}")
    if card is not None:
        console.print(f"cards written to {escape(str(card))}")
    for path in shipped:
        console.print(f"numbers-only card written to {escape(str(path))}")


def _progress(msg: str) -> None:
    err_console.print(escape(msg))


@user_errors
def gold_sessions(
    data: DataOpt,
    model: ModelOpt = None,
    tracker_model: TrackerModelOpt = None,
    judge_model: JudgeModelOpt = None,
    only: OnlyOpt = None,
    tracker_every: TrackerEveryOpt = 3,
    window: WindowOpt = 16,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    judge_mode: ValidateJudgeModeOpt = JudgeModeChoice.checklist,
    no_vp_judge: NoVpJudgeOpt = False,
    concurrency: ConcurrencyOpt = 1,
    card: CardOpt = None,
    no_store: NoStoreOpt = False,
    ship: ShipOpt = None,
    dry_run: DryRunOpt = False,
    no_cache: NoCacheOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Measure the relation-state tracker and the judge against RESCUE's human-verified gold.

    Tracker: replayed over each transcript as in a session (same prompt, window, cadence);
    scored on group pattern, emotion intensity, viewpoints, risk flags and jitter.

    Judge: strategy labels of given therapist turns; preferred target of the next one,
    read from checklist items (--judge-mode checklist, as `judge`) or verdicts.

    Writes a validity card per instrument (model id + prompt digest) that `leaderboard`
    and `bench` show next to their numbers. Failed calls are excluded and counted;
    exit code 1 when an instrument scored nothing. Reruns come from the call cache.
    """
    from judges.validity import ReplaySettings, cards_json, estimate_calls, scored_nothing
    from judges.validity import validate as run_validate
    from personas.rescue import load_rescue

    instruments = _instruments(only, ship, card)
    samples = load_rescue(data)
    settings = ReplaySettings(tracker_every=tracker_every, window=window, seed=seed)
    estimate = estimate_calls(
        samples, settings, limit=limit, judge_mode=judge_mode.value, instruments=instruments, vp_judge=not no_vp_judge
    )
    line = _estimate_line(len(samples), estimate)
    if dry_run:
        return _print_estimate(estimate, line, as_json)
    if not as_json:
        err_console.print(line)
    mset = model_settings(model, roles={"tracker": tracker_model, "judge": judge_model}, no_cache=no_cache)
    client = make_client(mset)
    started = time.perf_counter()
    cards = asyncio.run(
        run_validate(
            samples,
            client,
            source=str(data),
            instruments=instruments,  # type: ignore[arg-type]
            judge_model=mset.model_for("judge"),
            settings=settings,
            limit=limit,
            judge_mode=judge_mode.value,
            vp_judge=not no_vp_judge,
            concurrency=concurrency,
            on_progress=None if as_json else _progress,
        )
    )
    wall = time.perf_counter() - started
    stored, shipped = _save_cards(cards, no_store=no_store, ship=ship, card=card)
    if as_json:
        typer.echo(cards_json(cards))
    else:
        _print_cards(cards, wall, stored, card, shipped)
    if any(scored_nothing(c) for c in cards):
        raise typer.Exit(EXIT_FAILED)
