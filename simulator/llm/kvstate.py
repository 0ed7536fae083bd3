"""Snapshots of llama.cpp's KV cache, so that each kind of prompt re-reads only what is new since its last call.

llama.cpp keeps one sequence: it reuses the cache only for the prefix the new prompt shares with the previous
one. A session alternates prompts that start differently (members and the tracker see the case card, the
supporter only the intake, the judge its own rubric), so without help every role change re-reads a prompt of
thousands of tokens on two cores. After each call we keep a copy of the KV state (llama.cpp's own state
serialisation; tens of MB); before a call we restore the copy that shares the longest prefix with the new
prompt when it beats what is already in the cache.

llama-cpp-python's LlamaRAMCache does the same but copies its whole logits buffer (n_batch x vocabulary floats,
~300 MB for Qwen2.5) into every entry; we copy only llama.cpp's state.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """Length of the common prefix of two token arrays."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else n


@dataclass
class _Snapshot:
    tokens: np.ndarray
    data: Any  # ctypes uint8 array holding llama.cpp's serialised state
    size: int


class PrefixStates:
    """The last `capacity` KV states, most recently used last. Not thread-safe: the model's lock guards it."""

    def __init__(self, capacity: int = 6, min_gain: int = 64):
        self.capacity = capacity
        self.min_gain = min_gain  # restoring costs a copy of the state: only worth it for a real gain
        self._snaps: OrderedDict[int, _Snapshot] = OrderedDict()
        self._next = 0
        self.restored = 0  # how many calls started from a snapshot (reported in the stats)

    @property
    def nbytes(self) -> int:
        return sum(s.size for s in self._snaps.values())

    def prepare(self, llm: Any, tokens: list[int]) -> int:
        """Put the best available prefix into `llm`'s cache for `tokens`; return how many tokens it covers."""
        target = np.asarray(tokens, dtype=np.intc)
        in_cache = common_prefix(llm.input_ids[: llm.n_tokens], target)
        best_key, best = None, in_cache
        for key, snap in self._snaps.items():
            shared = common_prefix(snap.tokens, target)
            if shared > best + (self.min_gain if best_key is None else 0):
                best_key, best = key, shared
        if best_key is None:
            return in_cache
        snap = self._snaps[best_key]
        self._snaps.move_to_end(best_key)
        self._restore(llm, snap)
        self.restored += 1
        return best

    def save(self, llm: Any) -> None:
        """Keep the state of what `llm` just evaluated; drop snapshots it extends, then the oldest."""
        import llama_cpp

        n = llm.n_tokens
        if n == 0 or self.capacity == 0:
            return
        tokens = np.array(llm.input_ids[:n], dtype=np.intc)
        for key in [k for k, s in self._snaps.items() if common_prefix(s.tokens, tokens) == len(s.tokens)]:
            del self._snaps[key]  # the new state covers everything this one held
        ctx = llm._ctx.ctx
        size = int(llama_cpp.llama_state_get_size(ctx))
        data = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_get_data(ctx, data, size))
        self._snaps[self._next] = _Snapshot(tokens=tokens, data=data, size=written)
        self._next += 1
        while len(self._snaps) > self.capacity:
            self._snaps.popitem(last=False)

    @staticmethod
    def _restore(llm: Any, snap: _Snapshot) -> None:
        import llama_cpp

        if int(llama_cpp.llama_state_set_data(llm._ctx.ctx, snap.data, snap.size)) != snap.size:
            raise RuntimeError("llama.cpp refused a saved KV state")
        n = len(snap.tokens)
        llm.input_ids[:n] = snap.tokens
        llm.n_tokens = n
        llm._requires_eval = True  # as Llama.load_state does: the next call evaluates at least one token
