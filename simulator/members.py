"""Member turns: a persona first takes in how the last turn landed, updates how it feels, then speaks.

The order follows the SAGE recipe (arXiv 2505.02847). Simulated clients are known to turn compliant after a
few supporter turns, so softening is bounded here in code as well as asked for in the prompt: one turn can
lower intensity or tension, or raise warmth, by at most MAX_SOFTEN_STEP points.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field, create_model

from personas.case import Case, Member
from personas.common.prompts import render_prompt
from simulator.llm.structured import soft_max_length as _soft_max
from simulator.llm.types import ModelClient, ModelError, Prompt
from simulator.records import Feeling, InnerState, Turn
from simulator.transcript import last_line, shared_context

MAX_SOFTEN_STEP = 2.0


def state_schema(case: Case, speaker: str) -> type[BaseModel]:
    """The self-report schema for one member, with the other members' names as an enum (grammar-friendly)."""
    return _state_schema(tuple(n for n in case.member_names if n != speaker))


@functools.lru_cache(maxsize=256)
def _state_schema(others: tuple[str, ...]) -> type[BaseModel]:  # building pydantic models is slow: once each
    feeling = create_model(
        "FeelingReply",
        member=(Literal[others], ...),  # type: ignore[valid-type]
        warmth=(int, Field(ge=0, le=10)),
        tension=(int, Field(ge=0, le=10)),
    )
    return create_model(
        "MemberStateReply",
        landed=(str, _soft_max(60)),
        emotion=(str, _soft_max(32)),
        intensity=(int, Field(ge=0, le=10)),
        felt_heard=(int, Field(ge=0, le=10)),
        toward=(list[feeling], Field(min_length=len(others), max_length=len(others))),  # type: ignore[valid-type]
        reason=(str, _soft_max(60)),
    )


def current_state(case: Case, name: str, turns: Sequence[Turn]) -> InnerState:
    """A member's latest self-report, or the card's baseline before they have spoken."""
    for t in reversed(turns):
        if t.speaker == name and t.inner is not None:
            return t.inner
    m = case.member(name)
    toward = [
        Feeling(member=vp.target, warmth=vp.warmth, tension=vp.tension) for vp in case.viewpoints if vp.source == name
    ]
    return InnerState(
        landed="", emotion=m.baseline_emotion, intensity=m.baseline_intensity, felt_heard=5, toward=toward
    )


def guard_softening(previous: InnerState, proposed: InnerState) -> InnerState:
    """Cap how far one turn can soften a person; escalation is not capped (people flare up fast)."""
    capped = False

    def soften_down(old: float, new: float) -> float:
        nonlocal capped
        if old - new > MAX_SOFTEN_STEP:
            capped = True
            return old - MAX_SOFTEN_STEP
        return new

    def soften_up(old: float, new: float) -> float:
        nonlocal capped
        if new - old > MAX_SOFTEN_STEP:
            capped = True
            return old + MAX_SOFTEN_STEP
        return new

    before = {f.member: f for f in previous.toward}
    toward = []
    for f in proposed.toward:
        old = before.get(f.member)
        if old is None:
            toward.append(f)
            continue
        toward.append(
            Feeling(
                member=f.member, warmth=soften_up(old.warmth, f.warmth), tension=soften_down(old.tension, f.tension)
            )
        )
    for name, old in before.items():  # a member the model forgot keeps their previous values
        if name not in {f.member for f in toward}:
            toward.append(old)
    intensity = int(soften_down(previous.intensity, proposed.intensity))
    reason = proposed.reason + (" [softening capped]" if capped else "")
    return proposed.model_copy(update={"toward": toward, "intensity": intensity, "reason": reason.strip()})


def describe_state(state: InnerState) -> str:
    toward = "; ".join(f"toward {f.member}: warmth {f.warmth:g}/10, tension {f.tension:g}/10" for f in state.toward)
    return f"{state.emotion} ({state.intensity}/10); {toward}"


def member_sheet(member: Member, state: InnerState) -> str:
    """The private persona sheet: only this member's prompts see it, after the shared prefix."""
    return render_prompt(
        "member_sheet",
        name=member.name,
        role=member.role,
        age=member.age if member.age is not None else "age unknown",
        personality=member.personality or "not described; infer it from how they have spoken",
        style=member.communication_style or "as in the transcript",
        need=member.core_need or "unknown",
        fear=member.core_fear or "unknown",
        triggers="; ".join(member.triggers) or "unknown",
        softeners="; ".join(member.softeners) or "being really heard",
        private="; ".join(member.private_knowledge) or "nothing in particular",
        current=describe_state(state),
    )


def clean_utterance(text: str) -> str:
    text = text.strip().strip('"').strip()
    return " ".join(text.split())


async def member_turn(
    client: ModelClient,
    case: Case,
    turns: Sequence[Turn],
    speaker: str,
    addressees: Sequence[str],
    *,
    seed: int,
    window: int,
    directive: str | None = None,
) -> Turn:
    """Play one member turn: (1)+(2) self-report as structured output, (3) the line, continuing a prefill.

    `directive` is a private stage direction for this turn (a perturbation: "hint that you have thought about
    not being here any more"); it reaches only this member's prompts and is recorded on the turn, never shown
    to the supporter.
    """
    member = case.member(speaker)
    previous = current_state(case, speaker, turns)
    context = shared_context(case, turns, window)
    sheet = member_sheet(member, previous)
    if directive:
        sheet += "\n\n" + render_prompt("member_directive", name=speaker, directive=directive)
    others = ", ".join(n for n in case.member_names if n != speaker)
    schema = state_schema(case, speaker)
    state_call = await client.complete(
        Prompt(
            context=context,
            instructions=sheet
            + "\n\n"
            + render_prompt("member_state", name=speaker, last_line=last_line(turns), others=others),
        ),
        role="member",
        schema=schema,
        max_tokens=260,
        temperature=0.7,
        seed=seed,
    )
    reply = state_call.parsed
    proposed = InnerState(
        landed=reply.landed,
        emotion=reply.emotion,
        intensity=reply.intensity,
        felt_heard=reply.felt_heard,
        toward=[Feeling(member=f.member, warmth=f.warmth, tension=f.tension) for f in reply.toward],
        reason=reply.reason,
    )
    inner = guard_softening(previous, proposed)
    to = ", ".join(addressees)
    speak_call = await client.complete(
        Prompt(
            context=context,
            instructions=sheet
            + "\n\n"
            + render_prompt(
                "member_speak",
                name=speaker,
                emotion=inner.emotion,
                intensity=inner.intensity,
                landed=inner.landed or "-",
                addressee=to,
            ),
            prefill=f'{speaker} (to {to}): "',
            stop=('"', "\n"),
        ),
        role="member",
        max_tokens=72,
        temperature=0.8,
        seed=seed + 1,
    )
    text = clean_utterance(speak_call.text)
    if not text:
        raise ModelError(speak_call.call.model, f"{speaker}'s line came back empty")
    return Turn(
        index=len(turns) + 1,
        speaker=speaker,
        kind="member",
        addressees=list(addressees),
        text=text,
        inner=inner,
        directive=directive,
        calls=[state_call.call, speak_call.call],
    )
