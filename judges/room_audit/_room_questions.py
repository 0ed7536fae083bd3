"""The room measures where a rule cannot see them: one yes/no question per measure and member line, scored by
P(yes) as the checklist judges are (judges.scoring's `yes_probability` path; issue 42).

Only lines the rule left unflagged are asked (a rule's hit stands: it shows the words), and the third-person
question only about a line to one member that uses he/she or that member's name. The questions are data
(judges/prompts/checklist/room_questions.yaml); the transcript up to the line is shown as data, as the judges see
it. A question whose call fails is recorded with its reason, never counted either way.
"""

from __future__ import annotations

import functools
import re

import yaml
from pydantic import BaseModel, ConfigDict, Field

from judges.scoring._checklist import CHECKLIST_PROMPTS, SAMPLES
from judges.scoring._render import judge_context
from personas.common.prompts import render_prompt
from simulator.llm.types import ModelClient, ModelError, Prompt
from simulator.records import SessionRecord
from simulator.turn_checks import read_line, words

YES = 0.5  # P(yes) at or above which a question counts the measure as holding
_PRONOUNS = frozenset({"he", "she", "him", "her", "his", "hers", "he's", "she's"})


class RoomAnswer(BaseModel):
    """One question about one member line: P(yes), or why it could not be asked."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(description="The member turn asked about.")
    measure: str = Field(description="`grounded`, `counsellor_voice` or `third_person`.")
    p_yes: float | None = Field(default=None, description="P(yes) / (P(yes) + P(no)); None when the call failed.")
    failure: str | None = Field(default=None, description="Why the question has no answer.")


@functools.cache
def room_questions() -> dict[str, str]:
    return yaml.safe_load((CHECKLIST_PROMPTS / "room_questions.yaml").read_text(encoding="utf-8"))


def questions_for(record: SessionRecord) -> list[tuple[int, str, str]]:
    """(turn, measure, question) for every member line and measure its rule left unflagged."""
    case = record.case
    group = "couple" if case.group == "couple" else "family"
    out = []
    for i, t in enumerate(record.turns):
        if t.kind != "member" or not t.text.strip():
            continue
        r = read_line(t.text, t.speaker, t.addressees, case, record.turns[:i])
        to = [a for a in t.addressees if a in case.member_names and a != t.speaker]
        fill = {"speaker": t.speaker, "group": group, "addressee": to[0] if len(to) == 1 else ""}
        if r.grounded is None:
            out.append((t.index, "grounded", room_questions()["grounded"].format(**fill)))
        if r.counsellor_voice is None:
            out.append((t.index, "counsellor_voice", room_questions()["counsellor_voice"].format(**fill)))
        ws = set(words(t.text))
        if r.third_person is None and len(to) == 1 and (ws & _PRONOUNS or re.search(rf"\b{to[0]}\b", t.text)):
            out.append((t.index, "third_person", room_questions()["third_person"].format(**fill)))
    return out


async def ask_room(record: SessionRecord, client: ModelClient, model: str, *, seed: int = 0) -> list[RoomAnswer]:
    """Every question of `questions_for(record)`, answered by `model` as P(yes)."""
    answers = []
    for turn, measure, question in questions_for(record):
        upto = record.model_copy(update={"turns": [t for t in record.turns if t.index <= turn]})
        speaker = next(t.speaker for t in record.turns if t.index == turn)
        about = f"{speaker}'s line [{turn}], the last turn of the transcript"
        prompt = Prompt(
            context=judge_context(upto),
            instructions=render_prompt("item", CHECKLIST_PROMPTS, about=about, question=question),
        )
        try:
            got = await client.yes_probability(  # type: ignore[attr-defined]
                prompt, role="judge", model=model, samples=SAMPLES, seed=seed
            )
        except ModelError as err:
            answers.append(RoomAnswer(turn=turn, measure=measure, failure=err.reason))
            continue
        answers.append(RoomAnswer(turn=turn, measure=measure, p_yes=got.p_yes))
    return answers


__all__ = ["YES", "RoomAnswer", "ask_room", "questions_for", "room_questions"]
