"""Turning model text into validated objects: strip code fences, find the JSON, validate, explain failures."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
# An apology counts only when it goes on to decline ("I'm sorry, but I can't ..."): a persona who says "I'm sorry
# if I sound harsh" is in character, and calling that a refusal failed whole sessions.
_DECLINE = r"(?:can(?:no|')t|cannot|won't|will not|(?:am |'m )?(?:not able|unable)|must decline)"
_REFUSAL = re.compile(
    rf"^\s*(?:(?:I'?m sorry|I am sorry|I apologi[sz]e)\b[^.!?]{{0,40}}?\bI {_DECLINE}|"
    r"I can(?:no|')t (?:help|assist|comply|continue|do that|provide)|"
    r"I(?:'m| am) (?:not able|unable) to|As an AI\b|I won't be able)",
    re.IGNORECASE,
)


class ParseError(ValueError):
    """Text that is not a valid instance of the schema; the message says why in one line."""


def looks_like_refusal(text: str) -> bool:
    """A reply that declines the task instead of doing it (a persona breaking, a judge refusing)."""
    return bool(_REFUSAL.match(text.strip().strip('"')))


def extract_json(text: str) -> object:
    """The first JSON object in `text`, tolerating code fences and prose around it."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        cand = cand.strip()
        try:
            return json.loads(cand)
        except json.JSONDecodeError:
            pass
        start = cand.find("{")
        while start != -1:
            try:
                obj, _ = json.JSONDecoder().raw_decode(cand[start:])
                return obj
            except json.JSONDecodeError:
                start = cand.find("{", start + 1)
    if looks_like_refusal(text):
        raise ParseError(f"refusal instead of JSON: {text.strip()[:80]!r}")
    raise ParseError(f"no JSON object in reply: {text.strip()[:80]!r}")


def parse_structured(text: str, schema: type[T]) -> T:
    """Validate model text against a pydantic schema, or raise ParseError naming the first problem."""
    obj = extract_json(text)
    try:
        return schema.model_validate(obj)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ParseError(f"invalid {schema.__name__}: {where}: {first['msg']}") from None


def soft_max_length(n: int) -> Any:
    """A string length limit for the schema sent to the model (grammar-enforced on local models) that is not
    validated: a hosted model that writes a little more is not a failure."""
    from pydantic import Field

    return Field(json_schema_extra={"maxLength": n})


# A word: anything but whitespace, control characters, quotes and backslashes (no JSON escapes needed).
_WORD = r'[^\x00-\x20"\\]+'
_OPEN_WORD = r'[^\x00-\x20"\\]*[^\x00-\x20"\\.!?]'  # one that does not end a sentence
_LAST_WORD = r'[^\x00-\x20"\\]*[.!?]'  # one that does
MID_PHRASE = r",;:(\-–—"  # a regex character class: what a phrase does not end on (fidelity's cut-off check too)
_END_WORD = rf'[^\x00-\x20"\\]*[^\x00-\x20"\\{MID_PHRASE}]'  # one a field may end on ("said," is not)


def soft_max_words(n: int, *, allow_empty: bool = False, finish: int = 0, lead: Sequence[str] = ()) -> Any:
    """A length limit in words, for the schema sent to the model, that ends every field at a word boundary.

    A character cap (`maxLength`) makes a grammar close the string wherever the count runs out, mid-word
    ("...felt dismis"); a word-count pattern lets a field stop only after a whole word, and single spaces keep
    the reply free of newlines. Nor may a field end mid-phrase, on a comma, colon or dash. With `finish`, a field
    that runs past `n` words may go on for up to `finish` more only to end its sentence: it must then close on a
    word ending in . ! or ?, so a small model that ignores the length it was asked for finishes its thought
    instead of being cut mid-sentence at the cap. Like `soft_max_length` it is not validated: a hosted model that
    writes a little more is not a failure. Set `n` above what the prompt asks for, so it is a ceiling, not a
    target. With `lead`, the field must open with one of those phrases, then a space.
    """
    from pydantic import Field

    more = max(0, n - 1)  # words before the last, up to the cap
    body = f"({_WORD} ){{0,{more}}}{_END_WORD}"
    if finish > 0:
        body = f"{body}|({_WORD} ){{{n}}}({_OPEN_WORD} ){{0,{finish - 1}}}{_LAST_WORD}"
    if lead:
        if not all(re.fullmatch(r"[\w ,']+", p) for p in lead):  # literal in the grammar, unescaped
            raise ValueError(f"a lead phrase may hold only letters, digits, spaces, commas and apostrophes: {lead}")
        body = f"({'|'.join(lead)}) ({body})"
    pattern = f"^({body})?$" if allow_empty else f"^({body})$"
    return Field(json_schema_extra={"pattern": pattern})


def max_words(field_schema: dict[str, Any]) -> int | None:
    """The most words `soft_max_words` lets a field have (its cap, plus `finish`), or None when it set none."""
    pattern = field_schema.get("pattern", "")
    if not pattern.startswith("^") or _WORD not in pattern:
        return None
    free = [int(k) for k in re.findall(r"\{0,(\d+)\}", pattern)]
    if not free:
        return None
    return 1 + sum(free) + (1 if _LAST_WORD in pattern else 0)


def check_reply(text: str, schema: type[T] | None) -> T | None:
    """One rule for every client: a structured reply must validate; a free-text reply must not be a refusal."""
    if schema is not None:
        return parse_structured(text, schema)
    if looks_like_refusal(text):
        raise ParseError(f"refusal instead of the requested text: {text.strip()[:80]!r}")
    return None
