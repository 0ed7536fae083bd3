"""`rescue-sim ratings import FILE --run RUN_DIR`: human ratings in, judge-human agreement out; `ratings show`:
the batches (with their design), agreement and the weighted estimates; `ratings plan`: how many more ratings.

Thin over `judges.ratings`; every problem is listed with its line, and nothing is stored then.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from simulator.cli._common import EXIT_USAGE, console, err_console, fail, flag_names, print_path, user_errors

if TYPE_CHECKING:
    from judges.ratings import BatchSummary, HumanAgreement, RatingsPlan

app = typer.Typer(
    no_args_is_help=True, help="Human ratings: import them, measure the judges, plan where the next ones pay most."
)


def _num(v: float | None, pct: bool = False, digits: int = 3) -> str:
    if v is None:
        return "-"
    return f"{v:.0%}" if pct else f"{v:.{digits}f}"


def agreement_table(rows: list[HumanAgreement]) -> Table:
    from simulator.cli.leaderboard_cmd import header

    table = Table(
        title="Judge-human agreement",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        caption=(
            "n: human ratings / items. Each rating is compared with the judge panel's score for its item. exact, "
            "±1: rounded panel mean; MAE, ρ (Spearman): panel mean; κw: Cohen's kappa, quadratic weights; α: "
            "Krippendorff (interval, panel + each rater); among raters, on items two or more rated: h.exact, h.α."
        ),
        caption_justify="left",
    )
    table.add_column("dimension", overflow="fold", max_width=20)
    for col in ("n", "exact", "±1", "MAE", "ρ", "κw", "α", "h.exact", "h.α"):
        table.add_column(col, justify="right", no_wrap=True)
    for a in rows:
        table.add_row(
            escape(header(a.dimension)),
            f"{a.ratings}/{a.items}",
            _num(a.exact, True),
            _num(a.within_one, True),
            _num(a.mae, digits=2),
            _num(a.spearman, digits=2),
            _num(a.weighted_kappa, digits=2),
            _num(a.alpha, digits=2),
            _num(a.human_exact, True) if a.human_items else "-",
            _num(a.human_alpha, digits=2) if a.human_items else "-",
        )
    return table


@app.command("import")
@user_errors
@flag_names(fmt="--format", run_dirs="--run")
def import_(
    file: Annotated[
        Path, typer.Argument(metavar="FILE", help="Label Studio JSON export, Argilla records, CSV, JSONL.")
    ],
    run: Annotated[list[Path], typer.Option("--run", "-r", help="Run folder the items came from (repeat).")],
    fmt: Annotated[
        str | None, typer.Option("--format", "-f", help="label-studio, argilla, csv or jsonl (default: detected).")
    ] = None,
) -> None:
    """Validate and store human ratings in the run folder(s), then report judge-human agreement per dimension."""
    from judges.ratings import RatingsError, import_ratings

    try:
        result = import_ratings(file, run, fmt)
    except RatingsError as err:
        for line in err.lines():
            err_console.print(escape(line), soft_wrap=True)
        raise fail(escape(f"{len(err.problems)} problem(s) in {file}; nothing was stored"), EXIT_USAGE) from None
    added = ", ".join(f"{n} into {escape(r)}" for r, n in result.added.items() if n)
    console.print(
        f"imported {sum(result.added.values())} rating(s) ({result.format}) from {len(result.raters)} rater(s): {added}"
    )
    designs = ", ".join(f"{d} {k}" for d, k in result.by_design.items())
    console.print(f"designs: {designs} (only known-probability ratings correct the leaderboard's means)")
    console.print(agreement_table(result.agreement))


def batches_table(batches: list[BatchSummary]) -> Table:
    table = Table(
        title="Rating batches",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        caption=(
            "design: random, stratified or active batches know each item's inclusion probability, so their ratings "
            "correct the means (weighted by 1/pi); unknown-probability picks (disagreement, extremes, unstable, "
            "pairs) count in agreement only."
        ),
        caption_justify="left",
    )
    table.add_column("batch", no_wrap=True)
    table.add_column("exported", no_wrap=True)
    table.add_column("design", overflow="fold", max_width=34)
    for col in ("items", "rated"):
        table.add_column(col, justify="right", no_wrap=True)
    for b in batches:
        table.add_row(
            b.id,
            f"{b.created_at:%Y-%m-%d %H:%M}",
            escape(", ".join(f"{d} {k}" for d, k in b.designs.items())),
            str(b.items),
            str(b.rated),
        )
    return table


@app.command("show")
@user_errors
def show(run: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="Run folders with ratings.")]) -> None:
    """The export batches and their designs, judge-human agreement, and the 1/pi-weighted means (IPW-PPI)."""
    from judges.ratings import batch_summaries, item_index, ppi_estimates, runs_agreement
    from simulator.cli._human_render import estimate_notes, estimates_tables
    from simulator.cli.leaderboard_cmd import header

    batches = batch_summaries(run)
    if batches:
        console.print(batches_table(batches))
    index = item_index(run)
    rows = runs_agreement(run, index)
    if not rows:
        console.print("no human ratings stored yet (rescue-sim ratings import FILE --run RUN_DIR)")
        return
    console.print(agreement_table(rows))
    estimates = ppi_estimates(run, index=index)
    for table in estimates_tables(estimates, header):
        console.print(table)
    for note in estimate_notes(estimates, 0.95, header):
        console.print(escape(note), style="dim")


def plan_table(plan: RatingsPlan) -> Table:
    from simulator.cli.leaderboard_cmd import header

    table = Table(
        title=f"More active ratings for a {round(plan.confidence * 100)}% CI of width {plan.target_width:g}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        caption=(
            "rated: ratings of known inclusion probability / judged items; width: the IPW-PPI interval now; "
            "judge part: the width no number of ratings goes below; more: active ratings to draw "
            "(export --select active --plan FILE)."
        ),
        caption_justify="left",
    )
    table.add_column("", overflow="fold", max_width=24)
    for col in ("rated", "width", "judge part", "more"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("note", overflow="fold", max_width=26)
    current = None
    for r in plan.rows:
        if r.supporter != current:
            current = r.supporter
            table.add_row(f"[bold]{escape(r.supporter)}[/]", "", "", "", "", "")
        table.add_row(
            f" {escape(header(r.dimension))}",
            f"{r.rated}/{r.items}",
            "-" if r.width is None else f"{r.width:.2f}",
            f"{r.judge_floor:.2f}",
            "-" if r.more is None else str(r.more),
            escape(r.note),
        )
    return table


@app.command("plan")
@user_errors
def plan(
    run: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="Judged run folders (ratings optional).")],
    target_width: Annotated[
        float, typer.Option("--target-width", "-w", help="Wanted width of the 95% CI, in score points (e.g. 0.5).")
    ],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the plan as JSON for `export --select active --plan`.")
    ] = None,
) -> None:
    """Per supporter and dimension: how many more active-sampled ratings would bring the CI to the target width."""
    from judges.ratings import plan_ratings
    from personas.common.files import atomic_write_text

    result = plan_ratings(run, target_width)
    console.print(plan_table(result))
    if out is not None:
        atomic_write_text(out, result.model_dump_json(indent=1))
        print_path("wrote", out)
        print_path("next:", f"rescue-sim export RUN_DIR --select active --plan {out}")
