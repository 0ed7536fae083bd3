"""The embedded model keeps each kind of prompt's KV state (so alternating roles do not re-read each other's
prefix) and reports progress while it reads and writes. Real llama.cpp, a few short calls."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.embedded  # skipped without llama-cpp-python, and then failed in CI (see conftest.py)

SYSTEM = {"role": "system", "content": "You are a helpful assistant. " * 20}


def prompt(topic: str, words: int) -> list[dict[str, str]]:
    text = " ".join(f"{topic}{i}" for i in range(words))
    return [SYSTEM, {"role": "user", "content": f"{text}\n\nReply with one word."}]


@pytest.fixture(scope="module")
def model():
    from simulator.llm.embedded import get_embedded_model

    return get_embedded_model()


def test_alternating_prompts_each_reuse_their_own_prefix(model):
    a, b = prompt("apple", 150), prompt("pear", 150)
    first = model.generate(a, max_tokens=2, temperature=0.0, seed=0)
    model.generate(b, max_tokens=2, temperature=0.0, seed=0)
    # `a` again, one line longer: without snapshots only the shared system text would be cached
    a2 = [SYSTEM, {"role": "user", "content": a[1]["content"].replace("\n\nReply", " apple150\n\nReply")}]
    again = model.generate(a2, max_tokens=2, temperature=0.0, seed=0)
    assert again.cached_prompt_tokens > first.prompt_tokens - 20
    assert again.prompt_tokens > first.prompt_tokens


def test_same_answer_from_a_restored_state_as_from_scratch(model):
    a, b = prompt("river", 120), prompt("stone", 120)
    model.generate(a, max_tokens=1, temperature=0.0, seed=0)
    model.generate(b, max_tokens=1, temperature=0.0, seed=0)
    restored = model.generate(a, max_tokens=8, temperature=0.0, seed=3)
    model._llm.reset()  # drop the live cache (the snapshot of `a` stays)
    model._states._snaps.clear()
    fresh = model.generate(a, max_tokens=8, temperature=0.0, seed=3)
    assert fresh.cached_prompt_tokens == 0
    assert restored.text == fresh.text


def test_progress_reports_reading_then_writing(model):
    seen: list[tuple[int, int, int, int]] = []
    model._states._snaps.clear()
    model._llm.reset()
    out = model.generate(
        prompt("cloud", 400), max_tokens=6, temperature=0.0, seed=0, progress=lambda *a: seen.append(a)
    )
    total = out.prompt_tokens
    reads = [done for t, done, _, gen in seen if gen == 0]
    assert seen[0][:2] == (total, 0) and reads == sorted(reads) and len(reads) >= 3  # chunked, in order
    writes = [gen for *_, gen in seen if gen > 0]
    assert writes and writes == sorted(writes) and writes[-1] <= out.completion_tokens + 1
