"""Secrets never reach what rescue-sim writes."""

from __future__ import annotations

import asyncio

from simulator.redact import REDACTED, redact


def test_known_shapes_and_environment_values_are_redacted(monkeypatch):
    monkeypatch.setenv("MYPROVIDER_API_KEY", "abcdef123456789")
    text = (
        "Incorrect API key provided: sk-proj-ABCDEFGH12345678 for abcdef123456789 at "
        "https://bob:hunter22@example.com/v1?api_key=zzz999&x=1 with Bearer eyJhbGciOiJI.x"
    )
    out = redact(text)
    for secret in ("sk-proj-ABCDEFGH12345678", "abcdef123456789", "bob:hunter22", "zzz999", "eyJhbGciOiJI"):
        assert secret not in out
    assert out.count(REDACTED) == 5 and "x=1" in out and "example.com/v1" in out
    assert redact("nothing secret here: Dana, Theo") == "nothing secret here: Dana, Theo"


def test_provider_error_reasons_and_manifests_are_redacted(tmp_path, monkeypatch):
    import litellm

    from simulator.llm.client import LiteLLMClient, ModelSettings
    from simulator.llm.types import ModelError, Prompt

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET12345678")
    err = litellm.BadRequestError("bad key sk-test-SECRET12345678", model="gpt-4o-mini", llm_provider="openai")
    c = LiteLLMClient(
        ModelSettings(
            default="openai/gpt-4o-mini", cache_path=tmp_path / "c.sqlite", litellm_kwargs={"mock_response": err}
        )
    )
    try:
        asyncio.run(c.complete(Prompt(context="x", instructions="y"), role="member"))
    except ModelError as e:
        assert "SECRET" not in e.reason and REDACTED in e.reason
    else:  # pragma: no cover
        raise AssertionError("expected a ModelError")
