"""Integration: the Label Studio export in a real Label Studio (the `label-studio` PyPI package, started on
loopback with a temporary data dir and a user and token made non-interactively).

A project is created with the shipped labelling config (Label Studio validates it), the exported tasks are
imported through the API and must load under that config (Label Studio checks every task's data against the
config's `$variables`; a task missing one is refused, which the test also shows). Then each task is annotated
through the API, the project is exported as Label Studio's JSON and that export goes through
`rescue-sim ratings import`.

Label Studio pins many packages, so it lives in its own virtual environment: `.ci/run` creates it and sets
RESCUE_SIM_LABEL_STUDIO to its `label-studio` executable. Without it the test skips with that reason; in CI
(CI=true) a skip is a failure.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges.ratings import export_items, read_ratings
from simulator.cli import app as cli_app
from tests._rating_fixtures import SessionSpec, make_judged_run

ENV = "RESCUE_SIM_LABEL_STUDIO"
START_TIMEOUT_S = 300  # first start runs Django migrations: ~90 s on 2 busy cores


def label_studio_or_skip() -> Path:
    exe = os.environ.get(ENV)
    why = None
    if not exe:
        why = (
            f"{ENV} is not set (point it at a label-studio executable; .ci/run installs one in ~/.cache/rescue-sim-ci)"
        )
    elif not Path(exe).is_file():
        why = f"{ENV}={exe}: no such file"
    if why is None:
        return Path(exe)
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but the Label Studio test cannot run: {why}", pytrace=False)
    pytest.skip(why)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabelStudio:
    def __init__(self, exe: Path, data_dir: Path):
        self.port = free_port()
        self.token = secrets.token_hex(20)
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = data_dir.parent / "label-studio.log"
        env = {
            **os.environ,
            "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
        }
        self.proc = subprocess.Popen(
            [
                str(exe),
                "start",
                "--no-browser",
                "--data-dir",
                str(data_dir),
                "--internal-host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--username",
                "rater@example.org",
                "--password",
                secrets.token_hex(12),
                "--user-token",
                self.token,
                "--enable-legacy-api-token",
            ],
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"label-studio exited with {self.proc.returncode}; see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.base}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"label-studio did not answer on {self.base} in {START_TIMEOUT_S} s; see {self.log}")
            time.sleep(1)

    def call(self, method: str, path: str, body: object = None) -> tuple[int, object]:
        req = urllib.request.Request(
            self.base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the server and the workers it started, nothing else
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)


@pytest.fixture(scope="module")
def label_studio(tmp_path_factory):
    exe = label_studio_or_skip()
    root = tmp_path_factory.mktemp("label-studio")
    server = LabelStudio(exe, root / "data")
    yield server
    server.stop()


def score(judge: str, sid: str, item: str, dim: str) -> int:
    return 2 + (len(sid) + len(dim) + len(item) + (judge == "judge/beta-2")) % 4


def test_exported_tasks_load_under_the_shipped_config(label_studio, tmp_path: Path) -> None:
    specs = [SessionSpec(f"c{c}__s{s}", case_id=f"c{c}", seed=s) for c in range(2) for s in range(2)]
    run = make_judged_run(tmp_path / "run", "openai/gpt-4o-mini", specs, score).path
    out = tmp_path / "tasks.json"
    result = export_items([run], select=["random"], n=6, out=out, fmt="label-studio", unit="intervention")
    config = (tmp_path / "tasks.config.xml").read_text()
    tasks = json.loads(out.read_text())
    assert len(tasks) == 6

    status, project = label_studio.call(
        "POST", "/api/projects", {"title": "rescue-sim ratings", "label_config": config}
    )
    assert status == 201, project
    pid = project["id"]
    status, imported = label_studio.call("POST", f"/api/projects/{pid}/import", tasks)
    assert status == 201, imported
    assert imported["task_count"] == 6
    status, listed = label_studio.call("GET", f"/api/tasks?project={pid}&page_size=100")
    assert status == 200
    loaded = listed["tasks"]
    assert sorted(t["data"]["item_id"] for t in loaded) == sorted(p.unit.item_id for p in result.selection.picks)
    assert all(t["data"]["dialogue"] and t["data"]["focus"].startswith("Rate turn") for t in loaded)

    # the config is enforced: a task without the dialogue its config shows is refused
    status, refused = label_studio.call(
        "POST", f"/api/projects/{pid}/import", [{"data": {"item_id": "x", "case": "c"}}]
    )
    assert status == 400 and "dialogue" in str(refused)

    # annotate every task through the API, with the choice aliases the config defines (the bare score)
    dims = ["strategy_fit", "target_fit", "timing", "relation_sensitivity"]
    for n, task in enumerate(loaded):
        res = [
            {"from_name": d, "to_name": "dialogue", "type": "choices", "value": {"choices": [str(1 + (n + k) % 5)]}}
            for k, d in enumerate(dims)
        ]
        status, ann = label_studio.call("POST", f"/api/tasks/{task['id']}/annotations", {"result": res})
        assert status == 201, ann
    status, exported = label_studio.call("GET", f"/api/projects/{pid}/export?exportType=JSON")
    assert status == 200 and len(exported) == 6
    export_file = tmp_path / "label-studio-export.json"
    export_file.write_text(json.dumps(exported, indent=1))

    cli_app._register()
    r = CliRunner().invoke(
        cli_app.app, ["ratings", "import", str(export_file), "--run", str(run)], env={"COLUMNS": "200"}
    )
    assert r.exit_code == 0, r.output
    assert "imported 24 rating(s) (label-studio) from 1 rater(s)" in r.stdout
    stored = read_ratings(run).ratings
    assert len(stored) == 24 and {s.dimension for s in stored} == set(dims)
    by_item = {t["data"]["item_id"]: n for n, t in enumerate(loaded)}
    assert all(s.value == 1 + (by_item[s.item_id] + dims.index(s.dimension)) % 5 for s in stored)


def test_ci_installs_chromium_and_label_studio_and_requires_their_tests() -> None:
    script = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert "apt-get install -y -qq chromium" in script
    assert 'pip" install -q "label-studio==' in script
    assert 'export RESCUE_SIM_LABEL_STUDIO="$ls_venv/bin/label-studio"' in script
    assert script.index('ls_venv="') < script.index('"$ls_venv/bin/pip" install')  # a pinned, cached venv
    assert 'export CI="${CI:-true}"' in script  # with CI=true a skipped browser or Label Studio test fails
    assert script.index("RESCUE_SIM_LABEL_STUDIO") < script.index('bash -euo pipefail -c "$cmd"')
