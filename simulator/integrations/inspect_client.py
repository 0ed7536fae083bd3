"""Inspect AI models behind the project's ModelClient protocol, so the engine, the supporter adapter and the
judges run unchanged with Inspect's providers, retries, rate limits and cache.

Each role bound to an Inspect `Model` (the model under evaluation as `supporter`, `--model-role member=...` and the
other roles) is called through `Model.generate`; every other role falls back to a rescue-sim client (by default
the embedded model). Prompts are rendered with the chat profile (system + user messages, the JSON schema in the
prompt) and replies are checked by `simulator.llm.structured.check_reply`, with the same number of attempts as the
litellm client: a reply that never validates raises ModelError with `raw` set, which the supporter turns into an
invalid decision, exactly as for any other model.
"""

from __future__ import annotations

import functools
import math
import re
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from simulator.llm.profiles import CHAT
from simulator.llm.structured import ParseError, check_reply
from simulator.llm.types import CallRecord, Completion, ModelClient, ModelError, Prompt, Role, Usage, YesProbability

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage, Model, ModelOutput

INSPECT_PREFIX = "inspect"  # model ids of Inspect-backed roles: `inspect/<provider>/<model>`
YES_WORDS, NO_WORDS = ("yes",), ("no",)
TOP_LOGPROBS = 20


def inspect_model_id(model: Model) -> str:
    """The id a record keeps for an Inspect model: `inspect/openai/gpt-4o-mini`, `inspect/mockllm/model`."""
    return f"{INSPECT_PREFIX}/{model}"


@functools.lru_cache(maxsize=512)
def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """A schema class's JSON schema, built once per class (pydantic takes milliseconds to build one)."""
    return schema.model_json_schema()


def _messages(rendered: list[dict[str, str]]) -> list[ChatMessage]:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return [kinds[m["role"]](content=m["content"]) for m in rendered]


def _usage(output: ModelOutput) -> Usage:
    u = output.usage
    if u is None:
        return Usage()
    return Usage(
        prompt_tokens=u.input_tokens or 0,
        completion_tokens=u.output_tokens or 0,
        cached_prompt_tokens=u.input_tokens_cache_read or 0,
    )


_FINISH = {"stop": "stop", "max_tokens": "length", "model_length": "length"}


class InspectModelClient:
    """A ModelClient whose roles are Inspect models where given, and `fallback` (a rescue-sim client) otherwise.

    `calls` counts the calls each role made through Inspect (tests assert the roles reach the right models)."""

    def __init__(self, models: dict[str, Model], fallback: ModelClient | None = None, *, parse_attempts: int = 3):
        self.models = dict(models)
        self.fallback = fallback
        self.parse_attempts = parse_attempts
        self.calls: dict[str, int] = {}
        self._ids = {role: inspect_model_id(m) for role, m in self.models.items()}

    def model_for(self, role: Role) -> str:
        if role in self._ids:
            return self._ids[role]
        if role == "check" and "judge" in self._ids:  # stressor checks go to the judge, as in stress runs
            return self._ids["judge"]
        return self._fallback(role).model_for(role)

    def _fallback(self, role: str) -> ModelClient:
        if self.fallback is None:
            raise ModelError(f"{INSPECT_PREFIX}/?", f"no Inspect model for role {role!r} and no fallback client")
        return self.fallback

    def _inspect_model(self, role: str, model: str | None) -> Model | None:
        """The Inspect model a call goes to: the one named by `model` (an `inspect/...` id), else the role's;
        None when the call belongs to the fallback client."""
        own = self.models.get(role) or (self.models.get("judge") if role == "check" else None)
        if model is not None and model.startswith(f"{INSPECT_PREFIX}/"):
            if own is not None and inspect_model_id(own) == model:  # the same model id may serve several roles
                return own
            for m in self.models.values():
                if inspect_model_id(m) == model:
                    return m
            raise ModelError(model, f"no Inspect model {model!r} among the roles given")
        return own if model is None else None

    async def _generate(self, model: Model, role: str, messages: list[ChatMessage], **config: Any) -> ModelOutput:
        from inspect_ai.model import GenerateConfig

        self.calls[role] = self.calls.get(role, 0) + 1
        try:
            return await model.generate(messages, config=GenerateConfig(**config))
        except Exception as err:  # noqa: BLE001 - Inspect has already retried; the session records the reason
            raise ModelError(inspect_model_id(model), f"{type(err).__name__}: {' '.join(str(err).split())[:300]}")

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
        target = self._inspect_model(role, model)
        if target is None:
            return await self._fallback(role).complete(
                prompt,
                role=role,
                model=model,
                schema=schema,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
                trial=trial,
            )
        model_id = inspect_model_id(target)
        messages = _messages(CHAT.render(prompt, _json_schema(schema) if schema is not None else None))
        attempts, seconds, usage = 0, 0.0, Usage()
        last_reason, last_text = "", None
        for parse_try in range(self.parse_attempts):
            began = time.perf_counter()
            output = await self._generate(
                target,
                role,
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=None if seed is None else seed + 7919 * parse_try,
            )
            seconds += output.time if output.time is not None else time.perf_counter() - began
            attempts += 1
            got = _usage(output)
            usage = Usage(
                prompt_tokens=usage.prompt_tokens + got.prompt_tokens,
                completion_tokens=usage.completion_tokens + got.completion_tokens,
                cached_prompt_tokens=usage.cached_prompt_tokens + got.cached_prompt_tokens,
            )
            text = output.completion
            try:
                parsed = check_reply(text, schema)
            except ParseError as err:
                last_reason, last_text = str(err), text
                continue
            stop = output.choices[0].stop_reason if output.choices else None
            call = CallRecord(
                model=model_id,
                role=role,
                latency_s=round(seconds, 4),
                usage=usage,
                cost_usd=output.usage.total_cost if output.usage is not None else None,
                attempts=attempts,
                finish_reason=_FINISH.get(stop, stop) if stop else None,
            )
            return Completion(text=text, parsed=parsed, call=call)
        raise ModelError(
            model_id,
            f"no valid output after {self.parse_attempts} attempts: {last_reason}",
            attempts=attempts,
            latency_s=seconds,
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
        """P(yes) as the litellm client reads it: from the first token's top log-probabilities where the provider
        gives them, else the share of yes among `samples` answers at temperature 1."""
        target = self._inspect_model(role, model)
        if target is None:
            fallback = self._fallback(role)
            return await fallback.yes_probability(  # type: ignore[attr-defined]
                prompt, role=role, model=model, samples=samples, seed=seed, trial=trial
            )
        model_id = inspect_model_id(target)
        messages = _messages(CHAT.render(prompt, None))
        began = time.perf_counter()
        output = await self._generate(
            target, role, messages, max_tokens=1, temperature=0.0, seed=seed, logprobs=True, top_logprobs=TOP_LOGPROBS
        )
        tops = _first_token_logprobs(output)
        if tops:
            yes = sum(math.exp(v) for t, v in tops.items() if t.strip().lower() in YES_WORDS)
            no = sum(math.exp(v) for t, v in tops.items() if t.strip().lower() in NO_WORDS)
            if yes + no > 0:
                call = self._record(model_id, role, [output], time.perf_counter() - began)
                return YesProbability(p_yes=yes / (yes + no), method="logprobs", yes=yes, no=no, call=call)
        outs = []
        for i in range(samples):
            outs.append(
                await self._generate(
                    target,
                    role,
                    messages,
                    max_tokens=3,
                    temperature=1.0,
                    seed=None if seed is None else seed + 104729 * (i + 1),
                )
            )
        words = [_first_word(o.completion) for o in outs]
        yes_n, no_n = words.count("yes"), words.count("no")
        if yes_n + no_n == 0:
            raise ModelError(model_id, f"none of {samples} sampled answers said yes or no: {outs[0].completion[:40]!r}")
        call = self._record(model_id, role, [output, *outs], time.perf_counter() - began)
        return YesProbability(
            p_yes=yes_n / (yes_n + no_n), method="samples", k=samples, yes=yes_n / samples, no=no_n / samples, call=call
        )

    @staticmethod
    def _record(model_id: str, role: str, outputs: list[ModelOutput], seconds: float) -> CallRecord:
        usages = [_usage(o) for o in outputs]
        return CallRecord(
            model=model_id,
            role=role,
            latency_s=round(seconds, 4),
            usage=Usage(
                prompt_tokens=sum(u.prompt_tokens for u in usages),
                completion_tokens=sum(u.completion_tokens for u in usages),
                cached_prompt_tokens=sum(u.cached_prompt_tokens for u in usages),
            ),
            attempts=len(outputs),
            finish_reason="stop",
        )


def _first_token_logprobs(output: ModelOutput) -> dict[str, float] | None:
    if not output.choices or output.choices[0].logprobs is None or not output.choices[0].logprobs.content:
        return None
    first = output.choices[0].logprobs.content[0]
    out: dict[str, float] = {first.token: first.logprob}
    for alt in first.top_logprobs or []:
        out[alt.token] = max(out.get(alt.token, -math.inf), alt.logprob)
    return out


def _first_word(text: str) -> str:
    words = re.findall(r"[a-z]+", text.lower())
    return words[0] if words else ""
