"""`rescue-sim fidelity RUN_DIR...`: how person-like the simulated room was (no model calls).

A rendering of `judges.fidelity_report`; `--json` prints the same FidelityReport. Exit code 1 when a case's
null-supporter drift (silent supporter, the room softening on its own) is above the threshold. Responsiveness
(how members' states and moves change after each supporter's turns, beside the null drift) and trajectory
separations (`--pair A,B`, and every M run beside `sides:M`) are shown per supporter; with `--rescue`, turn-taking
beside RESCUE's (`judges.room_audit._turn_taking`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from simulator.cli._common import EXIT_FAILED, console, fail, user_errors
from simulator.cli._render import measure_tables
from simulator.cli._responsiveness import render_responsiveness

if TYPE_CHECKING:
    from judges import FidelityReport, FidelitySummary, FloorComparison, SimVsReal, TurnTaking, TurnTakingRow


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _num(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _flags(per100: dict[str, float]) -> str:
    """One failed check per line, most frequent first."""
    return "\n".join(f"{k} {v:g}" for k, v in sorted(per100.items(), key=lambda kv: -kv[1])) or "none"


RUNS_NOTE = (
    "repeats: member turns repeating an earlier turn (verbatim + near-duplicate); re-asked: member turns with a "
    "part re-asked after failed checks; grounded: member turns that bring something of their own case (the card's "
    "facts, people, grievances; an upper bound, see judges/README.md); counsellor voice: turns speaking as a therapist"
    " would (by the phrases and moves the rule knows: a lower bound, see judges/README.md); third person: turns "
    "speaking of their addressee, or of the speaker by name, as someone absent; wrong address: turns speaking by name"
    " to a member the line is not to; fact given away: turns telling the speaker's own card fact as the listener's or"
    " another member's; echo: turns re-saying another speaker's line, I and you read as one seat (unrecorded: not "
    "flagged in the record); "
    "flags: failed checks per 100 member turns (audited from the saved turns; "
    "recorded = still failing when accepted); language: turns off the session's language; gap: mean "
    "|self-report - tracker| intensity / tension."
)


def _summary_rows(summaries: list[FidelitySummary], *, runs: bool) -> list[tuple[str, list[str]]]:
    rows = [("sessions", [str(s.sessions) for s in summaries])] if runs else []
    rows += [
        ("member turns", [str(s.member_turns) for s in summaries]),
        ("repeats", [f"{_pct(s.repetition_rate)} ({s.verbatim_repeats}+{s.near_duplicates})" for s in summaries]),
        ("re-asked", [_pct(s.reask_rate) for s in summaries]),
        ("flags / 100 turns", [_flags(s.flags_per_100) for s in summaries]),
    ]
    if runs:
        rows.append(("recorded / 100", [_flags(s.recorded_flags_per_100) for s in summaries]))
    rows += [
        ("grounded", [_pct(s.room.share("grounded")) for s in summaries]),
        ("counsellor voice", [_pct(s.room.share("counsellor_voice")) for s in summaries]),
        ("third person", [_pct(s.room.share("third_person")) for s in summaries]),
        ("wrong address", [_pct(s.room.share("wrong_address")) for s in summaries]),
        ("fact given away", [_pct(s.room.share("given_away")) for s in summaries]),
        ("figure not on card", [_pct(s.room.share("invented_figure")) for s in summaries]),
        ("another's fact claimed", [_pct(s.room.share("claimed")) for s in summaries]),
        ("echo", [f"{_pct(s.room.share('echo'))} ({s.room.echo_unrecorded} unrecorded)" for s in summaries]),
        ("language", [_pct(s.language_drift) for s in summaries]),
        ("gap", [f"{_num(s.intensity_gap, 1)} / {_num(s.tension_gap, 1)}" for s in summaries]),
    ]
    return rows


def render(report: FidelityReport, width: int = 80) -> list[RenderableType]:
    """Runs as numbered columns (the legend under the table names them), measures as rows, split to fit `width`."""
    title = f"Fidelity: {report.overall.sessions} session(s), {report.overall.member_turns} member turns"
    legend = "\n".join(f"#{i} {run}" for i, run in enumerate(report.by_run, start=1))
    tables: list[RenderableType] = [
        *measure_tables(
            title,
            [f"#{i}" for i in range(1, len(report.by_run) + 1)],
            _summary_rows(list(report.by_run.values()), runs=True),
            width,
        ),
        Text(f"{legend}\n{RUNS_NOTE}\n", style="dim"),  # wrapped to the terminal, not to the table
    ]
    moves = report.overall.moves
    if any(moves.values()):
        t = Table(title="Moves per member", title_justify="left", box=box.SIMPLE_HEAD)
        t.add_column("case / member", overflow="fold")
        t.add_column("turns", justify="right")
        t.add_column("moves (share)", overflow="fold")
        for who, counts in moves.items():
            n = sum(counts.values())
            if n:
                t.add_row(escape(who), str(n), ", ".join(f"{m} {c / n:.0%}" for m, c in counts.items()))
        tables.append(t)
    if report.null_drift:
        drift = report.null_drift
        tables += measure_tables(
            "Null-supporter drift (silent supporter: the room on its own)",
            [d.case_id for d in drift],
            [
                ("sessions", [str(d.sessions) for d in drift]),
                ("member turns", [f"{d.member_turns:g}" for d in drift]),
                ("intensity drop", [_num(d.intensity_drop) for d in drift]),
                ("tension drop", [_num(d.tension_drop) for d in drift]),
                ("softening", [_num(d.softening) for d in drift]),
                ("", ["FLAGGED" if d.flagged else "ok" for d in drift]),
            ],
            width,
        )
        tables.append(
            Text(
                f"softening = mean of the intensity drop and the tension drop, first to last self-report (points, "
                f"positive = softer); flagged above {report.threshold:g}: such a room inflates every score.\n",
                style="dim",
            )
        )
    if report.fault_rate:
        rates = report.fault_rate
        tables += measure_tables(
            "Simulator faults per member model (sessions left out of supporter scores)",
            list(rates),
            [
                ("sessions", [str(r.sessions) for r in rates.values()]),
                ("faulted", [f"{r.faulted} ({_pct(r.rate)})" for r in rates.values()]),
                ("kinds", ["\n".join(f"{k} {n}" for k, n in r.kinds.items()) or "none" for r in rates.values()]),
            ],
            width,
        )
    if report.responsiveness is not None:
        tables += render_responsiveness(report.responsiveness, width)
    for c in report.sim_vs_real:
        tables.extend(render_comparison(c))
    for floor in report.turn_taking:
        who = f"every {floor.group} session ({floor.simulated.sessions})"
        samples = f"{len(floor.real_samples)} RESCUE {floor.group} sample(s) given" if floor.real else "no sample given"
        tables += render_floor(floor, f"Who held the floor: {who} vs {samples}")
    return tables


def _figure(value: float | None, unit: str) -> str:
    return _num(value) if unit == "speakers" else _pct(value)


def _mix(t: TurnTaking | None) -> str:
    if t is None:
        return "-"
    total = sum(t.addressees.values())
    shares = "/".join(f"{100 * n / total:.0f}" for n in t.addressees.values()) + "%" if total else "-"
    neither = f", {t.unaddressed} to neither" if t.unaddressed else ""
    return f"{shares} (n={total}{neither})"


def _distance(row: TurnTakingRow, value: float | None) -> str:
    return _num(value, 3) if row.metric == "jensen_shannon" or row.unit == "speakers" else _pct(value)


def render_floor(floor: FloorComparison, title: str) -> list[RenderableType]:
    """Turn shares and addressees beside RESCUE's: one row per figure, each with its distance."""
    published = floor.published is not None
    t = Table(title=escape(title), title_justify="left", box=box.SIMPLE_HEAD)
    cols = ["figure", "simulated", "RESCUE", "distance"] + (["published", "vs published"] if published else [])
    for col in cols:
        t.add_column(col, justify="left" if col == "figure" else "right", overflow="fold")
    for row in floor.rows:
        if row.unit == "mix":
            cells = [_mix(floor.simulated), _mix(floor.real), _distance(row, row.distance)]
        else:
            cells = [_figure(row.simulated, row.unit), _figure(row.real, row.unit), _distance(row, row.distance)]
        if published:
            cells += [_figure(row.published, row.unit), _distance(row, row.distance_published)]
        t.add_row(escape(row.figure), *cells)
    note = (
        "distance: |simulated - RESCUE| (points of share, or speakers); the addressee mix (% to the counsellor / "
        "another member / both): Jensen-Shannon, 0-1. Speakers count the counsellor, as RESCUE does; a RESCUE sample is one session. "
        "Addressees: RESCUE's own `target` label of each row; simulated: whom the floor gave each member turn."
    )
    if published:
        note += f" Published: {floor.published.source}, over all {floor.published.samples} samples."
    if floor.left_out:
        note += f" {floor.left_out} silent-supporter session(s) left out (no counsellor by design)."
    return [t, Text(note + "\n", style="dim")]


def render_comparison(c: SimVsReal) -> list[RenderableType]:
    t = Table(
        title=f"Simulated vs real: {c.case_id} ({c.sessions} session(s), {c.member_turns} member turns) vs RESCUE "
        f"{c.sample_id} ({c.real_rows} client rows)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        caption="distance: Jensen-Shannon (0 same ... 1 disjoint) or Wasserstein (in the measure's units).",
        caption_justify="left",
    )
    for col, just in [("measure", "left"), ("distance", "right"), ("metric", "left"), ("simulated", "left"),
                      ("RESCUE", "left")]:  # fmt: skip
        t.add_column(col, justify=just, overflow="fold")
    for r in c.rows:
        t.add_row(
            escape(r.measure),
            _num(r.distance, 3),
            "JS" if r.metric == "jensen_shannon" else "W1",
            escape(f"{r.simulated} (n={r.n_simulated})"),
            escape(f"{r.real} (n={r.n_real})"),
        )
    out = [t]
    if c.transitions:
        tr = Table(
            title="— pattern transitions by from-pattern (tracker's view vs gold rows)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
        )
        for col, just in [("from", "left"), ("JS", "right"), ("simulated next", "left"), ("RESCUE next", "left")]:
            tr.add_column(col, justify=just, overflow="fold")
        for row in c.transitions:
            tr.add_row(
                escape(row.from_pattern),
                _num(row.distance, 3),
                escape(", ".join(f"{k} {v}" for k, v in row.simulated.items()) or "-"),
                escape(", ".join(f"{k} {v}" for k, v in row.real.items()) or "-"),
            )
        out.append(tr)
    if c.turn_taking is not None:
        out += render_floor(c.turn_taking, f"— who held the floor: {c.case_id} vs {c.sample_id}")
    return out


# -- options (one line each in the signature below) ------------------------------------------------------------

RunDirsArg = Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="One or more run folders.")]
RescueOpt = Annotated[
    Path | None,
    typer.Option(
        "--rescue",
        envvar="RESCUE_SIM_RESCUE",
        help="RESCUE samples (.jsonl/.json or a folder), or an `import-rescue` folder of *.gold.json: compare "
        "RESCUE-derived cases with the samples they came from.",
    ),
]
ThresholdOpt = Annotated[
    float, typer.Option(help="Null-supporter drift (points of self-softening) above which a case is flagged.")
]
PairOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--pair",
        metavar="A,B",
        help="Two supporters whose final self-reported states are compared (repeatable); every M run beside "
        "sides:M is compared anyway.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the report as JSON.")]
RealOrSimulatedOpt = Annotated[
    bool,
    typer.Option(
        "--real-or-simulated",
        help="Instead of the report: a blind test (needs --rescue; calls the check model): matched pairs of a "
        "real member line (RESCUE sample) and a simulated one (its derived case), both orders; prints how often "
        "the check model picks the real one, with a cluster-bootstrap CI (0.5: cannot tell).",
    ),
]
CheckModelOpt = Annotated[
    str | None,
    typer.Option("--check-model", help="Model for --real-or-simulated (default: the check role's model)."),
]
RateBatchOpt = Annotated[
    Path | None,
    typer.Option(
        "--rate-batch",
        metavar="FILE.jsonl",
        help="With --real-or-simulated: also write the pairs as a human rating batch (`serve --rate FILE`) and "
        "its key (which line is real) beside it.",
    ),
]
RatedOpt = Annotated[
    Path | None,
    typer.Option(
        "--rated",
        metavar="KEY.json",
        help="Score the raters' sheets of a --rate-batch with its key (accuracy, confusion rate); alone, the "
        "run folders are not read.",
    ),
]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="--real-or-simulated: bypass the call cache.")]


def _parse_pairs(texts: list[str] | None) -> list[tuple[str, str]]:
    """`--pair A,B` values as (A, B); exit code 2 on one that is not two specs."""
    pairs = []
    for text in texts or []:
        a, sep, b = text.partition(",")
        if not sep or not a.strip() or not b.strip():
            raise fail(f"--pair {escape(text)}: expected two supporter specs as A,B (e.g. --pair M,sides:M)")
        pairs.append((a.strip(), b.strip()))
    return pairs


def _print_report(report: FidelityReport, rescue: Path | None) -> None:
    for table in render(report, console.width):
        console.print(table)
    for line in report.unreadable:
        console.print(f"[yellow]unreadable:[/] {escape(line)}")
    if rescue is not None and report.rescue_missing:
        console.print(f"note: no RESCUE sample for {escape(', '.join(report.rescue_missing))} in {escape(str(rescue))}")
    rescue_cases = any(s.case_id.startswith("rescue-") for s in report.sessions)
    if rescue is None and rescue_cases:
        console.print("note: RESCUE-derived cases found; pass --rescue PATH to compare them with their samples")


@user_errors
def fidelity(
    run_dirs: RunDirsArg,
    rescue: RescueOpt = None,
    threshold: ThresholdOpt = 1.0,
    pair: PairOpt = None,
    as_json: JsonOpt = False,
    real_or_simulated: RealOrSimulatedOpt = False,
    check_model: CheckModelOpt = None,
    rate_batch: RateBatchOpt = None,
    rated: RatedOpt = None,
    no_cache: NoCacheOpt = False,
) -> None:
    """Measure how person-like the simulated members were: repeats, re-asks, failed checks by kind, language
    drift, moves per member, insider-vs-tracker gap, null-supporter drift, responsiveness to each supporter
    (state changes and moves after its turns vs the null drift), trajectory separation, and (with --rescue)
    simulated vs real families and who held the floor (speakers, counsellor share, top member share, addressees)
    beside RESCUE's samples and published figures. Exit code 1 when a case's null-supporter drift is flagged."""
    from judges import fidelity_report

    pairs = _parse_pairs(pair)
    if rescue is not None and not rescue.exists():
        raise fail(
            f"--rescue {escape(str(rescue))}: no such file or folder; pass RESCUE samples or an import-rescue folder"
        )
    if real_or_simulated or rated is not None:
        from simulator.cli import _real_or_simulated as ros

        if real_or_simulated:
            ros.run_real_or_simulated(
                run_dirs, rescue, check_model=check_model, rate_batch=rate_batch, as_json=as_json, no_cache=no_cache
            )
        if rated is not None:
            ros.score_rated(rated, as_json)
        return
    report = fidelity_report(run_dirs, rescue=rescue, threshold=threshold, pairs=pairs)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        _print_report(report, rescue)
    if any(d.flagged for d in report.null_drift):
        raise typer.Exit(EXIT_FAILED)


def render_by_supporter(summaries: dict[str, FidelitySummary], width: int = 80) -> list[RenderableType]:
    """The leaderboard's fidelity section: one column per supporter (`leaderboard --fidelity`)."""
    tables = measure_tables(
        "— fidelity of the simulated room, per supporter",
        list(summaries),
        _summary_rows(list(summaries.values()), runs=False),
        width,
    )
    note = (
        "repeats: verbatim + near-duplicate member turns; grounded, counsellor voice, third person, wrong address, "
        "fact given away, echo: the room measures (share of member turns); flags: failed checks per 100 member turns "
        "(rescue-sim fidelity RUN_DIR for the details)."
    )
    return [*tables, Text(note, style="dim")]
