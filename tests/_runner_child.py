"""A run in its own process, for the kill-and-resume test: `python tests/_runner_child.py OUT URL N CONCURRENCY`.

Sessions of the first N (case, seed) pairs, with a structured model supporter, all roles served by the fake
OpenAI-compatible server at URL, and the call cache inside OUT.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from personas.library import load_library  # noqa: E402
from simulator.llm.client import LiteLLMClient, ModelSettings  # noqa: E402
from simulator.runner.runs import run_specs
from simulator.runner.session import SessionSpec, make_session_id
from simulator.session_state import SessionConfig  # noqa: E402

MODEL = "hosted_vllm/fake"


def specs(n: int, turns: int = 3) -> list[SessionSpec]:
    cases = load_library()
    out = []
    for i in range(n):
        case, seed = cases[i % len(cases)], i // len(cases)
        out.append(
            SessionSpec(
                session_id=make_session_id(case.id, MODEL, None, seed),
                case=case,
                supporter=MODEL,
                seed=seed,
                config=SessionConfig(max_turns=turns, seed=seed),
            )
        )
    return out


def client(url: str, cache_path: Path | None) -> LiteLLMClient:
    return LiteLLMClient(
        ModelSettings(
            default=MODEL,
            api_bases={MODEL: url},
            cache=cache_path is not None,
            cache_path=cache_path,
            timeout_s=10,
            default_concurrency=64,
        )
    )


def main(out: str, url: str, n: int, concurrency: int) -> None:
    asyncio.run(run_specs(specs(n), client(url, Path(out) / "calls.sqlite"), out, concurrency=concurrency))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
