"""`rescue-sim personas …`: list, show, check, graph and import case cards. Logic lives in `personas`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from personas.case import CardError, Case
from personas.library import load_library, resolve_case, validate_paths
from personas.taxonomy import patterns_for
from simulator.cli._common import (
    EXIT_FAILED,
    EXIT_USAGE,
    HelpGroup,
    console,
    err_console,
    print_error,
    print_path,
    user_errors,
)

app = typer.Typer(cls=HelpGroup, no_args_is_help=True, add_completion=False, rich_markup_mode="rich")


def _load_cases(dirs: list[Path] | None) -> list[Case]:
    return validate_paths(list(dirs)) if dirs else load_library()


def _summary(case: Case) -> dict[str, object]:
    return {
        "id": case.id,
        "group": case.group,
        "pattern": case.relation_pattern,
        "members": case.member_names,
        "risk_flags": [f.kind.value for f in case.risk_flags],
        "title": case.title,
        "source": case.provenance.source,
        "sample_id": case.provenance.sample_id,
    }


@app.command("list")
@user_errors
def list_cases(
    dirs: Annotated[
        list[Path] | None,
        typer.Option("--dir", "-d", help="Folder(s) or card files to list instead of the shipped library."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list instead of a table.")] = False,
) -> None:
    """List case cards: id, group, pattern, members, risk flags, title."""
    cases = _load_cases(dirs)
    if as_json:
        typer.echo(json.dumps([_summary(c) for c in cases], indent=2, ensure_ascii=False))
        return
    console.print(case_table(cases))


def case_table(cases: list[Case]) -> Table:
    """Three stacked columns, so that 80 terminal columns show every id, pattern, name and title whole:
    id over group, pattern over members, title over risk flags (titles wrap at spaces)."""
    table = Table(title=f"{len(cases)} case cards", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("id\n[dim]group[/]", no_wrap=True)
    table.add_column("pattern\n[dim]members[/]", no_wrap=False, min_width=28)
    table.add_column("title\n[red]risk flags[/]", ratio=1, min_width=20)
    for i, c in enumerate(cases):
        flags = ", ".join(f.kind.value for f in c.risk_flags)
        table.add_row(
            f"[bold]{_e(c.id)}[/]\n[dim]{c.group}[/]",
            f"{_e(c.relation_pattern or '(none)')}\n[dim]{_e(', '.join(c.member_names))}[/]",
            _e(c.title) + (f"\n[red]{_e(flags)}[/]" if flags else ""),
            end_section=i < len(cases) - 1,
        )
    return table


@app.command("show")
@user_errors
def show(ref: Annotated[str, typer.Argument(metavar="ID|PATH", help="Library id or path to a card file.")]) -> None:
    """Show one case: setting, problem, members, viewpoints with warmth/tension, pattern, risk flags."""
    case = resolve_case(ref)
    source = case.provenance.source + (f" ({case.provenance.sample_id})" if case.provenance.sample_id else "")
    header = (
        f"[bold]{_e(case.title)}[/]\n[dim]{case.id} · {case.group} · {_e(source)}[/]\n\n"
        f"[bold]Setting[/] {_e(case.setting)}\n[bold]Problem[/] {_e(case.presenting_problem)}\n"
        f"[bold]History[/] {_e(case.history)}"
    )
    console.print(Panel(header, expand=True))

    # one block per member, its traits as labelled lines under it: a table of eight columns left each a few
    # characters at 80 columns and split words ("sacrifice/s"); traits are blank on cards derived from RESCUE
    # before enrichment, so only lines that say something are shown
    traits = {
        "baseline": lambda m: f"{m.baseline_emotion} ({m.baseline_intensity}/10)",
        "need": lambda m: m.core_need,
        "fear": lambda m: m.core_fear,
        "triggers": lambda m: "; ".join(m.triggers),
        "softeners": lambda m: "; ".join(m.softeners),
    }
    console.print("[bold]Members[/]")
    for m in case.members:
        head = Text.assemble((m.name, "bold"), f" · {m.role}" + (f" · {m.age}" if m.age is not None else ""))
        head.append(f" · generation {m.generation}", style="dim")
        console.print(head)
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="dim", no_wrap=True, min_width=10)
        grid.add_column(overflow="fold")  # wraps at spaces; only a word wider than the screen folds
        for label, value in traits.items():
            if text := value(m):
                grid.add_row(label, Text(text))
        console.print(Padding(grid, (0, 0, 0, 2)))

    vps = Table(title="Viewpoints", title_justify="left")
    for col in ("from", "to", "viewpoint", "attitude", "warmth", "tension"):
        numeric = col in ("warmth", "tension")
        vps.add_column(col, overflow="fold", justify="right" if numeric else "left", no_wrap=numeric)
    for v in case.viewpoints:
        vps.add_row(*map(Text, (v.source, v.target, v.viewpoint, v.attitude, f"{v.warmth:g}", f"{v.tension:g}")))
    console.print(vps)

    definition = patterns_for(case.group)[case.relation_pattern]
    console.print(f"[bold]Pattern[/] {case.relation_pattern}: {_e(definition)}")
    if case.risk_flags:
        for f in case.risk_flags:
            console.print(f"[bold red]Risk[/] {f.kind.value} ({f.member or 'group'}): {_e(f.description)}")
    else:
        console.print("[bold]Risk flags[/] none")
    if case.provenance.notes:
        console.print(f"[dim]Notes: {_e(case.provenance.notes)}[/]")


@app.command("check")
@user_errors
def check(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH...", help="Card files or folders of cards.")],
) -> None:
    """Check case-card files; ids must be unique across all paths. Prints `ok <n> cards`, or every problem of every
    card (one line each: each bad field; where the fields are valid, the first inconsistency among members,
    viewpoints and risk flags) and exits 2."""
    from personas.library import check_paths

    cases, errors = check_paths(list(paths))
    if not errors:
        console.print(f"ok {len(cases)} cards")
        return
    for err in errors:
        print_error(_e(str(err)))
    console.print(f"{len(errors)} problem(s); {len(cases)} valid card(s)")
    raise typer.Exit(EXIT_USAGE)


app.command("validate", hidden=True)(check)  # its old name, kept for scripts


@app.command("import-rescue")
@user_errors
def import_rescue_cmd(
    src: Annotated[Path, typer.Argument(metavar="SRC", help="RESCUE .jsonl file, .json file, or a folder of them.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the cards and gold trajectories.")],
    enrich: Annotated[
        bool,
        typer.Option("--enrich", help="Infer each member's traits from the transcript with a model (marked inferred)."),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            help="Model for --enrich (default: RESCUE_SIM_MODEL or the embedded model).", envvar="RESCUE_SIM_MODEL"
        ),
    ] = None,
) -> None:
    """Derive a case card and a gold trajectory from every RESCUE sample (deterministic unless --enrich)."""
    from personas.rescue import PATTERN_FIELDS, import_rescue

    failures: dict[str, str] = {}
    enricher = None
    if enrich:
        enricher, failures = _enricher(src, model)
    report = import_rescue(src, out, enrich=enricher)
    table = Table(
        title=f"Imported {len(report.samples)} samples into {report.out_dir}",
        title_justify="left",
        caption="ther = therapist rows; rp / rcs = rows labelled in relation_pattern / relation_cycle_state; "
        "none = rows reviewed with no dominant pattern; strat / vp / emo = support strategy, viewpoint and "
        "emotion annotations",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("case id", overflow="fold", min_width=18)
    table.add_column("group", no_wrap=True)
    for col in ("rows", "ther", "rp", "rcs", "none", "strat", "vp", "emo"):
        table.add_column(col, justify="right", no_wrap=True)
    for s in report.samples:
        table.add_row(
            s.case_id,
            s.group,
            str(s.rows),
            str(s.therapist_rows),
            *(str(s.pattern_labels.get(f, 0)) for f in PATTERN_FIELDS),
            str(s.no_dominant_pattern),
            str(s.strategies),
            str(s.viewpoints),
            str(s.emotions),
        )
    t = report.totals()
    table.add_section()
    table.add_row(
        "total",
        "",
        str(t["rows"]),
        str(t["therapist_rows"]),
        *(str(t[f]) for f in PATTERN_FIELDS),
        str(t["no_dominant_pattern"]),
        str(t["strategies"]),
        str(t["viewpoints"]),
        str(t["emotions"]),
    )
    console.print(table)
    if enrich:
        done = len(report.samples) - len(failures)
        console.print(f"enriched {done}/{len(report.samples)} cards (member traits marked as inferred)")
        for sid, reason in failures.items():
            err_console.print(f"[red]enrichment failed[/] for {sid}: {reason} (card written without inferred traits)")
        if failures:
            raise typer.Exit(EXIT_FAILED)


def _enricher(src: Path, model: str | None):
    """Run enrichment for every sample up front (async, bounded), then hand import_rescue a lookup."""
    import asyncio

    from personas.rescue import case_from_sample, load_rescue
    from simulator.cli._models import make_client, model_settings
    from simulator.cli._render import Waiting
    from simulator.enrich import enrich_cases
    from simulator.llm.progress import watching

    samples = load_rescue(src)
    client = make_client(model_settings(model))
    with Waiting(console) as waiting, watching(waiting.hook):  # a spinner per model call while cards are enriched
        outcome = asyncio.run(enrich_cases([(case_from_sample(s), s) for s in samples], client))

    def lookup(case, sample):
        return outcome.enriched.get(sample.sample_id, case)

    return lookup, outcome.failures


@app.command("graph")
@user_errors
def graph(
    ref: Annotated[str, typer.Argument(metavar="ID|PATH", help="Library id or path to a card file.")],
    png: Annotated[Path | None, typer.Option("--png", help="Write a PNG drawing of the relation graph.")] = None,
) -> None:
    """Relation graph of a case's starting state: distress, conflicts, coalitions, who is left out."""
    from personas.graph import RelationGraph, most_distressed_text

    case = resolve_case(ref)
    g = RelationGraph.from_case(case)
    conflicts = ", ".join(f"{a} ↔ {b}" for a, b in g.conflict_pairs()) or "none"
    coalitions = (
        ", ".join(
            f"{a} + {b} vs {c.against}" + (" (cross-generational)" if c.cross_generational else "")
            for c in g.coalitions()
            for a, b in [c.members]
        )
        or "none"
    )
    console.print(f"[bold]{_e(case.id)}[/] · pattern {g.pattern}")
    console.print(f"most distressed: {most_distressed_text(g)}")
    console.print(f"conflict pairs: {conflicts}")
    console.print(f"coalitions: {coalitions}")
    console.print(f"left out: {', '.join(g.left_out()) or 'none'}")
    if png is not None:
        if png.suffix.lower() != ".png":
            raise CardError(png, "--png", "the drawing is a PNG; give a file name ending in .png")
        path = g.draw_png(png, title=case.title)
        print_path("wrote", path)


def _e(text: str) -> str:
    from rich.markup import escape

    return escape(text)
