"""litellm's provider translation over rescue-sim's HTTP pool (simulator/llm/translated.py): the same request
bytes, reply, accounting and failures as litellm's whole call, without litellm's per-call wrapper. A capture
server in a thread (tests/_capture_server.py) records each request's URL, headers and body bytes and answers as
the provider would."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from pydantic import BaseModel

from simulator.llm.client import LiteLLMClient, ModelSettings
from simulator.llm.types import ModelError, Prompt
from tests._capture_server import CaptureServer

PROMPT = Prompt(context='Dana: "You are never home."', instructions="How does Dana feel?")
# Stop sequences and a non-ASCII character: mapped per provider and serialised, so both must come out the same.
PROMPT_STOP = Prompt(
    context='Dana: "You are never home — ever."', instructions="How does Dana feel?", stop=("</reply>",)
)
KEY = "sk-test-not-a-real-key-7f3a"
# Set by the HTTP library, not by litellm (its httpx transport vs aiohttp): the connection, not the request.
TRANSPORT_HEADERS = {"host", "accept-encoding", "content-length", "connection"}


class Feeling(BaseModel):
    emotion: str
    intensity: int


def client(tmp_path, **kw) -> LiteLLMClient:
    kw.setdefault("cache", False)
    return LiteLLMClient(ModelSettings(direct_http=False, **kw))


def both_paths(tmp_path, monkeypatch, server, **kw):
    """The same call through litellm's whole call and through the translation path (litellm.acompletion made
    to raise); returns both Completions and both captured requests."""
    import litellm

    full = asyncio.run(
        client(tmp_path, litellm_translate=False, **kw).complete(PROMPT_STOP, role="member", schema=Feeling, seed=3)
    )

    def no_litellm(*a, **k):
        raise AssertionError("litellm's acompletion was called on the translation path")

    with monkeypatch.context() as m:
        m.setattr(litellm, "acompletion", no_litellm)
        translated = asyncio.run(client(tmp_path, **kw).complete(PROMPT_STOP, role="member", schema=Feeling, seed=3))
    assert len(server.requests) == 2
    return full, translated, server.requests


def assert_same_request(full_req, ours_req) -> None:
    (m1, path1, h1, body1), (m2, path2, h2, body2) = full_req, ours_req
    assert (m2, path2) == (m1, path1)
    assert body2 == body1  # byte for byte
    provider_headers = {k.lower(): v for k, v in h1.items() if k.lower() not in TRANSPORT_HEADERS}
    assert {k.lower(): v for k, v in h2.items() if k.lower() not in TRANSPORT_HEADERS} == provider_headers


def assert_same_record(full, translated) -> None:
    assert translated.text == full.text and translated.parsed == full.parsed == Feeling(emotion="hurt", intensity=7)
    assert translated.call.model_dump(exclude={"latency_s"}) == full.call.model_dump(exclude={"latency_s"})


def test_openai_at_an_env_base_sends_litellms_request_and_records_its_cost(tmp_path, monkeypatch):
    """`openai/` with no api_base in settings, litellm reading OPENAI_API_BASE: a priced and an unpriced name."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for model, priced in (("openai/gpt-4o-mini", True), ("openai/my-unpriced-model", False)):
        with CaptureServer() as srv:
            monkeypatch.setenv("OPENAI_API_BASE", srv.url)
            full, translated, (full_req, ours_req) = both_paths(tmp_path, monkeypatch, srv, default=model)
        assert_same_request(full_req, ours_req)
        assert ours_req[2]["Authorization"] == f"Bearer {KEY}" and ours_req[1] == "/v1/chat/completions"
        assert json.loads(ours_req[3])["stop"] == ["</reply>"]
        assert_same_record(full, translated)
        if priced:
            assert translated.call.cost_usd is not None and translated.call.cost_usd > 0
            assert json.loads(ours_req[3])["response_format"]["type"] == "json_schema"
        else:
            assert translated.call.cost_usd is None  # unknown to litellm's map: unknown, never 0.0


def test_anthropic_sends_litellms_messages_request_and_records_its_cost(tmp_path, monkeypatch):
    """`anthropic/` (litellm's own anthropic handler: x-api-key, anthropic-version, beta headers, compact JSON)
    against an Anthropic-style server at ANTHROPIC_API_BASE: a priced name (structured output through a beta
    header) and one the cost map does not know."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    for model, priced in (("anthropic/claude-haiku-4-5", True), ("anthropic/claude-3-5-haiku-20241022", False)):
        with CaptureServer(wire="anthropic") as srv:
            monkeypatch.setenv("ANTHROPIC_API_BASE", srv.url.removesuffix("/v1"))
            full, translated, (full_req, ours_req) = both_paths(tmp_path, monkeypatch, srv, default=model)
        assert_same_request(full_req, ours_req)
        assert ours_req[1] == "/v1/messages" and ours_req[2]["x-api-key"] == KEY
        assert json.loads(ours_req[3])["stop_sequences"] == ["</reply>"] and "—".encode() in ours_req[3]
        assert_same_record(full, translated)
        if priced:
            assert translated.call.cost_usd is not None and translated.call.cost_usd > 0
        else:
            assert translated.call.cost_usd is None


def test_hosted_vllm_with_a_settings_base_matches_litellm(tmp_path, monkeypatch):
    model = "hosted_vllm/fake"
    with CaptureServer() as srv:
        full, translated, (full_req, ours_req) = both_paths(
            tmp_path, monkeypatch, srv, default=model, api_bases={model: srv.url}
        )
    assert_same_request(full_req, ours_req)
    assert_same_record(full, translated)
    assert translated.call.cost_usd is None


def test_translation_path_skips_litellms_cost_calculation_and_logging(tmp_path, monkeypatch):
    """The point of the path: no per-call completion_cost (litellm's 1-1.5 ms) and no logging object; an
    unpriced name is found unpriced once, not searched again on every call."""
    import litellm

    calls = {"completion_cost": 0, "cost_per_token": 0}
    real_cost_per_token = litellm.cost_per_token

    def counting_cost_per_token(*a, **k):
        calls["cost_per_token"] += 1
        return real_cost_per_token(*a, **k)

    def no_completion_cost(*a, **k):
        calls["completion_cost"] += 1
        raise AssertionError("completion_cost called")

    monkeypatch.setattr(litellm, "cost_per_token", counting_cost_per_token)
    monkeypatch.setattr(litellm, "completion_cost", no_completion_cost)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = "openai/my-unpriced-model"
    with CaptureServer() as srv:
        c = client(tmp_path, default=model, api_bases={model: srv.url})
        outs = [asyncio.run(c.complete(PROMPT, role="member", seed=s)) for s in range(3)]
    assert [o.call.cost_usd for o in outs] == [None, None, None]
    assert calls == {"completion_cost": 0, "cost_per_token": 1}


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"])
def test_http_errors_are_named_and_retried_as_on_litellms_path(tmp_path, monkeypatch, model):
    """A 429 is litellm's RateLimitError on both paths: retried by the client, then the same recorded failure."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setattr("simulator.llm.client.random.random", lambda: 0.0)
    reasons = []
    for translate in (False, True):
        with CaptureServer(status=429) as srv:
            c = client(tmp_path, default=model, api_bases={model: srv.url}, max_retries=1, litellm_translate=translate)
            with pytest.raises(ModelError) as err:
                asyncio.run(c.complete(PROMPT, role="member"))
            assert len(srv.requests) == 2  # one request per attempt of the client
        assert err.value.attempts == 2 and KEY not in err.value.reason
        reasons.append(err.value.reason)
    assert reasons[0].startswith("failed after 2 attempts: RateLimitError")
    assert reasons[1] == reasons[0]


@pytest.mark.parametrize("status", [0, 500])
@pytest.mark.parametrize("model", ["hosted_vllm/fake", "anthropic/claude-haiku-4-5"])
def test_malformed_replies_and_server_errors_fail_as_on_litellms_path(tmp_path, monkeypatch, status, model):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setattr("simulator.llm.client.random.random", lambda: 0.0)
    monkeypatch.setattr("simulator.llm.client.asyncio.sleep", _no_sleep)
    reasons = []
    for translate in (False, True):
        with CaptureServer(status=status) as srv:
            c = client(tmp_path, default=model, api_bases={model: srv.url}, max_retries=1, litellm_translate=translate)
            with pytest.raises(ModelError) as err:
                asyncio.run(c.complete(PROMPT, role="member"))
        reasons.append((err.value.attempts, len(srv.requests), err.value.reason))
    assert reasons[1] == reasons[0]


@pytest.mark.parametrize("model", ["hosted_vllm/fake", "anthropic/claude-haiku-4-5"])
def test_a_stalled_provider_times_out_as_on_litellms_path(tmp_path, monkeypatch, model):
    """litellm's Timeout, worded as litellm words it (only the measured seconds differ), retried, then recorded."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setattr("simulator.llm.client.random.random", lambda: 0.0)
    monkeypatch.setattr("simulator.llm.client.asyncio.sleep", _no_sleep)
    reasons = []
    with CaptureServer(status=-1) as srv:
        for translate in (False, True):
            settings = {"api_bases": {model: srv.url}, "timeout_s": 0.3, "max_retries": 1}
            c = client(tmp_path, default=model, litellm_translate=translate, **settings)
            with pytest.raises(ModelError) as err:
                asyncio.run(c.complete(PROMPT, role="member"))
            assert err.value.attempts == 2
            reasons.append(re.sub(r"time taken=[0-9.]+", "time taken=T", err.value.reason))
    assert reasons[0].startswith("failed after 2 attempts: Timeout: litellm.Timeout:")
    assert reasons[1] == reasons[0]


def test_a_refused_connection_is_retried_as_on_litellms_path(tmp_path, monkeypatch):
    import socket

    monkeypatch.setattr("simulator.llm.client.random.random", lambda: 0.0)
    monkeypatch.setattr("simulator.llm.client.asyncio.sleep", _no_sleep)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    names = []
    for translate, model in [(t, m) for m in ("hosted_vllm/fake", "anthropic/claude-haiku-4-5") for t in (False, True)]:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        c = client(tmp_path, default=model, api_bases={model: url}, max_retries=1, litellm_translate=translate)
        with pytest.raises(ModelError) as err:
            asyncio.run(c.complete(PROMPT, role="member"))
        assert err.value.attempts == 2
        names.append(err.value.reason.split(":")[1].strip())
    assert names == ["InternalServerError"] * 4  # litellm's name for it on both paths: a 500 without a status


async def _no_sleep(_s: float) -> None:
    return None


def test_proxy_settings_are_honoured_as_litellm_honours_them(tmp_path, monkeypatch):
    """Behind HTTP_PROXY both paths reach the provider through the proxy (here the capture server plays it)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_BASE", "http://api.example.invalid/v1")
    for var in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(var, raising=False)
    with CaptureServer() as srv:
        monkeypatch.setenv("HTTP_PROXY", srv.url.removesuffix("/v1"))
        full, translated, (full_req, ours_req) = both_paths(tmp_path, monkeypatch, srv, default="openai/gpt-4o-mini")
    assert full_req[2]["Host"] == ours_req[2]["Host"] == "api.example.invalid"
    assert_same_request(full_req, ours_req)
    assert_same_record(full, translated)
