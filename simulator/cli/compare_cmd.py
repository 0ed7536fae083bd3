"""`rescue-sim compare RUN_DIR...`: pairwise judgments of supporters on the same case + seed (+ perturbation,
trial), both orders, fitted into Bradley-Terry ratings with bootstrap CIs. The logic lives in `judges.boards._compare`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from simulator.cli._common import EXIT_FAILED, console, err_console, print_path, user_errors
from simulator.cli._models import make_client, model_settings
from simulator.llm.types import is_local

if TYPE_CHECKING:
    from judges.boards._compare import CompareReport


def render(report: CompareReport, width: int = 80) -> list[Table]:
    """The ratings and the win-rate matrix; titles and captions wrap only where `width` (the terminal) ends, not
    at a narrow table's edge."""
    title = (
        f"Bradley-Terry ratings: {len(report.supporters)} supporters, {report.groups} matched groups, "
        f"{len(report.verdicts)} verdicts"
    )
    caption = "rating: log-strength (mean 0), 95% bootstrap CI over matched groups; wins count a tie as half."
    ratings = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        caption=caption,
        caption_justify="left",
        min_width=min(width, max(len(title), len(caption))),
    )
    for col in ("#", "supporter", "rating", "95% CI", "wins"):
        ratings.add_column(col, justify="left" if col == "supporter" else "right")
    for i, r in enumerate(report.ratings, start=1):
        ci = "-" if r.low is None else f"{r.low:+.2f} … {r.high:+.2f}"
        ratings.add_row(str(i), escape(r.supporter), f"{r.rating:+.2f}", ci, f"{r.wins:g}/{r.comparisons}")
    title = "win rate (row beats column; ties half)"
    matrix = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, min_width=min(width, len(title)))
    matrix.add_column("")
    for s in report.supporters:
        matrix.add_column(escape(s), justify="right")
    for a in report.supporters:
        cells = ["—" if a == b else (f"{v:.0%}" if (v := report.win_rate[a].get(b)) is not None else "-")
                 for b in report.supporters]  # fmt: skip
        matrix.add_row(escape(a), *cells)
    return [ratings, matrix]


def position_line(report: CompareReport) -> str:
    p = report.position
    if not p.decided:
        return "position bias: no decided verdicts"
    rate = "-" if p.first_win_rate is None else f"{p.first_win_rate:.0%}"
    bias = "-" if p.bias is None else f"{p.bias:+.2f}"
    return (
        f"position bias: the session shown first won {p.first_wins}, second {p.second_wins}, ties {p.ties} "
        f"(first-win rate {rate}, bias {bias}); both orders agreed on {p.consistent} of {p.pairs_both_orders} pairs"
    )


def fault_lines(report: CompareReport) -> list[str]:
    """How many sessions with simulator faults were left out (or kept), per member model, and which, with why."""
    tally = report.simulator_faults
    if not tally.faulted:
        return []
    lines = [f"simulator faults: {tally.summary()}"]
    lines += [f"  {f.session_id} ({f.supporter}): {'; '.join(f.reasons)}" for f in tally.sessions]
    return lines


@user_errors
def compare(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="Run folders with the same matrix.")],
    judge_models: Annotated[
        str | None,
        typer.Option("--judges", envvar="RESCUE_SIM_JUDGES", help="Comma-separated judge models (a panel)."),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Default model (else RESCUE_SIM_MODEL).")] = None,
    out: Annotated[Path | None, typer.Option(help="Report file (default: <first run>/compare.json).")] = None,
    bootstrap: Annotated[int, typer.Option(min=0, max=100000, help="Bootstrap resamples for the CIs.")] = 500,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Judge only the first N matched groups (a time or cost budget).")
    ] = None,
    include_faults: Annotated[
        bool,
        typer.Option(
            "--include-simulator-faults",
            help="Keep sessions with simulator faults (the simulated room malfunctioned) in the comparison.",
        ),
    ] = False,
) -> None:
    """Rank supporters by pairwise judgments: every pair of supporters that ran the same case, seed,
    perturbation and trial is judged in both orders (ties allowed) and fitted into Bradley-Terry ratings.
    Exit 1 when a verdict failed or was unsupported (they are left out of the ratings), 2 for bad input."""
    from judges.boards._compare import compare_runs, write_report
    from simulator.cli.judge_cmd import parse_judges

    panel = parse_judges(judge_models)
    settings = model_settings(model, roles={"judge": panel[0] if panel else None})
    panel = panel or [settings.model_for("judge")]
    client = make_client(settings)
    done = 0

    def seen(v) -> None:
        nonlocal done
        done += 1
        err_console.print(
            f"[dim]{done}: {escape(v.case_id)} s{v.seed} {escape(v.perturbation)}: {escape(v.first)} vs "
            f"{escape(v.second)} → {v.winner or v.status}[/]"
        )

    at_once = 1 if any(is_local(m) for m in panel) else 4
    report, notes = asyncio.run(
        compare_runs(
            run_dirs,
            client,
            panel,
            bootstrap=bootstrap,
            at_once=at_once,
            on_verdict=seen,
            limit=limit,
            include_faults=include_faults,
        )
    )
    path = write_report(out or Path(run_dirs[0]) / "compare.json", report)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        for table in render(report, console.width):
            console.print(table)
        console.print(escape(position_line(report)))
        for line in fault_lines(report):
            console.print(escape(line))
        for note in notes:
            console.print(f"[dim]{escape(note)}[/]")
        print_path("report written to", path)
    bad = [v for v in report.verdicts if v.status != "ok"]
    for v in bad:
        err_console.print(
            f"[red]{v.status}[/] {escape(v.first_session)} vs {escape(v.second_session)} ({escape(v.judge)}): "
            f"{escape(v.reason)}"
        )
    if bad:
        raise typer.Exit(EXIT_FAILED)
