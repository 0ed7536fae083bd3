"""The suite runs anywhere, and CI still runs everything: embedded tests skip without llama-cpp-python, with a
reason, except where RESCUE_SIM_REQUIRE_EMBEDDED=1 (set by .ci/run), where a skip is a failure."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BLOCKER = """
import importlib.util
_real = importlib.util.find_spec
def _find_spec(name, *args, **kwargs):
    if name == "llama_cpp" or name.startswith("llama_cpp."):
        return None
    return _real(name, *args, **kwargs)
importlib.util.find_spec = _find_spec
"""


def run_embedded_tests(tmp_path: Path, require: bool) -> subprocess.CompletedProcess:
    (tmp_path / "no_llama_plugin.py").write_text(BLOCKER)
    env = {k: v for k, v in os.environ.items() if k != "RESCUE_SIM_REQUIRE_EMBEDDED"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if require:
        env["RESCUE_SIM_REQUIRE_EMBEDDED"] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no_llama_plugin",
            "-p",
            "no:cacheprovider",
            "-rs",
            "-q",
            "tests/test_embedded_e2e.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_llama_cpp_embedded_tests_skip_with_a_reason(tmp_path):
    res = run_embedded_tests(tmp_path, require=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"\b[1-9]\d* skipped", res.stdout) and "passed" not in res.stdout
    assert "llama-cpp-python is not installed" in res.stdout


def test_in_ci_a_skipped_embedded_test_fails_the_run(tmp_path):
    res = run_embedded_tests(tmp_path, require=True)
    assert res.returncode == 1, res.stdout + res.stderr
    assert re.search(r"\b[1-9]\d* (failed|errors?)\b", res.stdout) and "passed" not in res.stdout
    assert "RESCUE_SIM_REQUIRE_EMBEDDED=1" in res.stdout


def test_ci_script_requires_embedded_tests_and_runs_the_readme_command():
    script = (ROOT / ".ci" / "run").read_text()
    assert "export RESCUE_SIM_REQUIRE_EMBEDDED=1" in script
    assert "<!-- test-command -->" in script and 'bash -euo pipefail -c "$cmd"' in script


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="only meaningful inside CI's own run")
def test_ci_sets_the_requirement():
    assert os.environ.get("RESCUE_SIM_REQUIRE_EMBEDDED") == "1"


def test_ci_lints_and_prints_its_wall_time():
    script = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert ".venv/bin/ruff check ." in script and ".venv/bin/ruff format --check ." in script
    assert "ci wall time:" in script
