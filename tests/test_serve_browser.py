"""`rescue-sim serve` in a real headless chromium (as the report test drives it), on a real uvicorn server and the
fake model: the runs page, a run's report page with a session fetched on demand whose `<script>` and
`<img onerror>` stay text, and a whole session played as the counsellor by clicking and typing (speak with a
target and strategy, stay silent once, speak to everyone) whose record equals what was entered. No console errors.
Screenshots go to tmp_path (and to $RESCUE_SIM_SHOTS when set, to look at them)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from personas.library import resolve_case
from simulator.llm import progress
from simulator.llm.fake import FakeModelClient
from simulator.records import SessionStatus
from simulator.runfolder import RunFolder
from simulator.serve import bind_socket, build_app
from tests._browser import Browser, Page
from tests._rating_fixtures import SessionSpec, make_judged_run, make_unfinished_run
from tests._sim_fakes import RoomScript
from tests.test_report import browser_or_skip

EVIL = 'I am done. <script>window.__xss = 1</script> <img src=x onerror="window.__xss = 2"> & more'


class CallGate:
    """Holds the fake model's calls while closed, after letting `free` more through, so a test sees a call in
    flight however slowly the page catches up (a session of a few 0.3 s calls can end before a loaded machine's
    browser has drawn it)."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.opened.set()
        self.free = 0

    def close(self, free: int) -> None:
        self.free = free
        self.opened.clear()

    async def pass_through(self) -> None:
        if not self.opened.is_set() and self.free > 0:
            self.free -= 1
            return
        while not self.opened.is_set():
            await asyncio.sleep(0.05)


class SlowClient:
    """The fake model at a human pace (each call waits `delay` s first), so a watcher sees the session grow; it
    reports each call to the progress watcher as the real client does."""

    def __init__(self, inner: FakeModelClient, delay: float, gate: CallGate | None = None):
        self.inner, self.delay, self.gate = inner, delay, gate

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    async def complete(self, *args, **kwargs):
        watch = progress.start(kwargs["role"], self.inner.model)
        await asyncio.sleep(self.delay)
        if self.gate is not None:
            await self.gate.pass_through()
        try:
            return await self.inner.complete(*args, **kwargs)
        finally:
            if watch is not None:
                watch.finish()


@contextlib.contextmanager
def live_server(runs_dir: Path, rate: tuple[Path, ...] = (), gate: CallGate | None = None) -> Iterator[str]:
    import uvicorn

    def client() -> SlowClient:
        return SlowClient(FakeModelClient(default=RoomScript(resolve_case("dana-and-theo"), line=EVIL)), 0.3, gate)

    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(build_app(runs_dir, client_factory=client, rate=rate), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        if gate is not None:
            gate.opened.set()
        server.should_exit = True
        thread.join(20)


def goto(page: Page, url: str, ready: str) -> None:
    page.send("Page.navigate", {"url": url})
    page.wait_event("Page.loadEventFired", 60)
    page.wait_for(ready, 60)


def shot(page: Page, tmp_path: Path, name: str) -> Path:
    page.pump(0.3)
    path = page.screenshot(tmp_path / f"serve-{name}.png")
    if os.environ.get("RESCUE_SIM_SHOTS"):
        shutil.copy(path, Path(os.environ["RESCUE_SIM_SHOTS"]) / path.name)
    assert path.stat().st_size > 5_000
    return path


def pause_label(page: Page) -> str:
    return page.eval("(document.querySelector('#move .status') || {}).textContent || ''")


def next_pause(page: Page, before: str) -> str:
    """Wait until the room asks for the next move (or ends); returns the new pause label ('' when it ended)."""
    page.wait_for(
        "document.body.dataset.status === 'finished' || (document.getElementById('speak') !== null && "
        f"document.querySelector('#move .status').textContent !== {json.dumps(before)})",
        60,
    )
    return "" if page.eval("document.body.dataset.status") == "finished" else pause_label(page)


def test_serve_in_headless_chromium(tmp_path: Path) -> None:
    browser_or_skip()
    runs_dir = tmp_path / "runs"
    make_judged_run(
        runs_dir / "run-a",
        "openai/gpt-4o-mini",
        [SessionSpec("c0__s0", case_id="c0", text={1: EVIL}), SessionSpec("c1__s0", case_id="c1")],
        lambda judge, sid, item, dim: 3,
    )
    gate = CallGate()
    with live_server(runs_dir, gate=gate) as base, Browser(tmp_path / "profile") as browser:
        page = browser.page()
        goto(page, base + "/", "document.querySelectorAll('main table tbody tr').length === 1")
        shot(page, tmp_path, "index")
        # a run, through the report's own page and script; the session's detail is fetched when it is opened
        page.eval("document.querySelector('main table a').click()")
        page.wait_for("window.__report && window.__report.ready === true", 60)
        page.eval("document.querySelector('#session-table tr.row').click()")
        page.wait_for("document.querySelector('#turn-1 .text') !== null", 30)
        assert page.eval("document.querySelector('#turn-1 .text').textContent") == EVIL
        assert page.eval("document.querySelectorAll('#viewer script, #viewer img').length") == 0
        assert page.eval("document.querySelectorAll('#viewer svg.graph').length") == 3
        shot(page, tmp_path, "run")
        # play: start, speak to Dana with `evoke`, stay silent once, then speak to the couple
        goto(page, base + "/play", "document.getElementById('start-btn') !== null")
        page.eval(
            "document.getElementById('case').value = 'dana-and-theo'; document.getElementById('name').value = 'zoe';"
        )
        page.eval("document.getElementById('turns').value = '3'; document.getElementById('start-btn').click()")
        first = next_pause(page, "")
        assert page.eval("Array.from(document.querySelectorAll('#targets input')).map(x => x.value)") == [
            "Dana",
            "Theo",
            "Couple",
        ]
        assert "evoke" in page.eval("Array.from(document.querySelectorAll('#strategy option')).map(x => x.value)")
        shot(page, tmp_path, "play")
        page.eval(
            "document.querySelector('#targets input[value=Couple]').checked = false;"
            "document.querySelector('#targets input[value=Dana]').checked = true;"
            "document.getElementById('strategy').value = 'evoke';"
            "document.getElementById('text').value = 'What hurts most, Dana?';"
            "document.getElementById('speak').click()"
        )
        second = next_pause(page, first)
        assert second, "the session ended before the second move"
        page.eval("document.getElementById('silent').click()")
        third = next_pause(page, second)
        assert third, "the session ended before the third move"
        page.eval(
            "document.getElementById('text').value = 'What do you both need?'; document.getElementById('speak').click()"
        )
        page.wait_for("document.body.dataset.status === 'finished'", 60)
        # member lines carry markup too: still text on the play page
        assert EVIL in page.eval("document.getElementById('transcript').textContent")
        assert page.eval("document.querySelectorAll('#transcript script, #transcript img').length") == 0
        assert page.eval("typeof window.__xss") == "undefined"
        shot(page, tmp_path, "played")
        run = page.eval("document.querySelector('#play a').textContent")
        # watch live: start a scripted session from the page; its run page opens it and redraws it as it grows
        goto(page, base + "/start", "document.getElementById('run-btn') !== null")
        shot(page, tmp_path, "start")
        assert page.eval("document.getElementById('member-model').placeholder") == "fake/model (the server's)"
        page.eval(
            "document.getElementById('case').value = 'dana-and-theo'; document.getElementById('turns').value = '4';"
            "document.getElementById('case').dispatchEvent(new Event('change'));"
            "document.getElementById('stressor').value = 'hostility_to_supporter';"
            "document.getElementById('member-model').value = 'openai/member-in-browser';"
        )
        gate.close(free=3)  # the session's first calls pass, then one is held until the page has shown it
        page.eval("document.getElementById('run-btn').click()")
        page.wait_for(
            "window.__report && window.__report.ready === true && document.getElementById('live') !== null", 60
        )
        growing = [page.eval("document.querySelectorAll('#transcript .turn').length")]
        page.wait_for(
            "document.getElementById('live') !== null && /in flight/.test(document.getElementById('live').textContent)",
            30,
        )
        calls_line = page.eval("(document.getElementById('live') || {}).textContent || ''")
        # while the call is held, the sessions table counts the turns the transcript below it already shows
        page.wait_for(
            "(function () { var n = document.querySelectorAll('#transcript .turn').length;"
            " var row = document.querySelector('#session-table tbody tr');"
            " return n > 0 && row !== null && row.children[7].textContent === String(n); })()",
            10,
        )
        shot(page, tmp_path, "live")
        gate.opened.set()
        page.wait_for("document.getElementById('live') === null", 120)
        growing.append(page.eval("document.querySelectorAll('#transcript .turn').length"))
        live_status = page.eval("document.querySelector('#session-table tbody tr').textContent")
        errors = page.errors()
        page.close()
    assert errors == []
    assert growing[0] < growing[1] and "completed" in live_status
    assert "fake/model" in calls_line and ("member" in calls_line or "tracker" in calls_line), calls_line
    rec = RunFolder(runs_dir / run).load_session("dana-and-theo__s0")
    assert rec.supporter == "human:zoe" and rec.status == SessionStatus.COMPLETED
    spoken = [t.decision for t in rec.turns if t.kind == "supporter"]
    assert [(d.text, d.targets, d.strategy) for d in spoken] == [
        ("What hurts most, Dana?", ["Dana"], "evoke"),
        ("What do you both need?", ["Couple"], None),
    ]
    assert [d.speak for d in rec.decisions] == [True, False, True]
    (started,) = runs_dir.glob("web-dana-and-theo-hostility_to_supporter-*")
    (watched,) = RunFolder(started).sessions()
    assert watched.perturbation == "hostility_to_supporter" and watched.models["member"] == "openai/member-in-browser"


def test_a_session_has_its_own_url_and_one_being_played_shows_running(tmp_path: Path) -> None:
    browser_or_skip()
    runs_dir = tmp_path / "runs"
    make_judged_run(
        runs_dir / "run-a",
        "openai/gpt-4o-mini",
        [SessionSpec("c0__s0", case_id="c0", text={1: EVIL}), SessionSpec("c1__s0", case_id="c1")],
        lambda judge, sid, item, dim: 3,
    )
    playing = make_unfinished_run(runs_dir / "run-b")
    lock = playing.lock()  # another process is playing run-b's session
    try:
        with live_server(runs_dir) as base, Browser(tmp_path / "profile") as browser:
            page = browser.page()
            goto(page, base + "/", "document.querySelectorAll('main table tbody tr').length === 2")
            tags = page.eval(
                "Array.from(document.querySelectorAll('main .tag')).map(t => t.className + ': ' + t.textContent)"
            )
            assert sorted(tags) == ["tag completed: completed", "tag running: running · 0 of 1 finished"]
            # a click opens the session and gives it its URL; that URL, opened afresh, opens the same session
            goto(page, base + "/run?name=run-a", "window.__report && window.__report.ready === true")
            page.eval("document.querySelectorAll('#session-table tr.row')[1].click()")
            page.wait_for("document.querySelector('#turn-1 .text') !== null")
            url = page.eval("location.href")
            assert url == base + "/run?name=run-a&open=c1__s0"
            assert page.eval("document.getElementById('session-link').href") == url
            page.send("Page.navigate", {"url": "about:blank"})
            goto(page, url, "document.querySelector('#turn-1 .text') !== null")
            assert page.eval("document.getElementById('viewer-title').textContent").startswith("Session c1__s0")
            # the session being played: running in the list and in its viewer, never a red incomplete
            goto(page, base + "/run?name=run-b&open=c9__s0", "document.querySelector('#turn-1 .text') !== null")
            assert page.eval("document.querySelector('#session-table .tag').className") == "tag running"
            viewer = page.eval("Array.from(document.querySelectorAll('#viewer p')).map(p => p.textContent).join('|')")
            assert "supporter other/unscored · running" in viewer and "live" in viewer  # watched as it grows
            assert page.eval("document.querySelectorAll('.tag.incomplete').length") == 0
            board = "document.querySelector('#board table tbody tr').textContent"
            assert "(not ranked) other/unscored" in page.eval(board) and "1 (1 running)" in page.eval(board)
            shot(page, tmp_path, "running")
            errors = page.errors()
            page.close()
    finally:
        lock.release()
    assert errors == []


def test_rating_two_items_in_headless_chromium(tmp_path: Path) -> None:
    """A rater rates two items with the keyboard; `ratings import` reads the saved sheet back."""
    from judges.ratings import export_items, import_ratings, read_ratings

    browser_or_skip()
    runs_dir = tmp_path / "runs"
    run = make_judged_run(
        runs_dir / "run-a",
        "openai/gpt-4o-mini",
        [SessionSpec("c0__s0", case_id="c0", text={1: EVIL}), SessionSpec("c1__s0", case_id="c1")],
        lambda judge, sid, item, dim: 3,
    ).path
    out = tmp_path / "rate" / "batch.jsonl"
    out.parent.mkdir()
    export_items([run], select=["random"], n=2, out=out, fmt="jsonl", dimensions=["overall_quality", "balance"])
    with live_server(runs_dir, rate=(out,)) as base, Browser(tmp_path / "profile") as browser:
        page = browser.page()
        goto(page, base + "/rate", "document.querySelector('[data-batch]') !== null")
        page.eval("document.getElementById('rater').value = 'rita'; document.querySelector('[data-batch]').click()")
        page.wait_for("document.getElementById('questions') !== null", 30)
        first = page.eval("document.body.dataset.item")
        assert page.eval("document.querySelectorAll('#questions fieldset').length") == 2
        text = page.eval("document.body.textContent")
        assert page.eval("document.querySelectorAll('#rate script, #rate img').length") == 0
        assert "gpt-4o" not in text and "c0__s0" not in text and "Supporter" in text
        shot(page, tmp_path, "rate")

        def key(k: str, code: str) -> None:
            for kind in ("keyDown", "keyUp"):
                page.send("Input.dispatchKeyEvent", {"type": kind, "key": k, "code": code})

        key("4", "Digit4")  # first question, then the highlight moves on
        page.wait_for("document.getElementById('saved').textContent.startsWith('1 of 2')", 30)
        key("2", "Digit2")
        page.wait_for("document.getElementById('saved').textContent.startsWith('2 of 2')", 30)
        key("n", "KeyN")
        page.wait_for(f"document.body.dataset.item !== {json.dumps(first)}", 30)
        second = page.eval("document.body.dataset.item")
        seen = page.eval("document.getElementById('transcript').textContent") + text
        assert EVIL in seen  # one of the two items carries the markup, as text
        assert page.eval("document.querySelectorAll('#rate script, #rate img').length") == 0
        page.eval("document.querySelector('#questions fieldset input[value=\"5\"]').click()")
        page.wait_for("document.getElementById('saved').textContent.startsWith('1 of 2')", 30)
        progress = page.eval("document.getElementById('progress').textContent")
        assert page.eval("typeof window.__xss") == "undefined"
        errors = page.errors()
        page.close()
    assert errors == []
    assert "1 of 2 fully rated" in progress
    sheet = out.with_name("batch.rita.ratings.jsonl")
    rows = sorted((r["item_id"], r["dimension"], r["value"]) for r in map(json.loads, sheet.read_text().splitlines()))
    assert rows == sorted([(first, "overall_quality", 4), (first, "balance", 2), (second, "overall_quality", 5)])
    result = import_ratings(sheet, [run])
    assert result.added == {str(run): 3}
    assert sorted((r.item_id, r.dimension, r.value) for r in read_ratings(run).ratings) == rows


def test_two_browsers_play_two_sessions_at_once_without_mixing(tmp_path: Path) -> None:
    """Two chromium processes (two profiles, so two cookie jars), each the counsellor of its own room on one
    server; their moves interleave (A speaks, B speaks, A stays silent, B speaks to the other partner); each record
    holds exactly what its own browser entered and nothing of the other's."""
    browser_or_skip()
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    moves = {  # (line, targets) per pause; None: stay silent
        "amy": [("Amy asks Dana what hurts most.", ["Dana"]), None],
        "bob": [("Bob asks Theo what he hoped for.", ["Theo"]), ("Bob turns to Dana now.", ["Dana"])],
    }
    with (
        live_server(runs_dir) as base,
        Browser(tmp_path / "profile-a") as first,
        Browser(tmp_path / "profile-b") as second,
    ):
        pages = {"amy": first.page(), "bob": second.page()}
        for name, page in pages.items():
            goto(page, base + "/play", "document.getElementById('start-btn') !== null")
            page.eval(
                "document.getElementById('case').value = 'dana-and-theo';"
                f"document.getElementById('name').value = {json.dumps(name)};"
                "document.getElementById('turns').value = '3'; document.getElementById('start-btn').click()"
            )
        pauses = {name: next_pause(page, "") for name, page in pages.items()}
        for step in range(2):  # A then B at each step, each browser waiting only for its own room
            for name, page in pages.items():
                if step:
                    pauses[name] = next_pause(page, pauses[name])
                    assert pauses[name], f"{name}'s session ended before move {step + 1}"
                move = moves[name][step]
                if move is None:
                    page.eval("document.getElementById('silent').click()")
                    continue
                text, to = move
                page.eval(
                    "document.querySelectorAll('#targets input').forEach(x => { x.checked = "
                    f"{json.dumps(to)}.includes(x.value); }});"
                    f"document.getElementById('text').value = {json.dumps(text)};"
                    "document.getElementById('speak').click()"
                )
        for name, page in pages.items():  # the rest of each session: silence until it ends
            while pause := next_pause(page, pauses[name]):
                page.eval("document.getElementById('silent').click()")
                pauses[name] = pause
        shown = {name: page.eval("document.getElementById('transcript').textContent") for name, page in pages.items()}
        runs = {name: page.eval("document.querySelector('#play a').textContent") for name, page in pages.items()}
        errors = [e for page in pages.values() for e in page.errors()]
        for page in pages.values():
            page.close()
    assert errors == []
    assert runs["amy"] != runs["bob"]
    for name, other in (("amy", "bob"), ("bob", "amy")):
        rec = RunFolder(runs_dir / runs[name]).load_session("dana-and-theo__s0")
        assert rec.supporter == f"human:{name}" and rec.status == SessionStatus.COMPLETED
        spoken = [(t.decision.text, t.decision.targets) for t in rec.turns if t.kind == "supporter"]
        assert spoken == [m for m in moves[name] if m is not None]
        assert [d.speak for d in rec.decisions][:2] == [m is not None for m in moves[name]]
        theirs = [m[0] for m in moves[other] if m is not None]
        everything = json.dumps(rec.model_dump(mode="json"))
        assert not any(x in everything for x in theirs) and not any(x in shown[name] for x in theirs)
        assert all(m[0] in shown[name] for m in moves[name] if m is not None)
