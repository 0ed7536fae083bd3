"""`rescue-sim judge RUN_DIR`: (re)judge saved sessions without re-simulating. The logic lives in `judges`.

The model client's disk cache makes a rerun with the same judges and rubric cheap. Tests replace
`simulator.llm.settings.make_client` with a factory returning a fake client.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from simulator.cli._common import (
    EXIT_FAILED,
    JudgeModeChoice,
    JudgeModeOpt,
    console,
    err_console,
    print_path,
    user_errors,
)
from simulator.cli._models import make_client, model_settings
from simulator.cli.leaderboard_cmd import header

if TYPE_CHECKING:
    from judges import SessionJudgment
    from judges.scoring import LabelledShare
    from simulator.records import SessionRecord
    from simulator.runfolder import RunFolder


def parse_judges(text: str | None) -> list[str]:
    """`m1, m2,m1` -> ["m1", "m2"] (order kept, duplicates and blanks dropped)."""
    return list(dict.fromkeys(p.strip() for p in (text or "").split(",") if p.strip()))


def judged_lines(trials: int):
    """`judged S trial 1 (ok) 3/8` on stderr as each judgment is written (`judges.scoring.judge_all`'s `on_judged`)."""

    def line(record: SessionRecord, trial: int, judgment: SessionJudgment, done: int, total: int) -> None:
        label = f" trial {trial}" if trials > 1 else ""
        err_console.print(f"[dim]judged {escape(record.session_id)}{label} ({judgment.status.value}) {done}/{total}[/]")

    return line


def render_stability(stability) -> Table:
    table = Table(
        title=f"judge stability over {stability.trials} trials ({stability.sessions} sessions, "
        f"temperature {stability.temperature:g})",
        title_justify="left",
        caption="flip rate: share of items whose trials do not all agree; pairwise: share of trial pairs that "
        "differ; spread: mean max - min of scale scores",
        caption_justify="left",
    )
    for col in ("dimension", "items", "flip rate", "pairwise", "spread"):
        table.add_column(col, justify="left" if col == "dimension" else "right")
    for d in stability.dimensions:
        table.add_row(
            header(d.dimension),
            str(d.items),
            f"{d.flip_rate:.0%}" if d.flip_rate is not None else "-",
            f"{d.pairwise_disagreement:.0%}" if d.pairwise_disagreement is not None else "-",
            f"{d.mean_spread:.2f}" if d.mean_spread is not None else "-",
        )
    return table


def _cell(value: float | None, measure: str, sure: LabelledShare | None = None, *, short: bool = False) -> str:
    """`3.40`, `20%`; a labelled share with how sure its turns were: `100% (4/4, P 0.55 unsure)`, or, `short`,
    `100%?` when unsure."""
    if value is None:
        return "-"
    if measure == "mean":
        return f"{value:.2f}"
    if sure is None:
        return f"{value:.0%}"
    if short:
        return f"{value:.0%}" + ("?" if sure.unsure else "")
    return f"{value:.0%} ({sure.note()})"


def render(judgments: list[SessionJudgment], *, validity: bool = False) -> Table:
    """The judges' numbers per session; `validity` adds, for a few sessions, what each number is worth on the judge
    model that produced it (its validity card) or "not validated"."""
    from judges import session_values
    from judges.scoring import SURE_P, labelled_shares

    dims: list[tuple[str, str]] = []
    for j in judgments:
        for d in j.rubric.active:
            shown = d.about == "supporter" and (d.kind != "label" or d.neutral is not None)
            if shown and d.id not in [x for x, _ in dims]:
                dims.append((d.id, "mean" if d.kind == "scale" else "rate"))
    if len(judgments) <= 4:  # few sessions: one row per dimension reads better than 15 narrow columns
        return _render_tall(judgments, dims, validity=validity)
    table = Table(
        title=f"{len(judgments)} sessions judged",
        title_justify="left",
        caption="scales: mean over items (1-5); sides taken, unsafe turns: share of supporter turns (sides taken, "
        "checklist: the expected share; unsafe turns: ? when the labelled turns were read under P "
        f"{SURE_P:.2f}, unsure); strategy=stated: share where the judge's label equals the supporter's",
        caption_justify="left",
    )
    for col in ("session", "supporter", "status"):
        table.add_column(col, overflow="fold")
    for d, _ in dims:
        table.add_column(header(d), justify="right", overflow="fold")
    table.add_column("copied", justify="right")
    table.add_column("repeated", justify="right")
    table.add_column("voiced", justify="right")
    table.add_column("sim. failure", overflow="fold")
    for j in judgments:
        values, sure = session_values(j), labelled_shares(j)
        cells = [_cell(values[d][1] if d in values else None, m, sure.get(d), short=True) for d, m in dims]
        sim = escape(j.simulator_failure_reason or "") if j.simulator_failure else "-"
        lines = [str(len(j.copied_lines)), str(len(j.repeated_lines)), str(len(j.voiced_lines))]
        table.add_row(escape(j.session_id), escape(j.supporter), j.status.value, *cells, *lines, sim)
    return table


def _turns(lines) -> str:
    """`0`, or `2: t3, t7`: how many supporter turns, and which."""
    return f"{len(lines)}: " + ", ".join(f"t{x.turn}" for x in lines) if lines else "0"


def print_judgments(judgments: list[SessionJudgment], *, validity: bool = False) -> None:
    """`render` and, below it, each copied or repeated supporter line of up to four sessions (`line_notes`)."""
    from simulator.cli._render import line_notes

    console.print(render(judgments, validity=validity))
    if len(judgments) <= 4:
        for j in judgments:
            for line in line_notes(j, session=len(judgments) > 1, width=console.width):
                console.print(line)


def _render_tall(judgments: list[SessionJudgment], dims: list[tuple[str, str]], *, validity: bool = False) -> Table:
    from judges import session_values
    from judges.scoring import SURE_P, labelled_shares
    from simulator.cli._validity import judgment_briefs

    table = Table(
        title=f"{len(judgments)} session(s) judged",
        title_justify="left",
        caption="scales: mean over items (1-5); rates: share of supporter turns (sides taken, checklist: expected "
        f"share; labelled shares: turns labelled / judged, P the mean probability behind them, under {SURE_P:.2f} "
        "unsure)",
        caption_justify="left",
    )
    table.add_column("dimension", no_wrap=True)
    for j in judgments:
        table.add_column(f"{escape(j.session_id)}\n[dim]{escape(j.supporter)} · {j.status.value}[/]", justify="right")
    if validity:
        table.add_column("judge vs RESCUE gold", overflow="fold")
    values = [session_values(j) for j in judgments]
    sure = [labelled_shares(j) for j in judgments]
    briefs = [judgment_briefs(j, [d for d, _ in dims]) for j in judgments] if validity else []
    for d, measure in dims:
        worth = ["; ".join(dict.fromkeys(b[d] for b in briefs))] if validity else []
        cells = (_cell(v[d][1] if d in v else None, measure, u.get(d)) for v, u in zip(values, sure, strict=True))
        table.add_row(header(d), *cells, *worth)
    extra = [""] if validity else []
    table.add_row("copied turns", *(_turns(j.copied_lines) for j in judgments), *extra)
    table.add_row("repeated turns", *(_turns(j.repeated_lines) for j in judgments), *extra)
    table.add_row("voiced turns", *(_turns(j.voiced_lines) for j in judgments), *extra)
    table.add_row(
        "simulator failure",
        *(escape(j.simulator_failure_reason or "yes") if j.simulator_failure else "-" for j in judgments),
        *([""] if validity else []),
    )
    return table


def _fit_weights(run_dir: Path, out: Path) -> None:
    """`judge --fit-weights`: fitted item weights, their held-out agreement, and the rubric file holding them."""
    import yaml

    from judges.ratings import fit_item_weights, weights_rubric

    fitted = fit_item_weights([run_dir])
    table = Table(
        title=f"checklist item weights from the ratings in {escape(str(run_dir))}",
        title_justify="left",
        caption="held out: folds by session; MAE on the scale, Spearman rho with the ratings; equal = today's weights",
        caption_justify="left",
    )
    for col in ("dimension", "rated", "sessions", "MAE equal", "MAE fitted", "rho equal", "rho fitted", "weights"):
        table.add_column(col, justify="left" if col in ("dimension", "weights") else "right", overflow="fold")

    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for f in fitted:
        weights = ", ".join(f"{k} {w:.2f}" for k, w in f.weights.items()) or escape(f.note)
        table.add_row(
            header(f.dimension),
            str(f.ratings),
            str(f.sessions),
            num(f.equal_mae),
            num(f.fitted_mae),
            num(f.equal_rho),
            num(f.fitted_rho),
            weights,
        )
    console.print(table)
    rubric = weights_rubric(fitted)
    if not rubric["dimensions"]:
        err_console.print(
            "[red]nothing fitted[/]: RUN_DIR needs imported ratings (`rescue-sim ratings import`) of sessions judged "
            "with --judge-mode checklist, 6+ items over 2+ sessions per dimension"
        )
        raise typer.Exit(EXIT_FAILED)
    out.write_text(
        "# checklist item weights fitted by `rescue-sim judge --fit-weights` on the ratings of "
        f"{run_dir}; judge other runs with --rubric {out.name}\n" + yaml.safe_dump(rubric, sort_keys=False),
        encoding="utf-8",
    )
    console.print(
        f"weights written to {escape(str(out))} (use: rescue-sim judge OTHER_RUN --rubric {escape(str(out))})"
    )


JudgesOpt = Annotated[
    str | None,
    typer.Option(
        "--judges",
        envvar="RESCUE_SIM_JUDGES",
        help="Comma-separated judge model ids: a panel whose agreement is reported. Default: --model.",
    ),
]
PerInterventionOpt = Annotated[
    bool | None,
    typer.Option(
        "--per-intervention/--whole-session",
        help="One judge call per supporter turn, or one per session. Default: per turn when every judge is "
        "a local/ model (small models), else per session.",
        show_default=False,
    ),
]
RepeatOpt = Annotated[
    int,
    typer.Option(
        "--repeat",
        min=1,
        max=50,
        help="Judge each session K times as distinct trials and report per dimension how often verdicts flip.",
    ),
]
FitWeightsOpt = Annotated[
    Path | None,
    typer.Option(
        "--fit-weights",
        metavar="OUT.yaml",
        help="Judge nothing: learn checklist item weights from the ratings imported into RUN_DIR (`ratings "
        "import`) and its checklist judgments, report held-out agreement, and write them as a rubric to judge "
        "other runs with (--rubric OUT.yaml).",
    ),
]


@user_errors
def judge(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="Run folder (manifest.json, sessions/).")],
    judge_models: JudgesOpt = None,
    rubric: Annotated[
        Path | None, typer.Option("--rubric", help="YAML file that adds or overrides rubric dimensions.")
    ] = None,
    per_intervention: PerInterventionOpt = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Default model (else RESCUE_SIM_MODEL, else the embedded local model)."),
    ] = None,
    repeat: RepeatOpt = 1,
    temperature: Annotated[
        float,
        typer.Option(min=0.0, max=2.0, help="Judge sampling temperature (0: deterministic local judges never flip)."),
    ] = 0.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the model call cache.")] = False,
    judge_mode: JudgeModeOpt = JudgeModeChoice.checklist,
    fit_weights: FitWeightsOpt = None,
) -> None:
    """Judge a run's saved sessions with an LLM judge panel, without re-simulating.

    Writes judgments/<session_id>.json; failed and incomplete sessions are skipped and listed. With --repeat K,
    trials 1..K-1 go to judgments/trials/<session_id>/<trial>.json and the flip rates to judge_stability.json.
    Exit code 1 when a judgment failed or nothing could be judged, 2 for bad input.
    """
    from judges import judging_mode, load_rubric
    from simulator.runfolder import RunFolder

    folder = RunFolder(run_dir)
    folder.read_manifest()
    if fit_weights is not None:
        _fit_weights(run_dir, fit_weights)
        return
    used = load_rubric(rubric)
    panel = parse_judges(judge_models)
    settings = model_settings(model, roles={"judge": panel[0] if panel else None}, no_cache=no_cache)
    panel = panel or [settings.model_for("judge")]
    per_intervention = judging_mode(panel, per_intervention)
    records, skipped = _completed(folder)
    judgments: list[SessionJudgment] = []
    if records:
        judgments = _judge_and_show(
            records, settings, panel, used, per_intervention, folder, repeat, temperature, judge_mode.value
        )
    _conclude(folder, records, skipped, judgments, slow_hint=not per_intervention and judge_mode.value == "verdict")


def _completed(folder: RunFolder) -> tuple[list[SessionRecord], list[str]]:
    """The completed sessions to judge, and a line for each one left out (unreadable, failed, incomplete)."""
    from simulator.records import SessionStatus

    records, skipped = [], []
    for stored in folder.read_sessions():
        sid, record = stored.session_id, stored.record
        if record is None:
            skipped.append(f"{sid} (unreadable: {stored.error})")
        elif record.status == SessionStatus.COMPLETED:
            records.append(record)
        else:
            skipped.append(f"{sid} ({record.status.value}{f': {record.failure}' if record.failure else ''})")
    return records, skipped


def _judge_and_show(
    records, settings, panel, rubric, per_intervention, folder, repeat: int, temperature: float, mode: str
) -> list[SessionJudgment]:
    """`judges.scoring.judge_all` under a judge-call progress line, then the table (and, with trials, stability)."""
    from judges import judge_units
    from judges.scoring import judge_all
    from simulator.cli._render import Tally, Waiting
    from simulator.llm.progress import watching
    from simulator.runner.pageindex import refresh_index

    client = make_client(settings)
    all_trials: dict[str, list[SessionJudgment]] = {}
    calls = sum(judge_units(r, rubric, panel, mode, per_intervention) for r in records) * repeat  # type: ignore[arg-type]
    with Waiting(console) as waiting, watching(waiting.hook):  # judge calls done/total with an ETA
        waiting.judging = Tally("judging", calls, warmup=True)
        judgments = asyncio.run(
            judge_all(
                records,
                client,
                panel,
                rubric,
                per_intervention,
                folder,
                trials=repeat,
                temperature=temperature,
                all_trials=all_trials,
                judge_mode=mode,
                on_judged=judged_lines(repeat),
            )
        )
    print_judgments(judgments)
    if repeat > 1:
        _show_stability(folder, all_trials, repeat, temperature)
    refresh_index(folder.path)  # the served page data, with the judgments in (best-effort)
    return judgments


def _show_stability(folder, all_trials, repeat: int, temperature: float) -> None:
    from judges import judge_stability, write_stability

    stability = judge_stability(all_trials, trials=repeat, temperature=temperature)
    path = write_stability(folder, stability)
    console.print(render_stability(stability))
    if temperature == 0:
        console.print("[dim]note: at temperature 0 flips measure only the provider's nondeterminism[/]")
    print_path("stability written to", path)


def _conclude(folder, records, skipped: list[str], judgments: list[SessionJudgment], *, slow_hint: bool) -> None:
    """What was skipped and what failed; exit 1 when nothing could be judged or a judgment is not ok."""
    from judges import JudgmentStatus

    for line in skipped:
        console.print(f"[yellow]skipped[/] {escape(line)}")
    problems = []
    for j in judgments:
        for v in j.verdicts:
            for f in v.failures:
                problems.append(f"{j.session_id}: judge {v.judge} failed on {f.unit}: {f.reason}")
    for line in problems:
        console.print(f"[red]failed[/] {escape(line)}")
    if any("n_ctx" in p or "context" in p.lower() for p in problems) and slow_hint:
        console.print("[dim]hint: long sessions fit small judges better with --per-intervention[/]")
    if not records:
        console.print(f"nothing to judge: {folder.path} holds no completed sessions")
        raise typer.Exit(EXIT_FAILED)
    if judgments:
        print_path("judgments written to", folder.judgments_dir)
    if any(j.status != JudgmentStatus.OK for j in judgments):
        bad = sum(j.status != JudgmentStatus.OK for j in judgments)
        err_console.print(f"[red]{bad} of {len(judgments)} judgment(s) failed or partial[/] (rerun to retry them)")
        raise typer.Exit(EXIT_FAILED)
