"""`rescue-sim gold labels --data SRC`: how well the judge model labels annotated therapist utterances
(`rescue-sim judge-validate`, its old name, still runs it).

It labels each given utterance and compares with RESCUE's gold strategy; it is not RESCUE's SSP task (which
predicts the next strategy). Tests replace `simulator.llm.settings.make_client` with a fake-client factory.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from personas.common.errors import UserError
from simulator.cli._common import EXIT_FAILED, console, user_errors
from simulator.cli._models import make_client, model_settings

if TYPE_CHECKING:
    from judges import JudgeValidation


def _num(v: float | None, pct: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:.1%}" if pct else f"{v:.2f}"


def render(result: JudgeValidation) -> list[Table | str]:
    out: list[Table | str] = [
        f"[bold]judge {escape(result.model)}[/]: {result.task}",
        f"items {result.items}, scored {result.scored}, failed {result.failed} (excluded)"
        + (f", skipped off-taxonomy gold {result.skipped_off_taxonomy}" if result.skipped_off_taxonomy else ""),
        f"accuracy {_num(result.accuracy, True)}   macro-F1 {_num(result.macro_f1)}",
    ]
    labels = Table(title="per label", title_justify="left")
    for col in ("label", "support", "predicted", "precision", "recall", "F1"):
        labels.add_column(col, justify="left" if col == "label" else "right")
    for s in result.labels:
        labels.add_row(s.label, str(s.support), str(s.predicted), _num(s.precision), _num(s.recall), _num(s.f1))
    out.append(labels)
    names = [s.label for s in result.labels]
    confusion = Table(title="confusion (rows: gold, columns: judge)", title_justify="left")
    confusion.add_column("gold \\ judge")
    for n in names:
        confusion.add_column(n, justify="right")
    for g in names:
        if g in result.confusion:
            confusion.add_row(g, *(str(result.confusion[g].get(p, 0) or ".") for p in names))
    out.append(confusion)
    return out


@user_errors
def gold_labels(
    data: Annotated[Path, typer.Option("--data", help="RESCUE-format data: a .jsonl/.json file or a folder.")],
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Judge model (else RESCUE_SIM_MODEL, else the embedded local model)."),
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Label only the first N utterances.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
) -> None:
    """Check the judge as a labeller of annotated therapist utterances (RESCUE strategy labels).

    Labels each GIVEN utterance (seeing the rows before it and the utterance itself) and reports accuracy,
    macro-F1, per-label precision/recall and the confusion matrix against the gold labels.
    This is NOT RESCUE's SSP task, which predicts the next strategy without seeing the utterance.
    Failed items are excluded and counted; exit code 1 when no item could be labelled.
    """
    from judges import strategy_items, validate_judge
    from personas.rescue import load_rescue

    samples = load_rescue(data)
    items, _ = strategy_items(samples)
    if not items:
        raise UserError(f"{data}: no therapist rows with an in-taxonomy support strategy to label")
    settings = model_settings(model)
    judge_model = settings.model_for("judge")
    client = make_client(settings)
    result = asyncio.run(validate_judge(samples, client, judge_model, limit=limit))
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        for part in render(result):
            console.print(part)
    if result.scored == 0:
        raise typer.Exit(EXIT_FAILED)
