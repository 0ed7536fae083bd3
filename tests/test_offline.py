"""Nothing is fetched at run time: the real commands run in a child process whose network is unreachable (every
lookup and connection beyond loopback fails and is logged, tests/_offline.py), with a fake OpenAI-compatible
server on loopback as the room. Issue 43: `inspect eval ... --model mockllm/model` failed offline because Inspect's
test model counts tokens with tiktoken's o200k_base, which tiktoken fetched from openaipublic.blob.core.windows.net.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.llm.tokenizers import ENCODINGS, SHIPPED, cache_key
from simulator.testing.fake_openai import FakeOpenAIServer
from tests._offline import offline_env, refused

BIN = Path(sys.executable).parent


def yes_no(body: dict) -> float | None:
    """The room's judge answers its yes/no items (asked with log-probabilities) at P(yes) 0.7; the rest as usual."""
    return 0.7 if body.get("logprobs") else None


def test_the_shipped_tokenizer_files_are_the_ones_tiktoken_pins():
    from tiktoken_ext import openai_public

    source = inspect.getsource(openai_public)
    for name, (url, sha256) in ENCODINGS.items():
        assert url in source and sha256 in source, name  # the URL and hash tiktoken itself uses
        data = (SHIPPED / cache_key(url)).read_bytes()
        assert hashlib.sha256(data).hexdigest() == sha256, name


def test_the_guard_refuses_what_tiktoken_would_fetch(tmp_path):
    """The guard works: with an empty cache folder, tiktoken tries openaipublic, fails, and the attempt is logged."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env, log = offline_env(tmp_path, TIKTOKEN_CACHE_DIR=str(empty))
    code = "import tiktoken; tiktoken.get_encoding('o200k_base')"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "network unreachable (test guard)" in out.stderr
    assert refused(log) == ["getaddrinfo openaipublic.blob.core.windows.net"] * len(refused(log)) != []


def test_every_shipped_encoding_loads_offline_where_rescue_sim_points_tiktoken(tmp_path):
    """After `use_shipped_tokenizers()`, and after litellm's import has had its say on TIKTOKEN_CACHE_DIR."""
    env, log = offline_env(tmp_path)
    code = (
        "from simulator.llm.tokenizers import ENCODINGS, use_shipped_tokenizers\n"
        "use_shipped_tokenizers()\n"
        "import litellm, tiktoken\n"
        "for name in ENCODINGS: assert tiktoken.get_encoding(name).encode('hello room')\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
    assert refused(log) == []


def test_inspect_eval_with_inspects_test_model_runs_offline(tmp_path):
    """Issue 43's command, as a user types it: Inspect's `mockllm/model` is the supporter (its every call counts
    tokens with tiktoken), the room a local OpenAI-compatible server. It completes, is judged and is scored."""
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    with FakeOpenAIServer(canonical=True, yes_no=yes_no) as server:
        env, log = offline_env(
            tmp_path, RESCUE_SIM_MODEL="openai/fake", OPENAI_API_BASE=server.url, OPENAI_API_KEY="test-key"
        )
        cmd = [
            str(BIN / "inspect"),
            "eval",
            "rescue_sim/rescue_session",
            "--model",
            "mockllm/model",
            "-T",
            "cases=dana-and-theo",
            "-T",
            "turns=2",
            "-T",
            f"out={tmp_path / 'runs'}",
            "--log-dir",
            str(tmp_path / "logs"),
            "--display",
            "none",
        ]
        out = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert refused(log) == []
    [path] = (tmp_path / "logs").glob("*.eval")
    result = read_eval_log(str(path))
    assert result.status == "success"
    [sample] = result.samples
    assert sample.error is None and sample.metadata["status"] == "completed"
    score = sample.scores["rescue_judges"]
    assert score.metadata["judgment"]["status"] == "ok"
    # mockllm's default reply is not a decision, so the supporter never speaks: the session-level dimensions
    # score, the per-intervention ones have nothing to score
    assert sample.metadata["invalid_decisions"] == sample.metadata["decisions"] > 0
    assert not math.isnan(score.value["balance"]) and not math.isnan(score.value["safety_handling"])


def test_rescue_sim_run_runs_offline_through_litellm(tmp_path):
    """`rescue-sim run` with a hosted-style model id on a local server: litellm is imported (it loads cl100k_base
    then), the session is played and judged with checklists, and nothing leaves the machine."""
    with FakeOpenAIServer(canonical=True, yes_no=yes_no) as server:
        env, log = offline_env(tmp_path, OPENAI_API_BASE=server.url, OPENAI_API_KEY="test-key")
        code = (
            "import sys\n"
            "from simulator.cli.app import main\n"
            "sys.argv = ['rescue-sim', 'run', '--case', 'dana-and-theo', '--turns', '2', '--model', 'openai/fake',\n"
            f"            '--no-live', '--out', {str(tmp_path / 'run')!r}]\n"
            "try:\n"
            "    main()\n"
            "finally:\n"
            "    print('litellm imported' if 'litellm' in sys.modules else 'litellm not imported', file=sys.stderr)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert refused(log) == []
    assert "litellm imported" in out.stderr
    assert "saved" in out.stdout and (tmp_path / "run" / "judgments").is_dir()
