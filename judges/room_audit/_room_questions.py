"""The room measures where a rule cannot see them: one yes/no question per measure and member line, scored by
P(yes) as the checklist judges are (judges.scoring's `yes_probability` path; issue 42).

Only lines the rule left unflagged are asked (a rule's hit stands: it shows the words). The questions are data
(judges/prompts/checklist/room_questions.yaml), each with what it sees and the P(yes) at which it counts, both
chosen on lines of known answer and measured on lines written by others and on real people (`room_bench.py known
--ask`, `rescue --ask`). A question whose call fails is recorded with its reason, never counted either way.

No report counts these answers yet. On the embedded 1.5B the counsellor-voice question ranks written lines well
(AUC 0.98 on the sealed held-out lines) but cannot tell real speech apart: 44% of RESCUE's real member lines and
43% of its real therapist lines read yes (tests/benchmarks/README.md, issue 42 (1)). A measure that would call
nearly half of real people therapists cannot check a room against "at most 5% in the counsellor's voice".
"""

from __future__ import annotations

import functools
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from judges.scoring._checklist import CHECKLIST_PROMPTS, SAMPLES
from judges.scoring._render import judge_context
from personas.common.prompts import render_prompt
from simulator.llm.types import ModelClient, ModelError, Prompt
from simulator.records import SessionRecord
from simulator.turn_checks import read_line

LINE_CONTEXT = "You read lines from counselling sessions."  # what a `sees: line` question is shown before it


class RoomQuestion(BaseModel):
    """One room measure asked of the model: what it sees, what it asks, and the P(yes) at which it holds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sees: Literal["line", "transcript"] = Field(description="The line alone, or the transcript up to it.")
    yes_at: float = Field(ge=0, le=1, description="P(yes) at or above which the measure holds.")
    question: str = Field(description="The question; {speaker}, {group} and {text} are filled per line.")


class RoomAnswer(BaseModel):
    """One question about one member line: P(yes) and whether the measure holds, or why it could not be asked."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(description="The member turn asked about.")
    measure: str = Field(description="The room measure asked (`counsellor_voice`).")
    p_yes: float | None = Field(default=None, description="P(yes) / (P(yes) + P(no)); None when the call failed.")
    holds: bool | None = Field(default=None, description="p_yes >= the question's yes_at; None when the call failed.")
    failure: str | None = Field(default=None, description="Why the question has no answer.")


@functools.cache
def room_questions() -> dict[str, RoomQuestion]:
    data = yaml.safe_load((CHECKLIST_PROMPTS / "room_questions.yaml").read_text(encoding="utf-8"))
    return {m: RoomQuestion.model_validate(q) for m, q in data.items()}


def room_prompt(record: SessionRecord, turn: int, measure: str) -> Prompt:
    """The question `measure` about member turn `turn` of `record`, as the model is asked it."""
    q = room_questions()[measure]
    i = next(k for k, t in enumerate(record.turns) if t.index == turn)
    line = record.turns[i]
    group = "couple" if record.case.group == "couple" else "family"
    text = q.question.format(speaker=line.speaker, group=group, text=line.text.strip())
    if q.sees == "line":
        return Prompt(context=LINE_CONTEXT, instructions=text)
    upto = record.model_copy(update={"turns": record.turns[: i + 1]})
    about = f"{line.speaker}'s line [{turn}], the last turn of the transcript"
    return Prompt(
        context=judge_context(upto),
        instructions=render_prompt("item", CHECKLIST_PROMPTS, about=about, question=text),
    )


def questions_for(record: SessionRecord) -> list[tuple[int, str]]:
    """(turn, measure) for every member line and asked measure its rule left unflagged."""
    out = []
    for i, t in enumerate(record.turns):
        if t.kind != "member" or not t.text.strip():
            continue
        r = read_line(t.text, t.speaker, t.addressees, record.case, record.turns[:i])
        out += [(t.index, m) for m in room_questions() if getattr(r, m) is None]
    return out


async def ask_room(record: SessionRecord, client: ModelClient, model: str, *, seed: int = 0) -> list[RoomAnswer]:
    """Every question of `questions_for(record)`, answered by `model` as P(yes)."""
    answers = []
    for turn, measure in questions_for(record):
        try:
            got = await client.yes_probability(  # type: ignore[attr-defined]
                room_prompt(record, turn, measure), role="judge", model=model, samples=SAMPLES, seed=seed
            )
            answer = RoomAnswer(
                turn=turn, measure=measure, p_yes=got.p_yes, holds=got.p_yes >= room_questions()[measure].yes_at
            )
        except ModelError as err:
            answer = RoomAnswer(turn=turn, measure=measure, failure=err.reason)
        answers.append(answer)
    return answers


__all__ = [
    "LINE_CONTEXT",
    "RoomAnswer",
    "RoomQuestion",
    "ask_room",
    "questions_for",
    "room_prompt",
    "room_questions",
]
