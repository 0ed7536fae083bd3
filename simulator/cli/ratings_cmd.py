"""`rescue-sim ratings import FILE --run RUN_DIR`: human ratings in, judge-human agreement out.

Thin over `judges.ratings.import_ratings`; every problem is listed with its line, and nothing is stored then.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from simulator.cli._common import EXIT_USAGE, console, err_console, fail, user_errors

if TYPE_CHECKING:
    from judges.ratings import HumanAgreement

app = typer.Typer(no_args_is_help=True, help="Human ratings: import them and measure the judges against them.")


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
    console.print(agreement_table(result.agreement))


@app.command("show")
@user_errors
def show(run: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="Run folders with ratings.")]) -> None:
    """Judge-human agreement over the ratings already stored in the run folder(s)."""
    from judges.ratings import runs_agreement

    rows = runs_agreement(run)
    if not rows:
        console.print("no human ratings stored yet (rescue-sim ratings import FILE --run RUN_DIR)")
        return
    console.print(agreement_table(rows))
