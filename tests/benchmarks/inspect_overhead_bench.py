"""CPU per model call through Inspect (InspectModelClient over Inspect's `openai-api` provider) against
rescue-sim's own path (LiteLLMClient's lean HTTP path), both against the same fake OpenAI-compatible server:
`python tests/benchmarks/inspect_overhead_bench.py [--calls 200] [--concurrency 8] [--rounds 2]`.

The client alone (no graph): `--calls` structured calls (the chat profile, a small schema), `--concurrency` in
flight. The server runs in its own process (simulator.testing.fake_openai), so only the client's CPU is counted.
Rounds alternate the two paths; each round warms first. Prints CPU ms per call of each and their ratio.
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
from simulator.llm.types import ModelClient, Prompt  # noqa: E402
from simulator.testing.fake_openai import spawn_server  # noqa: E402

MODEL = "fake-model"


class Feeling(BaseModel):
    emotion: str
    intensity: int


async def _calls(client: ModelClient, n: int, concurrency: int, offset: int) -> None:
    slots = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with slots:
            prompt = Prompt(context=f"Dana: turn {i} of the evening", instructions="How does Dana feel now?")
            await client.complete(prompt, role="member", schema=Feeling, seed=offset + i)

    await asyncio.gather(*(one(i) for i in range(n)))


def rescue_client(url: str) -> ModelClient:
    return LiteLLMClient(ModelSettings(default=f"openai/{MODEL}", api_bases={f"openai/{MODEL}": url}, cache=False))


def inspect_client(url: str) -> ModelClient:
    from inspect_ai.model import GenerateConfig, get_model

    from simulator.integrations.inspect_client import InspectModelClient

    os.environ["FAKE_API_KEY"] = "none"
    os.environ["FAKE_BASE_URL"] = url
    model = get_model(f"openai-api/fake/{MODEL}", config=GenerateConfig(max_connections=64))
    return InspectModelClient({"member": model})


async def measure(client: ModelClient, calls: int, concurrency: int, offset: int) -> tuple[float, float]:
    await _calls(client, 10, concurrency, offset + 10**6)  # warm: connections, imports, schema caches
    cpu, wall = time.process_time(), time.perf_counter()
    await _calls(client, calls, concurrency, offset)
    return (time.process_time() - cpu) * 1000 / calls, time.perf_counter() - wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    print(f"inspect overhead bench: {a.calls} calls, {a.concurrency} in flight, load {os.getloadavg()[0]:.1f}")
    rows: dict[str, list[float]] = {"rescue-sim": [], "inspect": []}
    with spawn_server(latency_s=0.0) as server:
        url = server.url
        for rnd in range(a.rounds):
            for name, make in (("rescue-sim", rescue_client), ("inspect", inspect_client)):

                async def run(make=make, rnd=rnd) -> tuple[float, float]:
                    return await measure(make(url), a.calls, a.concurrency, rnd * 10**5)

                cpu_ms, wall = asyncio.run(run())
                rows[name].append(cpu_ms)
                print(f"  round {rnd + 1} {name:10s} {cpu_ms:6.2f} ms CPU per call, {wall:5.2f} s wall")
    best = {k: min(v) for k, v in rows.items()}
    print(
        f"best of {a.rounds}: rescue-sim {best['rescue-sim']:.2f} ms, inspect {best['inspect']:.2f} ms per call; "
        f"inspect / rescue-sim = {best['inspect'] / best['rescue-sim']:.2f}"
    )


if __name__ == "__main__":
    main()
