"""JsonDraft: the text a JSON schema forces next, followed character by character (no model needed)."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field

from simulator.llm.embedded import _bounded_integers
from simulator.llm.jsondraft import JsonDraft


class Feeling(BaseModel):
    member: Literal["Theo"]
    warmth: int = Field(ge=0, le=10)


class State(BaseModel):
    landed: str
    intensity: int = Field(ge=0, le=10)
    toward: list[Feeling] = Field(min_length=1, max_length=1)
    move: Literal["defend", "deflect", "disclose", "repair_attempt"]


def schema_of(model: type[BaseModel]) -> dict:
    return _bounded_integers(model.model_json_schema())


def write(schema: dict, target: dict) -> tuple[str, int]:
    """Play a model writing `target` (laid out as json.dumps does) one character at a time wherever the schema
    leaves a choice; every drafted piece must be exactly what the target has there. Returns the reply and how
    many of its characters were drafted."""
    want = json.dumps(target)
    draft, text, drafted = JsonDraft(schema), "", 0
    while not draft.done:
        piece = draft.chain()
        if piece:
            assert want.startswith(text + piece), (text, piece)
            drafted += len(piece)
        else:
            piece = want[len(text)]
        draft.feed(piece)
        text += piece
    assert text == want
    return text, drafted


def test_keys_quotes_and_closing_braces_are_drafted_the_values_are_not():
    target = {
        "landed": "he never listens",
        "intensity": 7,
        "toward": [{"member": "Theo", "warmth": 3}],
        "move": "defend",
    }
    text, drafted = write(schema_of(State), target)
    free = len("he never listens") + 1 + len("7") + len("3") + len("def")  # the string's closing quote too
    assert drafted == len(text) - free
    draft = JsonDraft(schema_of(State))
    assert draft.chain() == '{"landed": "'


def test_an_enum_value_is_finished_once_its_letters_leave_one_choice():
    draft = JsonDraft(schema_of(State))
    draft.feed('{"landed": "x", "intensity": 1, "toward": [{"member": "Theo", "warmth": 2}], "move": "')
    assert draft.chain() == ""  # four values: the model chooses
    draft.feed("d")
    assert draft.chain() == ""  # defend, deflect, disclose
    draft.feed("e")
    assert draft.chain() == "f"  # defend and deflect share "def"
    draft.feed("fl")
    assert draft.chain() == 'ect"}'
    draft.feed('ect"}')
    assert draft.done


def test_an_integer_is_complete_only_when_no_other_value_extends_it():
    draft = JsonDraft(schema_of(State))
    draft.feed('{"landed": "x", "intensity": 1')
    assert draft.chain() == ""  # 1 or 10
    draft.feed("0")
    assert draft.chain() == ', "toward": [{"member": "Theo", "warmth": '
    other = JsonDraft(schema_of(State))
    other.feed('{"landed": "x", "intensity": 7')
    assert other.chain().startswith(', "toward": [')


def test_the_model_writing_its_own_spacing_and_merged_tokens_is_followed():
    draft = JsonDraft(schema_of(State))
    draft.feed('{ "land')  # a key the model began: its rest is drafted
    assert draft.chain() == 'ed": "'
    draft.feed('ed" :  "a \\"quoted\\" word",')  # escapes inside strings, spaces around the colon
    assert draft.chain() == ' "intensity": '


class Optional_(BaseModel):
    a: str
    b: str | None = None
    c: int = 0


def test_optional_properties_are_never_drafted():
    draft = JsonDraft(schema_of(Optional_))
    draft.feed('{"a": "x"')
    assert draft.chain() == ""  # the model may close the object or write b or c


class Scores(BaseModel):
    by_member: dict[str, int]


def test_a_dict_is_never_closed_for_the_model():
    draft = JsonDraft(schema_of(Scores))
    assert draft.chain() == '{"by_member": {'
    draft.feed('{"by_member": {"Dana": 3')
    assert draft.chain() == ""  # another member, or the end
    draft.feed("}")
    assert draft.chain() == "}"


class Items(BaseModel):
    items: list[str] = Field(min_length=2, max_length=3)


def test_array_lengths_force_commas_and_the_closing_bracket():
    draft = JsonDraft(schema_of(Items))
    assert draft.chain() == '{"items": ["'
    draft.feed('{"items": ["one"')
    assert draft.chain() == ', "'  # two at least
    draft.feed(', "two"')
    assert draft.chain() == ""  # a third, or the end
    draft.feed(', "three"')
    assert draft.chain() == "]}"


def test_every_schema_the_tool_asks_small_models_for_drafts_to_a_valid_reply():
    """Member self-reports and lean judge replies: most of the reply is drafted, and what the model writes in
    between completes it into JSON that validates."""
    from simulator.members import _state_schema

    toward = [{"member": "Theo", "warmth": 3, "tension": 7}, {"member": "Mia", "warmth": 5, "tension": 5}]
    member = _state_schema(("Theo", "Mia"), True)  # no counsellor turn since this member spoke: no felt_heard
    target = {"landed": "felt dismissed", "cue": "", "emotion": "hurt", "intensity": 6, "toward": toward,
              "reason": "old wounds", "move": "defend"}  # fmt: skip
    text, drafted = write(schema_of(member), target)
    member.model_validate_json(text)
    assert drafted > len(text) * 0.6
    member = _state_schema(("Theo", "Mia"), True, "missed")  # after a counsellor turn
    target = {"landed": "felt dismissed", "reading": "missed", "cue": "", "emotion": "hurt", "intensity": 6,
              "felt_heard": 2, "toward": toward, "reason": "old wounds", "move": "defend"}  # fmt: skip
    text, drafted = write(schema_of(member), target)
    member.model_validate_json(text)
    assert drafted > len(text) * 0.6


def test_a_lean_judge_reply_is_mostly_drafted_citations_included():
    """A lean (local/) judge cites a sentence opening from an enum: once its first letters pick one, the rest
    of the citation is drafted, as are every key, brace and score object around the scores."""
    from judges import load_rubric
    from judges.scoring._schema import LEAN, SchemaBuilder
    from tests._session_fixtures import couple_session, fill_reply

    record = couple_session()
    schema = SchemaBuilder(record, load_rubric(), LEAN).reply(
        [t for t in record.turns if t.kind == "supporter"], session=True
    )
    target = fill_reply(schema)
    text, drafted = write(schema_of(schema), target)
    schema.model_validate_json(text)
    assert drafted > len(text) * 0.6
