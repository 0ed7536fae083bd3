"""`rescue-sim report RUN_DIR... [--html FILE]`: one self-contained HTML file to open from disk, by default
`report.html` in the (first) run folder. Thin over `judges.report.build_report_data` and `render_html`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from simulator.cli._common import console, user_errors

REPORT_NAME = "report.html"


@user_errors
def report(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="One or more run folders.")],
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="HTML file to write (one file; opens offline). Default: report.html in the (first) run folder.",
        ),
    ] = None,
    include_faults: Annotated[
        bool,
        typer.Option(
            "--include-simulator-faults",
            help="Put sessions with simulator faults (the simulated room malfunctioned) back into the leaderboard.",
        ),
    ] = False,
) -> None:
    """Write an offline HTML report: leaderboard, score distributions, filters and a session viewer.

    It goes to report.html in the run folder (the first, for several) unless --html names another file, and the
    command prints where it went. Everything is inline (no network, no CDN); model text is shown as text, never as markup.
    """
    from judges.report import build_report_data, render_html
    from personas.common.files import atomic_write_text

    data = build_report_data(run_dirs, include_faults=include_faults)
    html = html or run_dirs[0] / REPORT_NAME  # beside the run it shows (the first one, for several)
    atomic_write_text(html, render_html(data))
    size = html.stat().st_size
    console.print(
        f"wrote {escape(str(html))} ({size / 1e6:.1f} MB): {len(data.sessions)} session(s), "
        f"{len(data.leaderboard.rows)} supporter(s)"
    )
    faulted = sum(s.simulator_failure for s in data.sessions)
    if faulted:
        how = "put back into" if include_faults else "left out of"
        console.print(f"{faulted} session(s) with simulator faults {how} the leaderboard (marked in the list)")
