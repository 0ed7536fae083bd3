"""Token sampling and multi-sequence decoding for the embedded model, on llama.cpp's low-level API.

`TokenSampler` is one sequence's sampling state. It samples from the unconstrained chain first and asks the
grammar about that one token only; when the grammar rejects it, all candidates are masked and the chain runs
again (llama.cpp's own `common_sampler` order). llama-cpp-python masks the whole 151k vocabulary with the
grammar at every step, which cost about a fifth of the generation time here. Greedy output is the same either
way: the unconstrained argmax, when the grammar allows it, is the constrained argmax.

`decode_together` generates several replies in one llama.cpp batch: a step that carries four sequences costs
less than four single steps (258 against 4 x 92 ms for 2,000-token judge prompts on two cores), though reading
the prompts, which batching does not speed up, stays most of the work. Each prompt reads only what it
does not share with an earlier one in the batch (that part of the KV cache is copied over): a judge's three
intervention calls share the transcript and the rubric, and its session call shares the transcript.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.llm.jsondraft import JsonDraft
from simulator.llm.kvstate import common_prefix

Progress = Callable[[int, int, int, int], None]  # (prompt tokens, read, cached, generated)
NO_REPEAT_TOKENS = 4  # a reply told to avoid a text copies no run of this many of its tokens (about three words)


def banned_continuations(texts: Sequence[Sequence[int]], n: int = NO_REPEAT_TOKENS) -> dict[tuple[int, ...], set[int]]:
    """For every run of n-1 tokens in the texts, the tokens that would extend it into one of their n-grams."""
    banned: dict[tuple[int, ...], set[int]] = {}
    for toks in texts:
        for i in range(len(toks) - n + 1):
            banned.setdefault(tuple(toks[i : i + n - 1]), set()).add(toks[i + n - 1])
    return banned


def logits_at(ctx: Any, i: int, n_vocab: int) -> Any:
    """A view of the logits llama.cpp computed for output `i` of the last decode (-1: the last one)."""
    import llama_cpp as lc
    import numpy as np

    return np.ctypeslib.as_array(lc.llama_get_logits_ith(ctx, i), shape=(n_vocab,))


class TokenSampler:
    """Sampling state of one sequence: penalties and top-k/top-p/min-p/temperature (or greedy), a lazily
    consulted grammar, stop strings, the token runs it may not copy (`avoid`) and the bytes written so far."""

    def __init__(
        self,
        llm: Any,
        *,
        temperature: float,
        seed: int,
        grammar: Any = None,
        schema: dict[str, Any] | None = None,
        stop: Sequence[str] = (),
        avoid: Sequence[Sequence[int]] = (),
        max_tokens: int,
    ) -> None:
        import codecs

        import llama_cpp as lc
        import numpy as np

        self._lc, self._llm = lc, llm
        self.vocab, self.n_vocab = llm._model.vocab, llm.n_vocab()
        self.max_tokens = max_tokens
        self.stop = [s.encode("utf-8") for s in stop if s]
        self.out = bytearray()
        self.generated, self.finish_reason = 0, "length"
        self.ended = False
        self.drafted = 0  # tokens the schema forced, fed without sampling (see simulator.llm.jsondraft)
        self._banned = banned_continuations(avoid)
        self._written: list[int] = []
        self.draft = JsonDraft(schema) if schema is not None and grammar is not None else None
        self._quote, self._period = (
            (llm.tokenize(b'"', add_bos=False, special=False)[0], llm.tokenize(b".", add_bos=False, special=False)[0])
            if self.draft is not None
            else (-1, -1)
        )
        self._chars = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self.chain = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())

        def add(s):
            return lc.llama_sampler_chain_add(self.chain, s)

        add(lc.llama_sampler_init_penalties(self.n_vocab, llm.last_n_tokens_size, 1.1, 0.0, 0.0))
        if temperature <= 0.0:
            add(lc.llama_sampler_init_greedy())
        else:
            add(lc.llama_sampler_init_top_k(40))
            add(lc.llama_sampler_init_top_p(0.95, 1))
            add(lc.llama_sampler_init_min_p(0.05, 1))
            add(lc.llama_sampler_init_temp(temperature))
            add(lc.llama_sampler_init_dist(seed))
        self.grammar = None
        if grammar is not None:
            self.grammar = lc.llama_sampler_init_grammar(
                self.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
            )
        self._ids = np.arange(self.n_vocab, dtype=np.intc)
        self._data = np.recarray(
            (self.n_vocab,), dtype=np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
        )
        self._full = lc.llama_token_data_array(
            data=self._data.ctypes.data_as(lc.llama_token_data_p), size=self.n_vocab, selected=-1, sorted=False
        )
        self._one = (lc.llama_token_data * 1)()
        self._single = lc.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)

    @classmethod
    def for_reply(cls, llm: Any, r: Reply) -> TokenSampler:
        return cls(
            llm,
            temperature=r.temperature,
            seed=r.seed,
            grammar=r.grammar,
            schema=r.schema,
            stop=r.stop,
            avoid=r.avoid,
            max_tokens=r.max_tokens,
        )

    def _pick(self, logits: Any, masked: bool) -> int:
        lc, data, full = self._lc, self._data, self._full
        data.id[:] = self._ids
        data.logit[:] = logits
        data.p[:] = 0.0
        if self._banned and len(self._written) >= NO_REPEAT_TOKENS - 1:
            banned = self._banned.get(tuple(self._written[1 - NO_REPEAT_TOKENS :]))
            if banned:
                data.logit[list(banned)] = float("-inf")
        full.size, full.selected, full.sorted = self.n_vocab, -1, False
        if masked:
            lc.llama_sampler_apply(self.grammar, ctypes.byref(full))
        lc.llama_sampler_apply(self.chain, ctypes.byref(full))
        return int(data.id[full.selected])

    def _allowed(self, token: int) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, 0.0, 0.0
        self._single.size, self._single.selected, self._single.sorted = 1, -1, False
        self._lc.llama_sampler_apply(self.grammar, ctypes.byref(self._single))
        return self._one[0].logit != float("-inf")

    def next(self, logits: Any) -> list[int] | None:
        """The tokens to feed the model next (the sampled one, then any the schema forces after it), or None
        when this reply has ended (see `finish_reason`)."""
        lc = self._lc
        token = self._pick(logits, masked=False)
        if self.grammar is not None and not self._allowed(token):
            token = self._string_end(token)
            if token is None:
                token = self._pick(logits, masked=True)
        if lc.llama_vocab_is_eog(self.vocab, token):
            self.finish_reason = "stop"
            return None
        fed = [token]
        self._take(token)
        if self.draft is not None and not self.ended:
            fed += self._forced()
            if self.draft.done:  # the JSON value is complete: only optional whitespace may follow
                self.finish_reason, self.ended = "stop", True
        return None if self.ended else fed

    def _string_end(self, wanted: int) -> int | None:
        """The closing quote, when the model wanted a new word inside a JSON string and the grammar forbids it
        (a field's word cap is reached); a full stop where the field must end on one (its `finish` words are
        spent, or its last word ends mid-phrase, on a comma). Masked, it would pick the best token without the
        space instead and glue the next word onto the last ("neededhimself")."""
        if self.draft is None or not self.draft.in_string:
            return None
        if not self._llm.detokenize([wanted], special=False)[:1].isspace():
            return None
        return next((t for t in (self._quote, self._period) if self._allowed(t)), None)

    def _take(self, token: int) -> None:
        """Record one token of the reply; set `ended` when the reply ends with it (a stop string, max_tokens)."""
        lc = self._lc
        lc.llama_sampler_accept(self.chain, token)
        if self.grammar is not None:
            lc.llama_sampler_accept(self.grammar, token)
        self.generated += 1
        self._written.append(token)
        piece = self._llm.detokenize([token], special=False)
        self.out += piece
        if self.draft is not None:
            self.draft.feed(self._chars.decode(piece))
        cut = min((i for i in (self.out.find(s) for s in self.stop) if i >= 0), default=-1)
        if cut >= 0:
            del self.out[cut:]
            self.finish_reason, self.ended = "stop", True
        elif self.generated >= self.max_tokens:
            self.ended = True

    def _forced(self) -> list[int]:
        """Take the tokens of the text the schema forces now, each checked against the grammar first."""
        assert self.draft is not None
        text = self.draft.chain()
        if not text:
            return []
        taken = []
        for token in self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False):
            if not self._allowed(token):
                break  # the draft stops here; the model samples from this point
            self._take(token)
            taken.append(token)
            self.drafted += 1
            if self.ended or self.draft.done:
                break
        return taken

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", errors="ignore")

    def close(self) -> None:
        if self.chain is not None:
            self._lc.llama_sampler_free(self.chain)
            self.chain = None
        if self.grammar is not None:
            self._lc.llama_sampler_free(self.grammar)
            self.grammar = None


@dataclass
class Reply:
    """One request of a batch: its prompt tokens and sampling settings, and what came back."""

    tokens: list[int]
    max_tokens: int
    temperature: float
    seed: int
    grammar: Any = None
    schema: dict[str, Any] | None = None  # the grammar's JSON schema: text it forces is fed without sampling
    stop: Sequence[str] = ()
    avoid: Sequence[Sequence[int]] = ()  # token texts whose NO_REPEAT_TOKENS-grams the reply may not write
    progress: Progress | None = None
    text: str = ""
    generated: int = 0
    finish_reason: str = "length"
    drafted: int = 0  # generated tokens the schema forced
    shared_prefix: int = 0  # prompt tokens shared with an earlier sequence of the batch, not read again


def batch_context(llm: Any, n_seq: int, seq_ctx: int) -> Any:
    """A second llama.cpp context on the loaded weights, with room for `n_seq` sequences of `seq_ctx` tokens,
    each in its own KV stream, with the main context's threads.

    Not one unified cache: there every sequence's attention runs over all sequences' cells (masked), which on two
    cores made a step of four judge calls (2,000-token prompts) cost 353 ms against 258 ms with a stream each,
    and reading their prompts 33 against 37 tokens/s. A shared prefix is copied between streams instead."""
    from llama_cpp import _internals

    params = type(llm.context_params).from_buffer_copy(llm.context_params)
    params.n_seq_max = n_seq
    params.n_ctx = n_seq * seq_ctx
    params.kv_unified = False
    return _internals.LlamaContext(model=llm._model, params=params, verbose=False)


def decode_together(llm: Any, ctx: Any, replies: list[Reply], n_batch: int = 512) -> None:
    """Generate every reply in one batch per step (fills in text, generated, finish_reason, shared_prefix).

    Prompts are read in order: each one shares, in the KV cache, the longest prefix it has in common with an
    earlier prompt and reads only the rest (in batches of up to `n_batch` tokens); then each step feeds one
    token of every unfinished reply. The KV cache is cleared before and after. Give prompts sorted, so that
    those sharing the most are neighbours."""
    import llama_cpp as lc
    import numpy as np

    n_vocab = llm.n_vocab()
    mem = lc.llama_get_memory(ctx.ctx)
    lc.llama_memory_clear(mem, True)
    batch = lc.llama_batch_init(n_batch, 0, len(replies))
    samplers = [TokenSampler.for_reply(llm, r) for r in replies]
    logits: dict[int, Any] = {}

    def decode(entries: list[tuple[int, int, int, bool]]) -> None:
        """entries: (sequence, token, position, wants logits)."""
        for i, (s, tok, pos, want) in enumerate(entries):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = tok, pos, 1, want
            batch.seq_id[i][0] = s
        batch.n_tokens = len(entries)
        if lc.llama_decode(ctx.ctx, batch) != 0:
            raise RuntimeError("llama_decode failed on a batch of sequences (out of KV cache room?)")
        for i, (s, _, _, want) in enumerate(entries):
            if want:
                logits[s] = logits_at(ctx.ctx, i, n_vocab).copy()

    try:
        arrays = [np.asarray(r.tokens, dtype=np.intc) for r in replies]
        children: dict[int, list[tuple[int, int]]] = {s: [] for s in range(len(replies))}
        for s, r in enumerate(replies):
            if r.progress is not None:
                r.progress(len(r.tokens), 0, 0, 0)
            # the earliest sequence sharing the most (the last prompt token is read here: its logits start the reply)
            shares = [(min(common_prefix(arrays[s], arrays[e]), len(r.tokens) - 1), -e) for e in range(s)]
            prefix, source = max(shares, default=(0, 0))
            r.shared_prefix = prefix
            if prefix > 0:
                children[-source].append((prefix, s))

        def read(s: int, start: int, end: int) -> None:
            r = replies[s]
            for a in range(start, end, n_batch):
                b = min(end, a + n_batch)
                decode([(s, r.tokens[p], p, p == len(r.tokens) - 1) for p in range(a, b)])
                if r.progress is not None:
                    r.progress(len(r.tokens), b, r.shared_prefix, 0)

        # Copying a sequence to another KV stream copies all of it, when the next decode starts: so each sequence
        # is read up to where a later one branches off, copied, then read on.
        for s, r in enumerate(replies):
            done = r.shared_prefix
            for branch, child in sorted(children[s]):
                read(s, done, branch)
                done = branch
                lc.llama_memory_seq_cp(mem, s, child, -1, -1)
            read(s, done, len(r.tokens))
        pos = {s: len(r.tokens) for s, r in enumerate(replies)}
        active = list(range(len(replies)))
        while active:
            feed = []
            for s in active:
                toks = samplers[s].next(logits[s])
                r = replies[s]
                if r.progress is not None:
                    r.progress(len(r.tokens), len(r.tokens), r.shared_prefix, samplers[s].generated)
                for k, tok in enumerate(toks or ()):  # logits only after the last: forced tokens need none
                    feed.append((s, tok, pos[s], k == len(toks) - 1))
                    pos[s] += 1
            for start in range(0, len(feed), n_batch):
                decode(feed[start : start + n_batch])
            active = sorted({s for s, *_ in feed})
        for r, smp in zip(replies, samplers):
            r.text, r.generated, r.finish_reason, r.drafted = smp.text, smp.generated, smp.finish_reason, smp.drafted
    finally:
        for smp in samplers:
            smp.close()
        lc.llama_batch_free(batch)
        lc.llama_memory_clear(mem, True)
