"""litellm's provider translation without litellm's per-call wrapper.

For a provider whose call litellm makes with its generic HTTP handler (`TRANSLATED_PROVIDERS`), litellm's own
provider config builds the request (`validate_environment`, `get_complete_url`, `transform_request`) and reads
the reply (`transform_response`), and litellm's `exception_type` names the errors, as in a full
`litellm.acompletion`; the request goes out over the lean path's pooled aiohttp session. Skipped per call: the
logging object and its success handlers, the response cost calculation (the cost comes from
`litellm.cost_per_token`, with a model litellm cannot price remembered as unpriced: None, never 0.0) and the
thread hop. Streaming, tools and signed or OAuth providers (bedrock, vertex, azure AD...) stay on the full call.
This module never imports litellm: the client hands it the module (only `simulator.llm.client` imports it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from simulator.llm.direct import APIConnectionError, DirectOpenAI

__all__ = ["TRANSLATED_PROVIDERS", "LitellmTranslation", "PriceMemo", "translates"]

# Providers verified end to end against a fake server: the same URL, headers and body bytes as litellm's own call.
TRANSLATED_PROVIDERS = ("openai", "hosted_vllm")


@dataclass(frozen=True)
class _Route:
    """What litellm resolves once per model and endpoint: provider, model name sent, config, URL base and key."""

    provider: str
    model: str
    config: Any
    api_base: str | None
    api_key: str | None


class _NoLogging:
    """Stands in for litellm's per-call Logging object: the provider configs report to it, and the logging it
    would do (callbacks, standard payloads that price the reply again) is what this path leaves out."""

    model_call_details: dict[str, Any]

    def __init__(self) -> None:
        self.model_call_details = {}

    def pre_call(self, *args: Any, **kwargs: Any) -> None:
        return None

    def post_call(self, *args: Any, **kwargs: Any) -> None:
        return None


def translates(lib: Any, model: str) -> bool:
    """Whether litellm would make this call with its generic HTTP handler for a provider verified here (`openai/`
    only while litellm is set to use that handler, as the client sets it; else the openai SDK's route)."""
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
            else:  # hosted_vllm, as litellm's `_complete_hosted_vllm`
                base = base or lib.api_base or lib.get_secret_str("HOSTED_VLLM_API_BASE")
            route = _Route(provider, bare, config, base, key_used)
            self._routes[key] = route
        return route

    def request(
        self,
        model: str,
        messages: list[dict[str, str]],
        params: dict[str, Any],
        *,
        api_base: str | None = None,
        api_key: str | None = None,
    ) -> tuple[_Route, str, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], bool]:
        """(route, url, headers, body, optional_params, litellm_params, json_mode) as litellm builds them."""
        lib = self._lib
        route = self._route(model, api_base, api_key)
        optional = lib.utils.get_optional_params(
            model=route.model, custom_llm_provider=route.provider, messages=messages, stream=None, **params
        )
        json_mode = bool(optional.pop("json_mode", False))  # popped before translation, as litellm's handler does
        extra_body = optional.pop("extra_body", None)
        litellm_params = lib.main.get_litellm_params(
            api_key=route.api_key, custom_llm_provider=route.provider, api_base=route.api_base, acompletion=True
        )
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
        return route, url, headers, body, optional, litellm_params, json_mode

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
        route, url, headers, body, optional, litellm_params, json_mode = self.request(
            model, messages, params, api_base=api_base, api_key=api_key
        )
        try:
            sent = {
                **lib.llms.custom_httpx.http_handler.get_default_headers(),
                **headers,
            }  # litellm's HTTP client adds its User-Agent the same way
            status, raw, reply_headers = await self._http.post(url, json.dumps(body), sent, timeout)
        except APIConnectionError as err:  # litellm's handler: a failure without a status is a 500 of the provider
            status, raw, reply_headers = 500, str(err).encode(), {}
        if status >= 400:
            text = raw.decode("utf-8", "replace")
            error = route.config.get_error_class(error_message=text, status_code=status, headers=reply_headers)
            raise lib.exception_type(
                model=route.model, original_exception=error, custom_llm_provider=route.provider
            ) from None
        reply = httpx.Response(status, content=raw, headers=reply_headers, request=httpx.Request("POST", url))
        try:
            response = route.config.transform_response(
                model=route.model,
                raw_response=reply,
                model_response=lib.ModelResponse(),
                logging_obj=_NoLogging(),
                api_key=route.api_key,
                request_data=body,
                messages=messages,
                optional_params=optional,
                litellm_params=litellm_params,
                encoding=None,
                json_mode=json_mode,
            )
        except Exception as err:  # noqa: BLE001 - named as litellm names it (malformed reply: APIError)
            raise lib.exception_type(
                model=route.model, original_exception=err, custom_llm_provider=route.provider
            ) from None
        response._hidden_params["response_cost"] = self._prices.cost(
            route.model, route.provider, usage_object=response.usage
        )
        return response
