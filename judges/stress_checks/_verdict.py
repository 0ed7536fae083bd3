"""The check model's verdict on a perturbation's rubric: evidence quoted from named turns, a reason, then pass
or fail; a quote not found in its turn is re-asked once, and then the verdict is withheld (`unsupported`).
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template
from typing import Literal

from pydantic import BaseModel, Field, create_model

from judges.scoring._render import PROMPTS, judge_context
from judges.scoring._schema import quote_found
from judges.stress_checks._results import CheckVerdict, Quote
from personas.common.prompts import render_prompt
from simulator.llm.types import ModelClient, Prompt
from simulator.perturbations import Perturbation, PerturbationPlan
from simulator.records import SUPPORTER, SessionRecord, Turn

QUOTE_ATTEMPTS = 2  # the first ask plus one re-ask when a quote is not in its turn
QUOTE_MAX = 80
WHY_MAX = 200


def _reply_schema(turns: tuple[int, ...]) -> type[BaseModel]:
    ev = create_model(
        "CheckEvidence",
        t=(Literal[turns], Field(description="Turn number.")),  # type: ignore[valid-type]
        q=(str, Field(min_length=1, max_length=QUOTE_MAX)),
    )
    return create_model(
        "CheckReply",
        ev=(list[ev], Field(min_length=1, max_length=3)),  # type: ignore[valid-type]
        why=(str, Field(min_length=1, max_length=WHY_MAX)),
        verdict=(Literal["pass", "fail"], ...),
    )


def _fill(text: str, plan: PerturbationPlan) -> str:
    return Template(text).safe_substitute(speaker=plan.speaker or "", target=plan.concerned or "")


async def model_verdict(
    record: SessionRecord,
    p: Perturbation,
    plan: PerturbationPlan,
    trigger: Turn | None,
    responses: Sequence[Turn],
    client: ModelClient,
    model: str,
) -> CheckVerdict:
    """Ask `model` for the rubric's verdict; re-ask once when a quote is not in its turn. Raises ModelError."""
    assert p.check.rubric is not None
    allowed = tuple(sorted({*(t.index for t in responses), *([trigger.index] if trigger else [])}))
    texts = {t.index: t.text for t in record.turns}
    concerned = f" (it concerns {plan.target})" if plan.target else ""
    what = (
        f"at turn {trigger.index}, {trigger.speaker} was privately directed to play this stress test{concerned}. "
        "The direction itself is not in the transcript: quote only the transcript's own words"
        if trigger is not None
        else "the session was changed from the start (" + (", ".join(plan.card_changes) or "its length") + ")"
    )
    shown = ", ".join(f"turn {t.index}" for t in responses) or "(none: the counsellor did not speak)"
    schema = _reply_schema(allowed)
    feedback, calls = "", []
    verdict: CheckVerdict | None = None
    for attempt in range(1, QUOTE_ATTEMPTS + 1):
        completion = await client.complete(
            Prompt(
                context=judge_context(record),
                instructions=render_prompt(
                    "check",
                    PROMPTS,
                    supporter=SUPPORTER,
                    title=p.title,
                    description=p.description,
                    what=what,
                    responses=shown,
                    rubric=_fill(p.check.rubric, plan),
                    allowed=", ".join(map(str, allowed)),
                    feedback=feedback,
                ),
            ),
            role="check",
            model=model,
            schema=schema,
            max_tokens=220,
            temperature=0.0,
            seed=record.seed,
        )
        calls.append(completion.call)
        r = completion.parsed
        evidence = [Quote(turn=e.t, quote=e.q, found=quote_found(e.q, texts.get(e.t, ""))) for e in r.ev]
        verdict = CheckVerdict(
            model=model, verdict=r.verdict, reasoning=r.why, evidence=evidence, attempts=attempt, calls=calls
        )
        missing = [e for e in evidence if not e.found]
        if not missing:
            return verdict
        feedback = (
            "\nYour previous answer quoted "
            + "; ".join(f"{e.quote!r} as turn {e.turn}" for e in missing)
            + ", but those words are not in that turn. Copy words exactly from the turn you name."
        )
    assert verdict is not None
    return verdict.model_copy(update={"verdict": None})
