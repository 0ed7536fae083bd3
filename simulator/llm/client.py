"""The one module that talks to litellm: every agent, tracker, judge and benchmark call goes through here.

It owns structured output (schema sent where supported, else parsed, validated and retried), retries with
backoff, timeouts, the disk cache, token/cost accounting, per-provider concurrency limits and the embedded
offline model (registered as the litellm custom provider `local`). litellm is imported lazily: it costs
seconds, and commands that never call a model should not pay for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import math
import os
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from simulator.llm import progress
from simulator.llm.cache import CallCache
from simulator.llm.direct import DIRECT_PROVIDERS, DirectOpenAI
from simulator.llm.embedded import (
    DEFAULT_LOCAL_MODEL,
    MAX_BATCH,
    cache_dir,
    canonical_model_id,
    ensure_runnable,
    get_embedded_model,
)
from simulator.llm.profiles import profile_for
from simulator.llm.structured import ParseError, check_reply
from simulator.llm.tokenizers import use_shipped_tokenizers
from simulator.llm.translated import LitellmTranslation, PriceMemo, translates
from simulator.llm.types import (
    LOCAL_PROVIDER,
    CallRecord,
    Completion,
    ModelConfigError,
    ModelError,
    Prompt,
    Role,
    Usage,
    YesProbability,
    is_local,
    provider_of,
)
from simulator.redact import redact

# Bumped whenever something outside the key changes answers (e.g. how a schema becomes a grammar), so stale
# cached answers are never replayed.
CACHE_VERSION = 2
TOP_LOGPROBS = 20  # alternatives asked for the first answer token of a yes/no question (OpenAI allows up to 20)
YES_WORDS, NO_WORDS = ("yes",), ("no",)  # compared stripped and lower-cased: " Yes", "YES" and "yes" count alike

# Where litellm reads a provider's endpoint from the environment when a call names none, in litellm's own order
# (the first one set wins; litellm/main.py's `_complete_<provider>` and get_llm_provider). Providers not listed
# follow litellm's convention, <PROVIDER>_API_BASE (AZURE_API_BASE, HOSTED_VLLM_API_BASE, GROQ_API_BASE, ...).
_OPENAI_BASES = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
ENV_ENDPOINTS: dict[str, tuple[str, ...]] = {
    "openai": _OPENAI_BASES,
    "text-completion-openai": _OPENAI_BASES,
    "aiohttp_openai": _OPENAI_BASES,
    "anthropic": ("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"),
    "vertex_ai": ("VERTEXAI_API_BASE",),
    "ollama_chat": ("OLLAMA_API_BASE",),
    "azure_text": ("AZURE_API_BASE",),
}


def env_endpoint(provider: str) -> str | None:
    """The base URL litellm would read from the environment for `provider`, or None (its built-in default)."""
    names = ENV_ENDPOINTS.get(provider, (f"{provider.upper().replace('-', '_')}_API_BASE",))
    return next((value for name in names if (value := os.environ.get(name))), None)


@dataclass
class _Attempt:
    text: str
    usage: Usage
    cost: float | None
    attempts: int
    seconds: float
    cache_hit: bool
    finish_reason: str | None = None
    top_logprobs: dict[str, float] | None = None  # the first reply token's alternatives, when asked and given


@dataclass
class _Stopwatch:
    """Seconds spent inside `running()` blocks, summed: a call's model time over its retries, failed ones too."""

    seconds: float = 0.0

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - began


class ModelSettings(BaseModel):
    """Which model plays which role, and how calls are made. Built by the CLI from flags and RESCUE_SIM_* vars."""

    model_config = ConfigDict(extra="forbid")

    default: str = Field(default=DEFAULT_LOCAL_MODEL, description="Model for every role not overridden.")
    roles: dict[str, str] = Field(default_factory=dict, description="Role -> model id overrides.")
    api_bases: dict[str, str] = Field(default_factory=dict, description="Model id -> OpenAI-compatible base URL.")
    max_retries: int = Field(default=4, ge=0, description="Retries on rate limits, timeouts and server errors.")
    parse_attempts: int = Field(default=3, ge=1, description="Attempts to get valid structured output.")
    timeout_s: float = Field(default=600.0, gt=0, description="Per attempt; local CPU generation is slow.")
    concurrency: dict[str, int] = Field(default_factory=lambda: {LOCAL_PROVIDER: MAX_BATCH})
    default_concurrency: int = Field(default=8, ge=1)
    cache: bool = True
    cache_path: Path | None = Field(default=None, description="SQLite call cache; default in the cache folder.")
    gguf: str | None = Field(default=None, description="GGUF for `local/` models other than the default.")
    n_threads: int | None = None
    litellm_kwargs: dict[str, Any] = Field(default_factory=dict, description="Extra kwargs (tests: mock_response).")
    direct_http: bool = Field(
        default=True,
        description="Call OpenAI-compatible endpoints that have an api_base (hosted_vllm/..., openai/...) over one "
        "pooled aiohttp session instead of through litellm (same request, retries, cache keys and accounting; "
        "far less CPU per call). False = always litellm.",
    )
    litellm_translate: bool = Field(
        default=True,
        description="Calls the lean path does not take, for providers in simulator.llm.translated: litellm's "
        "request/response translation over the pooled session, without its per-call wrapper. False = litellm's.",
    )

    def model_for(self, role: str) -> str:
        return canonical_model_id(self.roles.get(role, self.default))


_RETRYABLE = (
    "RateLimitError",
    "APIConnectionError",
    "Timeout",
    "InternalServerError",
    "ServiceUnavailableError",
    "APIError",
    "BadGatewayError",
)
_CONFIG = ("AuthenticationError", "NotFoundError", "PermissionDeniedError")


class LiteLLMClient:
    """ModelClient over litellm. Safe to share across tasks in one event loop."""

    def __init__(self, settings: ModelSettings | None = None):
        self.settings = settings or ModelSettings()
        self._cache = (
            CallCache(self.settings.cache_path or cache_dir() / "calls.sqlite") if self.settings.cache else None
        )
        self._semaphores: dict[tuple[int, str], asyncio.Semaphore] = {}
        self._checked_env: set[str] = set()
        self._litellm: Any = None
        self._http = DirectOpenAI()
        self._schema_support: dict[str, bool] = {}  # model -> send response_format (looked up once per model)
        self._translation: LitellmTranslation | None = None
        self._prices: PriceMemo | None = None
        self._no_logprobs: set[str] = set()  # models whose provider answered without log-probabilities

    def model_for(self, role: Role) -> str:
        return self.settings.model_for(role)

    # -- litellm setup ---------------------------------------------------------------------------------------
    def _lib(self) -> Any:
        if self._litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map online
            # `openai/` and the OpenAI-compatible providers through litellm's own HTTP handler, not the openai SDK:
            # the same request body (provider_config.transform_request on both), a third less CPU per call; and no
            # hidden SDK retries (2 by default) under `_send`'s own. "false" in the environment keeps the SDK.
            os.environ.setdefault("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", "true")
            use_shipped_tokenizers()  # litellm loads cl100k_base on import: from the shipped file, never fetched
            import litellm

            logging.getLogger("LiteLLM").setLevel(logging.ERROR)  # its warnings would interleave with the live view
            litellm.suppress_debug_info = True
            litellm.drop_params = True
            _register_local_provider(litellm, self.settings)
            self._litellm = litellm
        return self._litellm

    def _semaphore(self, model: str) -> asyncio.Semaphore:
        key = (id(asyncio.get_running_loop()), provider_of(model))
        if key not in self._semaphores:
            limit = self.settings.concurrency.get(key[1], self.settings.default_concurrency)
            self._semaphores[key] = asyncio.Semaphore(limit)
        return self._semaphores[key]

    def check_environment(self, model: str) -> None:
        """Fail fast, in one line, when a hosted model's API key is missing or the local build cannot run."""
        model = canonical_model_id(model)
        if model in self._checked_env or model in self.settings.api_bases:
            return
        if is_local(model):
            if model != DEFAULT_LOCAL_MODEL and not self.settings.gguf:
                raise ModelConfigError(
                    f"model {model!r}: set RESCUE_SIM_GGUF to its .gguf file, or use {DEFAULT_LOCAL_MODEL}"
                )
            if "mock_response" not in self.settings.litellm_kwargs:
                # weights verified, and the native build proven in a child process not to crash on this CPU
                ensure_runnable(None if model == DEFAULT_LOCAL_MODEL else self.settings.gguf, self.settings.n_threads)
            self._checked_env.add(model)
            return
        if "mock_response" in self.settings.litellm_kwargs:
            return
        lib = self._lib()
        try:
            lib.get_llm_provider(model=model)  # litellm's own lookup: an unknown provider fails here, not mid-session
        except Exception:  # noqa: BLE001 - litellm raises BadRequestError for providers it does not know
            raise ModelConfigError(f"unknown model {model!r}; use provider/model, e.g. openai/gpt-4o-mini") from None
        try:
            env = lib.validate_environment(model=model)
        except Exception as err:  # noqa: BLE001 - litellm raises many kinds for unknown models
            raise ModelConfigError(
                f"model {model!r}: {_one_line(err)}; use provider/model, e.g. openai/gpt-4o-mini"
            ) from None
        if not env.get("keys_in_environment", True):
            keys = ", ".join(env.get("missing_keys") or ["the provider's API key"])
            raise ModelConfigError(f"model {model!r}: missing API key; set {keys}")
        self._checked_env.add(model)

    # -- the call --------------------------------------------------------------------------------------------
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
        model = canonical_model_id(model or self.model_for(role))
        self.check_environment(model)
        profile = profile_for(model)
        json_schema = _json_schema(schema) if schema is not None else None
        messages = profile.render(prompt, json_schema)
        attempts, seconds, cost = 0, 0.0, 0.0
        usage = Usage()
        last_reason, last_text = "", None
        rejected: list[str] = []  # cache keys of replies that failed check_reply
        for parse_try in range(self.settings.parse_attempts):
            params = {
                "max_tokens": max_tokens,
                "temperature": temperature,
                "seed": None if seed is None else seed + 7919 * parse_try,
                # stops belong to a pre-filled reply; a chat model answering in full would hit them at once
                "stop": (list(prompt.stop) or None) if (profile.supports_prefill or not prompt.prefill) else None,
                "trial": trial * 100 + parse_try,
            }
            if prompt.avoid:  # only then: the cache keys of every other call stay as they were
                params["avoid"] = list(prompt.avoid)
            out = await self._call(model, messages, params, json_schema, role)
            attempts += out.attempts
            seconds += out.seconds
            cost = None if cost is None or out.cost is None else cost + out.cost
            usage = Usage(  # re-asked attempts cost tokens too: account for all of them
                prompt_tokens=usage.prompt_tokens + out.usage.prompt_tokens,
                completion_tokens=usage.completion_tokens + out.usage.completion_tokens,
                cached_prompt_tokens=usage.cached_prompt_tokens + out.usage.cached_prompt_tokens,
            )
            try:
                parsed = check_reply(out.text, schema)
            except ParseError as err:
                last_reason, last_text = str(err), out.text
                rejected.append(self._key(model, messages, params, json_schema))
                continue
            call = CallRecord(
                model=model,
                role=role,
                latency_s=round(seconds, 4),
                usage=usage,
                cost_usd=cost,
                attempts=attempts,
                cache_hit=out.cache_hit,
                finish_reason=out.finish_reason,
            )
            return Completion(text=out.text, parsed=parsed, call=call)
        # A call that succeeded on a later try keeps its rejected replies cached, so a replay takes the same path to
        # the same answer (a fresh draw of the first try can differ, even at the same seed); one that failed
        # outright forgets them, so a rerun asks again.
        if self._cache is not None:
            for key in rejected:
                self._cache.delete(key)
        raise ModelError(
            model,
            f"no valid output after {self.settings.parse_attempts} attempts: {last_reason}",
            attempts=attempts,
            latency_s=seconds,
            raw=last_text,
        )

    def endpoint(self, model: str) -> str | None:
        """The base URL a call to `model` goes to, resolved as the call resolves it: the settings' api_bases, then
        an `api_base` among litellm_kwargs, then the provider's variables in the environment (`env_endpoint`).
        None = the provider's default endpoint, or the embedded model."""
        if model in self.settings.api_bases:
            return self.settings.api_bases[model]
        if self.settings.litellm_kwargs.get("api_base"):
            return str(self.settings.litellm_kwargs["api_base"])
        return None if is_local(model) else env_endpoint(provider_of(model))

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
        """P(yes) / (P(yes) + P(no)) for a question whose answer is one word, yes or no.

        The embedded model: from llama.cpp's logits for the first answer token (the prompt is read through the
        prefix cache, so questions after one shared context re-read only the question). Hosted models: from the
        provider's `top_logprobs` for the first token; a provider that gives none is asked `samples` times at
        temperature 1 and the share of yes is recorded as `samples` (remembered per model, so later questions
        skip the logprobs call). Cached and retried like `complete`; raises ModelError when no answer said yes
        or no."""
        model = canonical_model_id(model or self.model_for(role))
        self.check_environment(model)
        messages = profile_for(model).render(prompt, None)
        if is_local(model) and "mock_response" not in self.settings.litellm_kwargs:
            return await self._local_yes_probability(model, messages, role, trial)
        if model not in self._no_logprobs:
            params = {"max_tokens": 1, "temperature": 0.0, "seed": seed, "stop": None, "trial": trial}
            out = await self._call(model, messages, {**params, "logprobs": TOP_LOGPROBS}, None, role)
            if out.top_logprobs:
                yes = sum(math.exp(v) for t, v in out.top_logprobs.items() if t.strip().lower() in YES_WORDS)
                no = sum(math.exp(v) for t, v in out.top_logprobs.items() if t.strip().lower() in NO_WORDS)
                if yes + no <= 0:
                    raise ModelError(model, f"neither yes nor no among the {len(out.top_logprobs)} likeliest answers")
                return YesProbability(
                    p_yes=yes / (yes + no), method="logprobs", yes=yes, no=no, call=self._record(model, role, [out])
                )
            self._no_logprobs.add(model)
        outs = []
        for i in range(samples):
            params = {
                "max_tokens": 3,
                "temperature": 1.0,
                "seed": None if seed is None else seed + 104729 * (i + 1),
                "stop": None,
                "trial": trial * 100 + i,
            }
            outs.append(await self._call(model, messages, params, None, role))
        words = [_first_word(o.text) for o in outs]
        yes, no = words.count("yes"), words.count("no")
        if yes + no == 0:
            raise ModelError(model, f"none of {samples} sampled answers said yes or no: {outs[0].text[:40]!r}")
        return YesProbability(
            p_yes=yes / (yes + no),
            method="samples",
            k=samples,
            yes=yes / samples,
            no=no / samples,
            call=self._record(model, role, outs),
        )

    async def _local_yes_probability(
        self, model: str, messages: list[dict[str, str]], role: Role, trial: int
    ) -> YesProbability:
        params = {"answer": "yes_no", "trial": trial}
        key = self._key(model, messages, params, None) if self._cache is not None else ""
        hit = self._cache.get(key) if self._cache is not None else None
        watch = progress.start(role, model)  # None unless a live view is watching
        if hit is None:
            gguf = None if model == DEFAULT_LOCAL_MODEL else self.settings.gguf
            engine = await asyncio.to_thread(get_embedded_model, gguf, self.settings.n_threads)
            began = time.perf_counter()
            try:
                on_progress = None
                if watch is not None:  # a live view is watching: report the reading as it happens

                    def on_progress(total: int, done: int, cached: int, generated: int) -> None:
                        watch.update(prompt_tokens=total, prompt_done=done, cached_tokens=cached)

                with progress.in_flight(watch):
                    got = await asyncio.to_thread(
                        engine.answer_probabilities, messages, YES_WORDS, NO_WORDS, on_progress
                    )
            except ValueError as err:  # a prompt longer than the context
                if watch is not None:
                    watch.finish(failed=True)
                raise ModelError(model, str(err)) from None
            hit = {
                "yes": got.yes,
                "no": got.no,
                "usage": Usage(
                    prompt_tokens=got.prompt_tokens, cached_prompt_tokens=got.cached_prompt_tokens
                ).model_dump(),
                "seconds": time.perf_counter() - began,
            }
            if self._cache is not None:
                self._cache.put(key, hit)
            cache_hit = False
        else:
            cache_hit = True
        if watch is not None:
            usage = hit["usage"]
            watch.finish(
                prompt_tokens=usage["prompt_tokens"],
                prompt_done=usage["prompt_tokens"],
                cached_tokens=usage["cached_prompt_tokens"],
            )
        yes, no = hit["yes"], hit["no"]
        if yes + no <= 0:
            raise ModelError(model, "no probability on yes or no")
        call = CallRecord(
            model=model,
            role=role,
            latency_s=0.0 if cache_hit else round(hit["seconds"], 4),
            usage=Usage(**hit["usage"]),
            cost_usd=0.0,
            attempts=0 if cache_hit else 1,
            cache_hit=cache_hit,
            finish_reason="stop",
        )
        return YesProbability(p_yes=yes / (yes + no), method="logprobs", yes=yes, no=no, call=call)

    @staticmethod
    def _record(model: str, role: str, outs: list[_Attempt]) -> CallRecord:
        costs = [o.cost for o in outs]
        return CallRecord(
            model=model,
            role=role,
            latency_s=round(sum(o.seconds for o in outs), 4),
            usage=Usage(
                prompt_tokens=sum(o.usage.prompt_tokens for o in outs),
                completion_tokens=sum(o.usage.completion_tokens for o in outs),
                cached_prompt_tokens=sum(o.usage.cached_prompt_tokens for o in outs),
            ),
            cost_usd=None if any(c is None for c in costs) else sum(costs),  # type: ignore[arg-type]
            attempts=sum(o.attempts for o in outs),
            cache_hit=all(o.cache_hit for o in outs),
            finish_reason=outs[-1].finish_reason,
        )

    def _key(self, model: str, messages: list[dict[str, str]], params: dict[str, Any], schema: dict | None) -> str:
        """The call's cache key: everything that changes the answer, the server asked included (the same model id
        at another endpoint is another model). API keys never enter it: they do not change the answer."""
        blob = json.dumps(
            {
                "v": CACHE_VERSION,
                "model": model,
                "messages": messages,
                "params": params,
                "schema": schema,
                "api_base": self.endpoint(model),
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    async def _call(
        self, model: str, messages: list[dict[str, str]], params: dict[str, Any], schema: dict | None, role: str
    ) -> _Attempt:
        """One logical call: replayed from the cache when it holds the answer, else sent with retries for provider
        errors and timeouts, accounted (tokens, cost) and cached."""
        key = self._key(model, messages, params, schema) if self._cache is not None else ""
        if (replayed := self._replayed(key, model, role)) is not None:
            return replayed
        sender, endpoint = self._sender(model)
        kwargs = self._request(model, messages, params, schema, endpoint)
        watch = progress.start(role, model)  # None unless a live view is watching
        try:
            response, attempt, seconds = await self._send(sender, model, kwargs, watch)
        except BaseException:
            if watch is not None:
                watch.finish(failed=True)
            raise
        text = response.choices[0].message.content or ""
        finish = getattr(response.choices[0], "finish_reason", None)
        usage = _usage(response)
        cost = self._cost(model, response, usage, lean=endpoint is not None)
        if watch is not None:
            watch.finish(
                prompt_tokens=usage.prompt_tokens,
                prompt_done=usage.prompt_tokens,
                cached_tokens=usage.cached_prompt_tokens,
                completion_tokens=usage.completion_tokens,
            )
        tops = _first_token_logprobs(response.choices[0]) if params.get("logprobs") else None
        out = _Attempt(text, usage, cost, attempt, seconds, False, finish, tops)
        self._remember(key, out)
        return out

    def _replayed(self, key: str, model: str, role: str) -> _Attempt | None:
        """The cached answer under `key`, as an attempt that took no time, or None (no cache, or not cached)."""
        if self._cache is None or (hit := self._cache.get(key)) is None:
            return None
        if (watch := progress.start(role, model)) is not None:  # a watcher counts replayed calls too
            watch.finish()
        finish = hit.get("finish_reason")
        return _Attempt(
            hit["text"], Usage(**hit["usage"]), hit.get("cost"), 0, 0.0, True, finish, hit.get("top_logprobs")
        )

    def _remember(self, key: str, out: _Attempt) -> None:
        """Cache an answer for `_replayed`: what it said and cost, not how long it took or how often it was tried."""
        if self._cache is None:
            return
        entry = {
            "text": out.text,
            "usage": out.usage.model_dump(),
            "cost": out.cost,
            "finish_reason": out.finish_reason,
        }
        if out.top_logprobs is not None:
            entry["top_logprobs"] = out.top_logprobs
        self._cache.put(key, entry)

    def _sender(self, model: str) -> tuple[Any, tuple[str, str] | None]:
        """Who sends the request (the lean HTTP path, litellm's translation over our pool, or litellm itself), and
        the lean path's (api_base, api_key) when it is the lean path."""
        endpoint = self._direct(model)
        if endpoint is not None:
            return self._http, endpoint
        lib = self._lib()
        return self._translated(model) or lib, None

    def _request(
        self,
        model: str,
        messages: list[dict[str, str]],
        params: dict[str, Any],
        schema: dict | None,
        endpoint: tuple[str, str] | None,
    ) -> dict[str, Any]:
        """The keyword arguments of the request: the call's params in the provider's terms, and where it goes."""
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "max_tokens": params["max_tokens"],
            "temperature": params["temperature"],
            "timeout": self.settings.timeout_s,
            **self.settings.litellm_kwargs,
        }
        if params["seed"] is not None:
            kwargs["seed"] = params["seed"]
        if params["stop"]:
            kwargs["stop"] = params["stop"]
        if params.get("logprobs"):
            kwargs["logprobs"], kwargs["top_logprobs"] = True, params["logprobs"]
        if params.get("avoid") and is_local(model):  # a hosted API would reject the argument
            kwargs["avoid_texts"] = params["avoid"]
        if schema is not None and self._wants_schema(model, lean=endpoint is not None):
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
        if model in self.settings.api_bases:
            kwargs["api_base"] = self.settings.api_bases[model]
            kwargs.setdefault("api_key", os.environ.get("RESCUE_SIM_ENDPOINT_KEY", "none"))
        elif endpoint is not None:  # `openai/` at OPENAI_BASE_URL / OPENAI_API_BASE, with litellm's key lookup
            kwargs["api_base"], kwargs["api_key"] = endpoint
        return kwargs

    async def _send(self, sender: Any, model: str, kwargs: dict[str, Any], watch: Any) -> tuple[Any, int, float]:
        """The request, retried with backoff on rate limits, timeouts and server errors (`max_retries` times).
        Returns the response, the attempts it took and the seconds the model spent on them."""
        clock = _Stopwatch()
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._send_once(sender, model, kwargs, watch, clock), attempt, clock.seconds
            except asyncio.TimeoutError:  # noqa: UP041
                reason = f"timed out after {self.settings.timeout_s:.0f}s"
            except Exception as err:  # noqa: BLE001 - classified by litellm's exception names
                reason = _retry_reason(model, err, attempt)
            if attempt > self.settings.max_retries:
                raise ModelError(model, f"failed after {attempt} attempts: {reason}", attempts=attempt)
            await asyncio.sleep(min(30.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + random.random()))

    async def _send_once(self, sender: Any, model: str, kwargs: dict[str, Any], watch: Any, clock: _Stopwatch) -> Any:
        """One request under the provider's concurrency limit, timed out a little after the provider's own
        timeout. `clock` counts model time only: waiting for a concurrency slot is not latency."""
        async with self._semaphore(model):
            with clock.running(), progress.in_flight(watch):
                return await asyncio.wait_for(
                    sender.acompletion(**kwargs), timeout=self.settings.timeout_s * 1.05 + 0.5
                )

    def _cost(self, model: str, response: Any, usage: Usage, *, lean: bool) -> float | None:
        """The call's cost in USD: nothing for the embedded model, litellm's price map for `openai/` on the lean
        path (what litellm's response_cost is for these models), else litellm's own response_cost."""
        if is_local(model):
            return 0.0
        if lean and provider_of(model) == "openai":
            return self._price_memo().cost(
                model,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cache_read_input_tokens=usage.cached_prompt_tokens,
            )
        return (response._hidden_params or {}).get("response_cost")

    def _direct(self, model: str) -> tuple[str, str] | None:
        """The lean HTTP path's (api_base, api_key) for an OpenAI-compatible endpoint at a known URL: the
        settings' api_bases (any of `DIRECT_PROVIDERS`), or for `openai/` the base URL litellm itself would read
        from the environment (OPENAI_BASE_URL, then OPENAI_API_BASE). None = litellm (plain api.openai.com, other
        providers, litellm_kwargs such as mock_response, direct_http=False)."""
        if not self.settings.direct_http or self.settings.litellm_kwargs:
            return None
        provider = provider_of(model)
        if model in self.settings.api_bases:
            return ("", "") if provider in DIRECT_PROVIDERS else None  # `_request` fills base and key from settings
        if provider != "openai":
            return None
        base = env_endpoint(provider)
        if not base:
            return None
        return base, os.environ.get("OPENAI_API_KEY") or ""

    def _translated(self, model: str) -> LitellmTranslation | None:
        """litellm's translation over our HTTP pool where it applies (simulator.llm.translated), else None."""
        if not self.settings.litellm_translate or self.settings.litellm_kwargs or not translates(self._lib(), model):
            return None
        if self._translation is None:  # its own pool: it honours proxy settings, as litellm does
            self._translation = LitellmTranslation(self._lib(), DirectOpenAI(env_proxies=True), self._price_memo())
        return self._translation

    def _price_memo(self) -> PriceMemo:
        self._prices = self._prices or PriceMemo(self._lib())
        return self._prices

    def _wants_schema(self, model: str, *, lean: bool) -> bool:
        """Whether litellm would send response_format for this model, looked up in litellm's model map once per
        model on both paths (the lookup walks the map, more so for a name it does not know). On the lean path
        `hosted_vllm/` never (litellm leaves the schema in the prompt for it, and importing litellm would cost
        seconds)."""
        if lean and provider_of(model) != "openai":
            return False
        if model not in self._schema_support:
            self._schema_support[model] = _wants_response_format(self._lib(), model)
        return self._schema_support[model]

    def embedded_stats(self) -> dict[str, Any] | None:
        """Prefix-cache and token totals of the embedded model, if it was loaded in this process."""
        from simulator.llm import embedded

        if not embedded._models:
            return None
        stats = next(iter(embedded._models.values())).stats
        return dict(vars(stats))


@functools.lru_cache(maxsize=512)
def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """A schema class's JSON schema, built once per class (pydantic takes milliseconds to build one)."""
    return schema.model_json_schema()


def _wants_response_format(lib: Any, model: str) -> bool:
    if is_local(model):
        return True
    try:
        return bool(lib.supports_response_schema(model=model))
    except Exception:  # noqa: BLE001 - unknown to litellm's map: describe the schema in the prompt only
        return False


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _usage(response: Any) -> Usage:
    """A response's token counts; a provider that reports none counts as zero."""
    u = getattr(response, "usage", None)
    details = getattr(u, "prompt_tokens_details", None)
    return Usage(
        prompt_tokens=getattr(u, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(u, "completion_tokens", 0) or 0,
        cached_prompt_tokens=getattr(details, "cached_tokens", 0) or 0,
    )


def _retry_reason(model: str, err: Exception, attempt: int) -> str:
    """Why a failed request may be retried, in one line; raises for an error no retry can mend (a wrong key or
    model: ModelConfigError; anything not in _RETRYABLE: ModelError)."""
    name = type(err).__name__
    if name in _CONFIG:
        raise ModelConfigError(f"model {model!r}: {name}: {_one_line(err)}") from None
    if name == "BadRequestError" and "LLM Provider NOT provided" in str(err):
        raise ModelConfigError(f"unknown model {model!r}; use provider/model, e.g. openai/gpt-4o-mini") from None
    if name not in _RETRYABLE:
        raise ModelError(model, f"{name}: {_one_line(err)}", attempts=attempt) from None
    return f"{name}: {_one_line(err)}"


def _first_token_logprobs(choice: Any) -> dict[str, float] | None:
    """token -> log-probability of the first reply token's alternatives (OpenAI's `logprobs.content[0]`, as a
    dict or litellm's objects); None when the provider gave none."""
    content = _get(_get(choice, "logprobs") or {}, "content")
    if not content:
        return None
    first = content[0]
    out: dict[str, float] = {}
    for alt in [first, *(_get(first, "top_logprobs") or [])]:
        token, logprob = _get(alt, "token"), _get(alt, "logprob")
        if isinstance(token, str) and isinstance(logprob, int | float):
            out[token] = max(out.get(token, -math.inf), float(logprob))
    return out or None


def _first_word(text: str) -> str:
    words = re.findall(r"[a-z]+", text.lower())
    return words[0] if words else ""


_OBJECT_REPR = re.compile(r"(?:\w+:)?<([\w.]+) object at 0x[0-9a-fA-F]+>")


def _one_line(err: BaseException) -> str:
    """An exception as one short line, with secrets removed (provider errors sometimes echo keys) and object
    reprs such as `ssl:<ssl.SSLContext object at 0x7f…>` dropped: they say nothing a user can act on."""
    text = _OBJECT_REPR.sub("", " ".join(str(err).split()))
    return redact(" ".join(text.split()))[:300]


def _register_local_provider(litellm: Any, settings: ModelSettings) -> None:
    """Register the embedded GGUF as litellm's custom provider `local` (same path as any provider)."""
    if any(p.get("provider") == LOCAL_PROVIDER for p in litellm.custom_provider_map):
        return
    from litellm import CustomLLM
    from litellm.types.utils import Usage as LUsage

    class EmbeddedProvider(CustomLLM):
        async def acompletion(
            self,
            model,
            messages,
            api_base,
            custom_prompt_dict,
            model_response,
            print_verbose,
            encoding,
            api_key,
            logging_obj,
            optional_params,
            **_: Any,
        ):
            gguf = None if model == DEFAULT_LOCAL_MODEL.split("/", 1)[1] else settings.gguf
            engine = await asyncio.to_thread(get_embedded_model, gguf, settings.n_threads)
            rf = optional_params.get("response_format") or {}
            schema = (
                (rf.get("json_schema") or {}).get("schema") if rf.get("type") == "json_schema" else rf.get("schema")
            )
            watch, on_progress = progress.current(), None
            if watch is not None:  # a live view is watching: report reading and writing as it happens

                def on_progress(total: int, done: int, cached: int, generated: int) -> None:
                    watch.update(
                        prompt_tokens=total, prompt_done=done, cached_tokens=cached, completion_tokens=generated
                    )

            result = await asyncio.to_thread(
                engine.generate,
                messages,
                max_tokens=int(optional_params.get("max_tokens") or 256),
                temperature=float(optional_params.get("temperature", 0.7)),
                seed=optional_params.get("seed"),
                stop=optional_params.get("stop"),
                avoid=optional_params.get("avoid_texts"),
                json_schema=schema,
                progress=on_progress,
            )
            model_response.choices[0].message.content = result.text
            model_response.choices[0].finish_reason = result.finish_reason
            model_response.model = f"{LOCAL_PROVIDER}/{model}"
            model_response.usage = LUsage(
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                total_tokens=result.prompt_tokens + result.completion_tokens,
                prompt_tokens_details={"cached_tokens": result.cached_prompt_tokens},
            )
            return model_response

    litellm.custom_provider_map = [
        *litellm.custom_provider_map,
        {"provider": LOCAL_PROVIDER, "custom_handler": EmbeddedProvider()},
    ]
    litellm.register_model(
        {
            DEFAULT_LOCAL_MODEL: {
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
                "litellm_provider": LOCAL_PROVIDER,
                "mode": "chat",
            }
        }
    )
