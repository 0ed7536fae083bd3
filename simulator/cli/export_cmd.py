"""`rescue-sim export RUN_DIR... --select STRATEGY[:N] --n N --format FORMAT --out FILE`: items for human raters.

Thin over `judges.ratings.export_items`: choose units, blind them, write the rater file(s) and the key file, and
record the batch (each item's inclusion probability) in the runs' ratings store. `--plan` (from `ratings plan`)
sizes `--select active` per supporter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from simulator.cli._common import console, flag_names, print_path, user_errors


@user_errors
@flag_names(fmt="--format", caps="--cap", dimensions="--dimension", budgets="--plan")
def export(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="One or more judged run folders.")],
    select: Annotated[
        list[str],
        typer.Option(
            "--select",
            "-s",
            help="Strategy, optionally with its count (STRATEGY:N); repeat to combine: disagreement, unstable, "
            "extremes, pairs (deterministic: for agreement, not means), stratified, random, active (known "
            "inclusion probability: their ratings correct the leaderboard).",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write (siblings: .key.json, config, ...).")],
    n: Annotated[int | None, typer.Option("--n", min=1, help="Items in all; shared by strategies without :N.")] = None,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="jsonl, csv, label-studio (tasks + config XML) or argilla.")
    ] = "jsonl",
    unit: Annotated[
        str, typer.Option("--unit", help="session (whole sessions) or intervention (one supporter turn each).")
    ] = "session",
    window: Annotated[int, typer.Option("--window", help="Intervention units: turns of context before it.")] = 6,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the random parts of every strategy.")] = 0,
    cap: Annotated[
        list[str] | None,
        typer.Option("--cap", help="At most N items per case, group, supporter, perturbation or session: KEY=N."),
    ] = None,
    dimension: Annotated[
        list[str] | None, typer.Option("--dimension", "-d", help="Rate only these dimensions (repeat).")
    ] = None,
    plan: Annotated[
        Path | None,
        typer.Option("--plan", help="A `ratings plan --out` file: how many `active` items to draw per supporter."),
    ] = None,
) -> None:
    """Choose items for human raters from judged runs and write them blinded, in a rating tool's format.

    Items already rated in an earlier `ratings import` are skipped; no item is picked twice. The supporter is
    shown as an alias; the key (alias -> supporter, item -> session, inclusion probability) goes to FILE's
    `.key.json` sibling, and the batch is recorded in each run's ratings.json.
    """
    from judges.ratings import export_items, read_plan

    budgets = read_plan(plan).budgets(unit) if plan is not None else None
    result = export_items(
        run_dirs,
        select=select,
        out=out,
        fmt=fmt,
        n=n,
        unit=unit,  # type: ignore[arg-type]
        window=window,
        seed=seed,
        caps=cap or [],
        dimensions=dimension or None,
        budgets=budgets,
    )
    by = ", ".join(f"{k} {v}" for k, v in result.by_strategy.items())
    console.print(f"exported {result.items} item(s) ({by}), batch {result.batch}")
    designs = ", ".join(f"{k} {v}" for k, v in result.by_design.items())
    console.print(f"designs: {designs} (only known-probability items correct the leaderboard's means)")
    for strategy, why in result.selection.unknown_pi.items():
        console.print(f"note: {strategy}: {escape(why)}")
    for strategy, missing in result.selection.shortfall.items():
        console.print(f"note: {strategy}: {missing} item(s) short (not enough candidates)")
    if result.selection.already_rated:
        console.print(f"skipped {result.selection.already_rated} item(s) already rated in an earlier import")
    for reason, count in result.skipped_sessions.items():
        console.print(f"[dim]left out {count} session(s): {escape(reason)}[/]")
    for f in result.files:
        print_path("wrote", f)
    print_path("wrote", result.key, "(the key: keep it away from raters)")
