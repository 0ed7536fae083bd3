"""`validate`: measure the tracker and the judge against RESCUE gold and return one validity card per instrument.

Calls go through the given ModelClient (its disk cache makes a rerun cheap: answered calls are not repeated).
Tracker replays run one sample at a time by default, so consecutive calls share a prompt prefix (llama.cpp's
cache); judge items run concurrently under the client's per-provider limits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import Field

from judges.bench.instance_format import Instance, Task, ViewpointTriple
from judges.bench.instance_rules import DEFAULT_SEED
from judges.bench.render import vp_judge_prompt
from judges.bench.runner import JUDGE_MAX_TOKENS
from judges.bench.schemas import VpJudgement
from judges.scoring._checklist import checklist_digest
from judges.scoring._judge import JudgeMode
from judges.scoring._render import prompt_digest as judge_prompt_digest
from judges.scoring._rubric import Rubric, load_rubric
from judges.validity._checklist_labels import checklist_call_counts, checklist_strategy, checklist_targets
from judges.validity._labels import strategy_items, target_items, validate_judge, validate_targets
from judges.validity.card import DataSource, Instrument, JudgeValidity, TrackerValidity, ValidityCard
from judges.validity.replay import Checkpoint, ReplaySettings, planned_checkpoints, replay_tracker, tracker_case
from judges.validity.scores import (
    ViewpointItem,
    emotion_scores,
    jitter_scores,
    pattern_scores,
    risk_scores,
    viewpoint_items,
    viewpoint_scores,
)
from personas.common.errors import UserError
from personas.common.records import Record
from personas.rescue import RescueSample
from simulator.llm.types import CallRecord, Completion, ModelClient, ModelError, Prompt, Role, YesProbability
from simulator.tracker import prompt_digest as tracker_prompt_digest

Progress = Callable[[str], None]


class CallEstimate(Record):
    """Model calls a run will make at most (before the cache answers any)."""

    tracker: int = Field(description="Tracker calls (one per checkpoint).")
    vp_judge: int = Field(description="At most one VP judge call per checkpoint with gold viewpoints.")
    strategy: int = Field(description="Strategy-labelling judge calls.")
    target: int = Field(description="Preferred-target judge calls.")

    @property
    def total(self) -> int:
        return self.tracker + self.vp_judge + self.strategy + self.target


@dataclass
class _Counting:
    """A ModelClient wrapper that keeps the CallRecord of every successful call (for the card's accounting)."""

    inner: ModelClient
    calls: list[CallRecord] = field(default_factory=list)

    def model_for(self, role: Role) -> str:
        return self.inner.model_for(role)

    async def complete(self, prompt: Prompt, **kwargs) -> Completion:  # type: ignore[no-untyped-def]
        completion = await self.inner.complete(prompt, **kwargs)
        self.calls.append(completion.call)
        return completion

    async def yes_probability(self, prompt: Prompt, **kwargs) -> YesProbability:  # type: ignore[no-untyped-def]
        answer = await self.inner.yes_probability(prompt, **kwargs)  # type: ignore[attr-defined]
        self.calls.append(answer.call)
        return answer


def usable_samples(samples: Sequence[RescueSample]) -> tuple[list[RescueSample], dict[str, str]]:
    """(samples a case card can be derived from, sample id -> why the others are skipped)."""
    ok, skipped = [], {}
    for s in samples:
        try:
            tracker_case(s)
        except (UserError, ValueError) as err:
            skipped[s.sample_id] = str(err)
            continue
        ok.append(s)
    return ok, skipped


def estimate_calls(
    samples: Sequence[RescueSample],
    settings: ReplaySettings,
    *,
    limit: int | None = None,
    judge_mode: JudgeMode = "checklist",
    instruments: Sequence[Instrument] = ("tracker", "judge"),
    vp_judge: bool = True,
) -> CallEstimate:
    """Calls per check; in checklist mode every distinct question is a call (one per strategy, per candidate).
    An instrument left out of `instruments` makes no calls, nor the VP judge without `vp_judge` (as `validate`)."""
    from judges.validity.scores import gold_viewpoints

    usable, _ = usable_samples(samples)
    rows = [(s, r) for s in usable for r in planned_checkpoints(s, settings)]
    if judge_mode == "checklist":
        strategy, target = checklist_call_counts(samples, load_rubric(), limit=limit)
    else:
        strategy, target = len(strategy_items(samples)[0][:limit]), len(target_items(samples)[0][:limit])
    estimate = CallEstimate(
        tracker=len(rows),
        vp_judge=sum(bool(gold_viewpoints(s, r)[0]) for s, r in rows),
        strategy=strategy,
        target=target,
    )
    if "tracker" not in instruments:
        estimate = estimate.model_copy(update={"tracker": 0, "vp_judge": 0})
    if "judge" not in instruments:
        estimate = estimate.model_copy(update={"strategy": 0, "target": 0})
    if not vp_judge:
        estimate = estimate.model_copy(update={"vp_judge": 0})
    return estimate


async def _judge_viewpoints(
    items: Sequence[ViewpointItem], samples: dict[str, RescueSample], client: ModelClient, judge_model: str
) -> list[ViewpointItem]:
    async def one(item: ViewpointItem) -> ViewpointItem:
        if not item.predicted:
            return item
        sample = samples[item.sample_id]
        inst = Instance(
            id=f"validity-vp:{item.sample_id}:{item.row}",
            task=Task.VP,
            origin="rescue",
            sample_id=item.sample_id,
            group=sample.group,
            members=sample.members,
            row=item.row,
            context=[],
            speaker=item.speaker,
            gold_viewpoints=[ViewpointTriple(source=a, target=b, viewpoint=c) for a, b, c in item.gold],
        )
        predicted = [ViewpointTriple(source=a, target=b, viewpoint=c) for a, b, c in item.predicted]
        try:
            completion = await client.complete(
                vp_judge_prompt(inst, predicted),
                role="judge",
                model=judge_model,
                schema=VpJudgement,
                max_tokens=JUDGE_MAX_TOKENS,
                temperature=0.0,
                seed=DEFAULT_SEED,
            )
        except ModelError as err:
            return item.model_copy(update={"judge_failure": err.reason})
        v = completion.parsed
        return item.model_copy(
            update={
                "judge_source_target": float(v.source_target),
                "judge_viewpoint": float(v.viewpoint),
                "judge_reason": v.reason,
            }
        )

    return list(await asyncio.gather(*(one(i) for i in items)))


async def validate_tracker(
    samples: Sequence[RescueSample],
    client: ModelClient,
    *,
    source: str,
    settings: ReplaySettings | None = None,
    judge_model: str | None = None,
    concurrency: int = 1,
    on_progress: Progress | None = None,
) -> ValidityCard:
    """Replay the tracker over every usable sample and score it; the VP judge runs when `judge_model` is given."""
    settings = settings or ReplaySettings()
    started = time.perf_counter()
    counting = _Counting(client)
    usable, skipped = usable_samples(samples)
    if not usable:
        raise UserError(f"{source}: no sample can be replayed ({'; '.join(skipped.values())})")
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(sample: RescueSample) -> list[Checkpoint]:
        async with semaphore:
            out = await replay_tracker(sample, counting, settings)
        if on_progress:
            failed = sum(c.failure is not None for c in out)
            on_progress(f"tracker: {sample.sample_id}: {len(out)} calls" + (f", {failed} failed" if failed else ""))
        return out

    per_sample = await asyncio.gather(*(one(s) for s in usable))
    by_id = {s.sample_id: s for s in usable}
    checkpoints = [c for cps in per_sample for c in cps]
    pairs = [(by_id[c.sample_id], c) for c in checkpoints]
    items, excluded = viewpoint_items(pairs)
    if judge_model and any(i.predicted for i in items):
        items = await _judge_viewpoints(items, by_id, counting, judge_model)
        if on_progress:
            on_progress(f"tracker: VP judge scored {sum(i.judge_viewpoint is not None for i in items)} checkpoints")
    failures: list[str] = []
    for c in checkpoints:
        if c.failure and c.failure not in failures and len(failures) < 5:
            failures.append(c.failure)
    validity = TrackerValidity(
        settings=settings,
        checkpoints=len(checkpoints),
        failed=sum(c.failure is not None for c in checkpoints),
        failures=failures,
        pattern=pattern_scores(pairs),
        emotions=emotion_scores(pairs),
        viewpoints=viewpoint_scores(items, excluded, judge_model),
        risk=risk_scores(pairs),
        jitter=jitter_scores(pairs, usable),
        items=checkpoints,
        viewpoint_items=items,
    )
    notes = [
        (
            "tracker run as in a session: same prompt, window and cadence; presenting problem neutralised (the "
            "imported card quotes gold viewpoints); failed calls excluded and counted"
        ),
        "gold warmth/tension read from attitude text with personas.rescue ATTITUDE_LEXICON (RESCUE has no numbers)",
    ]
    if judge_model:
        notes.append(f"viewpoint meaning scored by {judge_model} with the benchmark's VP judge (judge_vp.md)")
    else:
        notes.append("viewpoint meaning not judged (no judge model): pairing only")
    return ValidityCard(
        instrument="tracker",
        model=client.model_for("tracker"),
        digest=tracker_prompt_digest(),
        data=DataSource(path=source, samples=[s.sample_id for s in usable], skipped=skipped),
        wall_s=round(time.perf_counter() - started, 3),
        calls=len(counting.calls),
        cached_calls=sum(c.cache_hit for c in counting.calls),
        tracker=validity,
        notes=notes,
    )


def judge_digest(judge_mode: JudgeMode, rubric: Rubric | None = None) -> str:
    """The digest a judgment in `judge_mode` records with this rubric (the default one): cards are keyed by it."""
    rubric = rubric or load_rubric()
    used = rubric.in_use()
    return checklist_digest(used) if judge_mode == "checklist" else judge_prompt_digest(used.digest)


async def validate_judges(
    samples: Sequence[RescueSample],
    client: ModelClient,
    judge_model: str,
    *,
    source: str,
    limit: int | None = None,
    judge_mode: JudgeMode = "checklist",
    on_progress: Progress | None = None,
) -> ValidityCard:
    """The judge's strategy labels and preferred targets against RESCUE's therapist annotations, read as
    `judge --judge-mode` reads them: from checklist items (default) or structured verdicts."""
    started = time.perf_counter()
    counting = _Counting(client)
    rubric = load_rubric()
    if judge_mode == "checklist":
        strategy = await checklist_strategy(
            samples, counting, judge_model, rubric, limit=limit, on_progress=on_progress
        )
        target = await checklist_targets(samples, counting, judge_model, rubric, limit=limit, on_progress=on_progress)
        notes = [
            (
                "checklist mode: strategy = the most probable of the rubric's strategy items about the given therapist "
                "turn (case + transcript up to it); target = the candidate whose target_fit {addressee} items score "
                "best on the rows before the turn; both scored by judges.scoring._checklist as in `judge`"
            ),
            "measured with the default rubric; the digest covers judges/prompts, the rubric, its items and item.md",
        ]
    else:
        strategy = await validate_judge(samples, counting, judge_model, limit=limit)
        if on_progress:
            on_progress(f"judge: {strategy.scored} strategy labels ({strategy.failed} failed)")
        target = await validate_targets(samples, counting, judge_model, limit=limit)
        if on_progress:
            on_progress(f"judge: {target.scored} preferred targets ({target.failed} failed)")
        notes = [
            (
                "strategy: labels a GIVEN therapist utterance (not RESCUE SSP); target: names the preferred target "
                "of the next therapist turn from the rows before it (RESCUE STP gold, subgroups kept, top-1)"
            ),
            "measured with the default rubric; the digest covers judges/prompts/*.md and the rubric",
        ]
    return ValidityCard(
        instrument="judge",
        model=judge_model,
        digest=judge_digest(judge_mode, rubric),
        judge_mode=judge_mode,
        data=DataSource(path=source, samples=[s.sample_id for s in samples]),
        wall_s=round(time.perf_counter() - started, 3),
        calls=len(counting.calls),
        cached_calls=sum(c.cache_hit for c in counting.calls),
        judge=JudgeValidity(strategy=strategy, target=target),
        notes=notes,
    )


async def validate(
    samples: Sequence[RescueSample],
    client: ModelClient,
    *,
    source: str,
    instruments: Sequence[Instrument] = ("tracker", "judge"),
    judge_model: str | None = None,
    settings: ReplaySettings | None = None,
    limit: int | None = None,
    judge_mode: JudgeMode = "checklist",
    vp_judge: bool = True,
    concurrency: int = 1,
    on_progress: Progress | None = None,
) -> list[ValidityCard]:
    """One card per requested instrument (tracker first: its calls share prefixes and fill the cache)."""
    judge_model = judge_model or client.model_for("judge")
    cards = []
    if "tracker" in instruments:
        cards.append(
            await validate_tracker(
                samples,
                client,
                source=source,
                settings=settings,
                judge_model=judge_model if vp_judge else None,
                concurrency=concurrency,
                on_progress=on_progress,
            )
        )
    if "judge" in instruments:
        cards.append(
            await validate_judges(
                samples,
                client,
                judge_model,
                source=source,
                limit=limit,
                judge_mode=judge_mode,
                on_progress=on_progress,
            )
        )
    return cards
