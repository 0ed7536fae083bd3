"""How big a stress run is before it starts: sessions per supporter and perturbation, model calls per role,
prompt and completion tokens, and minutes at the embedded model's speed when every model is local.
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, Field

from judges import judge_units, load_rubric
from judges.scoring import Rubric
from personas.case import Case
from simulator.llm.embedded import DEFAULT_LOCAL_MODEL
from simulator.llm.types import is_local
from simulator.records import SUPPORTER, SessionRecord, SessionStatus, Turn
from simulator.runner.stress_config import BASELINE, MODEL_ROLES, Matrix, StressConfig, plays_at
from simulator.supporters import supporter_model

# Rough token sizes of each call kind at this project's prompt layout (measured on the embedded model's runs);
# an estimate for planning, not a bound.
_TURN_TOKENS = 45
_OUT = {"member": 150, "tracker": 180, "supporter": 80, "judge_entry": 60, "check": 90, "delivery": 30}
_INSTR = {"member": 420, "tracker": 350, "supporter": 300, "judge": 900, "check": 350}
_CHECKLIST_PREFIX = 130  # the judge context's instructions, shared by every checklist question about one turn
_CHECKLIST_QUESTION = 45  # one checklist question after that prefix (the item prompt and the filled question)
_APPRAISAL = 450  # prompt tokens of one appraisal (simulator.members.appraise): its labelled examples and the line
LOCAL_PROMPT_TOK_S = 34.0  # embedded model on 2 cores, uncached prompt tokens per second
LOCAL_GEN_TOK_S = 11.0


class Estimate(BaseModel):
    """How big a stress run is, before it starts. Token counts assume no cache hits (an upper-ish estimate)."""

    sessions: int
    by_supporter: dict[str, int]
    by_perturbation: dict[str, int]
    skipped: list[str]
    calls: dict[str, int] = Field(description="Role -> model calls.")
    judge_mode: str | None = Field(
        default=None,
        description="How the judges score (`checklist`: `calls['judge']` counts questions); None: no judging.",
    )
    prompt_tokens: int
    completion_tokens: int
    local_minutes: float | None = Field(
        default=None,
        description="At the embedded model's speed when every model is local: no prefix cache, except that the "
        "checklist judge reads each turn's transcript once for all its questions (the prefix they share).",
    )
    plays_at: dict[str, dict[str, tuple[int, int]]] = Field(
        default_factory=dict,
        description="Perturbation -> case -> (member turn its stressor plays at, member turns of the session).",
    )

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


def _supporter_calls(spec: str, turns: int) -> tuple[int, float]:
    """(model calls, share of member turns with a supporter turn) for a supporter spec."""
    if spec == "silent":
        return 0, 0.0
    if spec == "scripted":
        return 0, 0.5
    if spec.startswith(("http://", "https://")):
        return math.ceil(turns / 2), 0.5
    if ":" in spec and "/" not in spec:
        return 0, 0.5
    return turns, 0.7


def planned_record(case: Case, member_turns: int, interventions: int) -> SessionRecord:
    """The shape of a session before it runs, for counting its judge calls with `judges.judge_units`: the members
    speak in turn, and `interventions` supporter turns, spread over the session, each answer the member before."""
    interventions = min(interventions, member_turns)
    after = {member_turns - i * member_turns // interventions for i in range(interventions)}  # distinct, in 1..turns
    turns: list[Turn] = []
    for k in range(1, member_turns + 1):
        speaker = case.member_names[(k - 1) % len(case.member_names)]
        turns.append(Turn(index=len(turns) + 1, speaker=speaker, kind="member", text=""))
        if k in after:
            turns.append(Turn(index=len(turns) + 1, speaker=SUPPORTER, kind="supporter", addressees=[speaker], text=""))
    return SessionRecord(
        session_id=f"planned-{case.id}",
        case=case,
        supporter="planned",
        models={},
        seed=0,
        max_turns=member_turns,
        status=SessionStatus.COMPLETED,
        turns=turns,
    )


def estimate(config: StressConfig, matrix: Matrix, base: Path | None = None) -> Estimate:
    """The estimate of `config`'s run; `base` is the config's folder (a relative `rubric` is read from it: its
    checklist items decide how many questions the judge asks)."""
    from simulator.transcript import case_context

    calls = {"member": 0, "tracker": 0, "supporter": 0, "judge": 0, "check": 0}
    prompt = completion = 0
    cached = 0  # prompt tokens the embedded model's prefix cache spares the checklist judge (local minutes only)
    judges = config.judges or [config.model_for("judge") or DEFAULT_LOCAL_MODEL]  # unset: the embedded model
    panel = len(judges)
    rubric = _rubric(config, base) if config.judge else None
    units: dict[tuple[str, int, int], int] = {}
    perts = {p.name: p for p in matrix.perturbations}
    contexts = {c.id: len(case_context(c)) // 4 for c in matrix.cases}
    for s in matrix.specs:
        t = s.config.max_turns
        ctx = contexts.get(s.case.id, 900)
        sup_calls, share = _supporter_calls(s.supporter, t)
        turns_total = t * (1 + share)
        avg_transcript = int(turns_total / 2 * _TURN_TOKENS)
        tracker = 1 if config.tracker_every == 0 else t // config.tracker_every + (1 if t % config.tracker_every else 0)
        # after a counsellor turn: the speaker's one or two appraisals and one for each other member
        appraisals = round(t * share * (len(s.case.member_names) + 0.5))
        calls["member"] += 2 * t + appraisals
        prompt += appraisals * _APPRAISAL
        completion += appraisals
        calls["tracker"] += tracker
        calls["supporter"] += sup_calls
        prompt += 2 * t * (ctx + avg_transcript + _INSTR["member"])
        prompt += tracker * (ctx + avg_transcript + _INSTR["tracker"])
        prompt += sup_calls * (ctx + avg_transcript + _INSTR["supporter"])
        completion += t * _OUT["member"] + tracker * _OUT["tracker"] + sup_calls * _OUT["supporter"]
        full = ctx + int(turns_total * _TURN_TOKENS)
        interventions = round(t * share)
        p = perts.get(s.perturbation or "")
        if rubric is not None:
            key = (s.case.id, t, interventions)
            if key not in units:
                planned = planned_record(s.case, t, interventions)
                units[key] = judge_units(planned, rubric, judges, config.judge_mode, config.per_intervention)
            judging = units[key]  # calls one judgment of this session makes across the panel
            times = 2 if p is not None and p.check.judge_probe else 1  # the probe judges again, in the same mode
            read, written, spared = _judging_tokens(config, judging, panel, interventions, full, ctx + avg_transcript)
            calls["judge"] += times * judging
            prompt += times * read
            completion += times * written
            cached += times * spared
        if p is not None and p.inject is not None and not p.check.expect:  # was the stressor said? (delivery)
            calls["check"] += 1
            prompt += ctx + avg_transcript + _INSTR["check"]
            completion += _OUT["delivery"]
        if p is not None and p.check.rubric and share > 0:
            calls["check"] += 1
            prompt += full + _INSTR["check"]
            completion += _OUT["check"]
    models = {config.model_for(r) for r in MODEL_ROLES} | set(config.judges)
    models |= {m for m in map(supporter_model, config.supporters) if m is not None}
    local = all(m is None or is_local(m) for m in models)
    by_sup: dict[str, int] = {}
    by_pert: dict[str, int] = {}
    for s in matrix.specs:
        by_sup[s.supporter] = by_sup.get(s.supporter, 0) + 1
        by_pert[s.perturbation or BASELINE] = by_pert.get(s.perturbation or BASELINE, 0) + 1
    return Estimate(
        sessions=len(matrix.specs),
        by_supporter=by_sup,
        by_perturbation=by_pert,
        skipped=matrix.skipped,
        calls=calls,
        judge_mode=config.judge_mode if config.judge else None,
        prompt_tokens=prompt,
        completion_tokens=completion,
        local_minutes=(
            round(((prompt - cached) / LOCAL_PROMPT_TOK_S + completion / LOCAL_GEN_TOK_S) / 60, 1) if local else None
        ),
        plays_at=plays_at(matrix),
    )


def _rubric(config: StressConfig, base: Path | None) -> Rubric:
    if not config.rubric:
        return load_rubric()
    path = Path(config.rubric)
    return load_rubric(path if path.is_absolute() or base is None else base / path)


def _judging_tokens(
    config: StressConfig, calls: int, panel: int, interventions: int, full: int, average_prefix: int
) -> tuple[int, int, int]:
    """(prompt, completion, prompt tokens a prefix cache spares) of judging one session with `calls` calls.

    Verdicts: every call reads the whole transcript and writes entries. Checklist: every question reads the
    transcript up to its turn (on average half the session) and answers one token; the questions about one turn
    share that prefix, which a prefix cache (the embedded model's) reads once per turn."""
    if config.judge_mode == "checklist":
        prefix = average_prefix + _CHECKLIST_PREFIX
        prefixes = panel * (interventions + 1)  # one per supporter turn and one for the whole session, per judge
        return calls * (prefix + _CHECKLIST_QUESTION), calls, max(0, calls - prefixes) * prefix
    return calls * (full + _INSTR["judge"]), panel * (interventions * 5 + 6) * _OUT["judge_entry"], 0
