"""The shipped fake OpenAI server: replies keyed on the request, byte for byte or (canonical) by its JSON."""

from __future__ import annotations

import json
import urllib.request

from simulator.testing.fake_openai import FakeOpenAIServer

BODY = {
    "model": "fake",
    "messages": [{"role": "user", "content": "Dana says she is tired. How does Theo feel?"}],
    "temperature": 0.7,
    "max_tokens": 64,
}


def _reply(url: str, raw: bytes) -> str:
    req = urllib.request.Request(url + "/chat/completions", data=raw, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["choices"][0]["message"]["content"]


def test_canonical_replies_ignore_key_order_and_spacing():
    """litellm and the lean path send the same JSON with different key order and spacing: a canonical server answers
    both alike (so a benchmark compares like with like); the default server keys on the bytes, as before."""
    compact = json.dumps(BODY, separators=(",", ":")).encode()
    reordered = json.dumps(dict(reversed(list(BODY.items()))), indent=1).encode()
    with FakeOpenAIServer(canonical=True) as srv:
        assert _reply(srv.url, compact) == _reply(srv.url, reordered)
        assert _reply(srv.url, compact) == _reply(srv.url, compact)  # and still deterministic
    with FakeOpenAIServer() as srv:
        assert _reply(srv.url, compact) != _reply(srv.url, reordered)
