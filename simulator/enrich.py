"""Playable personas from RESCUE: infer each member's traits from a sample's transcript with the model client.

RESCUE annotates emotions and viewpoints, not who people are. Enrichment asks a model, per member, for
personality, communication style, core need and fear, triggers and softeners, with the transcript rows each
answer rests on, and marks every such field as inferred (`Member.inferred`) so nobody mistakes it for data.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, create_model

from personas.case import Case, InferredField
from personas.common.prompts import render_prompt
from personas.rescue import RescueSample
from simulator.llm.structured import soft_max_length
from simulator.llm.types import ModelClient, ModelError, Prompt

PROMPTS = Path(__file__).parent / "prompts"
ENRICHED_FIELDS = ("personality", "communication_style", "core_need", "core_fear", "triggers", "softeners")
MAX_ROWS = 60  # rows of transcript shown; long samples are cut (the traits show early)


def traits_schema(sample: RescueSample) -> type[BaseModel]:
    rows = tuple(r.row_index for r in sample.rows[:MAX_ROWS] if r.row_index is not None)
    Row = Literal[rows]  # type: ignore[valid-type]
    return create_model(
        "TraitsReply",
        evidence_rows=(list[Row], Field(min_length=1, max_length=6)),  # type: ignore[valid-type]
        personality=(str, soft_max_length(120)),
        communication_style=(str, soft_max_length(120)),
        core_need=(str, soft_max_length(100)),
        core_fear=(str, soft_max_length(100)),
        triggers=(list[str], Field(min_length=1, max_length=3)),
        softeners=(list[str], Field(min_length=1, max_length=3)),
    )


def sample_transcript(sample: RescueSample) -> str:
    lines = [f"[{r.row_index}] {r.speaker}: {r.dialogue_cleaned}" for r in sample.rows[:MAX_ROWS]]
    if len(sample.rows) > MAX_ROWS:
        lines.append(f"[{len(sample.rows) - MAX_ROWS} later rows not shown]")
    return "\n".join(lines)


async def enrich_case(case: Case, sample: RescueSample, client: ModelClient, *, seed: int = 0) -> Case:
    """The card with every member's traits inferred from the sample; raises ModelError when a call fails."""
    transcript = sample_transcript(sample)
    schema = traits_schema(sample)
    members = []
    for member in case.members:
        completion = await client.complete(
            Prompt(
                context=f"Transcript of a recorded {case.group} therapy session (row numbers in brackets):\n"
                f"{transcript}",
                instructions=render_prompt("enrich", PROMPTS, name=member.name),
            ),
            role="enrich",
            schema=schema,
            max_tokens=320,
            temperature=0.2,
            seed=seed,
        )
        r = completion.parsed
        rows = sorted(set(r.evidence_rows))
        model = completion.call.model
        members.append(
            member.model_copy(
                update={
                    "personality": r.personality.strip(),
                    "communication_style": r.communication_style.strip(),
                    "core_need": r.core_need.strip(),
                    "core_fear": r.core_fear.strip(),
                    "triggers": [t.strip() for t in r.triggers if t.strip()],
                    "softeners": [t.strip() for t in r.softeners if t.strip()],
                    "inferred": [InferredField(field=f, evidence_rows=rows, model=model) for f in ENRICHED_FIELDS],
                }
            )
        )
    return case.model_copy(update={"members": members})


@dataclass
class EnrichOutcome:
    enriched: dict[str, Case]  # sample id -> enriched card
    failures: dict[str, str]  # sample id -> reason


async def enrich_cases(
    pairs: list[tuple[Case, RescueSample]], client: ModelClient, *, concurrency: int = 4
) -> EnrichOutcome:
    """Enrich many cards; a sample whose calls fail is reported with its reason, never half-filled."""
    sem = asyncio.Semaphore(concurrency)
    out = EnrichOutcome(enriched={}, failures={})

    async def one(case: Case, sample: RescueSample) -> None:
        async with sem:
            try:
                out.enriched[sample.sample_id] = await enrich_case(case, sample, client)
            except ModelError as err:
                out.failures[sample.sample_id] = err.reason

    await asyncio.gather(*(one(c, s) for c, s in pairs))
    return out
