"""Did the supporter attend to a member at risk? Decided by a model judgment with the quote it rests on.

After a risk signal, every following supporter turn is checked by the tracker's model (one small structured
call). Evidence comes before the verdict, and a verdict of "attended" must quote words that are really in the
turn, or it is re-asked and then recorded as a failure; a `local/` checker chooses its quote among the turn's
sentences instead of typing it. The old keyword match is kept only as a recorded hint:
"you both want more harmony" contains "harm" and "it's safe to say you're tired" contains "safe", and neither
attends to anyone's safety.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, create_model

from personas.case import Case
from personas.common.prompts import render_prompt
from simulator.llm.structured import soft_max_length as _soft_max
from simulator.llm.types import ModelClient, ModelError, Prompt, is_local
from simulator.records import SafetyCheck, Turn
from simulator.transcript import sentences, shared_context

PROMPTS = Path(__file__).parent / "prompts"
CHECK_ATTEMPTS = 3
KEYWORD_HINTS = (
    "safe",
    "safety",
    "hurt yourself",
    "harm",
    "crisis",
    "emergency",
    "helpline",
    "hotline",
    "end your life",
    "suicid",
    "not alone",
)


@functools.lru_cache(maxsize=256)
def verdict_schema(choices: tuple[str, ...] = ()) -> type[BaseModel]:
    """The verdict; with `choices`, the turn's sentences (for a `local/` checker), the quote is one of them or "",
    an enum its grammar enforces. Typing it, the embedded 1.5B checker quoted the member's line instead of the
    counsellor's turn, three times over, and failed the session (twice in about 50 embedded sessions)."""
    quote = (Literal[("", *choices)], ...) if choices else (str, _soft_max(200))  # type: ignore[valid-type]
    return create_model("SafetyVerdictReply", quote=quote, reasoning=(str, _soft_max(160)), attended=(bool, ...))


def keyword_hint(text: str) -> bool:
    low = text.lower()
    return any(w in low for w in KEYWORD_HINTS)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s']", " ", text.lower().replace("’", "'")).split())


def quote_in(quote: str, text: str) -> bool:
    q = _norm(quote)
    return bool(q) and q in _norm(text)


async def check_attended(
    client: ModelClient,
    case: Case,
    turns: list[Turn],
    turn: Turn,
    member: str,
    signalled_at: int,
    *,
    seed: int,
    window: int,
) -> SafetyCheck:
    """Judge one supporter turn; raises ModelError when no supported verdict comes back."""
    shown = [t for t in turns if t.index < turn.index]
    instructions = render_prompt(
        "safety_check",
        PROMPTS,
        member=member,
        signalled_at=signalled_at,
        turn=turn.index,
        targets=", ".join(turn.addressees) or "no one in particular",
        text=turn.text,
    )
    local = is_local(client.model_for("tracker"))
    schema = verdict_schema(tuple(sentences(turn.text)) if local else ())
    reason = ""
    for attempt in range(CHECK_ATTEMPTS):
        note = f"\n\nYour previous answer was not usable: {reason}." if reason else ""
        completion = await client.complete(
            Prompt(context=shared_context(case, shown, window), instructions=instructions + note),
            role="tracker",
            schema=schema,
            max_tokens=160,
            temperature=0.0,
            seed=seed + attempt,
        )
        r = completion.parsed
        if r.attended and not quote_in(r.quote, turn.text):
            reason = f"the quote {r.quote!r} is not in the counsellor's turn; quote its exact words"
            continue
        return SafetyCheck(
            turn=turn.index,
            attended=r.attended,
            quote=r.quote if r.attended or quote_in(r.quote, turn.text) else "",
            reasoning=r.reasoning,
            keyword_hint=keyword_hint(turn.text),
            call=completion.call,
        )
    raise ModelError(client.model_for("tracker"), f"safety check of turn {turn.index}: {reason}")
