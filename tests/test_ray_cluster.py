"""`rescue-sim stress --executor ray` on a Ray cluster that already exists: a real two-node cluster on this
machine (`ray start --head` plus `ray start --address`, one CPU each, in their own process groups and temp folder,
started without the provider's variables), the CLI in a subprocess as a user runs it, the shipped fake
OpenAI-compatible server as the provider. Checked: the missing-variable preflight, `--ray-env` forwarding (its
value in no file of the run folder and not on the terminal), sessions on both nodes with the local executor's
transcripts, a node with other prompt data refused (and accepted with `--ray-ship-code`), and an actor killed
mid-run leaving failed sessions that a rerun completes.

Each node is stopped by killing the process group this test started, never with `ray stop` (which stops every
Ray process on the machine)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is the optional `ray` extra (pip install 'rescue-sim[ray]')")

from simulator.runfolder import RunFolder  # noqa: E402
from simulator.runner.ray_cluster import read_nodes  # noqa: E402
from simulator.testing.fake_openai import FakeOpenAIServer  # noqa: E402

pytestmark = [
    pytest.mark.ray_cluster,
    pytest.mark.skipif(shutil.which("ray", path=str(Path(sys.executable).parent)) is None, reason="no `ray` CLI"),
]

REPO = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).parent / "ray")
SECRET = f"sk-rescue-test-{uuid.uuid4().hex}"  # the API key's value: it must show up nowhere
MODEL = "openai/fake"
FORWARD = "OPENAI_API_KEY,OPENAI_API_BASE"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_env(pythonpath: Path = REPO) -> dict[str, str]:
    """A node's environment: no provider variables (a cluster started elsewhere), this checkout's code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAY_ADDRESS"))}
    env.update(PYTHONPATH=str(pythonpath), RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    return env


class Cluster:
    """Ray nodes started by this test, each `ray start --block` in a process group of its own."""

    def __init__(self, pythonpath: Path = REPO):
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp = tempfile.mkdtemp(prefix="rsray")  # short: Ray's socket paths must fit in 107 bytes
        self.env = _node_env(pythonpath)
        self.nodes: list[subprocess.Popen] = []

    def start(self, workers: int = 1) -> Cluster:
        head = ["--head", "--port", str(self.port), "--include-dashboard=false", "--temp-dir", self.temp]
        self._start(head)
        for _ in range(workers):
            self._start(["--address", self.address])
        return self

    def _start(self, args: list[str]) -> None:
        proc = subprocess.Popen(
            [RAY, "start", *args, "--num-cpus", "1", "--block", "--disable-usage-stats"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.nodes.append(proc)
        deadline = time.monotonic() + 120
        seen = []
        for line in proc.stdout:  # type: ignore[union-attr]
            seen.append(line)
            if "Ray runtime started" in line:
                break
            if time.monotonic() > deadline:
                break
        else:
            self.stop()
            pytest.fail("a Ray node did not start:\n" + "".join(seen[-20:]))
        subprocess.Popen(["cat"], stdin=proc.stdout, stdout=subprocess.DEVNULL)  # keep its pipe drained

    def node_processes(self, index: int) -> list:
        import psutil

        try:
            return psutil.Process(self.nodes[index].pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def stop(self) -> None:
        for proc in reversed(self.nodes):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in reversed(self.nodes):
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.temp, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(latency_s=0.05) as srv:
        yield srv


@pytest.fixture(scope="module")
def cluster():
    c = Cluster().start(workers=1)
    try:
        yield c
    finally:
        c.stop()


def _config(tmp_path: Path, seeds: str = "[0, 1]") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        f"name: raycluster\nsupporters: [{MODEL}]\ncases: [dana-and-theo, lena-and-omar]\nseeds: {seeds}\n"
        f"baseline: true\njudge: false\nmodel: {MODEL}\nturns: 2\ntracker_every: 2\n",
        encoding="utf-8",
    )
    return path


def stress(config: Path, out: Path, url: str, *args: str, background: bool = False):
    """The CLI as a user runs it, in a shell holding the provider's variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    env.update(
        OPENAI_API_KEY=SECRET,
        OPENAI_API_BASE=url,
        RAY_AUTH_MODE="disabled",
        RAY_USAGE_STATS_ENABLED="0",
        PYTHONPATH=str(REPO),
        COLUMNS="200",
    )
    cmd = [sys.executable, "-m", "simulator.cli.app", "stress", str(config), "--out", str(out), "--no-cache", *args]
    # not from the checkout: Ray puts the driver's working folder on its workers' sys.path, which would hide what
    # the nodes have installed
    cwd = config.parent
    if background:
        return subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=240)


def transcripts(out: Path) -> dict:
    folder = RunFolder(out)
    return {
        sid: (r.status, r.seed, [(t.speaker, t.text) for t in r.turns])
        for sid in folder.session_ids()
        for r in [folder.load_session(sid)]
    }


def assert_secret_nowhere(out: Path, *texts: str) -> None:
    for text in texts:
        assert SECRET not in text
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_missing_variable_stops_in_the_preflight_with_one_line(cluster, server, tmp_path):
    out = tmp_path / "run"
    res = stress(_config(tmp_path), out, server.url, "--executor", "ray", "--ray-address", cluster.address)
    assert res.returncode == 2, res.stdout + res.stderr
    errors = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
    line = errors[0]
    assert "role member" in line and MODEL in line and "OPENAI_API_KEY" in line
    assert f"--ray-env {FORWARD}" in line and "start the cluster" in line
    assert not RunFolder(out).session_ids()  # nothing was scheduled
    assert_secret_nowhere(out, res.stdout, res.stderr)


def test_ray_env_names_a_variable_this_shell_lacks(cluster, server, tmp_path):
    res = stress(_config(tmp_path), tmp_path / "run", server.url, "--executor", "ray", "--ray-env", "NOPE_NOT_SET_X")
    assert res.returncode == 2 and "NOPE_NOT_SET_X not set in this shell" in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_forwarded_sessions_spread_over_both_nodes_like_the_local_executor(cluster, server, tmp_path):
    config = _config(tmp_path)
    local = stress(config, tmp_path / "local", server.url)
    assert local.returncode == 0, local.stdout + local.stderr
    out = tmp_path / "ray"
    res = stress(
        config,
        out,
        server.url,
        "--executor",
        "ray",
        "--ray-address",
        cluster.address,
        "--ray-env",
        FORWARD,
        "--concurrency",
        "2",
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert (
        "forwarding OPENAI_API_KEY, OPENAI_API_BASE to the Ray workers" in res.stdout and "Traceback" not in res.stderr
    )
    nodes = read_nodes(out)
    assert sorted(nodes) == sorted(RunFolder(out).session_ids()) and len(nodes) == 4
    assert len(set(nodes.values())) == 2  # both nodes ran sessions
    ray_runs = transcripts(out)
    assert all(status.value == "completed" for status, _, _ in ray_runs.values())
    assert ray_runs == transcripts(tmp_path / "local")
    assert_secret_nowhere(out, res.stdout, res.stderr)
    manifest = json.loads((out / "manifest.json").read_text())
    assert "ray_env" not in manifest["config"]["stress"]  # where sessions ran is not what they are: same folder


def test_other_prompt_data_on_a_node_is_refused_unless_the_code_is_shipped(server, tmp_path):
    other = tmp_path / "other-install"
    for package in ("personas", "simulator", "judges"):
        shutil.copytree(REPO / package, other / package, ignore=shutil.ignore_patterns("__pycache__"))
    prompt = next((other / "simulator" / "prompts").glob("*.md"))
    prompt.write_text(prompt.read_text(encoding="utf-8") + "\nAn edit the driver does not have.\n", encoding="utf-8")
    c = Cluster(pythonpath=other).start(workers=0)
    try:
        config = _config(tmp_path, seeds="[0]")
        args = ("--executor", "ray", "--ray-address", c.address, "--ray-env", FORWARD)
        res = stress(config, tmp_path / "refused", server.url, *args)
        assert res.returncode == 2, res.stdout + res.stderr
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert "prompt/rubric data" in res.stderr and "--ray-ship-code" in res.stderr
        shipped = stress(config, tmp_path / "shipped", server.url, *args, "--ray-ship-code")
        assert shipped.returncode == 0, shipped.stdout + shipped.stderr
        assert "shipping this driver's rescue-sim" in shipped.stdout
        assert len(transcripts(tmp_path / "shipped")) == 2
        assert_secret_nowhere(tmp_path / "shipped", shipped.stdout, shipped.stderr)
    finally:
        c.stop()


def test_an_actor_killed_mid_run_fails_its_sessions_and_a_rerun_completes_them(cluster, tmp_path):
    config = _config(tmp_path, seeds="[0]")  # two sessions: one on each node
    out = tmp_path / "run"
    args = ("--executor", "ray", "--ray-address", cluster.address, "--ray-env", FORWARD, "--concurrency", "2")
    with FakeOpenAIServer(latency_s=0.5) as slow:  # sessions long enough to be caught in flight
        proc = stress(config, out, slow.url, *args, background=True)
        victim = None
        deadline = time.monotonic() + 120
        while victim is None and time.monotonic() < deadline and proc.poll() is None:
            victim = next(
                (p for p in cluster.node_processes(1) if "SessionWorker" in " ".join(_cmdline(p))),
                None,
            )
            time.sleep(0.2)
        assert victim is not None, "no session worker appeared on the second node"
        time.sleep(1.5)  # its session is in flight (about 7 calls of 0.5 s)
        victim.kill()
        stdout, stderr = proc.communicate(timeout=240)
        assert proc.returncode == 1, stdout + stderr  # failed sessions, not a dead run
        assert "Traceback" not in stderr + stdout, stderr
        failed = [r for r in RunFolder(out).results() if r.status.value == "failed"]
        assert failed and all("Ray worker lost" in (r.failure or "") for r in failed)
        assert len(RunFolder(out).results()) == 2  # every session has its line: the other one ran on
        rerun = stress(config, out, slow.url, *args)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    results = RunFolder(out).results()
    assert len(results) == 2 and all(r.status.value == "completed" for r in results)
    assert_secret_nowhere(out, stdout, stderr, rerun.stdout, rerun.stderr)


def _cmdline(proc) -> list[str]:
    try:
        return proc.cmdline()
    except Exception:  # noqa: BLE001 - gone, or not ours to read
        return []


# -- in this process, on the same cluster ------------------------------------------------------------------------


def _raises_on_the_worker(spec, client):
    """A supporter factory that fails on the worker for one case, as a bad configuration there would."""
    from personas.common.errors import UserError
    from simulator.runner.session import default_supporter_factory

    if spec.case.id == "arjun-and-meera":
        raise UserError("model 'openai/x': missing API key; set OPENAI_API_KEY")
    return default_supporter_factory(spec, client)


def test_an_exception_on_a_worker_is_that_sessions_failure_and_the_run_goes_on(cluster, server, tmp_path):
    import asyncio

    from simulator.runner.ray_cluster import RayOptions
    from simulator.runner.runs import run_specs
    from tests._runner_child import client as child_client
    from tests._runner_child import specs as child_specs

    specs = child_specs(2, turns=2)
    assert {s.case.id for s in specs} >= {"arjun-and-meera"}
    summary = asyncio.run(
        run_specs(
            specs,
            child_client(server.url, None),
            tmp_path / "run",
            concurrency=2,
            executor="ray",
            ray_options=RayOptions(address=cluster.address),
            supporter_factory=_raises_on_the_worker,
        )
    )
    assert not ray.is_initialized()  # rescue-sim connected, so rescue-sim disconnected
    assert len(summary.completed) == 1 and len(summary.failed) == 1
    failure = summary.failed[0].failure or ""
    assert summary.failed[0].case.id == "arjun-and-meera" and "UserError" in failure and "OPENAI_API_KEY" in failure
    assert sorted(read_nodes(tmp_path / "run")) == sorted(s.session_id for s in specs)


# -- the checks themselves, without a cluster ----------------------------------------------------------------------


def _report(**over):
    from simulator.runner.ray_cluster import package_data_digest, rescue_sim_version

    base = {
        "node": "f" * 56,
        "ip": "10.0.0.7",
        "version": rescue_sim_version(),
        "digest": package_data_digest(),
        "problems": [],
        "endpoints": {},
    }
    return {**base, **over}


def test_reports_from_the_nodes_decide_the_preflight(monkeypatch):
    from personas.common.errors import UserError
    from simulator.runner.ray_cluster import RayOptions, check_reports

    monkeypatch.setenv("OPENAI_API_BASE", "http://10.0.0.1:8000/v1")
    notes = check_reports([_report()], None, RayOptions())
    assert len(notes) == 1 and "10.0.0.7" in notes[0]
    with pytest.raises(UserError, match=r"rescue-sim 0\.0\.1 .* --ray-ship-code"):
        check_reports([_report(version="0.0.1")], None, RayOptions())
    check_reports([_report(version="0.0.1")], None, RayOptions(ship_code=True))  # the shipped code decides
    with pytest.raises(UserError, match="prompt/rubric data 0123"):
        check_reports([_report(digest="0123")], None, RayOptions(ship_code=True))
    missing = [("tracker", "openai/gpt-4o-mini", "model 'openai/gpt-4o-mini': missing API key; set OPENAI_API_KEY")]
    with pytest.raises(UserError) as err:
        check_reports([_report(problems=missing)], None, RayOptions())
    line = str(err.value)
    assert "role tracker, model openai/gpt-4o-mini: missing OPENAI_API_KEY" in line
    assert "--ray-env OPENAI_API_KEY,OPENAI_API_BASE" in line and "10.0.0.1" not in line

    class Driver:
        def endpoint(self, model):
            return "http://10.0.0.1:8000/v1"

    with pytest.raises(UserError) as err:
        check_reports([_report(endpoints={"openai/m": None})], Driver(), RayOptions(env=("OPENAI_API_KEY",)))
    assert "--ray-env OPENAI_API_KEY,OPENAI_API_BASE" in str(err.value) and "10.0.0.1" not in str(err.value)


def test_ray_env_names_are_checked_and_left_out_of_the_run_folders_name(tmp_path, monkeypatch):
    from personas.common.errors import UserError
    from simulator.runner.ray_cluster import forwarded_env, parse_env_names
    from simulator.runner.stress_config import StressConfigError, build_matrix, default_out_dir, load_stress_config

    assert parse_env_names("A_KEY, B_BASE,A_KEY") == ("A_KEY", "B_BASE")
    with pytest.raises(UserError, match="not a variable name"):
        parse_env_names("sk-123")
    monkeypatch.setenv("A_KEY", SECRET)
    monkeypatch.delenv("B_BASE", raising=False)
    with pytest.raises(UserError, match="B_BASE not set in this shell") as err:
        forwarded_env(["A_KEY", "B_BASE"])
    assert SECRET not in str(err.value)

    plain = _config(tmp_path)
    with_env = tmp_path / "e.yaml"
    with_env.write_text(plain.read_text() + "ray_env: [OPENAI_API_KEY, OPENAI_API_BASE]\n", encoding="utf-8")
    a, b = load_stress_config(plain), load_stress_config(with_env)
    assert b.ray_env == ["OPENAI_API_KEY", "OPENAI_API_BASE"]
    assert default_out_dir(a, build_matrix(a, tmp_path)) == default_out_dir(b, build_matrix(b, tmp_path))
    bad = tmp_path / "bad.yaml"
    bad.write_text(plain.read_text() + "ray_env: [sk-live-123]\n", encoding="utf-8")
    with pytest.raises(StressConfigError, match=r"bad\.yaml: ray_env: .*not a variable name"):
        load_stress_config(bad)
