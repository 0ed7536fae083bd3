"""What crosses the model-access boundary: prompts in, completions with their accounting out."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from personas.common.errors import UserError

Role = Literal["member", "supporter", "tracker", "judge", "bench", "enrich", "check"]


LOCAL_PROVIDER = "local"  # the embedded offline model's litellm provider: `local/<gguf stem>`


def provider_of(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else "openai"


def is_local(model: str) -> bool:
    """Is this the embedded offline model (one process, one batch at a time, no API)?"""
    return provider_of(model) == LOCAL_PROVIDER


class Prompt(BaseModel):
    """A model-agnostic prompt; a prompt profile renders it into messages for a given model.

    Shared, stable text goes first (`context`: case and transcript), role-specific text last
    (`instructions`), so consecutive calls share a prefix that llama.cpp and hosted providers cache.
    """

    model_config = ConfigDict(frozen=True)

    context: str = Field(description="Shared prefix: case context, transcript so far. Treated as data.")
    instructions: str = Field(description="Role-specific task, placed after the context.")
    prefill: str = Field(default="", description="Start of the reply, e.g. 'Dana: \"' (script profiles continue it).")
    stop: tuple[str, ...] = Field(default=(), description="Stop sequences for free-text replies.")
    avoid: tuple[str, ...] = Field(
        default=(),
        description="Earlier text the reply must not copy. The embedded model bans its token sequences while it "
        "decodes (no-repeat n-grams); other providers have no such control, so there only the prompt can ask.",
    )


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = Field(default=0, description="Prompt tokens served from a prefix cache.")


class CallRecord(BaseModel):
    """Accounting for one model call (after retries): kept with every turn and judgment."""

    model: str
    role: str
    latency_s: float = Field(description="Model time of all attempts (no queueing, no backoff); 0 on a cache hit.")
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = Field(default=None, description="Provider cost; None when unknown, 0 for local models.")
    attempts: int = 1
    cache_hit: bool = False
    finish_reason: str | None = Field(
        default=None, description="Why generation stopped (`stop`, `length` = cut at max_tokens); None if unknown."
    )


class Completion(BaseModel):
    """A successful call: raw text, the validated object when a schema was given, and the accounting."""

    text: str
    parsed: Any = None
    call: CallRecord


class YesProbability(BaseModel):
    """How likely a model answers "yes" to a yes/no question: P(yes) / (P(yes) + P(no)).

    `logprobs`: read from the first answer token's probabilities (llama.cpp's logits, or a provider's
    `top_logprobs`); `samples`: the share of yes among `k` sampled answers, where the provider gives no
    log-probabilities."""

    p_yes: float = Field(ge=0, le=1, description="P(yes) / (P(yes) + P(no)).")
    method: Literal["logprobs", "samples"] = Field(description="How p_yes was read.")
    k: int = Field(default=1, ge=1, description="Answers sampled (`samples`); 1 for `logprobs`.")
    yes: float = Field(description="Raw probability mass (logprobs) or share of answers (samples) that said yes.")
    no: float = Field(description="The same for no; yes + no < 1 when some mass went to other words.")
    call: CallRecord = Field(description="Accounting of the call(s): usage, latency, cache hit.")


class ModelError(Exception):
    """A call that failed after its retries; carries the reason so the item is recorded as failed."""

    def __init__(self, model: str, reason: str, *, attempts: int = 1, latency_s: float = 0.0, raw: str | None = None):
        self.model, self.reason, self.attempts, self.latency_s = model, reason, attempts, latency_s
        self.raw = raw  # the last reply, when the model answered but never validly (None: the provider failed)
        super().__init__(f"{model}: {reason}")


class ModelConfigError(UserError):
    """A model that cannot be used as configured (missing key, unknown model, unreachable endpoint)."""


@runtime_checkable
class ModelClient(Protocol):
    """Everything agents, trackers and judges need from a model."""

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
    ) -> Completion: ...

    def model_for(self, role: Role) -> str: ...


@runtime_checkable
class AnswerProbabilityClient(Protocol):
    """A client that can say how likely a model answers yes (checklist judges need it)."""

    async def yes_probability(
        self,
        prompt: Prompt,
        *,
        role: Role,
        model: str | None = None,
        samples: int = 5,
        seed: int | None = None,
        trial: int = 0,
    ) -> YesProbability: ...
