"""The observer: codes the session in RESCUE terms from the transcript alone (no access to inner states)."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, create_model

from personas.case import Case
from personas.common.prompts import PROMPTS_DIR as SHARED_PROMPTS
from personas.common.prompts import render_prompt
from personas.taxonomy import patterns_for
from simulator.llm.structured import soft_max_length as _soft_max
from simulator.llm.types import ModelClient, Prompt
from simulator.records import ObservedEmotion, ObservedViewpoint, TrackerState, Turn
from simulator.transcript import shared_context

PROMPTS = Path(__file__).parent / "prompts"
MAX_VIEWPOINTS = 2
MAX_TOKENS = 300
TEMPERATURE = 0.2


def tracker_schema(case: Case) -> type[BaseModel]:
    return _tracker_schema(tuple(case.member_names), case.group)


@functools.lru_cache(maxsize=256)
def _tracker_schema(names: tuple[str, ...], group: str) -> type[BaseModel]:
    Name = Literal[names]  # type: ignore[valid-type]
    emotion = create_model(
        "EmotionReply", person=(Name, ...), emotion=(str, _soft_max(32)), intensity=(int, Field(ge=0, le=10))
    )
    viewpoint = create_model(
        "ViewpointReply",
        source=(Name, ...),
        target=(Name, ...),
        viewpoint=(str, _soft_max(64)),
        attitude=(str, _soft_max(32)),
        warmth=(int, Field(ge=0, le=10)),
        tension=(int, Field(ge=0, le=10)),
    )
    return create_model(
        "TrackerReply",
        pattern=(Literal[tuple(patterns_for(group))], ...),  # type: ignore[valid-type]
        emotions=(list[emotion], Field(min_length=1, max_length=len(names))),  # type: ignore[valid-type]
        viewpoints=(list[viewpoint], Field(max_length=MAX_VIEWPOINTS)),  # type: ignore[valid-type]
        at_risk=(list[Name], Field(default_factory=list, max_length=len(names))),  # type: ignore[valid-type]
    )


@functools.cache
def prompt_digest() -> str:
    """Short hash of everything that shapes the tracker's output: its prompt files (the shared case context and
    `tracker.md`), its reply schema (for a couple and a family) and its call settings.

    Sessions record it (`SessionRecord.prompt_digests["tracker"]`) and validity cards are keyed by it, so a card
    measured with other prompts never vouches for this tracker.
    """
    h = hashlib.sha256()
    for path in (SHARED_PROMPTS / "case_context.md", PROMPTS / "tracker.md"):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for names, group in ((("A", "B"), "couple"), (("A", "B", "C"), "family")):
        h.update(json.dumps(_tracker_schema(names, group).model_json_schema(), sort_keys=True).encode())
    settings = {"max_viewpoints": MAX_VIEWPOINTS, "max_tokens": MAX_TOKENS, "temperature": TEMPERATURE}
    h.update(json.dumps(settings).encode())
    return h.hexdigest()[:12]


async def observe(client: ModelClient, case: Case, turns: Sequence[Turn], *, seed: int, window: int) -> TrackerState:
    """One tracker call over the transcript so far."""
    completion = await client.complete(
        Prompt(
            context=shared_context(case, turns, window),
            instructions=render_prompt(
                "tracker", PROMPTS, names=", ".join(case.member_names), max_viewpoints=MAX_VIEWPOINTS
            ),
        ),
        role="tracker",
        schema=tracker_schema(case),
        max_tokens=MAX_TOKENS,
        temperature=TEMPERATURE,
        seed=seed,
    )
    r = completion.parsed
    return TrackerState(
        pattern=r.pattern,
        emotions=[ObservedEmotion(person=e.person, emotion=e.emotion, intensity=e.intensity) for e in r.emotions],
        viewpoints=[
            ObservedViewpoint(
                source=v.source,
                target=v.target,
                viewpoint=v.viewpoint,
                attitude=v.attitude,
                warmth=v.warmth,
                tension=v.tension,
            )
            for v in r.viewpoints
            if v.source != v.target
        ],
        at_risk=list(dict.fromkeys(r.at_risk)),
        call=completion.call,
    )
