"""LLM judges: decorated factories that take their settings and return an async judge.

    @judge()
    def rubric_judge(rubric, *, per_intervention=False):
        async def score(record, client, model) -> JudgeVerdict: ...
        return score

`judge_session` runs a panel of judge models over one finished session and returns a `SessionJudgment`
(scores, panel aggregates, agreement, simulator-failure flag, trajectory metrics). Model failures are recorded
with their reason, never turned into scores.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from judges.scoring._checklist import checklist_digest, checklist_questions, judge_checklist
from judges.scoring._facts import (
    apply_line_caps,
    copied_lines,
    intervention_window,
    member_turns,
    repeated_lines,
    scope_of,
    speakers_of,
    voiced_lines,
)
from judges.scoring._panel import aggregate_scores, panel_agreement, simulator_check
from judges.scoring._records import DimensionScore, JudgeFailure, JudgeVerdict, JudgmentStatus, SessionJudgment
from judges.scoring._render import (
    PROMPTS,
    evidence_rule,
    group_kind,
    group_plural,
    intervention_line,
    judge_context,
    prompt_digest,
    rubric_text,
    strategies_text,
    strategy_rules,
)
from judges.scoring._rubric import Rubric, load_rubric
from judges.scoring._schema import (
    FULL,
    LEAN,
    EntryLimits,
    SchemaBuilder,
    entry_count,
    limits_for,
    max_tokens_for,
    read_entries,
)
from judges.scoring._trajectory import DEFAULT_GAMMA, DEFAULT_LAMBDA, trajectory_metrics
from personas.common.prompts import render_prompt
from simulator.llm.types import CallRecord, ModelClient, ModelError, Prompt, is_local
from simulator.records import SUPPORTER, SessionRecord, SessionStatus, Turn

EVIDENCE_ATTEMPTS = 2  # a reply whose quotes are not in their turns, or cite turns that do not belong to what they
# score, is re-asked once, then those items are unsupported

F = TypeVar("F", bound=Callable[..., Any])
JudgeMode = Literal["verdict", "checklist"]

_REGISTRY: dict[str, Callable[..., Any]] = {}
NO_INTERVENTIONS = "(none: the counsellor never spoke)"


def judge(name: str | None = None) -> Callable[[F], F]:
    """Register a judge factory under `name` (default: its function name); the factory returns an async judge."""

    def decorate(factory: F) -> F:
        key = name or factory.__name__

        @functools.wraps(factory)
        def build(*args: Any, **kwargs: Any) -> Any:
            fn = factory(*args, **kwargs)
            fn.judge_name = key  # type: ignore[attr-defined]
            return fn

        _REGISTRY[key] = build
        return build  # type: ignore[return-value]

    return decorate


def registered_judges() -> dict[str, Callable[..., Any]]:
    """Judge factories by name."""
    return dict(_REGISTRY)


class SessionJudge(Protocol):
    """A judge of whole sessions: one model's verdict on one record."""

    async def __call__(self, record: SessionRecord, client: ModelClient, model: str) -> JudgeVerdict: ...


@dataclass
class _Call:
    unit: str
    instructions: str
    schema: Any
    max_tokens: int
    read: Callable[[dict[str, Any]], list[DimensionScore]]


def interventions_of(record: SessionRecord) -> list[Turn]:
    """Supporter turns that spoke: the interventions (passes are decisions, not turns)."""
    return [t for t in record.turns if t.kind == "supporter"]


def _rated(rubric: Rubric, level: str, limits: EntryLimits) -> str:
    """How one rated object's JSON looks: its dimensions' entries (after a shared `ev` and `why` when lean)."""
    head = ['"ev": [...]', '"why": "..."'] if limits.shared else []
    return "{" + ", ".join(head + [f'"{d.id}": {{...}}' for d in rubric.at(level)]) + "}"


def _layout(
    record: SessionRecord, interventions: list[Turn], rubric: Rubric, session: bool, limits: EntryLimits = FULL
) -> str:
    """The reply's JSON shape as the prompt shows it; members who never spoke are not rated (nothing to cite)."""
    parts = []
    if interventions and rubric.at("intervention"):
        entry = _rated(rubric, "intervention", limits)
        parts.append('"interventions": {' + ", ".join(f'"t{t.index}": {entry}' for t in interventions) + "}")
    if session and rubric.at("session"):
        parts.append('"session": ' + _rated(rubric, "session", limits))
    if session and rubric.at("member") and speakers_of(record):
        m = _rated(rubric, "member", limits)
        parts.append('"members": {' + ", ".join(f'"{n}": {m}' for n in speakers_of(record)) + "}")
    return "{" + ", ".join(parts) + "}"


def _plan(record: SessionRecord, rubric: Rubric, per_intervention: bool, limits: EntryLimits = FULL) -> list[_Call]:
    """The calls that judge one session: one for everything, or one per intervention plus one for the rest."""
    schemas = SchemaBuilder(record, rubric, limits)
    interventions = interventions_of(record)
    members = record.case.member_names
    rated = {m: member_turns(record, m) for m in speakers_of(record)}
    windows = {t.index: intervention_window(record, t) for t in interventions}
    group = record.case.group
    shared = {
        "group_kind": group_kind(group),
        "group_plural": group_plural(group),
        "supporter": SUPPORTER,
        "strategies": strategies_text(group),
        "strategy_rules": strategy_rules(group),
        "evidence_rule": evidence_rule(limits is LEAN),
    }
    by_turn = {t.index: t for t in interventions}

    def read_all(data: dict[str, Any], session: bool) -> list[DimensionScore]:
        out: list[DimensionScore] = []
        for key, entries in (data.get("interventions") or {}).items():
            turn = by_turn[int(key[1:])]
            out += read_entries(
                entries,
                rubric.at("intervention"),
                item=key,
                level="intervention",
                record=record,
                turn=turn,
                limits=limits,
            )
        if session and "session" in data:
            out += read_entries(
                data["session"], rubric.at("session"), item="session", level="session", record=record, limits=limits
            )
        for name, entries in (data.get("members") or {}).items() if session else ():
            out += read_entries(
                entries,
                rubric.at("member"),
                item=f"member:{name}",
                level="member",
                record=record,
                member=name,
                limits=limits,
            )
        return out

    calls: list[_Call] = []
    has_rest = bool(rubric.at("session") or rubric.at("member"))
    if not per_intervention:
        judged = interventions if rubric.at("intervention") else []
        if judged or has_rest:
            levels = ("intervention", "session", "member")
            calls.append(
                _Call(
                    unit="session",
                    instructions=render_prompt(
                        "judge_session",
                        PROMPTS,
                        **shared,
                        interventions="\n".join(f"- {intervention_line(t, windows[t.index])}" for t in judged)
                        or NO_INTERVENTIONS,
                        rubric=rubric_text(rubric, members, levels, rated),
                        layout=_layout(record, judged, rubric, True, limits),
                    ),
                    schema=schemas.reply(judged, session=True),
                    max_tokens=max_tokens_for(entry_count(rubric, len(judged), len(rated), session=True), limits),
                    read=lambda data: read_all(data, True),
                )
            )
        return calls
    if rubric.at("intervention"):
        for t in interventions:
            calls.append(
                _Call(
                    unit=f"t{t.index}",
                    instructions=render_prompt(
                        "judge_intervention",
                        PROMPTS,
                        **shared,
                        intervention=intervention_line(t, windows[t.index]),
                        rubric=rubric_text(rubric, members, ("intervention",)),
                        layout=_rated(rubric, "intervention", limits),
                    ),
                    schema=schemas.intervention(t),
                    max_tokens=max_tokens_for((len(rubric.at("intervention")), 1), limits),
                    read=lambda data, t=t: read_entries(
                        data,
                        rubric.at("intervention"),
                        item=f"t{t.index}",
                        level="intervention",
                        record=record,
                        turn=t,
                        limits=limits,
                    ),
                )
            )
    if has_rest:
        calls.append(
            _Call(
                unit="session+members",
                instructions=render_prompt(
                    "judge_session",
                    PROMPTS,
                    **shared,
                    interventions="\n".join(f"- {intervention_line(t)}" for t in interventions)
                    + "\n(rated separately; here rate only the whole session and each member)"
                    if interventions
                    else NO_INTERVENTIONS,
                    rubric=rubric_text(rubric, members, ("session", "member"), rated),
                    layout=_layout(record, [], rubric, True, limits),
                ),
                schema=schemas.reply([], session=True),
                max_tokens=max_tokens_for(entry_count(rubric, 0, len(rated), session=True), limits),
                read=lambda data: read_all(data, True),
            )
        )
    return calls


def _misplaced(record: SessionRecord, score: DimensionScore) -> list[str]:
    """`turn 2 is Theo's, not in Dana's own turns (1, 4)` for each cited turn the score may not rest on."""
    speakers = {t.index: t.speaker for t in record.turns}
    turn = next((t for t in record.turns if t.index == score.turn), None)
    scope = scope_of(record, score.level, turn=turn, member=score.member)
    return [
        f"turn {e.turn} is {speakers.get(e.turn, '?')}'s, not in {scope.describe()}"
        for e in score.evidence
        if not e.in_scope
    ]


def _not_found(score: DimensionScore) -> list[str]:
    return [f"turn {e.turn} {e.quote!r}" for e in score.evidence if not e.quote_found]


def _evidence_note(record: SessionRecord, unsupported: list[DimensionScore]) -> str:
    """The re-ask's reason: which entries cited what wrongly, and what to cite instead."""
    shown = unsupported[:6]
    quotes = [f"{sc.item}/{sc.dimension}: {q}" for sc in shown for q in _not_found(sc)]
    turns = [f"{sc.item}/{sc.dimension}: {m}" for sc in shown for m in _misplaced(record, sc)]
    note = ""
    if quotes:
        note += (
            "\n\nYour previous answer cited words that are not in the turns it named: " + "; ".join(quotes) + ". "
            "Quote each turn's own words exactly, without the speaker name or quote marks."
        )
    if turns:
        note += (
            "\n\nYour previous answer cited turns that do not belong to what they score: " + "; ".join(turns) + ". "
            "Rate a member only on their own turns, and a counsellor turn only on its named window."
        )
    return note


def _evidence_problems(record: SessionRecord, score: DimensionScore) -> str:
    """Why a score stays unsupported after its re-ask: one clause per kind of problem."""
    parts = []
    if _not_found(score):
        parts.append(f"evidence not found in the transcript ({'; '.join(_not_found(score))})")
    if _misplaced(record, score):
        parts.append(
            f"evidence from turns that do not belong to what it scores ({'; '.join(_misplaced(record, score))})"
        )
    return "; ".join(parts)


def judging_mode(judges: Sequence[str], per_intervention: bool | None = None) -> bool:
    """Whether to judge one intervention per call. Unset: yes when every judge is an embedded `local/` model.

    A small local judge answers a 7-entry reply more reliably than a 27-entry one, a misquote then costs a
    re-ask of that reply only, and the calls share one prompt prefix (the turn to rate comes last)."""
    if per_intervention is not None:
        return per_intervention
    return bool(judges) and all(is_local(j) for j in judges)


def judge_calls(record: SessionRecord, rubric: Rubric, per_intervention: bool = False) -> list[str]:
    """The units one judge model is asked about for this session (one call each): for progress displays."""
    return [c.unit for c in _plan(record, rubric.in_use(), per_intervention)]


def judge_units(
    record: SessionRecord,
    rubric: Rubric,
    panel: Sequence[str],
    judge_mode: JudgeMode = "checklist",
    per_intervention: bool | None = None,
) -> int:
    """How many model calls judging this session with this panel makes (progress displays and estimates): the
    distinct checklist questions per judge, or the verdict calls per judge."""
    used = rubric.in_use()
    if judge_mode == "checklist":
        return checklist_questions(record, used) * len(panel)
    return len(judge_calls(record, used, judging_mode(panel, per_intervention))) * len(panel)


@judge()
def rubric_judge(
    rubric: Rubric, *, per_intervention: bool = False, temperature: float = 0.0, trial: int = 0
) -> SessionJudge:
    """Score a session on every active rubric dimension: one call per session, or one per intervention.

    `trial` > 0 asks again as a distinct, cached trial (its own seed and cache key): repeated judgments.
    """
    base_seed = 0 if trial == 0 else 7919 * trial

    async def score(record: SessionRecord, client: ModelClient, model: str) -> JudgeVerdict:
        copies = copied_lines(record)
        repeats = repeated_lines(record)
        context = judge_context(record, copies, repeats)
        plan = _plan(record, rubric, per_intervention, limits_for(model))

        async def run(call: _Call) -> tuple[list[DimensionScore], list[CallRecord], list[JudgeFailure]]:
            calls: list[CallRecord] = []
            note = ""
            for attempt in range(EVIDENCE_ATTEMPTS):
                try:
                    completion = await client.complete(
                        Prompt(context=context, instructions=call.instructions + note),
                        role="judge",
                        model=model,
                        schema=call.schema,
                        max_tokens=call.max_tokens,
                        temperature=temperature,
                        seed=record.seed + base_seed + 1009 * attempt,
                        trial=trial,
                    )
                except ModelError as err:
                    return [], calls, [JudgeFailure(unit=call.unit, reason=err.reason)]
                calls.append(completion.call)
                scores = call.read(completion.parsed.model_dump(by_alias=True))
                unsupported = [sc for sc in scores if not all(e.quote_found and e.in_scope for e in sc.evidence)]
                if not unsupported:
                    return scores, calls, []
                note = _evidence_note(record, unsupported)
            failures = [
                JudgeFailure(
                    unit=f"{sc.item}/{sc.dimension}",
                    reason=f"unsupported: {_evidence_problems(record, sc)}, after {EVIDENCE_ATTEMPTS} asks",
                    unsupported=True,
                )
                for sc in unsupported
            ]
            return [sc for sc in scores if sc not in unsupported], calls, failures

        results = await asyncio.gather(*(run(c) for c in plan))
        failures = [f for _, _, fs in results for f in fs]
        scores = apply_line_caps(
            [sc for got, _, _ in results for sc in got], rubric, copies, repeats, voiced_lines(record)
        )
        if not plan:
            status = JudgmentStatus.OK
        elif not scores and failures:
            status = JudgmentStatus.FAILED
        else:
            status = JudgmentStatus.PARTIAL if failures else JudgmentStatus.OK
        return JudgeVerdict(
            judge=model,
            status=status,
            scores=scores,
            failures=failures,
            calls=[c for _, cs, _ in results for c in cs],
        )

    return score


def _overall(verdicts: Sequence[JudgeVerdict]) -> JudgmentStatus:
    states = {v.status for v in verdicts}
    if states == {JudgmentStatus.OK}:
        return JudgmentStatus.OK
    if states == {JudgmentStatus.FAILED}:
        return JudgmentStatus.FAILED
    return JudgmentStatus.PARTIAL


async def judge_session(
    record: SessionRecord,
    client: ModelClient,
    judges: Sequence[str],
    rubric: Rubric | None = None,
    per_intervention: bool | None = None,
    *,
    gamma: float = DEFAULT_GAMMA,
    lam: float = DEFAULT_LAMBDA,
    trial: int = 0,
    temperature: float = 0.0,
    judge_mode: JudgeMode = "checklist",
) -> SessionJudgment:
    """Judge one completed session with a panel of judge models (model ids); the built-in rubric by default.

    `judge_mode` `checklist` (the default everywhere rescue-sim judges) scores every dimension from its rubric
    items' yes-probabilities (`judges.scoring._checklist`; per intervention, `per_intervention` ignored);
    `verdict` asks for structured verdicts.

    `per_intervention` None picks the mode with `judging_mode` (per intervention for local judges).
    `trial` and `temperature` serve repeated judgments (`rescue-sim judge --repeat K`): trial 0 is the ordinary
    judgment; each further trial is a distinct call with its own seed and cache key.

    Each judge scores independently (concurrently; the client limits concurrency per provider). Judges that fail
    are recorded with their reason and left out of the aggregates. A simulator dimension at or below its
    `fail_at` (persona fidelity) flags the session `simulator_failure`. Raises ValueError for a session that is
    not completed or an empty panel.
    """
    if record.status != SessionStatus.COMPLETED:
        raise ValueError(f"session {record.session_id} is {record.status.value}; only completed sessions are judged")
    panel = list(dict.fromkeys(j for j in judges if j))
    if not panel:
        raise ValueError("judge_session needs at least one judge model")
    per_intervention = True if judge_mode == "checklist" else judging_mode(panel, per_intervention)
    rubric = rubric or load_rubric()
    used = rubric.in_use()
    if judge_mode == "checklist":
        jobs = [judge_checklist(record, client, m, used, trial=trial) for m in panel]
        digest = checklist_digest(used)
    else:
        scorer = rubric_judge(used, per_intervention=per_intervention, temperature=temperature, trial=trial)
        jobs = [scorer(record, client, m) for m in panel]
        digest = prompt_digest(used.digest)
    verdicts: list[JudgeVerdict] = list(await asyncio.gather(*jobs))
    valid = [v for v in verdicts if v.status != JudgmentStatus.FAILED]
    aggregates = aggregate_scores(valid, used)
    reason = simulator_check(aggregates, used)
    return SessionJudgment(
        session_id=record.session_id,
        case_id=record.case.id,
        group=record.case.group,
        supporter=record.supporter,
        rubric=used,
        rubric_digest=used.digest,
        prompt_digest=digest,
        mode="per_intervention" if per_intervention else "session",
        judge_mode=judge_mode,
        judges=panel,
        status=_overall(verdicts),
        interventions=[t.index for t in interventions_of(record)],
        verdicts=verdicts,
        aggregates=aggregates,
        agreement=panel_agreement(valid, used),
        flagged=[f"{a.item}/{a.dimension}" for a in aggregates if a.disagreement],
        simulator_failure=reason is not None,
        simulator_failure_reason=reason,
        trajectory=trajectory_metrics(record, gamma=gamma, lam=lam),
        copied_lines=copied_lines(record),
        repeated_lines=repeated_lines(record),
        voiced_lines=voiced_lines(record),
        trial=trial,
        temperature=temperature,
    )
