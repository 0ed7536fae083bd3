"""Probe a llama-cpp-python build in a child process before this process loads it.

A llama.cpp built with `-march=native` on one CPU can execute instructions another CPU (or the same one,
as with AMX tiles on some Xeons) faults on: the process dies with SIGILL at the first model call, taking
the CLI down with no message. So before the first in-process load of a build we load the model and run a tiny
completion in a child; if the child dies, the user gets one line naming the cause and the reinstall command.
The verdict is cached per build, keyed by the sha256 of the library files, so each build is probed once.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import signal
import subprocess
import sys
from pathlib import Path

from personas.common.errors import UserError
from personas.common.files import atomic_write_text

PORTABLE_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
)
REINSTALL_HINT = (
    f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" pip install --force-reinstall --no-cache-dir --no-deps llama-cpp-python'
)
PROBE_TIMEOUT_S = 300
VERDICT_VERSION = 1

# The child loads the model with the same threads as the parent and evaluates a prompt long enough to take the
# batched matrix-multiply path (where AMX / AVX-512 kernels run), then generates two tokens.
_CHILD = """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=512, n_threads=int(sys.argv[2]), n_threads_batch=int(sys.argv[2]),
            n_batch=512, verbose=False)
prompt = " ".join(["The family sat in the counsellor's room and talked about the week."] * 6)
llm.create_completion(prompt, max_tokens=2, temperature=0.0)
print("ok")
"""


class NativeBuildError(UserError):
    """The installed llama-cpp-python crashes on this machine."""


def library_files() -> list[Path]:
    """The native libraries of the installed llama-cpp-python (found without importing it)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(list(spec.submodule_search_locations)[0])
    return sorted(
        p for p in root.rglob("*") if p.is_file() and (p.suffix in (".so", ".dylib", ".dll") or ".so." in p.name)
    )


def build_digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode())
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"{name} (exit {128 - returncode})"
    return f"exit {returncode}"


def probe_build(
    model_path: Path,
    n_threads: int,
    verdict_dir: Path,
    *,
    command: list[str] | None = None,
    files: list[Path] | None = None,
) -> None:
    """Raise NativeBuildError if the installed build cannot run the model here; cache the verdict.

    `command` replaces the child's command line (tests use it to stand in a crashing build).
    """
    files = library_files() if files is None else files
    if not files:
        return  # not installed: loading reports that in its own words
    digest = build_digest(files)
    verdict_path = verdict_dir / f"llama-cpp-{digest[:16]}.json"
    try:
        verdict = json.loads(verdict_path.read_text())
    except (OSError, ValueError):
        verdict = None
    if not (
        isinstance(verdict, dict) and verdict.get("version") == VERDICT_VERSION and verdict.get("digest") == digest
    ):
        verdict = _run_child(model_path, n_threads, command)
        verdict.update(version=VERDICT_VERSION, digest=digest, library=str(files[0].parent))
        atomic_write_text(verdict_path, json.dumps(verdict, indent=2))
    if not verdict["ok"]:
        raise NativeBuildError(
            f"embedded model: llama-cpp-python ({verdict['library']}) crashed in a test load with "
            f"{verdict['cause']}; this build uses CPU instructions this machine cannot run — reinstall it "
            f"portably: {REINSTALL_HINT}"
        )


def _run_child(model_path: Path, n_threads: int, command: list[str] | None) -> dict:
    cmd = command or [sys.executable, "-c", _CHILD, str(model_path), str(n_threads)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"ok": False, "cause": f"no answer within {PROBE_TIMEOUT_S}s"}
    if proc.returncode == 0:
        return {"ok": True, "cause": ""}
    tail = " ".join((proc.stderr or "").strip().splitlines()[-1:])[:200]
    cause = describe_exit(proc.returncode) + (f": {tail}" if tail and proc.returncode > 0 else "")
    return {"ok": False, "cause": cause}
