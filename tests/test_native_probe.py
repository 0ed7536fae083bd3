"""A llama-cpp-python build that crashes is caught in a child process, once per build, and reported in one line."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from simulator.llm import embedded, native_probe
from simulator.llm.native_probe import NativeBuildError, probe_build

SIGILL_CHILD = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGILL)"]
OK_CHILD = [sys.executable, "-c", "print('ok')"]


@pytest.fixture
def fake_build(tmp_path):
    lib = tmp_path / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    so = lib / "libggml-cpu.so"
    so.write_bytes(b"\x7fELF fake build one")
    return [so]


def test_a_crashing_build_names_the_signal_and_the_reinstall_command(tmp_path, fake_build):
    with pytest.raises(NativeBuildError) as err:
        probe_build(tmp_path / "m.gguf", 2, tmp_path / "verdicts", command=SIGILL_CHILD, files=fake_build)
    message = str(err.value)
    assert "SIGILL (exit 132)" in message
    assert native_probe.REINSTALL_HINT in message and "-DGGML_NATIVE=OFF" in message
    assert "\n" not in message


def test_the_verdict_is_cached_per_build(tmp_path, fake_build):
    verdicts = tmp_path / "verdicts"
    with pytest.raises(NativeBuildError):
        probe_build(tmp_path / "m.gguf", 2, verdicts, command=SIGILL_CHILD, files=fake_build)
    # same build: the cached verdict answers, the (now healthy) child is not even asked
    with pytest.raises(NativeBuildError):
        probe_build(tmp_path / "m.gguf", 2, verdicts, command=OK_CHILD, files=fake_build)
    # a new build (reinstalled library) is probed again
    fake_build[0].write_bytes(b"\x7fELF rebuilt portably")
    probe_build(tmp_path / "m.gguf", 2, verdicts, command=OK_CHILD, files=fake_build)
    assert len(list(verdicts.glob("llama-cpp-*.json"))) == 2
    probe_build(tmp_path / "m.gguf", 2, verdicts, command=SIGILL_CHILD, files=fake_build)  # cached ok


def test_a_python_error_in_the_child_is_reported_with_its_last_line(tmp_path, fake_build):
    child = [sys.executable, "-c", "raise ImportError('libllama.so: cannot open shared object file')"]
    with pytest.raises(NativeBuildError, match=r"exit 1: ImportError: libllama.so: cannot open"):
        probe_build(tmp_path / "m.gguf", 2, tmp_path / "v", command=child, files=fake_build)


def test_no_build_installed_is_left_to_the_loader(tmp_path):
    probe_build(tmp_path / "m.gguf", 2, tmp_path / "v", command=SIGILL_CHILD, files=[])


def test_run_exits_2_with_one_line_before_any_session(tmp_path, monkeypatch, fake_build):
    """Through the real CLI and the real model client: the crash is found before anything is written."""
    from simulator.cli import app as cli_app

    gguf = tmp_path / "other.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(native_probe, "library_files", lambda: fake_build)
    monkeypatch.setattr(native_probe, "_CHILD", "import os, signal; os.kill(os.getpid(), signal.SIGILL)")
    monkeypatch.setattr(embedded, "_probed", set())
    cli_app._register()
    out = tmp_path / "run"
    env = {"RESCUE_SIM_GGUF": str(gguf), "RESCUE_SIM_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    res = CliRunner().invoke(
        cli_app.app,
        ["run", "--case", "dana-and-theo", "--supporter", "silent", "--turns", "1", "--no-judge", "--out", str(out)],
        env=env,
    )
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert "crashed in a test load with SIGILL (exit 132)" in res.output
    assert "pip install --force-reinstall" in res.output
    assert not (out / "sessions").exists()
