"""`rescue-sim fidelity RUN_DIR... --real-or-simulated --rescue PATH`: the blind real-or-simulated test
(`judges.room_audit._real_or_simulated`) wired to the command: read the runs, ask the check model, render or print
JSON; `--rate-batch` also writes the same pairs for human raters, and `--rated KEY` scores their sheets.

Tests replace the module-level `make_client` with a factory returning a fake client.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich import box
from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from simulator.cli._aio import run_sync
from simulator.cli._common import console, fail
from simulator.cli._models import make_client, model_settings

if TYPE_CHECKING:
    from judges.room_audit import HumanRealOrSimulated, RealOrSimulated


def _p(v: float | None, ci: tuple[float, float] | None) -> str:
    if v is None:
        return "-"
    return f"{v:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else "")


def render(result: RealOrSimulated) -> list[RenderableType]:
    """The accuracies with their intervals, then one row per case."""
    t = Table(
        title=f"Real or simulated? {result.scored} pair(s) in {result.clusters} {result.cluster}(s), check model "
        f"{escape(result.model)}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    t.add_column("measure", overflow="fold")
    t.add_column("value [95% CI]", justify="right")
    t.add_row("accuracy (order-averaged P of the real line)", _p(result.accuracy, result.accuracy_ci))
    t.add_row("hard-choice accuracy", _p(result.hard_accuracy, result.hard_accuracy_ci))
    t.add_row("lean to Line A (P)", _p(result.p_line_a, None))
    t.add_row("pairs failed (not scored)", str(result.failed))
    t.add_row("simulated turns without a real line", str(result.unmatched))
    out: list[RenderableType] = [t]
    if result.cases:
        c = Table(box=box.SIMPLE_HEAD)
        c.add_column("case", overflow="fold")
        c.add_column("pairs", justify="right")
        c.add_column("accuracy", justify="right")
        pairs = {p.pair_id: p for p in result.pairs}
        for case, n in result.cases.items():
            ps = [r.p_real for r in result.readings if r.p_real is not None and pairs[r.pair_id].case_id == case]
            c.add_row(escape(case), str(n), f"{sum(ps) / len(ps):.2f}" if ps else "-")  # type: ignore[arg-type]
        out.append(c)
    note = (
        "0.5 = the check model cannot tell a real member line from a simulated one; each pair asked in both orders, "
        f"with a neutral frame (no preceding turns); interval: cluster bootstrap over {result.cluster}s."
    )
    if result.note:
        note += f" {result.note}."
    out.append(Text(note + "\n", style="dim"))
    for r in result.readings:
        if r.failure:
            out.append(Text(f"failed: {r.pair_id}: {r.failure}", style="yellow"))
    return out


def render_human(result: HumanRealOrSimulated) -> Table:
    t = Table(title="Real or simulated? human raters", title_justify="left", box=box.SIMPLE_HEAD)
    t.add_column("measure", overflow="fold")
    t.add_column("value", justify="right")
    t.add_row("choices (raters x items)", f"{result.ratings} ({len(result.raters)} x {result.items})")
    t.add_row("accuracy [95% CI]", _p(result.accuracy, result.accuracy_ci))
    t.add_row("confusion rate (simulated taken for real)", _p(result.confusion, None))
    for rater, acc in result.by_rater.items():
        t.add_row(f"  {escape(rater)}", f"{acc:.2f}")
    if result.unknown:
        t.add_row("rows not scored (unknown item or value)", str(result.unknown))
    return t


def run_real_or_simulated(
    run_dirs: list[Path],
    rescue: Path | None,
    *,
    check_model: str | None,
    rate_batch: Path | None,
    as_json: bool,
    no_cache: bool,
) -> None:
    from judges.room_audit import pairs_from_runs, real_or_simulated, write_rating_batch

    if rescue is None:
        raise fail("--real-or-simulated needs --rescue PATH: the RESCUE samples the derived cases came from")
    pairs, unmatched, runs = pairs_from_runs(run_dirs, rescue)
    if not pairs:
        raise fail(
            "--real-or-simulated: no pairs: no RESCUE-derived session in these runs has its sample in "
            f"{escape(str(rescue))} (or none has a member line of 3 words or more)"
        )
    if rate_batch is not None:
        paths = write_rating_batch(pairs, rate_batch, records=[r for recs in runs.values() for r in recs])
        if not as_json:
            console.print(
                f"rating batch: {escape(paths.items)} ({paths.items_count} item(s); `rescue-sim serve --rate` it); "
                f"key (keep from raters): {escape(paths.key)}"
            )
    settings = model_settings(None, roles={"check": check_model}, no_cache=no_cache)
    model = settings.model_for("check")
    from simulator.cli._render import Tally, Waiting
    from simulator.llm.progress import watching

    with Waiting(console) as waiting, watching(waiting.hook):  # questions done/total with an ETA, on a terminal
        waiting.judging = Tally("real or simulated", 2 * len(pairs))
        result = run_sync(real_or_simulated(pairs, make_client(settings), model, unmatched=unmatched))
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
        return
    for block in render(result):
        console.print(block)


def score_rated(key: Path, as_json: bool) -> None:
    """Score every rater sheet beside the batch the key belongs to (`<batch>.<rater>.ratings.jsonl`)."""
    from judges.room_audit import score_rating_sheets

    if not key.name.endswith(".key.json") or not key.is_file():
        raise fail(f"--rated {escape(str(key))}: pass the .key.json written with --rate-batch")
    stem = key.name.removesuffix(".key.json")
    sheets = sorted(key.parent.glob(f"{stem}.*.ratings.jsonl"))
    if not sheets:
        raise fail(f"--rated {escape(str(key))}: no rater sheet ({stem}.<rater>.ratings.jsonl) beside it yet")
    result = score_rating_sheets(key, sheets)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        console.print(render_human(result))
