"""`rescue-sim serve` in-process (Starlette's TestClient, the fake model): browsing reuses the report's data and
script, the token gate, paths confined to RUNS_DIR, the security headers, playing the counsellor (the record is what
was sent; the browser sees only the supporter's view), leaving a room, watching a session live (started here or
written by another process), blind rating saved in a form `ratings import` reads, and one-line refusals."""

from __future__ import annotations

import json
import os
import re
import socket
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from judges.report import build_report_data
from personas.library import resolve_case
from simulator.cli import app as cli_app
from simulator.cli.leaderboard_cmd import render as render_board
from simulator.llm.fake import FakeModelClient
from simulator.records import EndReason, SessionStatus
from simulator.runfolder import RunFolder
from simulator.serve import ServeError, build_app, check_bind
from tests._rating_fixtures import SessionSpec, make_judged_run, make_unfinished_run
from tests._sim_fakes import RoomScript
from tests._stress_fixtures import steady_yes

SUP = "openai/gpt-4o-mini"
EVIL = 'You never listen. <script>window.__xss = 1</script> <img src=x onerror="window.__xss = 2"> & done'
LOCAL = "http://127.0.0.1"


def score(judge: str, sid: str, item: str, dim: str) -> int:
    return 2 + (len(sid) + len(dim)) % 4


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    specs = [SessionSpec("c0__s0", case_id="c0", text={1: EVIL}), SessionSpec("c1__s0", case_id="c1")]
    make_judged_run(root / "run-a", SUP, specs, score)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "manifest.json").write_text("{}")
    return root


def fake_client() -> FakeModelClient:
    return FakeModelClient(default=RoomScript(resolve_case("dana-and-theo")), yes=steady_yes)


def client_for(runs_dir: Path, **kw) -> TestClient:
    return TestClient(build_app(runs_dir, client_factory=fake_client, warm=False, **kw), base_url=LOCAL)


def report_payload(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.DOTALL)
    assert m is not None
    return json.loads(m.group(1))


def test_index_and_run_page_reuse_the_report(runs_dir: Path) -> None:
    with client_for(runs_dir) as c:
        index = c.get("/")
        assert index.status_code == 200 and 'href="/run?name=run-a"' in index.text and SUP in index.text
        assert "default-src 'none'" in index.headers["content-security-policy"]
        page = c.get("/run", params={"name": "run-a"})
        assert page.status_code == 200
        data = report_payload(page.text)
        assert data["details"] == [] and data["detail_url"] == "/api/session?name=run-a&id="
        assert [s["id"] for s in data["sessions"]] == ["c0__s0", "c1__s0"] and data["runs"] == ["run-a"]
        assert {s["run"] for s in data["sessions"]} == {"run-a"}  # no server path in the page
        assert "connect-src 'self'" in page.text and "connect-src 'self'" in page.headers["content-security-policy"]
        assert "script-src 'sha256-" in page.headers["content-security-policy"]
        assert "<img" not in page.text.split("report-data")[1]  # the transcript's markup never reaches the page
        detail = c.get("/api/session", params={"name": "run-a", "id": "c0__s0"})
        assert detail.status_code == 200 and detail.json()["turns"][0]["text"] == EVIL
        assert detail.json()["judgment"]["scores"]
        missing = c.get("/api/session", params={"name": "run-a", "id": "nope"})
        assert missing.status_code == 404 and "no session 'nope'" in missing.text


def index_status(html: str, run: str) -> str:
    row = next(r for r in html.split("<tr>") if f">{run}</a>" in r)
    m = re.search(r'<span class="tag (\w+)">([^<]*)</span>', row)
    assert m is not None, row
    return f"{m.group(1)}: {m.group(2)}"


def test_a_session_being_played_shows_running_and_the_index_says_each_run_s_status(runs_dir: Path) -> None:
    folder = make_unfinished_run(runs_dir / "run-b")
    lock = folder.lock()  # as `run`, `play` and the page's sessions hold it while they write
    try:
        with client_for(runs_dir) as c:
            index = c.get("/").text
            assert index_status(index, "run-a") == "completed: completed"
            assert index_status(index, "run-b") == "running: running · 0 of 1 finished"
            data = report_payload(c.get("/run", params={"name": "run-b"}).text)
            assert [s["status"] for s in data["sessions"]] == ["running"]
            lock.release()
            index = c.get("/").text
            assert index_status(index, "run-b") == "incomplete: 1 stopped unfinished (rerun to resume)"
            data = report_payload(c.get("/run", params={"name": "run-b"}).text)
            assert [s["status"] for s in data["sessions"]] == ["incomplete"]  # the writer is gone: stopped
    finally:
        lock.release()


def test_a_supporter_with_no_scored_session_is_not_ranked(runs_dir: Path) -> None:
    make_unfinished_run(runs_dir / "run-b")
    board = build_report_data([runs_dir / "run-a", runs_dir / "run-b"]).leaderboard
    assert [(r.supporter, r.scored, r.rank) for r in board.rows] == [(SUP, 2, 1), ("other/unscored", 0, None)]
    text = "\n".join(
        line for table in render_board(board, width=200) for line in _plain(table).splitlines() if "#" in line
    )
    assert f"#1 {SUP}" in text and "(not ranked) other/unscored" in text and "#2" not in text


def _plain(renderable) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def test_report_data_is_rebuilt_when_the_run_changes(runs_dir: Path) -> None:
    with client_for(runs_dir) as c:
        assert len(report_payload(c.get("/run?name=run-a").text)["sessions"]) == 2
        time.sleep(0.01)
        make_judged_run(runs_dir / "run-a", SUP, [SessionSpec("c2__s0", case_id="c2")], score)
        assert len(report_payload(c.get("/run?name=run-a").text)["sessions"]) == 3


def test_a_restart_reads_the_run_s_index_until_a_file_changes(runs_dir: Path, monkeypatch) -> None:
    """The page data kept in `<run>/.serve-index.json` serves a restarted server's first page without a build; a
    rewritten judgment, a new session or a damaged index is rebuilt from the files, never trusted."""
    import simulator.serve._runs as served
    from simulator.serve import RunsRoot

    first = RunsRoot(runs_dir).report_data("run-a")
    index = runs_dir / "run-a" / served.INDEX_NAME
    assert index.is_file()
    built: list[Path] = []
    real_build = served.build_index_data

    def counting_build(run):
        built.append(Path(run))
        return real_build(run)

    monkeypatch.setattr(served, "build_index_data", counting_build)
    again = RunsRoot(runs_dir).report_data("run-a")  # a restart
    assert again == first and built == []
    judgment = runs_dir / "run-a" / "judgments" / "c1__s0.json"
    text = judgment.read_text()
    assert '"status": "ok"' in text
    judgment.write_text(text.replace('"status": "ok"', '"status": "ok" '))  # same judgment, another size
    RunsRoot(runs_dir).report_data("run-a")
    assert len(built) == 1
    make_judged_run(runs_dir / "run-a", SUP, [SessionSpec("c2__s0", case_id="c2")], score)
    assert len(RunsRoot(runs_dir).report_data("run-a").sessions) == 3 and len(built) == 2
    assert len(RunsRoot(runs_dir).report_data("run-a").sessions) == 3 and len(built) == 2  # kept again
    index.write_bytes(index.read_bytes()[:-40])  # a damaged index with the right key
    assert len(RunsRoot(runs_dir).report_data("run-a").sessions) == 3 and len(built) == 3


@pytest.mark.parametrize(
    "name", ["../../etc/passwd", "../outside", "/etc", "run-a/../../outside", "%2e%2e/outside", "", "run-a/sessions"]
)
def test_paths_cannot_leave_runs_dir(runs_dir: Path, name: str) -> None:
    with client_for(runs_dir) as c:
        for url in ("/run", "/api/session"):
            r = c.get(url, params={"name": name, "id": "c0__s0"})
            assert r.status_code == 404 and "not a run folder inside RUNS_DIR" in r.text
            assert len(r.text.splitlines()) == 1
        assert c.get("/assets/../_app.py").status_code == 404


def test_symlink_out_of_runs_dir_is_refused(runs_dir: Path, tmp_path: Path) -> None:
    (runs_dir / "sneaky").symlink_to(tmp_path / "outside")
    with client_for(runs_dir) as c:
        assert c.get("/run?name=sneaky").status_code == 404
        assert "sneaky" not in c.get("/").text


def test_token_is_checked_on_every_request(runs_dir: Path) -> None:
    with TestClient(
        build_app(runs_dir, client_factory=fake_client, token="s3cret", loopback_only=False, warm=False),
        base_url="http://10.0.0.5:8000",
    ) as c:
        for url in ("/", "/run?name=run-a", "/api/session?name=run-a&id=c0__s0", "/play", "/api/cases"):
            r = c.get(url)
            assert r.status_code == 401 and "token" in r.text, url
        assert c.post("/api/play", json={"case": "dana-and-theo", "name": "x"}).status_code == 401
        assert c.get("/", headers={"x-rescue-sim-token": "wrong"}).status_code == 401
        assert c.get("/", headers={"x-rescue-sim-token": "s3cret"}).status_code == 200
        first = c.get("/run?name=run-a&token=s3cret", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/run?name=run-a"  # token leaves the URL
        assert (
            "httponly" in first.headers["set-cookie"].lower()
            and "samesite=strict" in first.headers["set-cookie"].lower()
        )
        assert c.get("/run?name=run-a").status_code == 200  # the cookie now carries it


def test_loopback_server_refuses_other_host_names(runs_dir: Path) -> None:
    with client_for(runs_dir) as c:
        assert c.get("/", headers={"host": "localhost:8000"}).status_code == 200
        r = c.get("/", headers={"host": "evil.example:8000"})
        assert r.status_code == 403 and "localhost only" in r.text


def test_beyond_loopback_without_token_is_refused() -> None:
    from simulator.cli._common import as_flag

    with pytest.raises(ServeError, match=r"^host 0\.0\.0\.0: .*; pass token SECRET") as refused:
        check_bind("0.0.0.0", None)
    assert refused.value.params == ["host", "token"]
    assert "--host 0.0.0.0: " in refused.value.worded(as_flag) and "pass --token SECRET" in refused.value.worded(
        as_flag
    )
    check_bind("0.0.0.0", "s3cret")
    check_bind("127.0.0.1", None)
    check_bind("::1", None)


def wait_for(c: TestClient, room: str, status: set[str], since: int = -1, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = c.get("/api/play/state", params={"id": room, "since": since}).json()
        if state["status"] in status:
            return state
        since = state["version"]
    raise TimeoutError(f"room {room} never reached {status}")


def test_play_records_what_the_counsellor_sent(runs_dir: Path) -> None:
    with client_for(runs_dir) as c:
        start = c.post("/api/play", json={"case": "dana-and-theo", "name": "ana", "turns": 3, "seed": 0})
        assert start.status_code == 200, start.text
        room = start.json()["id"]
        state = wait_for(c, room, {"your_move"})
        view = state["view"]
        assert set(view) == {"knows", "intake", "transcript", "member_turns", "max_turns", "oracle"}
        assert view["knows"] == "intake" and view["oracle"] is None
        assert state["awaiting"]["members"] == ["Dana", "Theo"] and "evoke" in state["awaiting"]["strategies"]
        secret_fields = ("inner", "emotion", "felt_heard", "tension", "private", "triggers", "risk")
        assert not any(f'"{k}"' in json.dumps(state) for k in secret_fields)
        # refused moves leave the pause open
        bad = c.post(f"/api/play/move?id={room}", json={"speak": True, "text": "Hi", "targets": ["Nobody"]})
        assert bad.status_code == 400 and "targets: choose from Dana, Theo, Couple" in bad.text
        bad = c.post(
            f"/api/play/move?id={room}", json={"speak": True, "text": "Hi", "targets": ["Dana"], "strategy": "x"}
        )
        assert bad.status_code == 400 and "not a couple strategy" in bad.text
        assert (
            c.post(f"/api/play/move?id={room}", json={"speak": True, "text": " ", "targets": ["Dana"]}).status_code
            == 400
        )
        assert (
            c.post(f"/api/play/move?id={room}", content="speak", headers={"content-type": "text/plain"}).status_code
            == 400
        )
        moves = [
            {"speak": True, "text": "What hurts most, Dana?", "targets": ["Dana"], "strategy": "evoke"},
            {"speak": False},
            {"speak": True, "text": "What do you both need?", "targets": ["Couple"]},
        ]
        for i, move in enumerate(moves):
            if i:
                state = wait_for(c, room, {"your_move", "finished"}, since=state["version"])
                if state["status"] == "finished":
                    break
            assert c.post(f"/api/play/move?id={room}", json=move).json() == {"ok": True}
            state = c.get("/api/play/state", params={"id": room}).json()
        final = wait_for(c, room, {"finished", "failed"})
        assert final["status"] == "finished", final["outcome"]
        run = runs_dir / final["run"]
        assert run.parent == runs_dir and run.name.startswith("play-dana-and-theo-ana-")
    rec = RunFolder(run).load_session("dana-and-theo__s0")
    assert rec.supporter == "human:ana" and rec.status == SessionStatus.COMPLETED
    spoken = [t.decision for t in rec.turns if t.kind == "supporter"]
    assert [(d.text, d.targets, d.strategy) for d in spoken] == [
        ("What hurts most, Dana?", ["Dana"], "evoke"),
        ("What do you both need?", ["Couple"], None),
    ]
    assert [d.speak for d in rec.decisions] == [True, False, True]
    assert json.loads((run / "manifest.json").read_text())["config"]["supporter"] == "human:ana"


def test_two_rooms_at_once_do_not_mix(runs_dir: Path) -> None:
    with client_for(runs_dir) as c:
        rooms = [
            c.post("/api/play", json={"case": "dana-and-theo", "name": n, "turns": 2}).json()["id"]
            for n in ("a1", "b2")
        ]
        for room, text in zip(rooms, ("from room one", "from room two"), strict=True):
            wait_for(c, room, {"your_move"})
            c.post(f"/api/play/move?id={room}", json={"speak": True, "text": text, "targets": ["Theo"]})
        for room in rooms:
            state = wait_for(c, room, {"your_move", "finished"})
            if state["status"] == "your_move":
                c.post(f"/api/play/move?id={room}", json={"speak": False})
        finals = [wait_for(c, room, {"finished"}) for room in rooms]
    texts = []
    for final in finals:
        rec = RunFolder(runs_dir / final["run"]).load_session("dana-and-theo__s0")
        texts.append((rec.supporter, [t.text for t in rec.turns if t.kind == "supporter"]))
    assert texts == [("human:a1", ["from room one"]), ("human:b2", ["from room two"])]


def test_leaving_or_going_idle_saves_an_interrupted_record(runs_dir: Path) -> None:
    with TestClient(build_app(runs_dir, client_factory=fake_client, warm=False, idle_s=0.5), base_url=LOCAL) as c:
        left = c.post("/api/play", json={"case": "dana-and-theo", "name": "gone", "turns": 4}).json()["id"]
        wait_for(c, left, {"your_move"})
        after = c.post(f"/api/play/leave?id={left}", json={}).json()
        assert after["status"] == "abandoned" and "interrupted" in after["outcome"]
        idle = c.post("/api/play", json={"case": "dana-and-theo", "name": "idle", "turns": 4}).json()["id"]
        final = wait_for(c, idle, {"abandoned"}, timeout=10)
        assert "no move for" in final["outcome"]
        assert c.post(f"/api/play/move?id={idle}", json={"speak": False}).status_code == 400
        runs = [runs_dir / s["run"] for s in (after, final)]
    for run in runs:
        rec = RunFolder(run).load_session("dana-and-theo__s0")  # a whole, readable record
        assert rec.status == SessionStatus.INCOMPLETE and rec.end_reason == EndReason.INTERRUPTED
        assert not list(run.glob("sessions/*.tmp*"))


@pytest.mark.parametrize(
    "body, needle",
    [
        ({"case": "no-such-case", "name": "x"}, "not a library case id"),
        ({"case": "cases.yaml", "name": "x"}, "not a library case id"),
        ({"case": "dana-and-theo", "name": "bad name!"}, "name:"),
        ({"case": "dana-and-theo", "name": "x", "turns": 0}, "turns:"),
        ({"case": "../../etc/passwd", "name": "x"}, "library case id"),
    ],
)
def test_bad_start_is_one_line(runs_dir: Path, body: dict, needle: str) -> None:
    with client_for(runs_dir) as c:
        r = c.post("/api/play", json=body)
        assert r.status_code == 400 and needle in r.text and len(r.text.splitlines()) == 1


def test_cli_refusals_are_one_line(tmp_path: Path, runs_dir: Path) -> None:
    cli_app._register()
    runner = CliRunner()
    env = {"COLUMNS": "200", "RESCUE_SIM_SERVE_TOKEN": ""}
    r = runner.invoke(cli_app.app, ["serve", str(tmp_path / "nope")], env=env)
    assert r.exit_code == 2 and "not a folder" in r.output and len(r.output.strip().splitlines()) == 1
    r = runner.invoke(cli_app.app, ["serve", str(runs_dir), "--host", "0.0.0.0"], env=env)
    assert r.exit_code == 2 and "needs a token" in r.output and len(r.output.strip().splitlines()) == 1
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = runner.invoke(cli_app.app, ["serve", str(runs_dir), "--port", str(port)], env=env)
    assert r.exit_code == 2 and f"--port {port}" in r.output and "another --port" in r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
    # --rate reaches the server: a batch that is no batch is refused before it starts
    r = runner.invoke(cli_app.app, ["serve", str(runs_dir), "--rate", str(tmp_path / "none.jsonl")], env=env)
    assert r.exit_code == 2 and f"--rate {tmp_path / 'none.jsonl'}: no such file" in r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output


def sse_events(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_start_a_session_and_watch_it_to_the_end(runs_dir: Path) -> None:
    with client_for(runs_dir) as c:
        r = c.post("/api/run", json={"case": "dana-and-theo", "supporter": "scripted", "turns": 3, "seed": 2})
        assert r.status_code == 200, r.text
        run, sid = r.json()["run"], r.json()["session"]
        assert sid == "dana-and-theo__s2" and run.startswith("web-dana-and-theo-")
        assert sid in [s["id"] for s in report_payload(c.get("/run", params={"name": run}).text)["sessions"]]
        events = sse_events(c.get("/api/live", params={"name": run, "id": sid}).text)
    kinds = [k for k, _ in events]
    assert kinds[-1] == "end" and events[-1][1]["status"] == "completed" and "session" in kinds
    last = [d for k, d in events if k == "session"][-1]
    rec = RunFolder(runs_dir / run).load_session(sid)
    assert last["status"] == "completed" and last["turns"] == len(rec.turns) > 3
    assert [t["text"] for t in last["detail"]["turns"]] == [t.text for t in rec.turns]
    assert rec.supporter == "scripted"


class CheckedFake(FakeModelClient):
    """The fake with the preflight's environment check: `nope/` models are unknown, as litellm would say."""

    def check_environment(self, model: str) -> None:
        from personas.common.errors import UserError

        if model.startswith("nope/"):
            raise UserError(f"model {model!r}: unknown model {model!r}; use provider/model")


def test_start_with_a_stressor_and_per_role_models_records_both(runs_dir: Path) -> None:
    made: list[FakeModelClient] = []

    def factory() -> FakeModelClient:
        made.append(CheckedFake(default=RoomScript(resolve_case("dana-and-theo"))))
        return made[-1]

    chosen = {"member": "openai/member-m", "tracker": "anthropic/tracker-t", "judge": "openai/judge-j"}
    body = {"case": "dana-and-theo", "supporter": "scripted", "turns": 4, "stressor": "hostility_to_supporter"}
    body |= {f"{r}_model": m for r, m in chosen.items()}
    with TestClient(build_app(runs_dir, client_factory=factory, warm=False), base_url=LOCAL) as c:
        options = c.get("/api/run/options").json()
        assert "hostility_to_supporter" in [s["name"] for s in options["stressors"]]
        assert options["models"] == {"member": "fake/model", "tracker": "fake/model", "judge": "fake/model"}
        r = c.post("/api/run", json=body)
        assert r.status_code == 200, r.text
        run, sid = r.json()["run"], r.json()["session"]
        assert run.startswith("web-dana-and-theo-hostility_to_supporter-") and "hostility_to_supporter" in sid
        events = sse_events(c.get("/api/live", params={"name": run, "id": sid}).text)
        first = list(made[0].calls)
        plain = c.post("/api/run", json={"case": "dana-and-theo", "supporter": "scripted", "turns": 2, "seed": 1})
        assert plain.status_code == 200, plain.text
        sse_events(c.get("/api/live", params={"name": plain.json()["run"], "id": plain.json()["session"]}).text)
    assert events[-1][0] == "end" and events[-1][1]["status"] == "completed"
    rec = RunFolder(runs_dir / run).load_session(sid)
    assert rec.perturbation == "hostility_to_supporter" and rec.models == chosen
    assert [t.directive is not None for t in rec.turns if t.kind == "member"].count(True) == 1
    manifest = json.loads((runs_dir / run / "manifest.json").read_text())["config"]
    assert manifest["kind"] == "stress" and manifest["stress"]["perturbations"] == ["hostility_to_supporter"]
    (fake,) = made  # one client for the server: the choice binds roles per session, not per server
    by_role = {(call.role, call.model) for call in first if call.role in chosen}
    assert by_role == {("member", "openai/member-m"), ("tracker", "anthropic/tracker-t")}
    assert {call.model for call in fake.calls[len(first) :] if call.role in chosen} == {"fake/model"}
    other = RunFolder(runs_dir / plain.json()["run"]).load_session(plain.json()["session"])
    assert other.perturbation is None and other.models == dict.fromkeys(chosen, "fake/model")
    assert not [t for t in other.turns if t.directive]


@pytest.mark.parametrize(
    ("extra", "mode"),
    [
        ({}, "checklist"),  # the default, as `run`
        ({"judge_mode": "verdict"}, "verdict"),
        ({"stressor": "hostility_to_supporter", "turns": 4}, "checklist"),  # through the stress runner
        ({"stressor": "hostility_to_supporter", "turns": 4, "judge_mode": "verdict"}, "verdict"),
    ],
)
def test_start_with_judging_judges_with_the_chosen_judge_model(runs_dir: Path, extra: dict, mode: str) -> None:
    from tests._session_fixtures import fill_reply

    room = RoomScript(resolve_case("dana-and-theo"))

    def answer(call):  # the judge's verdicts and the stressor's checker, else the room
        return fill_reply(call.schema) if call.role in ("judge", "check") else room(call)

    made: list[FakeModelClient] = []
    factory = lambda: made.append(FakeModelClient(default=answer, yes=steady_yes)) or made[-1]  # noqa: E731
    body = {"case": "dana-and-theo", "supporter": "scripted", "turns": 2, "judge": True, "judge_model": "openai/j-1"}
    body |= extra
    with TestClient(build_app(runs_dir, client_factory=factory, warm=False), base_url=LOCAL) as c:
        r = c.post("/api/run", json=body)
        assert r.status_code == 200, r.text
        sse_events(c.get("/api/live", params={"name": r.json()["run"], "id": r.json()["session"]}).text)
        for _ in range(200):  # judging follows the session's end
            if (runs_dir / r.json()["run"] / "judgments" / f"{r.json()['session']}.json").is_file():
                break
            time.sleep(0.05)
    from judges import read_judgment

    judgment = read_judgment(RunFolder(runs_dir / r.json()["run"]), r.json()["session"])
    assert judgment is not None and judgment.judges == ["openai/j-1"]
    assert {call.model for call in made[0].calls if call.role == "judge"} == {"openai/j-1"}
    assert judgment.judge_mode == mode
    questions = [call for call in made[0].calls if call.role == "judge" and call.schema is None]
    assert bool(questions) == (mode == "checklist")  # yes/no questions, or structured verdicts only


def test_a_bad_judge_mode_is_refused_with_one_line(runs_dir: Path) -> None:
    body = {"case": "dana-and-theo", "supporter": "scripted", "judge": True, "judge_mode": "rubric"}
    with TestClient(build_app(runs_dir, client_factory=fake_client, warm=False), base_url=LOCAL) as c:
        r = c.post("/api/run", json=body)
    assert r.status_code == 400 and "judge_mode" in r.text and len(r.text.strip().splitlines()) == 1, r.text


@pytest.mark.parametrize(
    "extra, needle",
    [
        ({"stressor": "no_such"}, "stressor 'no_such': not a built-in stressor; choose one of "),
        ({"stressor": "../../etc/passwd.yaml"}, "stressor '../../etc/passwd.yaml': not a built-in"),
        ({"stressor": "hostility_to_supporter", "turns": 1}, "stressor: perturbation hostility_to_supporter"),
        ({"member_model": "http://127.0.0.1:9/v1#m"}, "member_model 'http://127.0.0.1:9/v1#m': give a model id"),
        ({"judge_model": "gpt 4"}, "judge_model 'gpt 4': give a model id"),
        ({"tracker_model": "nope/x"}, "tracker_model 'nope/x': unknown model; use provider/model; choose another"),
        ({"member_model": "a" * 201}, "member_model:"),
    ],
)
def test_start_refuses_a_bad_stressor_or_model_in_one_line(runs_dir: Path, extra: dict, needle: str) -> None:
    factory = lambda: CheckedFake(default=RoomScript(resolve_case("dana-and-theo")))  # noqa: E731
    with TestClient(build_app(runs_dir, client_factory=factory, warm=False), base_url=LOCAL) as c:
        r = c.post("/api/run", json={"case": "dana-and-theo", "supporter": "scripted", **extra})
        assert r.status_code == 400 and needle in r.text and len(r.text.splitlines()) == 1, r.text
    assert not list(runs_dir.glob("web-*"))


def test_watch_tails_a_session_another_process_writes(runs_dir: Path) -> None:
    import threading

    folder = RunFolder(runs_dir / "run-a")
    done = folder.load_session("c1__s0")
    partial = done.model_copy(
        update={"turns": done.turns[:2], "status": SessionStatus.INCOMPLETE, "end_reason": None, "finished_at": None}
    )
    folder.write_session(partial)
    finish = threading.Timer(1.2, lambda: folder.write_session(done))
    with client_for(runs_dir) as c:
        finish.start()
        events = sse_events(c.get("/api/live", params={"name": "run-a", "id": "c1__s0"}).text)
    finish.join()
    sessions = [d for k, d in events if k == "session"]
    assert [s["status"] for s in sessions] == ["incomplete", "completed"]
    assert [s["turns"] for s in sessions] == [2, len(done.turns)]
    assert events[-1][0] == "end"


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("human", "Play page"),
        ("human:ana", "Play page"),
        ("http://localhost:9/v1#bot", "model id"),
        ("os:system", "model id"),
        ("whatever", "model id"),
    ],
)
def test_start_refuses_code_urls_and_humans(runs_dir: Path, spec: str, needle: str) -> None:
    with client_for(runs_dir) as c:
        r = c.post("/api/run", json={"case": "dana-and-theo", "supporter": spec})
        assert r.status_code == 400 and needle in r.text and len(r.text.splitlines()) == 1
    assert not list(runs_dir.glob("web-*"))


def test_posts_from_another_origin_are_refused(runs_dir: Path) -> None:
    with client_for(runs_dir) as c:
        body = {"case": "dana-and-theo", "supporter": "scripted"}
        r = c.post("/api/run", json=body, headers={"origin": "http://evil.example"})
        assert r.status_code == 403 and "origin" in r.text
        assert (
            c.post("/api/play", json={"case": "dana-and-theo", "name": "x"}, headers={"origin": "null"}).status_code
            == 403
        )
        assert not list(runs_dir.glob("web-*")) and not list(runs_dir.glob("play-*"))
        ok = c.post("/api/run", json={**body, "turns": 1}, headers={"origin": LOCAL})
        assert ok.status_code == 200, ok.text


@pytest.fixture
def batch(runs_dir: Path, tmp_path: Path) -> Path:
    from judges.ratings import export_items

    out = tmp_path / "rate" / "batch.jsonl"
    out.parent.mkdir()
    export_items([runs_dir / "run-a"], select=["random"], n=2, out=out, fmt="jsonl")
    return out


def test_rating_saves_each_rating_and_ratings_import_reads_the_file_unchanged(runs_dir, batch: Path) -> None:
    from judges.ratings import import_ratings, read_ratings

    with client_for(runs_dir, rate=[batch]) as c:
        assert c.get("/api/rate/batches").json()[0]["name"] == "batch.jsonl"
        got = c.get("/api/rate/batch", params={"batch": "0", "rater": "rita"})
        assert got.status_code == 200
        body = got.text
        data = got.json()
        assert len(data["items"]) == 2 and data["given"] == [] and data["instructions"]
        # blind: no supporter id, no model name, nothing from the key file
        key = json.loads(batch.with_name("batch.key.json").read_text())
        for secret in [SUP, "gpt-4o", *[k["session_id"] for k in key["items"]], *key["aliases"].values()]:
            assert secret not in body, secret
        assert {i["supporter"] for i in data["items"]} <= set(key["aliases"])
        dim = data["items"][0]["dimensions"][0]
        info = data["dimensions"][dim]
        rated = []
        for item in data["items"]:
            r = c.post(
                "/api/rate/save?batch=0",
                json={"rater": "rita", "item_id": item["item_id"], "dimension": dim, "value": info["max"]},
            )
            assert r.status_code == 200, r.text
            rated.append(item["item_id"])
        # a changed rating replaces the earlier one
        c.post(
            "/api/rate/save?batch=0",
            json={"rater": "rita", "item_id": rated[0], "dimension": dim, "value": info["min"]},
        )
        assert len(c.get("/api/rate/batch", params={"batch": "0", "rater": "rita"}).json()["given"]) == 2
        for bad, needle in [
            ({"rater": "rita", "item_id": "nope", "dimension": dim, "value": 3}, "not an item of batch.jsonl"),
            ({"rater": "rita", "item_id": rated[0], "dimension": "nope", "value": 3}, "rate one of"),
            (
                {"rater": "rita", "item_id": rated[0], "dimension": dim, "value": info["max"] + 1},
                f"rated {info['min']}-{info['max']}",
            ),
            ({"rater": "rita ok", "item_id": rated[0], "dimension": dim, "value": 3}, "rater:"),
            ({"rater": "rita", "item_id": rated[0], "dimension": dim, "value": "x"}, "value:"),
        ]:
            r = c.post("/api/rate/save?batch=0", json=bad)
            assert r.status_code == 400 and needle in r.text and len(r.text.splitlines()) == 1, (bad, r.text)
        assert c.get("/api/rate/batch", params={"batch": "1", "rater": "rita"}).status_code == 404
    sheet = batch.with_name("batch.rita.ratings.jsonl")
    lines = [json.loads(x) for x in sheet.read_text().splitlines()]
    assert {(x["item_id"], x["value"]) for x in lines} == {(rated[0], info["min"]), (rated[1], info["max"])}
    result = import_ratings(sheet, [runs_dir / "run-a"])
    assert result.added == {str(runs_dir / "run-a"): 2} and result.raters == ["rita"]
    stored = read_ratings(runs_dir / "run-a").ratings
    assert sorted((r.item_id, r.value) for r in stored) == sorted((x["item_id"], x["value"]) for x in lines)
    assert {r.design for r in stored} == {"random"} and all(r.pi is not None for r in stored)  # the design's pi kept


def test_rate_refuses_a_key_file_or_a_bad_batch(runs_dir: Path, batch: Path, tmp_path: Path) -> None:
    with pytest.raises(ServeError, match="unblinding key"):
        build_app(runs_dir, client_factory=fake_client, warm=False, rate=[batch.with_name("batch.key.json")])
    broken = tmp_path / "broken.jsonl"
    broken.write_text(batch.read_text().splitlines()[0] + "\n{not json\n")
    with pytest.raises(ServeError, match=r"broken.jsonl:2: not an exported item"):
        build_app(runs_dir, client_factory=fake_client, warm=False, rate=[broken])
    with pytest.raises(ServeError, match="no such file"):
        build_app(runs_dir, client_factory=fake_client, warm=False, rate=[tmp_path / "nope.jsonl"])
