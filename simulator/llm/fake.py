"""A ModelClient with canned replies, for tests and for measuring engine overhead without a model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from simulator.llm.structured import ParseError, check_reply
from simulator.llm.types import CallRecord, Completion, ModelError, Prompt, Role, YesProbability

Reply = str | BaseModel | dict | Exception | Callable[["FakeCall"], Any]


# Anchor lines (a rubric's `anchors:`) a fake judge answers as a calibrated judge reads them, line -> P(yes): empty
# here (this layer knows no rubric); the tests fill it from the shipped rubric (tests/conftest.py), and a caller may
# pass `anchors=judges.scoring._checklist.anchor_readings(rubric)` to a fake instead.
DEFAULT_ANCHORS: dict[str, float] = {}


def anchor_reading(question: str, anchors: dict[str, float] | None) -> float | None:
    """A fake judge's answer to a question that quotes an anchor line (`anchors` None: DEFAULT_ANCHORS), so the
    P(yes) a test chooses for a line passes through an anchored item's calibration unchanged."""
    for line, p in (DEFAULT_ANCHORS if anchors is None else anchors).items():
        if f'"{line}"' in question:
            return p
    return None


@dataclass(frozen=True)
class FakeReply:
    """Text with the finish reason a provider would report (`length`: cut off at max_tokens)."""

    text: str
    finish_reason: str = "stop"


@dataclass
class FakeCall:
    """What the fake saw: enough for tests to assert on prompts, roles and schemas."""

    prompt: Prompt
    role: str
    model: str
    schema: type[BaseModel] | None
    seed: int | None
    trial: int
    max_tokens: int = 256


@dataclass
class FakeModelClient:
    """Replies in order (or from `by_role[role]`, or from `default(call)`), recording every call.

    A reply may be text, a dict or pydantic object (sent as JSON), an Exception (raised as a ModelError with
    its message, as the real client does after retries), or a callable receiving the FakeCall. Structured
    replies go through the same parser as real ones, with the same number of attempts, so malformed, fenced
    and refused outputs behave as they would with a real model.
    """

    replies: list[Reply] = field(default_factory=list)
    by_role: dict[str, list[Reply]] = field(default_factory=dict)
    default: Callable[[FakeCall], Any] | None = None
    model: str = "fake/model"
    parse_attempts: int = 3
    calls: list[FakeCall] = field(default_factory=list)
    yes: Callable[[FakeCall], float | Exception] | None = None  # P(yes) for `yes_probability`, per call
    yes_method: str = "logprobs"  # `samples`: answers as a provider without log-probabilities would
    anchors: dict[str, float] | None = None  # anchor line -> P(yes), asked before `yes` (None: DEFAULT_ANCHORS)

    def model_for(self, role: Role) -> str:
        return self.model

    def _next(self, call: FakeCall) -> Any:
        queue = self.by_role.get(call.role)
        if queue:
            return queue.pop(0)
        if self.replies:
            return self.replies.pop(0)
        if self.default is not None:
            return self.default
        raise AssertionError(f"FakeModelClient ran out of replies (call {len(self.calls)}, role {call.role})")

    async def complete(
        self,
        prompt: Prompt,
        *,
        role: Role,
        model: str | None = None,
        schema: type[BaseModel] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
        seed: int | None = None,
        trial: int = 0,
    ) -> Completion:
        model = model or self.model
        last, last_text = "", None
        for attempt in range(1, self.parse_attempts + 1):
            call = FakeCall(
                prompt=prompt, role=role, model=model, schema=schema, seed=seed, trial=trial, max_tokens=max_tokens
            )
            self.calls.append(call)
            reply = self._next(call)
            if callable(reply) and not isinstance(reply, type):
                reply = reply(call)
            finish = "stop"
            if isinstance(reply, FakeReply):
                reply, finish = reply.text, reply.finish_reason
            if isinstance(reply, Exception):
                raise ModelError(model, str(reply) or type(reply).__name__, attempts=attempt)
            if isinstance(reply, BaseModel):
                text = reply.model_dump_json()
            elif isinstance(reply, dict):
                import json

                text = json.dumps(reply)
            else:
                text = str(reply)
            try:
                parsed = check_reply(text, schema)
            except ParseError as err:
                last, last_text = str(err), text
                continue
            record = CallRecord(model=model, role=role, latency_s=0.0, attempts=attempt, finish_reason=finish)
            return Completion(text=text, parsed=parsed, call=record)
        raise ModelError(
            model,
            f"no valid output after {self.parse_attempts} attempts: {last}",
            attempts=self.parse_attempts,
            raw=last_text,
        )

    async def yes_probability(
        self,
        prompt: Prompt,
        *,
        role: Role,
        model: str | None = None,
        samples: int = 5,
        seed: int | None = None,
        trial: int = 0,
    ) -> YesProbability:
        """P(yes) from `yes(call)` (a question quoting an anchor line: as a calibrated judge reads it, `anchors`):
        as read from log-probabilities, or as the share of yes among `samples` answers (rounded to what k answers
        can say) when `yes_method` is `samples`."""
        model = model or self.model
        call = FakeCall(prompt=prompt, role=role, model=model, schema=None, seed=seed, trial=trial, max_tokens=1)
        self.calls.append(call)
        if self.yes is None:
            raise AssertionError("FakeModelClient.yes is not set: it answers no yes/no questions")
        p = anchor_reading(prompt.instructions, self.anchors)
        p = self.yes(call) if p is None else p
        if isinstance(p, Exception):
            raise ModelError(model, str(p) or type(p).__name__)
        record = CallRecord(model=model, role=role, latency_s=0.0, finish_reason="stop")
        if self.yes_method == "samples":
            said_yes = round(p * samples)
            return YesProbability(
                p_yes=said_yes / samples,
                method="samples",
                k=samples,
                yes=said_yes / samples,
                no=1 - said_yes / samples,
                call=record,
            )
        return YesProbability(p_yes=p, method="logprobs", yes=p, no=1 - p, call=record)
