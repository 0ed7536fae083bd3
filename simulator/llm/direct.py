"""The lean path for OpenAI-compatible endpoints: one pooled aiohttp session per event loop, no litellm.

litellm spends 5-15 ms of CPU per call (request building, its logging object, cost lookup); for a server that
speaks the OpenAI chat API at a known URL none of that is needed. This module sends the same JSON body litellm
sends (model without its prefix, messages, max_tokens, temperature, seed, stop, and response_format where
litellm sends one), and raises errors under litellm's class names, so the retry rules, cache keys and
accounting of `simulator.llm.client` apply unchanged. Only the client decides when this path is taken.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["DIRECT_PROVIDERS", "DirectOpenAI", "chat_body"]
#
# Providers whose calls with a known base URL may take this path (the client decides which do).
DIRECT_PROVIDERS = ("hosted_vllm", "openai")


class _HTTPError(Exception):
    pass


class RateLimitError(_HTTPError):
    pass


class InternalServerError(_HTTPError):
    pass


class ServiceUnavailableError(_HTTPError):
    pass


class BadGatewayError(_HTTPError):
    pass


class APIConnectionError(_HTTPError):
    pass


class APIError(_HTTPError):
    pass


class AuthenticationError(_HTTPError):
    pass


class PermissionDeniedError(_HTTPError):
    pass


class NotFoundError(_HTTPError):
    pass


class BadRequestError(_HTTPError):
    pass


_BY_STATUS: dict[int, type[_HTTPError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    408: APIConnectionError,
    409: InternalServerError,
    429: RateLimitError,
    502: BadGatewayError,
    503: ServiceUnavailableError,
}


@dataclass
class _Message:
    content: str | None


@dataclass
class _Choice:
    message: _Message
    finish_reason: str | None
    logprobs: dict[str, Any] | None = None  # OpenAI's `logprobs` object, as sent, when asked for


@dataclass
class _TokenDetails:
    cached_tokens: int = 0


@dataclass
class _Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_details: _TokenDetails | None = None


@dataclass
class _Response:
    """The parts of a litellm ModelResponse that `_call` reads."""

    choices: list[_Choice]
    usage: _Usage
    _hidden_params: dict[str, Any]


class DirectOpenAI:
    """POST /chat/completions over one pooled aiohttp session per event loop."""

    def __init__(self, *, env_proxies: bool = False) -> None:
        """env_proxies: route through HTTP(S)_PROXY / NO_PROXY from the environment, as litellm's httpx client does
        (the translation path for hosted providers); the lean path's endpoints are the user's own, addressed as
        given. Looked up once per origin here: aiohttp's own `trust_env` does it with two thread hops per request."""
        self._pools: dict[int, tuple[Any, Any]] = {}
        self._env_proxies = env_proxies
        self._proxies: dict[str, tuple[Any, Any]] = {}  # origin -> (proxy URL, proxy auth) or (None, None)

    def _proxy_for(self, url: str) -> tuple[Any, Any]:
        origin = "/".join(url.split("/", 3)[:3])
        if origin not in self._proxies:
            from aiohttp.helpers import get_env_proxy_for_url
            from yarl import URL

            try:
                self._proxies[origin] = get_env_proxy_for_url(URL(origin))
            except LookupError:  # none set, or NO_PROXY covers the host
                self._proxies[origin] = (None, None)
        return self._proxies[origin]

    async def _session(self) -> Any:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(id(loop))
        if pool is None or pool[0].closed:
            # The session lives in an async generator: the event loop finalises those when it shuts down
            # (asyncio.run does), which closes the session with its loop and no "unclosed session" warning.
            holder = _session_holder()
            pool = (await holder.__anext__(), holder)
            self._pools = {k: v for k, v in self._pools.items() if not v[0].closed}
            self._pools[id(loop)] = pool
        return pool[0]

    async def post(
        self, url: str, body: str, headers: dict[str, str], timeout: float
    ) -> tuple[int, bytes, dict[str, str]]:
        """POST one JSON body over the pool: (status, body bytes, reply headers). A broken connection is
        APIConnectionError; a timeout propagates (`LiteLLMClient._send` reports it as a timeout)."""
        import aiohttp

        session = await self._session()
        proxy, proxy_auth = self._proxy_for(url) if self._env_proxies else (None, None)
        try:
            async with session.post(
                url,
                data=body,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
                proxy=proxy,
                proxy_auth=proxy_auth,
            ) as resp:
                return resp.status, await resp.read(), dict(resp.headers)
        except TimeoutError:
            raise
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError) as err:
            raise APIConnectionError(f"{url}: {type(err).__name__}: {err}") from None

    async def acompletion(
        self,
        *,
        model: str,
        messages: list[dict[str, str]],
        max_tokens: int,
        temperature: float,
        timeout: float,
        api_base: str,
        api_key: str = "none",
        seed: int | None = None,
        stop: list[str] | None = None,
        response_format: dict | None = None,
        logprobs: bool = False,
        top_logprobs: int | None = None,
        **_: Any,
    ) -> _Response:
        body = chat_body(model, messages, max_tokens, temperature, seed, stop, response_format)
        if logprobs:  # only then: every other request body stays as it was
            body["logprobs"], body["top_logprobs"] = True, top_logprobs
        url = api_base.rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"}
        status, raw, _ = await self.post(url, json.dumps(body), headers, timeout)
        if status >= 400:
            kind = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else BadRequestError)
            raise kind(f"HTTP {status} from {url}: {_error_message(raw)}")
        try:
            data = json.loads(raw)
            choice = data["choices"][0]
            content = choice["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise APIError(f"malformed response from {url}: {raw[:80]!r}") from None
        u = data.get("usage") or {}
        details = u.get("prompt_tokens_details") or {}
        return _Response(
            choices=[
                _Choice(
                    message=_Message(content=content),
                    finish_reason=choice.get("finish_reason"),
                    logprobs=choice.get("logprobs") if logprobs else None,
                )
            ],
            usage=_Usage(
                prompt_tokens=int(u.get("prompt_tokens") or 0),
                completion_tokens=int(u.get("completion_tokens") or 0),
                prompt_tokens_details=_TokenDetails(cached_tokens=int(details.get("cached_tokens") or 0)),
            ),
            _hidden_params={"response_cost": None},  # as litellm: the cost of a self-hosted model is unknown
        )


def chat_body(
    model: str,
    messages: list[dict[str, str]],
    max_tokens: int,
    temperature: float,
    seed: int | None = None,
    stop: list[str] | None = None,
    response_format: dict | None = None,
) -> dict[str, Any]:
    """The JSON body of one chat completion request on the lean path (what litellm sends for `hosted_vllm/`)."""
    body: dict[str, Any] = {"model": model.split("/", 1)[1], "messages": messages, "temperature": temperature}
    body["max_tokens"] = max_tokens
    if seed is not None:
        body["seed"] = seed
    if stop:
        body["stop"] = stop
    if response_format is not None:
        body["response_format"] = response_format
    return body


async def _session_holder() -> Any:
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=30))
    try:
        while True:
            yield session
    finally:
        await session.close()


def _error_message(raw: bytes) -> str:
    try:
        err = json.loads(raw).get("error")
        message = err.get("message") if isinstance(err, dict) else err
    except (ValueError, AttributeError):
        message = None
    return " ".join(str(message or raw[:200].decode("utf-8", "replace")).split())
