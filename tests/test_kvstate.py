"""Prefix-state bookkeeping of the embedded model, on a stand-in for llama.cpp (the real one: test_embedded_prefix)."""

from __future__ import annotations

import ctypes
import sys
import types

import numpy as np
import pytest

from simulator.llm.kvstate import PrefixStates, common_prefix


class FakeLlama:
    """What PrefixStates touches: input_ids, n_tokens, eval(), and a context whose 'state' is its token list."""

    def __init__(self, n_ctx: int = 4096):
        self.input_ids = np.zeros(n_ctx, dtype=np.intc)
        self.n_tokens = 0
        self._requires_eval = False
        self._ctx = types.SimpleNamespace(ctx=self)
        self.kv: list[int] = []  # what the "KV cache" holds
        self.evals: list[int] = []

    def eval(self, tokens):
        self.kv = self.kv[: self.n_tokens] + list(tokens)
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)
        self.evals.append(len(tokens))


@pytest.fixture
def fake_llama_cpp(monkeypatch):
    """llama_state_* over FakeLlama: the serialised state is the KV token list as int32 bytes."""
    mod = types.ModuleType("llama_cpp")

    def get_size(llm):
        return 4 * len(llm.kv)

    def get_data(llm, buf, size):
        data = np.array(llm.kv, dtype=np.int32).tobytes()
        ctypes.memmove(buf, data, len(data))
        return len(data)

    def set_data(llm, buf, size):
        llm.kv = list(np.frombuffer(bytes(buf)[:size], dtype=np.int32))
        return size

    mod.llama_state_get_size, mod.llama_state_get_data, mod.llama_state_set_data = get_size, get_data, set_data
    monkeypatch.setitem(sys.modules, "llama_cpp", mod)
    return mod


def run(llm: FakeLlama, states: PrefixStates, tokens: list[int]) -> int:
    """One call as EmbeddedModel.generate makes it: prepare, read the rest, 'generate' two tokens, save."""
    cached = states.prepare(llm, tokens)
    llm.n_tokens = cached
    llm.eval(tokens[cached:] + [7, 7])
    states.save(llm)
    return cached


def test_common_prefix():
    a = np.array([1, 2, 3, 4], dtype=np.intc)
    assert common_prefix(a, np.array([1, 2, 9], dtype=np.intc)) == 2
    assert common_prefix(a, a[:2]) == 2 and common_prefix(a[:0], a) == 0


def test_each_kind_of_prompt_gets_its_own_prefix_back(fake_llama_cpp):
    llm, states = FakeLlama(), PrefixStates(capacity=4, min_gain=3)
    system = [1] * 5
    member = system + list(range(100, 180))
    supporter = system + list(range(500, 560))
    assert run(llm, states, member) == 0
    assert run(llm, states, supporter) == 5  # only the system text is shared with the live cache
    assert states.restored == 0
    longer_member = member + [181, 182]
    assert run(llm, states, longer_member) == len(member)  # restored from the member snapshot
    assert states.restored == 1 and llm.kv[: len(longer_member)] == longer_member
    assert run(llm, states, supporter + [561]) == len(supporter)
    assert states.restored == 2


def test_small_gains_are_not_worth_a_restore(fake_llama_cpp):
    llm, states = FakeLlama(), PrefixStates(capacity=4, min_gain=64)
    run(llm, states, [1, 2, 3, 4, 5, 6])
    run(llm, states, [1, 9, 9])
    assert run(llm, states, [1, 2, 3, 4, 5, 6, 8]) == 1  # the snapshot would add 5 tokens: below min_gain
    assert states.restored == 0


def test_snapshots_a_newer_state_covers_are_dropped_and_capacity_holds(fake_llama_cpp):
    llm, states = FakeLlama(), PrefixStates(capacity=2, min_gain=1)
    run(llm, states, [1, 2, 3])
    run(llm, states, [1, 2, 3, 7, 7, 4])  # extends the first state (prompt + its 2 generated tokens)
    assert len(states._snaps) == 1
    run(llm, states, [5, 5, 5])
    run(llm, states, [6, 6, 6])
    assert len(states._snaps) == 2 and states.nbytes > 0
    assert [list(s.tokens[:1]) for s in states._snaps.values()] == [[5], [6]]  # oldest dropped first


def test_prompt_is_read_in_chunks_with_progress(monkeypatch):
    from simulator.llm import embedded

    model = object.__new__(embedded.EmbeddedModel)
    model._llm = FakeLlama()
    seen = []
    monkeypatch.setattr(embedded, "PROMPT_CHUNK", 100)
    tokens = list(range(1, 351))
    model._read_prompt(tokens, 50, lambda *a: seen.append(a))
    assert model._llm.evals == [100, 100, 99]  # everything but the last token, after the cached 50
    assert seen == [(350, 50, 50, 0), (350, 150, 50, 0), (350, 250, 50, 0), (350, 349, 50, 0)]
    model._llm = FakeLlama()
    model._read_prompt(tokens, 349, None)
    assert model._llm.evals == []  # nothing left to read: the completion call evaluates the last token
