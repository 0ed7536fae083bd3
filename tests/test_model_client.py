"""The litellm-backed client: structured output, retries, timeouts, the disk cache, key checks, and the
embedded model's weight assembly. No network: litellm's mock_response or a fake provider registered in
litellm's custom_provider_map."""

from __future__ import annotations

import asyncio
import json
import random

import pytest
from pydantic import BaseModel, Field

from simulator.llm.client import LiteLLMClient, ModelSettings
from simulator.llm.types import ModelConfigError, ModelError, Prompt

PROMPT = Prompt(context='Dana: "You are never home."', instructions="How does Dana feel?")


class Feeling(BaseModel):
    emotion: str
    intensity: int


def client(tmp_path, **kw) -> LiteLLMClient:
    kw.setdefault("cache_path", tmp_path / "calls.sqlite")
    return LiteLLMClient(ModelSettings(**kw))


@pytest.fixture
def fake_provider(monkeypatch):
    """Registers `fakeprov/...` in litellm; its replies come from `behaviour(messages, optional_params)`."""
    import litellm
    from litellm import CustomLLM

    state = {"calls": 0, "behaviour": None}

    class Provider(CustomLLM):
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
            **_,
        ):
            state["calls"] += 1
            out = state["behaviour"](messages, optional_params)
            if asyncio.iscoroutine(out):
                out = await out
            model_response.choices[0].message.content = out
            return model_response

    monkeypatch.setattr(
        litellm,
        "custom_provider_map",
        [*litellm.custom_provider_map, {"provider": "fakeprov", "custom_handler": Provider()}],
    )
    return state


def test_structured_output_from_fenced_mock_response(tmp_path):
    c = client(
        tmp_path,
        default="openai/gpt-4o-mini",
        litellm_kwargs={"mock_response": 'Here:\n```json\n{"emotion": "hurt", "intensity": 7}\n```'},
    )
    out = asyncio.run(c.complete(PROMPT, role="member", schema=Feeling, seed=1))
    assert out.parsed == Feeling(emotion="hurt", intensity=7)
    assert out.call.model == "openai/gpt-4o-mini" and out.call.role == "member" and not out.call.cache_hit
    assert out.call.usage.prompt_tokens > 0 and out.call.usage.completion_tokens > 0
    assert out.call.cost_usd is not None and out.call.cost_usd >= 0


def test_malformed_output_is_reasked_then_fails_with_reason(tmp_path):
    c = client(
        tmp_path,
        default="openai/gpt-4o-mini",
        parse_attempts=2,
        litellm_kwargs={"mock_response": '{"emotion": "hurt"}'},
    )
    with pytest.raises(ModelError) as err:
        asyncio.run(c.complete(PROMPT, role="judge", schema=Feeling))
    assert "no valid output after 2 attempts" in err.value.reason and "intensity" in err.value.reason


def test_rate_limits_are_retried_with_backoff_then_reported(tmp_path, monkeypatch):
    import litellm

    sleeps = []

    async def no_sleep(s):
        sleeps.append(s)

    monkeypatch.setattr(asyncio, "sleep", no_sleep)
    c = client(
        tmp_path,
        default="openai/gpt-4o-mini",
        max_retries=3,
        litellm_kwargs={
            "mock_response": litellm.RateLimitError("slow down", llm_provider="openai", model="gpt-4o-mini")
        },
    )
    with pytest.raises(ModelError) as err:
        asyncio.run(c.complete(PROMPT, role="member"))
    assert err.value.attempts == 4 and "RateLimitError" in err.value.reason
    assert len(sleeps) == 3 and sleeps[0] < sleeps[-1] * 2  # exponential backoff (with jitter)


def test_missing_api_key_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    c = client(tmp_path, default="openai/gpt-4o-mini")
    with pytest.raises(ModelConfigError) as err:
        asyncio.run(c.complete(PROMPT, role="member"))
    msg = str(err.value)
    assert "openai/gpt-4o-mini" in msg and "OPENAI_API_KEY" in msg and "\n" not in msg


def test_local_model_other_than_default_needs_a_gguf(tmp_path):
    c = client(tmp_path, default="local/my-model")
    with pytest.raises(ModelConfigError, match="RESCUE_SIM_GGUF"):
        asyncio.run(c.complete(PROMPT, role="member"))


def test_timeouts_are_retried_then_fail(tmp_path, fake_provider, monkeypatch):
    async def slow(messages, params):
        await asyncio.sleep(30)
        return "late"

    c = client(tmp_path, default="fakeprov/slow", timeout_s=1.0, max_retries=1, cache=False)
    fake_provider["behaviour"] = lambda m, p: "warm"  # litellm's first call sets itself up: not a timeout
    asyncio.run(c.complete(PROMPT, role="member"))
    fake_provider["behaviour"] = slow
    monkeypatch.setattr("simulator.llm.client.random.random", lambda: 0.0)
    with pytest.raises(ModelError) as err:
        asyncio.run(c.complete(PROMPT, role="member"))
    assert fake_provider["calls"] == 1 + 2 and "timed out" in err.value.reason


def test_disk_cache_serves_repeats_and_keys_on_seed(tmp_path, fake_provider):
    fake_provider["behaviour"] = lambda m, p: json.dumps({"emotion": random.choice("abcdefgh"), "intensity": 3})
    c = client(tmp_path, default="fakeprov/x")
    a = asyncio.run(c.complete(PROMPT, role="member", schema=Feeling, seed=1))
    b = asyncio.run(c.complete(PROMPT, role="member", schema=Feeling, seed=1))
    assert fake_provider["calls"] == 1 and b.call.cache_hit and b.parsed == a.parsed
    asyncio.run(c.complete(PROMPT, role="member", schema=Feeling, seed=2))
    asyncio.run(c.complete(PROMPT, role="member", schema=Feeling, seed=1, trial=1))
    assert fake_provider["calls"] == 3  # seed and trial are part of the key
    # a new client on the same cache file (a rerun) still hits
    c2 = client(tmp_path, default="fakeprov/x")
    assert asyncio.run(c2.complete(PROMPT, role="member", schema=Feeling, seed=1)).call.cache_hit


def test_text_to_avoid_reaches_only_the_embedded_provider_and_keys_the_cache(tmp_path, fake_provider):
    seen = []
    fake_provider["behaviour"] = lambda m, p: seen.append(dict(p)) or "Fine."
    c = client(tmp_path, default="fakeprov/x")
    avoiding = PROMPT.model_copy(update={"avoid": ("You are never home.",)})
    asyncio.run(c.complete(avoiding, role="member", seed=1))
    assert "avoid_texts" not in seen[0]  # a hosted API has no such argument and would refuse it
    asyncio.run(c.complete(PROMPT, role="member", seed=1))
    assert fake_provider["calls"] == 2  # not served the other call's answer
    from simulator.llm import client as client_module

    sent = {}

    async def direct(**kwargs):
        sent.update(kwargs)
        raise RuntimeError("stop here")

    local = LiteLLMClient(ModelSettings(cache=False, max_retries=0))
    lib = type("Lib", (), {"acompletion": staticmethod(direct)})
    local._lib = lambda: lib  # the litellm module stand-in: record what would reach the local provider
    with pytest.raises(ModelError):
        asyncio.run(local.complete(avoiding, role="member", model=client_module.DEFAULT_LOCAL_MODEL, seed=1))
    assert sent["avoid_texts"] == ["You are never home."]


def test_unusable_cached_answer_is_not_replayed(tmp_path, fake_provider):
    replies = iter(["nonsense", json.dumps({"emotion": "calm", "intensity": 2})])
    fake_provider["behaviour"] = lambda m, p: next(replies)
    c = client(tmp_path, default="fakeprov/x")
    out = asyncio.run(c.complete(PROMPT, role="member", schema=Feeling, seed=1))
    assert out.parsed.emotion == "calm" and out.call.attempts == 2


def test_a_call_rescued_by_a_later_try_replays_the_same_path(tmp_path, fake_provider):
    """A first try that would come out differently when drawn again (the embedded model's reply can change with
    its prefix cache, even at the same seed): the rerun must still give the answer the first run kept."""
    draws = iter(["nonsense", json.dumps({"emotion": "calm", "intensity": 2})])
    fake_provider["behaviour"] = lambda m, p: next(draws, json.dumps({"emotion": "fresh", "intensity": 9}))
    first = asyncio.run(client(tmp_path, default="fakeprov/x").complete(PROMPT, role="member", schema=Feeling, seed=1))
    again = asyncio.run(client(tmp_path, default="fakeprov/x").complete(PROMPT, role="member", schema=Feeling, seed=1))
    assert first.parsed.emotion == "calm" and again.parsed.emotion == "calm"
    assert fake_provider["calls"] == 2 and again.call.cache_hit


def test_a_call_that_failed_outright_is_asked_afresh_on_a_rerun(tmp_path, fake_provider):
    fake_provider["behaviour"] = lambda m, p: "nonsense"
    c = client(tmp_path, default="fakeprov/x", parse_attempts=2)
    with pytest.raises(ModelError):
        asyncio.run(c.complete(PROMPT, role="member", schema=Feeling, seed=1))
    fake_provider["behaviour"] = lambda m, p: json.dumps({"emotion": "calm", "intensity": 2})
    out = asyncio.run(
        client(tmp_path, default="fakeprov/x", parse_attempts=2).complete(PROMPT, role="member", schema=Feeling, seed=1)
    )
    assert out.parsed.emotion == "calm" and not out.call.cache_hit and fake_provider["calls"] == 3


def test_same_seed_and_cache_give_the_same_transcript(tmp_path, fake_provider):
    """A non-deterministic provider: the cache (keyed by seed) is what makes reruns identical."""
    from personas.library import resolve_case
    from simulator.engine import run_session
    from simulator.session_state import SessionConfig
    from simulator.supporters import ModelSupporter
    from tests._sim_fakes import RoomScript

    case = resolve_case("dana-and-theo")

    def behaviour(messages, params):
        """Answer by the JSON schema the chat profile puts in the prompt; random content every time."""
        text = messages[-1]["content"]
        marker = "matching this JSON schema, nothing else:\n"
        script = RoomScript(
            case,
            intensity=random.randint(3, 9),
            line=f"line {random.random():.6f}",
            supporter_text=f"support {random.random():.6f}",
            speak=random.random() < 0.7,
        )
        if marker not in text:
            return script.line
        schema = json.loads(text.split(marker, 1)[1])
        props = schema["properties"]

        class Call:
            pass

        call = Call()
        if "landed" in props:
            from simulator.members import state_schema

            others = schema["$defs"]["FeelingReply"]["properties"]["member"]
            others = others.get("enum") or [others["const"]]
            call.schema = state_schema(case, next(n for n in case.member_names if n not in others))
        elif "pattern" in props:
            from simulator.tracker import tracker_schema

            call.schema = tracker_schema(case)
        else:
            from simulator.supporters import decision_schema

            call.schema = decision_schema(case)
        return json.dumps(script(call))

    fake_provider["behaviour"] = behaviour
    settings = dict(default="fakeprov/room", concurrency={"fakeprov": 1})

    def session(seed, cache):
        c = client(tmp_path, cache_path=tmp_path / cache, **settings)
        sup = ModelSupporter(client=c, model="fakeprov/room", spec="fakeprov/room", seed=seed)
        rec = asyncio.run(run_session(case, sup, c, SessionConfig(max_turns=4, seed=seed), session_id="s"))
        return [(t.speaker, t.text) for t in rec.turns]

    first = session(7, "a.sqlite")
    assert session(7, "a.sqlite") == first
    assert session(7, "b.sqlite") != first  # without the cache this provider is not reproducible


def test_embedded_chatml_keeps_prefill_open():
    from simulator.llm.embedded import render_chatml

    text = render_chatml(
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "U"},
            {"role": "assistant", "content": 'Dana: "'},
        ]
    )
    assert text.endswith('<|im_start|>assistant\nDana: "')
    assert render_chatml([{"role": "user", "content": "U"}]).endswith("<|im_start|>assistant\n")


def test_weights_join_is_verified_and_atomic(tmp_path, monkeypatch):
    import hashlib

    from simulator.llm import embedded

    parts = []
    for i, chunk in enumerate([b"abc", b"def"]):
        p = tmp_path / f"part{i}.bin"
        p.write_bytes(chunk)
        parts.append(p)
    monkeypatch.setattr(embedded, "_chunk_files", lambda: parts)
    monkeypatch.setattr(embedded, "WEIGHTS_SHA256", "0" * 64)
    out_dir = tmp_path / "models"
    with pytest.raises(embedded.EmbeddedModelError, match="refusing"):
        embedded.ensure_default_weights(out_dir)
    assert not any(out_dir.iterdir())  # no partial or temp file left behind
    monkeypatch.setattr(embedded, "WEIGHTS_SHA256", hashlib.sha256(b"abcdef").hexdigest())
    path = embedded.ensure_default_weights(out_dir)
    assert path.read_bytes() == b"abcdef"
    path.write_bytes(b"tampered")  # a changed file is re-hashed, found wrong and rebuilt from the chunks
    assert embedded.ensure_default_weights(out_dir).read_bytes() == b"abcdef"


def test_grammar_keeps_the_schema_property_order():
    """Models write fields in grammar order: reasoning must come before the score it justifies."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is part of the `local` extra")
    from simulator.llm.embedded import schema_gbnf

    class Verdict(BaseModel):
        reasoning: str
        evidence: list[int]
        score: int

    root = next(line for line in schema_gbnf(Verdict.model_json_schema()).splitlines() if line.startswith("root"))
    assert root.index("reasoning") < root.index("evidence") < root.index("score")


def test_grammar_allows_only_integers_in_their_range():
    """llama-cpp-python's converter drops minimum/maximum; the grammar we build must not let a member write an
    intensity of 11 or a judge a score of 0 (valid JSON that fails validation and costs a re-ask)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is part of the `local` extra")
    from llama_cpp import LlamaGrammar

    from simulator.llm.embedded import _bounded_integers, schema_gbnf
    from simulator.members import state_schema
    from tests._session_fixtures import couple_session

    class Rated(BaseModel):
        score: int = Field(ge=1, le=5)
        below: int = Field(gt=-1, lt=3)
        count: int = Field(ge=0)  # unbounded above: left to the converter

    props = _bounded_integers(Rated.model_json_schema())["properties"]
    assert props["score"]["enum"] == [1, 2, 3, 4, 5] and props["below"]["enum"] == [0, 1, 2]
    assert props["count"]["type"] == "integer" and "enum" not in props["count"]
    case = couple_session().case
    grammar = schema_gbnf(state_schema(case, case.member_names[0], can_soften=True).model_json_schema())
    assert "integral-part" not in grammar  # every integer of a member's self-report is bounded
    LlamaGrammar.from_string(grammar, verbose=False)  # and llama.cpp parses what we built


# -- the lean path for `openai/` models (issue 22) -------------------------------------------------------------


@pytest.fixture
def canonical_fake(monkeypatch):
    """The fake OpenAI server, answering from the parsed request body (not its bytes: litellm and the lean path
    serialise the same JSON with different key order and spacing), so equal requests get equal replies."""
    from simulator.testing import fake_openai
    from simulator.testing.fake_openai import FakeOpenAIServer

    real = fake_openai.reply_for
    monkeypatch.setattr(
        fake_openai, "reply_for", lambda body, raw, seed: real(body, json.dumps(body, sort_keys=True).encode(), seed)
    )
    with FakeOpenAIServer(latency_s=0.0, record=True) as srv:
        yield srv


def _both_paths(tmp_path, monkeypatch, server, **kw):
    """The same call through litellm (direct_http=False) and then the lean path with litellm's completion made to
    raise; returns both Completions and both request bodies as the server saw them."""
    import litellm

    kw.setdefault("default", "openai/gpt-4o-mini")
    before = asyncio.run(
        client(tmp_path, cache=False, direct_http=False, **kw).complete(PROMPT, role="member", schema=Feeling, seed=3)
    )

    def no_litellm(*a, **k):
        raise AssertionError("litellm's completion was called on the lean path")

    with monkeypatch.context() as m:
        m.setattr(litellm, "acompletion", no_litellm)
        m.setattr(litellm, "completion", no_litellm)
        lean = asyncio.run(client(tmp_path, cache=False, **kw).complete(PROMPT, role="member", schema=Feeling, seed=3))
    bodies = [json.loads(b) for b in server.recorded]
    assert len(bodies) == 2
    return before, lean, bodies


def _same(before, lean) -> None:
    assert lean.text == before.text and lean.parsed == before.parsed
    assert lean.call.model_dump(exclude={"latency_s"}) == before.call.model_dump(exclude={"latency_s"})


def test_openai_model_at_an_env_api_base_takes_the_lean_path(tmp_path, monkeypatch, canonical_fake):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_BASE", canonical_fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    before, lean, (litellm_body, lean_body) = _both_paths(tmp_path, monkeypatch, canonical_fake)
    assert lean_body == litellm_body  # the same request, response_format (json_schema) included
    assert lean_body["response_format"]["type"] == "json_schema" and lean_body["model"] == "gpt-4o-mini"
    _same(before, lean)
    assert lean.call.cost_usd is not None and lean.call.cost_usd > 0  # litellm's cost map, as before


def test_openai_model_with_settings_api_base_matches_litellm(tmp_path, monkeypatch, canonical_fake):
    for var in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(var, raising=False)
    for model in ("openai/gpt-4o-mini", "openai/my-self-hosted-model"):  # priced, and unknown to the cost map
        canonical_fake.reset()
        before, lean, (litellm_body, lean_body) = _both_paths(
            tmp_path, monkeypatch, canonical_fake, default=model, api_bases={model: canonical_fake.url}
        )
        assert lean_body == litellm_body
        _same(before, lean)
    assert lean.call.cost_usd is None  # unknown model: no cost, as litellm reports it


def test_lean_and_litellm_paths_share_cache_keys(tmp_path, monkeypatch, canonical_fake):
    monkeypatch.setenv("OPENAI_API_BASE", canonical_fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    first = asyncio.run(client(tmp_path, default="openai/gpt-4o-mini").complete(PROMPT, role="member", seed=5))
    again = asyncio.run(
        client(tmp_path, default="openai/gpt-4o-mini", direct_http=False).complete(PROMPT, role="member", seed=5)
    )
    assert not first.call.cache_hit and again.call.cache_hit and again.text == first.text
    assert len(canonical_fake.recorded) == 1


def test_litellm_openai_path_retries_only_in_the_client(tmp_path, monkeypatch):
    """`openai/` through litellm (no lean path) goes through litellm's HTTP handler, not the openai SDK, whose own
    2 hidden retries per attempt would triple the requests behind each of the client's attempts."""
    from simulator.testing.fake_openai import FakeOpenAIServer, FaultRates

    monkeypatch.delenv("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setattr("simulator.llm.client.random.random", lambda: 0.0)  # shortest backoff
    model = "openai/gpt-4o-mini"
    with FakeOpenAIServer(latency_s=0.0, faults=FaultRates(http_429=1.0)) as srv:
        c = client(tmp_path, default=model, api_bases={model: srv.url}, direct_http=False, cache=False, max_retries=1)
        with pytest.raises(ModelError, match="failed after 2 attempts: RateLimitError"):
            asyncio.run(c.complete(PROMPT, role="member", schema=Feeling))
        assert srv.stats()["requests"] == 2  # one request per attempt of the client


def test_litellm_path_looks_up_schema_support_once_per_model(tmp_path, monkeypatch):
    """Whether to send response_format is litellm's answer for the model, asked once per model and reused: the
    lookup walks litellm's model map on every call otherwise (more so for a name it does not know)."""
    import litellm

    asked: list[str] = []
    real = litellm.supports_response_schema

    def counting(model, *a, **kw):
        asked.append(model)
        return real(model, *a, **kw)

    monkeypatch.setattr(litellm, "supports_response_schema", counting)
    c = client(
        tmp_path,
        default="openai/gpt-4o-mini",
        cache=False,
        litellm_kwargs={"mock_response": '{"emotion": "hurt", "intensity": 7}'},
    )
    outs = [asyncio.run(c.complete(PROMPT, role="member", schema=Feeling, seed=s)) for s in range(3)]
    assert all(o.parsed == Feeling(emotion="hurt", intensity=7) for o in outs)
    assert asked == ["openai/gpt-4o-mini"]


def test_the_cache_key_holds_the_endpoint_the_environment_points_at(tmp_path, monkeypatch):
    """The same model id at another server is another model: its calls must not replay the first server's replies.
    Each provider's endpoint variables are read as litellm reads them; API keys never change the key."""
    from simulator.llm.client import ENV_ENDPOINTS

    names = {n for ns in ENV_ENDPOINTS.values() for n in ns} | {"AZURE_API_BASE", "HOSTED_VLLM_API_BASE"}
    for name in names:
        monkeypatch.delenv(name, raising=False)
    c = client(tmp_path, cache=False)
    messages = [{"role": "user", "content": "hello"}]

    def key(model: str) -> str:
        return c._key(model, messages, {"seed": 1}, None)

    cases = [
        ("openai/gpt-4o-mini", "OPENAI_API_BASE"),
        ("openai/gpt-4o-mini", "OPENAI_BASE_URL"),
        ("anthropic/claude-haiku-4-5", "ANTHROPIC_API_BASE"),
        ("anthropic/claude-haiku-4-5", "ANTHROPIC_BASE_URL"),
        ("azure/my-deployment", "AZURE_API_BASE"),
        ("hosted_vllm/qwen", "HOSTED_VLLM_API_BASE"),
        ("ollama_chat/llama3", "OLLAMA_API_BASE"),
    ]
    for model, var in cases:
        default = key(model)
        monkeypatch.setenv(var, "http://127.0.0.1:8001/v1")
        at_one = key(model)
        monkeypatch.setenv(var, "http://127.0.0.1:8002/v1")
        at_other = key(model)
        monkeypatch.delenv(var)
        assert len({default, at_one, at_other}) == 3, (model, var)
    plain = key("openai/gpt-4o-mini")
    monkeypatch.setenv("ANTHROPIC_API_BASE", "http://127.0.0.1:8001")  # another provider's variable: no effect
    assert key("openai/gpt-4o-mini") == plain and c.endpoint("openai/gpt-4o-mini") is None
    # litellm's order: OPENAI_BASE_URL wins over OPENAI_API_BASE
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:8001/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8002/v1")
    assert c.endpoint("openai/gpt-4o-mini") == "http://127.0.0.1:8002/v1"
    before = key("openai/gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-another-not-a-real-key")  # keys do not change the answer
    assert key("openai/gpt-4o-mini") == before
    # the settings' api_bases come first, as in the call
    pinned = client(tmp_path, cache=False, api_bases={"openai/gpt-4o-mini": "http://127.0.0.1:9000/v1"})
    assert pinned.endpoint("openai/gpt-4o-mini") == "http://127.0.0.1:9000/v1"
    assert client(tmp_path, cache=False).endpoint("local/qwen2.5-coder-1.5b") is None


@pytest.mark.parametrize("direct_http", [True, False], ids=["lean", "litellm"])
def test_two_servers_behind_one_model_id_are_not_replayed(tmp_path, monkeypatch, direct_http):
    from simulator.testing.fake_openai import FakeOpenAIServer

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeOpenAIServer(latency_s=0.0) as first, FakeOpenAIServer(latency_s=0.0) as second:
        answers = []
        for server in (first, second, first):
            monkeypatch.setenv("OPENAI_API_BASE", server.url)
            c = client(tmp_path, default="openai/gpt-4o-mini", direct_http=direct_http)
            answers.append(asyncio.run(c.complete(PROMPT, role="member", seed=5)))
        assert [a.call.cache_hit for a in answers] == [False, False, True]
        assert first.stats()["requests"] == 1 and second.stats()["requests"] == 1
