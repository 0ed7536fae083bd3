"""CPU per call of litellm's whole call against the translation path (simulator/llm/translated.py) for providers
the scale bench's OpenAI-style fake server cannot play: `python tests/benchmarks/translation_bench.py
[--model anthropic/claude-haiku-4-5] [--calls 300] [--concurrency 16] [--rounds 2]`.

The client alone (no graph): `--calls` structured calls, `--concurrency` in flight, against the capture server
of the tests (tests/_capture_server.py) answering in the provider's wire format without latency, in a thread of
this process, so its CPU is counted in both rows alike. Rounds alternate the two paths; each round warms first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pydantic import BaseModel  # noqa: E402

from simulator.llm.client import LiteLLMClient, ModelSettings  # noqa: E402
from simulator.llm.types import Prompt  # noqa: E402
from tests._capture_server import CaptureServer  # noqa: E402

KEY = "sk-bench-not-a-real-key"


class Feeling(BaseModel):
    emotion: str
    intensity: int


async def _calls(client: LiteLLMClient, n: int, concurrency: int) -> None:
    slots = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with slots:
            prompt = Prompt(context=f"Dana: turn {i}", instructions="How does Dana feel?")
            await client.complete(prompt, role="member", schema=Feeling, seed=i)

    await asyncio.gather(*(one(i) for i in range(n)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="anthropic/claude-haiku-4-5")
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    provider = a.model.split("/", 1)[0]
    os.environ[f"{provider.upper()}_API_KEY"] = KEY
    print(f"translation bench: {a.model}, {a.calls} calls, {a.concurrency} in flight, load {os.getloadavg()[0]:.1f}")
    with CaptureServer(wire="anthropic" if provider == "anthropic" else "openai") as srv:
        os.environ[f"{provider.upper()}_API_BASE"] = srv.url.removesuffix("/v1") if provider == "anthropic" else srv.url
        for rnd in range(a.rounds):
            for translate in (False, True):
                settings = ModelSettings(default=a.model, cache=False, direct_http=False, litellm_translate=translate)
                client = LiteLLMClient(settings)
                asyncio.run(_calls(client, a.calls, a.concurrency))  # warm: imports, routes, the pool
                srv.requests.clear()
                cpu, wall = time.process_time(), time.perf_counter()
                asyncio.run(_calls(client, a.calls, a.concurrency))
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                path = "translated" if translate else "litellm  "
                print(f"round {rnd} {path} {cpu / a.calls * 1000:6.2f} ms CPU per call   wall {wall:5.1f} s")
        assert len(srv.requests) == a.calls


if __name__ == "__main__":
    main()
