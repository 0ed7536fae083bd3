"""litellm's provider translation without litellm's per-call wrapper.

For the providers in `TRANSLATED_PROVIDERS`, litellm's own provider config builds the request
(`validate_environment`, `get_complete_url`, `transform_request`, in the order and with the arguments litellm's
generic HTTP handler uses, or its anthropic handler for `anthropic/`) and reads the reply (`transform_response`),
and litellm's `exception_type` names the errors, as in a full `litellm.acompletion`; the request goes out over
the lean path's pooled aiohttp session. Skipped per call: the
logging object and its success handlers, the response cost calculation (the cost comes from
`litellm.cost_per_token`, with a model litellm cannot price remembered as unpriced: None, never 0.0) and the
thread hop. Streaming, tools and signed or OAuth providers (bedrock, vertex, azure AD...) stay on the full call.
This module never imports litellm: the client hands it the module (only `simulator.llm.client` imports it).
"""

from __future__ import annotations

import copy
import json
import os
import time
from dataclasses import dataclass
from typing import Any

from simulator.llm.direct import APIConnectionError, DirectOpenAI

__all__ = ["TRANSLATED_PROVIDERS", "LitellmTranslation", "PriceMemo", "translates"]

# Providers verified end to end against a fake server: the same URL, headers and body bytes as litellm's own call.
TRANSLATED_PROVIDERS = ("openai", "hosted_vllm", "anthropic")


@dataclass(frozen=True)
class _Route:
    """Provider, model name sent, config, URL base and key: what litellm resolves on every call, resolved here
    once per model and endpoint (so keys and bases set in the environment are read at a model's first call)."""

    provider: str
    model: str
    config: Any
    api_base: str | None
    api_key: str | None


@dataclass(frozen=True)
class _Request:
    """One request as litellm would send it, and what the reply's translation needs."""

    route: _Route
    url: str
    headers: dict[str, Any]
    data: dict[str, Any]
    body: str
    optional_params: dict[str, Any]
    litellm_params: dict[str, Any]
    json_mode: bool
    make_error: Any  # (text, status, headers) -> the provider's exception, as litellm's handler raises it


class _NoLogging:
    """Stands in for litellm's per-call Logging object, which the provider configs report the raw reply to: the
    logging it would do (callbacks, standard payloads that price the reply again) is what this path leaves out."""

    def post_call(self, *args: Any, **kwargs: Any) -> None:
        return None


def translates(lib: Any, model: str) -> bool:
    """Whether this call is one verified here (`openai/` only while litellm is set to use its own HTTP handler
    for it, as the client sets it; else litellm takes the openai SDK's route, which is not mirrored)."""
    provider = model.split("/", 1)[0]
    if provider not in TRANSLATED_PROVIDERS:
        return False
    return provider != "openai" or bool(lib.get_secret_bool("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"))


class PriceMemo:
    """litellm's price of one reply (`litellm.cost_per_token`, local cost map); a model it cannot price is
    remembered as unpriced: None, never 0.0, found out once (litellm searches its map afresh on every call)."""

    def __init__(self, lib: Any) -> None:
        self._lib = lib
        self._priced: dict[tuple[str, str | None], bool] = {}

    def cost(self, model: str, provider: str | None = None, **tokens: Any) -> float | None:
        key = (model, provider)
        if self._priced.get(key) is False:
            return None
        try:
            prompt, completion = self._lib.cost_per_token(model=model, custom_llm_provider=provider, **tokens)
        except Exception:  # noqa: BLE001 - ModelNotMappedError and kin: unknown cost
            self._priced[key] = False
            return None
        self._priced[key] = True
        return prompt + completion


class LitellmTranslation:
    """acompletion() with litellm's request/response translation and rescue-sim's HTTP pool."""

    def __init__(self, lib: Any, http: DirectOpenAI, prices: PriceMemo) -> None:
        self._lib = lib
        self._http = http
        self._prices = prices
        self._routes: dict[tuple[str, str | None, str | None], _Route] = {}

    def _route(self, model: str, api_base: str | None, api_key: str | None) -> _Route:
        key = (model, api_base, api_key)
        route = self._routes.get(key)
        if route is None:
            lib = self._lib
            bare, provider, dynamic_key, base = lib.get_llm_provider(model=model, api_base=api_base, api_key=api_key)
            config = lib.ProviderConfigManager.get_provider_chat_config(model=bare, provider=lib.LlmProviders(provider))
            key_used = api_key or dynamic_key
            if provider == "openai":  # as litellm's `_complete_custom_openai`
                base = lib.main._resolve_openai_api_base(base)
                key_used = key_used or lib.api_key or lib.openai_key or lib.get_secret("OPENAI_API_KEY")
            elif provider == "anthropic":  # as litellm's `_complete_anthropic`
                key_used = key_used or lib.anthropic_key or lib.api_key or os.environ.get("ANTHROPIC_API_KEY")
                base = (
                    base
                    or lib.api_base
                    or lib.get_secret("ANTHROPIC_API_BASE")
                    or lib.get_secret("ANTHROPIC_BASE_URL")
                    or "https://api.anthropic.com/v1/messages"
                )
                if not lib.get_secret_bool("LITELLM_ANTHROPIC_DISABLE_URL_SUFFIX"):
                    base = lib.main.ensure_api_route(base, "v1/messages")
            else:  # hosted_vllm, as litellm's `_complete_hosted_vllm`
                base = base or lib.api_base or lib.get_secret_str("HOSTED_VLLM_API_BASE")
            route = _Route(provider, bare, config, base, key_used)
            self._routes[key] = route
        return route

    async def request(
        self,
        model: str,
        messages: list[dict[str, str]],
        params: dict[str, Any],
        *,
        api_base: str | None = None,
        api_key: str | None = None,
    ) -> _Request:
        """The request as litellm builds it for this call, and what its reply's translation needs."""
        lib = self._lib
        route = self._route(model, api_base, api_key)
        optional = lib.utils.get_optional_params(
            model=route.model, custom_llm_provider=route.provider, messages=messages, stream=None, **params
        )
        litellm_params = lib.main.get_litellm_params(
            api_key=route.api_key, custom_llm_provider=route.provider, api_base=route.api_base, acompletion=True
        )
        if route.provider == "anthropic":
            return await self._anthropic_request(route, messages, optional, litellm_params)
        json_mode = bool(optional.pop("json_mode", False))  # popped before translation, as litellm's handler does
        extra_body = optional.pop("extra_body", None)
        headers = lib.headers if route.provider == "openai" else None
        if route.provider == "openai":
            headers = lib.main.with_attribution_headers(route.config.get_attribution_headers(), headers)
        headers = route.config.validate_environment(
            api_key=route.api_key,
            headers=headers or {},
            model=route.model,
            messages=messages,
            optional_params=optional,
            api_base=route.api_base,
            litellm_params=litellm_params,
        )
        url = route.config.get_complete_url(
            api_base=route.api_base,
            api_key=route.api_key,
            model=route.model,
            optional_params=optional,
            litellm_params=litellm_params,
            stream=False,
        )
        body = route.config.transform_request(
            model=route.model,
            messages=messages,
            optional_params=optional,
            litellm_params=litellm_params,
            headers=headers,
        )
        if extra_body is not None:  # merged as litellm's handler merges it
            extra = route.config.transform_extra_body(
                extra_body=extra_body, request=body, model=route.model, litellm_params=litellm_params
            )
            body = {**body, **extra}

        def make_error(text: str, status: int, reply_headers: dict[str, str]) -> Exception:
            return route.config.get_error_class(error_message=text, status_code=status, headers=reply_headers)

        return _Request(route, url, headers, body, json.dumps(body), optional, litellm_params, json_mode, make_error)

    async def _anthropic_request(
        self, route: _Route, messages: list[dict[str, str]], optional: dict[str, Any], litellm_params: dict[str, Any]
    ) -> _Request:
        """As litellm's own anthropic handler builds it (llms/anthropic/chat/handler.py, `completion`): beta
        headers filtered, beta-gated fields stripped, the body serialised as httpx's `json=` does."""
        handler = self._lib.llms.anthropic.chat.handler
        optional = copy.deepcopy(optional)
        optional.pop("stream", None)
        json_mode = bool(optional.pop("json_mode", False))
        is_vertex = bool(optional.pop("is_vertex_request", False))
        optional.pop("vertex_count_tokens_location", None)
        messages = copy.deepcopy(messages)
        transform_params = {**optional, "is_vertex_request": is_vertex}
        headers = handler.AnthropicConfig().validate_environment(
            api_key=route.api_key,
            headers=dict(self._lib.headers or {}),
            model=route.model,
            messages=messages,
            optional_params=transform_params,
            litellm_params=litellm_params,
            api_base=route.api_base,
        )
        data = await route.config.async_transform_request(
            model=route.model,
            messages=messages,
            optional_params=transform_params,
            litellm_params=litellm_params,
            headers=headers,
        )
        headers, data = handler.update_request_with_filtered_beta(
            headers=headers, request_data=data, provider=route.provider, api_base=route.api_base
        )
        data = dict(
            handler.strip_beta_gated_request_body(
                data, headers, drop_params=litellm_params.get("drop_params"), model=route.model, provider=route.provider
            )
        )
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

        def make_error(text: str, status: int, reply_headers: dict[str, str]) -> Exception:
            return handler.AnthropicError(message=text, status_code=status, headers=reply_headers)

        return _Request(route, route.api_base, headers, data, body, optional, litellm_params, json_mode, make_error)

    async def acompletion(
        self,
        *,
        model: str,
        messages: list[dict[str, str]],
        timeout: float,
        api_base: str | None = None,
        api_key: str | None = None,
        **params: Any,
    ) -> Any:
        """One call; returns litellm's ModelResponse with `_hidden_params["response_cost"]` set as litellm would."""
        import httpx

        lib = self._lib
        req = await self.request(model, messages, params, api_base=api_base, api_key=api_key)
        route = req.route
        sent = {**lib.llms.custom_httpx.http_handler.get_default_headers(), **req.headers}  # as litellm's client
        started = time.time()
        try:
            status, raw, reply_headers = await self._http.post(req.url, req.body, sent, timeout)
        except TimeoutError:  # worded as litellm's HTTP client words it, then named as its handlers name a 408
            taken = round(time.time() - started, 3)
            message = f"Read timed out. Timeout passed={timeout}, time taken={taken} seconds"
            error = lib.Timeout(message=message, model="default-model-name", llm_provider="litellm-httpx-handler")
            status, raw, reply_headers = 408, str(error).encode(), {}
        except APIConnectionError as err:  # litellm's handlers: a failure without a status is a 500 of the provider
            status, raw, reply_headers = 500, str(err).encode(), {}
        if status >= 400:
            error = req.make_error(raw.decode("utf-8", "replace"), status, reply_headers)
            raise lib.exception_type(
                model=route.model, original_exception=error, custom_llm_provider=route.provider
            ) from None
        reply = httpx.Response(status, content=raw, headers=reply_headers, request=httpx.Request("POST", req.url))
        try:
            response = route.config.transform_response(
                model=route.model,
                raw_response=reply,
                model_response=lib.ModelResponse(),
                logging_obj=_NoLogging(),
                api_key=route.api_key,
                request_data=req.data,
                messages=messages,
                optional_params=req.optional_params,
                litellm_params=req.litellm_params,
                encoding=lib.main._get_encoding(),
                json_mode=req.json_mode,
            )
        except Exception as err:  # noqa: BLE001 - named as litellm names it (malformed reply: APIError)
            raise lib.exception_type(
                model=route.model, original_exception=err, custom_llm_provider=route.provider
            ) from None
        response._hidden_params["response_cost"] = self._prices.cost(
            route.model, route.provider, usage_object=response.usage
        )
        return response
