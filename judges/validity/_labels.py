"""Judge validity on real data: two checks of the judge model against RESCUE's human annotations.

Strategy (`validate_judge`): each item is a therapist row of RESCUE-format data whose first `support_strategy`
item has an in-taxonomy `strategy_type`; the judge sees the prior rows plus the row itself and labels that given
utterance. This is NOT RESCUE's SSP task, which predicts the *next* therapist strategy from the rows before it:
here the utterance is shown, so the numbers measure the judge as a labeller, and are not comparable with
published SSP results.

Target (`validate_targets`): the `target_fit` dimension asks whether a turn went to the right person, pair or
group, so the judge must hold a view of whom the moment needed. Each item is a therapist row with a resolvable
support target (RESCUE STP instances, subgroups kept); the judge sees only the rows before it, names the target
it prefers from the sample's closed target set, and is scored against the therapist's annotated target.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from judges.bench.instance_format import Task
from judges.bench.instances import build_rescue_instances
from judges.bench.metrics import LabelStats as KindStats
from judges.bench.metrics import ranking_metrics
from judges.bench.report import kind_of_label
from judges.scoring._judge import judge
from judges.scoring._render import PROMPTS, as_data, group_kind, group_plural, strategies_text, strategy_rules
from judges.scoring._schema import WHY_MAX
from personas.common.prompts import render_prompt
from personas.common.records import Record
from personas.rescue import RescueSample
from personas.taxonomy import GROUP_TARGET_LABELS, SUPPORTER_NAME, TargetKind, strategies_for
from simulator.llm.types import CallRecord, ModelClient, ModelError, Prompt

VALIDATION_SCHEMA_VERSION = 1
TASK = "label the support strategy of a given therapist utterance (not RESCUE SSP, which predicts the next strategy)"


class StrategyItem(Record):
    """One annotated therapist row to label, with the transcript up to and including it."""

    sample_id: str = Field(description="RESCUE sample id.")
    group: str = Field(description="`couple` or `family`: whose taxonomy applies.")
    row_index: int = Field(description="1-based row of the therapist utterance.")
    position: int = Field(description="1-based position of that row in the sample (its turn index in a replay).")
    gold: str = Field(description="strategy_type of the row's first support_strategy item.")
    context: str = Field(description="Prior rows and the row itself, rendered for the judge.")

    def identity(self) -> dict[str, object]:
        """The fields a `ValidationItem` about this item repeats."""
        return {"sample_id": self.sample_id, "row_index": self.row_index, "group": self.group, "gold": self.gold}


class StrategyVerdict(Record):
    """The judge's label for one item, with its reason and the call's accounting."""

    label: str = Field(description="The judge's strategy label.")
    reasoning: str = Field(description="The judge's reason, given before the label.")
    call: CallRecord = Field(description="Accounting of the call.")


class ValidationItem(Record):
    """One item's outcome: gold vs predicted, or the failure reason (failed items are excluded from metrics)."""

    sample_id: str = Field(description="RESCUE sample id.")
    row_index: int = Field(description="1-based row of the therapist utterance.")
    group: str = Field(description="`couple` or `family`.")
    gold: str = Field(description="Annotated strategy.")
    predicted: str | None = Field(default=None, description="The judge's label; None when the item failed.")
    reasoning: str = Field(default="", description="The judge's reason.")
    failure: str | None = Field(default=None, description="Why the item failed (it is excluded from the metrics).")


class LabelStats(Record):
    """Per-label precision and recall over the scored items."""

    label: str = Field(description="Strategy label.")
    support: int = Field(description="Gold items with this label.")
    predicted: int = Field(description="Items the judge gave this label.")
    precision: float | None = Field(description="None when the judge never gave the label.")
    recall: float | None = Field(description="None when the label never occurs in gold.")
    f1: float = Field(description="0 when precision or recall is 0 or undefined.")


class JudgeValidation(Record):
    """How well a judge model labels annotated therapist utterances with their RESCUE support strategy."""

    schema_version: int = Field(default=VALIDATION_SCHEMA_VERSION, description="Version of this record's layout.")
    task: str = Field(default=TASK, description="What was measured (a labelling task, not RESCUE SSP).")
    model: str = Field(description="Judge model id.")
    items: int = Field(description="Items attempted.")
    scored: int = Field(description="Items the judge labelled (failed items are excluded and counted).")
    failed: int = Field(description="Items with no valid label after the client's attempts.")
    skipped_off_taxonomy: int = Field(default=0, description="Therapist rows whose gold strategy is off-taxonomy.")
    accuracy: float | None = Field(description="Share of scored items labelled as gold; None when none scored.")
    macro_f1: float | None = Field(description="Mean F1 over labels seen in gold or predictions.")
    labels: list[LabelStats] = Field(description="Per-label precision, recall and F1.")
    confusion: dict[str, dict[str, int]] = Field(description="gold -> predicted -> count.")
    results: list[ValidationItem] = Field(description="Every item, failed ones included.")


def _row_line(index: int, speaker: str, targets: list[str], text: str) -> str:
    to = [t for t in targets if t and t != speaker]
    addressed = f" (to {', '.join(to)})" if to else ""
    return f'[{index}] {speaker}{addressed}: "{as_data(text)}"'


def strategy_items(samples: Sequence[RescueSample]) -> tuple[list[StrategyItem], int]:
    """(items, skipped): annotated therapist rows with an in-taxonomy first strategy; off-taxonomy ones are counted."""
    items: list[StrategyItem] = []
    skipped = 0
    for sample in samples:
        allowed = strategies_for(sample.group)
        lines: list[str] = []
        people = ", ".join(sample.members) or "the clients"
        for row in sample.rows:
            lines.append(_row_line(row.row_index or len(lines) + 1, row.speaker or "?", row.targets, row.text))
            if not (row.is_therapist and row.support_strategy):
                continue
            gold = row.support_strategy[0].strategy_type.strip()
            if gold not in allowed:
                skipped += 1
                continue
            context = render_prompt(
                "label_strategy_context",
                PROMPTS,
                group_kind=group_kind(sample.group),
                people=people,
                supporter=SUPPORTER_NAME,
                transcript="\n".join(lines),
            )
            items.append(
                StrategyItem(
                    sample_id=sample.sample_id,
                    group=sample.group,
                    row_index=row.row_index or len(lines),
                    position=len(lines),
                    gold=gold,
                    context=context,
                )
            )
    return items, skipped


def label_schema(group: str) -> type[BaseModel]:
    return create_model(
        "StrategyLabel",
        why=(str, Field(min_length=1, max_length=WHY_MAX)),
        label=(Literal[tuple(strategies_for(group))], ...),  # type: ignore[valid-type]
    )


@judge()
def strategy_labeler(*, max_tokens: int = 96, temperature: float = 0.0) -> Any:
    """Label the strategy of one given therapist utterance; raises ModelError when the model fails."""

    async def label(item: StrategyItem, client: ModelClient, model: str) -> StrategyVerdict:
        instructions = render_prompt(
            "label_strategy",
            PROMPTS,
            row=item.row_index,
            group_kind=group_kind(item.group),
            group_plural=group_plural(item.group),
            strategies=strategies_text(item.group),
            strategy_rules=strategy_rules(item.group),
        )
        completion = await client.complete(
            Prompt(context=item.context, instructions=instructions),
            role="judge",
            model=model,
            schema=label_schema(item.group),
            max_tokens=max_tokens,
            temperature=temperature,
            seed=0,
        )
        return StrategyVerdict(label=completion.parsed.label, reasoning=completion.parsed.why, call=completion.call)

    return label


def classification_report(
    gold: Sequence[str], predicted: Sequence[str]
) -> tuple[float | None, float | None, list[LabelStats], dict[str, dict[str, int]]]:
    """(accuracy, macro-F1, per-label stats, confusion) for paired labels. Macro-F1 averages over every label seen
    in gold or predictions; a label never predicted (or never correct) has F1 0."""
    if len(gold) != len(predicted):
        raise ValueError("gold and predicted differ in length")
    if not gold:
        return None, None, [], {}
    labels = sorted(set(gold) | set(predicted))
    confusion: dict[str, dict[str, int]] = {}
    for g, p in zip(gold, predicted):
        confusion.setdefault(g, {}).setdefault(p, 0)
        confusion[g][p] += 1
    stats = []
    for label in labels:
        tp = sum(1 for g, p in zip(gold, predicted) if g == p == label)
        support = sum(1 for g in gold if g == label)
        n_pred = sum(1 for p in predicted if p == label)
        precision = tp / n_pred if n_pred else None
        recall = tp / support if support else None
        f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
        stats.append(
            LabelStats(label=label, support=support, predicted=n_pred, precision=precision, recall=recall, f1=f1)
        )
    accuracy = sum(1 for g, p in zip(gold, predicted) if g == p) / len(gold)
    return accuracy, sum(s.f1 for s in stats) / len(stats), stats, confusion


async def validate_judge(
    samples: Sequence[RescueSample], client: ModelClient, model: str, *, limit: int | None = None
) -> JudgeValidation:
    """Have `model` label every annotated therapist utterance (first `limit` items) and score it against gold.

    Labels a given utterance; this is not RESCUE's SSP task (next-strategy prediction).
    """
    items, skipped = strategy_items(samples)
    if limit is not None:
        items = items[:limit]
    labeler = strategy_labeler()

    async def one(item: StrategyItem) -> ValidationItem:
        base = item.identity()
        try:
            verdict = await labeler(item, client, model)
        except ModelError as err:
            return ValidationItem(**base, failure=err.reason)
        return ValidationItem(**base, predicted=verdict.label, reasoning=verdict.reasoning)

    return strategy_report(model, list(await asyncio.gather(*(one(i) for i in items))), skipped)


def strategy_report(
    model: str, results: Sequence[ValidationItem], skipped: int = 0, task: str = TASK
) -> JudgeValidation:
    """Score strategy labels (pure): accuracy, macro-F1, per-label stats and confusion over the scored results."""
    scored = [r for r in results if r.predicted is not None]
    accuracy, macro_f1, labels, confusion = classification_report(
        [r.gold for r in scored],
        [r.predicted for r in scored],  # type: ignore[misc]
    )
    return JudgeValidation(
        model=model,
        task=task,
        items=len(results),
        scored=len(scored),
        failed=len(results) - len(scored),
        skipped_off_taxonomy=skipped,
        accuracy=accuracy,
        macro_f1=macro_f1,
        labels=labels,
        confusion=confusion,
        results=list(results),
    )


# ---- target fit: does the judge prefer the target the therapist chose? --------------------------------------------

TARGET_TASK = "name the preferred target of the next therapist turn from the rows before it (RESCUE STP gold, top-1)"


class TargetItem(Record):
    """One therapist row with an annotated support target, and the transcript before it."""

    sample_id: str = Field(description="RESCUE sample id.")
    group: str = Field(description="`couple` or `family`.")
    row_index: int = Field(description="1-based row of the therapist turn (not shown to the judge).")
    position: int = Field(description="1-based position of that row in the sample (its turn index in a replay).")
    gold: str = Field(description="Target label: a member, members joined by ' & ', or the group label.")
    gold_kind: TargetKind = Field(description="Individual, subgroup or whole group.")
    candidates: list[str] = Field(description="The sample's closed target set, as offered to the judge.")
    context: str = Field(description="Rows before the therapist turn, rendered for the judge.")

    def identity(self) -> dict[str, object]:
        """The fields a `TargetResult` about this item repeats."""
        return {
            "sample_id": self.sample_id,
            "row_index": self.row_index,
            "group": self.group,
            "gold": self.gold,
            "gold_kind": self.gold_kind,
        }


class TargetResult(Record):
    """One target item's outcome; failed items are excluded from the metrics."""

    sample_id: str = Field(description="RESCUE sample id.")
    row_index: int = Field(description="1-based row of the therapist turn.")
    group: str = Field(description="`couple` or `family`.")
    gold: str = Field(description="The therapist's annotated target label.")
    gold_kind: TargetKind = Field(description="Kind of the gold target.")
    predicted: str | None = Field(default=None, description="The judge's preferred target; None when it failed.")
    reasoning: str = Field(default="", description="The judge's reason.")
    failure: str | None = Field(default=None, description="Why the item failed (excluded from the metrics).")


class TargetValidation(Record):
    """How often the judge's preferred target equals the therapist's annotated one."""

    schema_version: int = Field(default=VALIDATION_SCHEMA_VERSION, description="Version of this record's layout.")
    task: str = Field(default=TARGET_TASK, description="What was measured.")
    model: str = Field(description="Judge model id.")
    items: int = Field(description="Items attempted.")
    scored: int = Field(description="Items with a valid answer (failed ones excluded and counted).")
    failed: int = Field(description="Items without a valid answer after the client's attempts.")
    unresolved: int = Field(default=0, description="Strategy rows whose target is outside the closed set (skipped).")
    correct: int = Field(description="Scored items whose preferred target equals gold exactly.")
    accuracy: float | None = Field(description="correct / scored; None when nothing was scored.")
    by_kind: dict[str, KindStats] = Field(description="Per gold target kind: support, predicted, precision, recall.")
    confusion: dict[str, dict[str, int]] = Field(description="Gold kind -> preferred kind -> count.")
    results: list[TargetResult] = Field(description="Every item, failed ones included.")


def target_items(samples: Sequence[RescueSample]) -> tuple[list[TargetItem], int]:
    """(items, unresolved): RESCUE STP rows (subgroups kept), each with every row before it as context."""
    built = build_rescue_instances(samples, tasks=[Task.STP], context_size=0, subgroups="keep")
    by_id = {s.sample_id: s for s in samples}
    items = []
    for inst in built.instances:
        sample = by_id[inst.sample_id]
        lines = [
            _row_line(r.row_index or i, r.speaker or "?", r.targets, r.text)
            for i, r in enumerate(sample.rows[: inst.row - 1], start=1)
        ]
        context = render_prompt(
            "label_strategy_context",
            PROMPTS,
            group_kind=group_kind(sample.group),
            people=", ".join(sample.members) or "the clients",
            supporter=SUPPORTER_NAME,
            transcript="\n".join(lines) or "(no rows yet)",
        )
        items.append(
            TargetItem(
                sample_id=inst.sample_id,
                group=inst.group,
                row_index=sample.rows[inst.row - 1].row_index or inst.row,
                position=inst.row,
                gold=inst.gold_label,
                gold_kind=inst.gold_target_kind or TargetKind.INDIVIDUAL,
                candidates=list(inst.candidates),
                context=context,
            )
        )
    return items, built.stats.stp_unresolved


def target_schema(candidates: Sequence[str]) -> type[BaseModel]:
    return create_model(
        "PreferredTarget",
        why=(str, Field(min_length=1, max_length=WHY_MAX)),
        target=(Literal[tuple(candidates)], ...),  # type: ignore[valid-type]
    )


@judge()
def target_preference(*, max_tokens: int = 80, temperature: float = 0.0) -> Any:
    """Name the target the next therapist turn should address; raises ModelError when the model fails."""

    async def prefer(item: TargetItem, client: ModelClient, model: str) -> tuple[str, str]:
        group_label = GROUP_TARGET_LABELS[item.group]  # type: ignore[index]
        instructions = render_prompt(
            "prefer_target",
            PROMPTS,
            row=item.row_index,
            targets=", ".join(item.candidates),
            group_label=group_label,
            group_noun="couple" if item.group == "couple" else "family",
        )
        completion = await client.complete(
            Prompt(context=item.context, instructions=instructions),
            role="judge",
            model=model,
            schema=target_schema(item.candidates),
            max_tokens=max_tokens,
            temperature=temperature,
            seed=0,
        )
        return completion.parsed.target, completion.parsed.why

    return prefer


def target_report(model: str, results: Sequence[TargetResult], unresolved: int = 0) -> TargetValidation:
    """Score target results (pure): exact-label accuracy, per-kind stats and a kind confusion (bench STP metrics)."""
    scored = [r for r in results if r.predicted is not None]
    kinds = [k.value for k in TargetKind]
    metrics = (
        ranking_metrics([r.gold for r in scored], [[r.predicted] for r in scored], kinds, key=kind_of_label)
        if scored
        else None
    )
    correct = sum(r.predicted == r.gold for r in scored)
    return TargetValidation(
        model=model,
        items=len(results),
        scored=len(scored),
        failed=len(results) - len(scored),
        unresolved=unresolved,
        correct=correct,
        accuracy=correct / len(scored) if scored else None,
        by_kind=metrics.per_label if metrics else {},
        confusion=metrics.confusion if metrics else {},
        results=list(results),
    )


async def validate_targets(
    samples: Sequence[RescueSample], client: ModelClient, model: str, *, limit: int | None = None
) -> TargetValidation:
    """Ask `model` for its preferred target at every annotated therapist row (first `limit`) and score it."""
    items, unresolved = target_items(samples)
    if limit is not None:
        items = items[:limit]
    prefer = target_preference()

    async def one(item: TargetItem) -> TargetResult:
        base = item.identity()
        try:
            target, why = await prefer(item, client, model)
        except ModelError as err:
            return TargetResult(**base, failure=err.reason)
        return TargetResult(**base, predicted=target, reasoning=why)

    results = list(await asyncio.gather(*(one(i) for i in items)))
    return target_report(model, results, unresolved)
