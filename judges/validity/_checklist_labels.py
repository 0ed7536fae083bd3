"""Judge validity in checklist mode: the strategy and target a checklist judge reads, against RESCUE's annotations.

`judge --judge-mode checklist` never asks for a label: it reads the strategy of a supporter turn as the most
probable of its `{strategy}` items and scores target fit from yes/no items. So its validity is measured with the
same pieces (`judges.scoring._checklist`): each RESCUE sample becomes a session record (`rescue_turns`, the
case card with a neutral problem), and for one therapist turn

- **strategy**: the rubric's strategy items are asked about that turn on the judge's own prefix (case intake and
  transcript up to and including the turn, as data) and scored by `score_dimension`: the most probable strategy is
  the label, scored against the row's first annotated strategy (as `validate_judge`);
- **target**: the rubric's target-fit items that name `{addressee}` are asked once per candidate of the sample's
  closed target set, on the transcript *before* the turn (the turn would give its addressee away), and each
  candidate's weighted yes-share (`good_share`, the scale's own arithmetic) ranks it; the top one is the judge's
  preferred target, scored against the therapist's annotated target (as `validate_targets`).

Failed questions leave their item failed (excluded and counted), never filled in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from judges.scoring._checklist import (
    CONTEXTS_AT_ONCE,
    Ask,
    addressee_phrase,
    ask_questions,
    good_share,
    item_answer,
    score_dimension,
    turn_asks,
    turn_context,
)
from judges.scoring._facts import copied_lines
from judges.scoring._records import ItemAnswer
from judges.scoring._render import judge_context
from judges.scoring._rubric import Dimension, Rubric
from judges.validity._labels import (
    JudgeValidation,
    StrategyItem,
    TargetItem,
    TargetResult,
    TargetValidation,
    ValidationItem,
    strategy_items,
    strategy_report,
    target_items,
    target_report,
)
from judges.validity.replay import rescue_turns, tracker_case
from personas.common.errors import Param, ParameterError, UserError
from personas.rescue import RescueSample
from simulator.llm.types import CallRecord, ModelClient, is_local
from simulator.records import SUPPORTER, SessionRecord, SessionStatus

STRATEGY_DIMENSION, TARGET_DIMENSION = "strategy", "target_fit"
SEED = 0
Progress = Callable[[str], None]


def rescue_record(sample: RescueSample, upto: int) -> SessionRecord:
    """The sample's first `upto` rows as a completed session record (therapist rows are supporter turns)."""
    return SessionRecord(
        session_id=f"rescue:{sample.sample_id}",
        case=tracker_case(sample),
        supporter="rescue-therapist",
        models={},
        seed=SEED,
        max_turns=max(1, upto),
        status=SessionStatus.COMPLETED,
        turns=rescue_turns(sample)[:upto],
    )


def _dimension(rubric: Rubric, dim_id: str) -> Dimension:
    dim = next((d for d in rubric.active if d.id == dim_id), None)
    if dim is None or not dim.items:
        raise UserError(f"rubric {rubric.name}: no active `{dim_id}` dimension with checklist items to validate")
    return dim


def _addressee_dimension(rubric: Rubric) -> Dimension:
    dim = _dimension(rubric, TARGET_DIMENSION)
    items = [i for i in dim.items if "addressee" in i.placeholders()]
    if not items:
        raise ParameterError(
            f"rubric {rubric.name}: `{TARGET_DIMENSION}` has no checklist item naming {{addressee}}; add one "
            "(see judges/rubrics/default.yaml) or validate with ",
            Param("judge_mode"),
            " verdict",
        )
    return dim.model_copy(update={"checklist": items})


def checklist_call_counts(
    samples: Sequence[RescueSample], rubric: Rubric, *, limit: int | None = None
) -> tuple[int, int]:
    """(strategy, target) questions a checklist validation asks at most (before the cache answers any)."""
    strategy_dim, target_dim = _dimension(rubric, STRATEGY_DIMENSION), _addressee_dimension(rubric)
    by_id = {s.sample_id: s for s in samples}
    s_items = strategy_items(samples)[0][:limit]
    t_items = target_items(samples)[0][:limit]
    strategy = sum(
        _distinct(turn_asks(rescue_record(by_id[i.sample_id], i.position), strategy_dim, i.position)) for i in s_items
    )
    target = sum(
        _distinct([a for asks in _target_asks(i, by_id[i.sample_id], target_dim)[1].values() for a in asks])
        for i in t_items
    )
    return strategy, target


def _distinct(asks: Sequence[Ask]) -> int:
    return len({q for a in asks for q in a.questions})


async def _ask_all(
    asks: Sequence[Ask], client: ModelClient, model: str, context: str, about: str
) -> tuple[list[ItemAnswer], str | None, list[CallRecord]]:
    questions = list(dict.fromkeys(q for a in asks for q in a.questions))
    got, calls = await ask_questions(client, model, context, about, questions, seed=SEED)
    answers: list[ItemAnswer] = []
    for a in asks:
        answer = item_answer(a, [got.get(q) for q in a.questions])
        if isinstance(answer, str):
            return [], answer, calls
        answers.append(answer)
    return answers, None, calls


async def checklist_strategy(
    samples: Sequence[RescueSample],
    client: ModelClient,
    model: str,
    rubric: Rubric,
    *,
    limit: int | None = None,
    on_progress: Progress | None = None,
) -> JudgeValidation:
    """The checklist judge's strategy of every annotated therapist turn (first `limit`) against gold."""
    dim = _dimension(rubric, STRATEGY_DIMENSION)
    items, skipped = strategy_items(samples)
    items = items[:limit]
    by_id = {s.sample_id: s for s in samples}
    gate = asyncio.Semaphore(1 if is_local(model) else CONTEXTS_AT_ONCE)

    async def one(item: StrategyItem) -> ValidationItem:
        base = item.identity()
        record = rescue_record(by_id[item.sample_id], item.position)
        context, about = turn_context(record, copied_lines(record), item.position)
        async with gate:
            answers, failure, _ = await _ask_all(turn_asks(record, dim, item.position), client, model, context, about)
        if failure is not None:
            return ValidationItem(**base, failure=failure)
        scored = score_dimension(dim, f"t{item.position}", answers, record.case.member_names)
        if isinstance(scored, str):
            return ValidationItem(**base, failure=scored)
        return ValidationItem(**base, predicted=scored.label, reasoning=scored.reasoning)

    results = list(await asyncio.gather(*(one(i) for i in items)))
    report = strategy_report(
        model,
        results,
        skipped,
        task="the most probable strategy from the checklist's strategy items about a given therapist turn",
    )
    if on_progress:
        on_progress(f"judge (checklist): {report.scored} strategy labels ({report.failed} failed)")
    return report


def _target_asks(item: TargetItem, sample: RescueSample, dim: Dimension) -> tuple[SessionRecord, dict[str, list[Ask]]]:
    """The record before the turn and, per candidate target, the addressee items' asks about the turn."""
    record = rescue_record(sample, item.position - 1)
    asks = {
        candidate: turn_asks(record, dim, item.position, addressee=addressee_phrase([candidate], sample.group))
        for candidate in item.candidates
    }
    return record, asks


async def checklist_targets(
    samples: Sequence[RescueSample],
    client: ModelClient,
    model: str,
    rubric: Rubric,
    *,
    limit: int | None = None,
    on_progress: Progress | None = None,
) -> TargetValidation:
    """The candidate whose addressee items score best, at every annotated therapist turn (first `limit`)."""
    dim = _addressee_dimension(rubric)
    items, unresolved = target_items(samples)
    items = items[:limit]
    by_id = {s.sample_id: s for s in samples}
    gate = asyncio.Semaphore(1 if is_local(model) else CONTEXTS_AT_ONCE)
    about = f"{SUPPORTER}'s next turn [{{turn}}], which follows the transcript (not shown)"

    async def one(item: TargetItem) -> TargetResult:
        base = item.identity()
        sample = by_id[item.sample_id]
        record, asks = _target_asks(item, sample, dim)
        flat = [a for candidate_asks in asks.values() for a in candidate_asks]
        context = judge_context(record, copied_lines(record))
        async with gate:  # every candidate's questions on one prefix, one after another
            answers, failure, _ = await _ask_all(flat, client, model, context, about.format(turn=item.position))
        if failure is not None:
            return TargetResult(**base, failure=failure)
        shares: dict[str, float] = {}
        start = 0
        for candidate, candidate_asks in asks.items():
            share = good_share(answers[start : start + len(candidate_asks)])
            start += len(candidate_asks)
            if share is not None:
                shares[candidate] = share
        if not shares:
            return TargetResult(**base, failure="every addressee item weighs 0")
        best = max(shares, key=lambda c: shares[c])  # ties: the first candidate in the sample's order
        reasoning = "checklist: " + ", ".join(f"{c} {p:.2f}" for c, p in shares.items())
        return TargetResult(**base, predicted=best, reasoning=reasoning)

    results = list(await asyncio.gather(*(one(i) for i in items)))
    report = target_report(model, results, unresolved)
    if on_progress:
        on_progress(f"judge (checklist): {report.scored} preferred targets ({report.failed} failed)")
    return report.model_copy(
        update={"task": "the candidate target whose {addressee} checklist items score best, from the rows before"}
    )
