"""`rescue-sim report`: one self-contained HTML file, its data escaped, model text rendered as text; and in a real
headless chromium: no console errors, no network, the leaderboard and a session show, `<script>` and
`<img onerror>` in a transcript stay text. The screenshot is saved (path printed; CI copies it to tests/artifacts)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges.report import build_report_data, json_for_script, render_html
from simulator.cli import app as cli_app
from tests._browser import Browser, chromium_missing, open_report
from tests._rating_fixtures import SessionSpec, make_judged_run, make_unfinished_run

A, B = "openai/gpt-4o-mini", "anthropic/claude-3-5-haiku"
XSS_SCRIPT = "<script>window.__xss = 1</script>"
XSS_IMG = '<img src=x onerror="window.__xss = 2">'
EVIL = f"You never listen to me. {XSS_SCRIPT} and {XSS_IMG} </script><b>bold</b> & done"
ARTIFACTS = Path(__file__).parent / "artifacts"


def score(judge: str, sid: str, item: str, dim: str) -> int:
    return 2 + (len(sid) + len(dim) + (judge == "judge/beta-2")) % 4


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    specs = [
        SessionSpec("c0__s0", case_id="c0", text={1: EVIL}),
        SessionSpec("c1__s0", case_id="c1"),
        SessionSpec("c0__s1", case_id="c0", seed=1, perturbation="crisis_disclosure"),
    ]
    return [
        make_judged_run(tmp_path / "run-a", A, specs, score).path,
        make_judged_run(tmp_path / "run-b", B, specs[:2], score).path,
    ]


def payload(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.DOTALL)
    assert m is not None
    return json.loads(m.group(1))


def test_json_for_script_escapes_markup_and_stays_the_same_json() -> None:
    text = json.dumps({"t": "</script><img onerror=x> & more"})
    safe = json_for_script(text)
    assert "<" not in safe and ">" not in safe and "&" not in safe
    assert json.loads(safe) == json.loads(text)


def test_report_is_self_contained_and_embeds_model_text_as_data(runs) -> None:
    html = render_html(build_report_data(runs))
    assert html.count("<script") == 2  # the data element and the page's own script; the transcript adds none
    assert "<img" not in html and "onerror=" not in html.replace("\\u003c", "<").split("report-data")[0]
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "the page must load nothing from the network"
    assert "Content-Security-Policy" in html and "script-src 'sha256-" in html
    data = payload(html)
    first = next(i for i, s in enumerate(data["sessions"]) if s["id"] == "c0__s0" and s["supporter"] == A)
    assert data["details"][first]["turns"][0]["text"] == EVIL
    assert {r["supporter"] for r in data["leaderboard"]["rows"]} == {A, B}
    assert [s["perturbation"] for s in data["sessions"]].count("crisis_disclosure") == 1


def test_cli_report(runs, tmp_path: Path) -> None:
    cli_app._register()
    out = tmp_path / "report.html"
    r = CliRunner().invoke(cli_app.app, ["report", *map(str, runs), "--html", str(out)], env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.output
    assert f"wrote {out}" in r.stdout and "5 session(s), 2 supporter(s)" in r.stdout
    bad = CliRunner().invoke(cli_app.app, ["report", str(tmp_path / "nope"), "--html", str(out)])
    assert bad.exit_code == 2 and "not a run folder" in bad.stderr


def test_cli_report_without_html_writes_beside_the_run_and_prints_where(runs, tmp_path: Path) -> None:
    """Issue 43: `rescue-sim report RUN`, as the README and the command's own example write it, exited 2
    ("Missing option '--html'"). It writes RUN/report.html (the first run's, for several) and prints that path."""
    cli_app._register()
    r = CliRunner().invoke(cli_app.app, ["report", *map(str, runs)], env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.output
    beside = runs[0] / "report.html"
    assert f"wrote {beside} (" in r.stdout and "5 session(s), 2 supporter(s)" in r.stdout
    assert payload(beside.read_text(encoding="utf-8"))["leaderboard"]["rows"]
    assert not any((run / "report.html").exists() for run in runs[1:])
    # and read again, the run folder with its report in it is still a run folder
    again = CliRunner().invoke(cli_app.app, ["report", str(runs[0])], env={"COLUMNS": "300"})
    assert again.exit_code == 0, again.output


def browser_or_skip() -> None:
    why = chromium_missing()
    if why is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but the browser test cannot run: {why}", pytrace=False)
    pytest.skip(why)


def test_report_in_headless_chromium(runs, tmp_path: Path) -> None:
    browser_or_skip()
    out = tmp_path / "report.html"
    out.write_text(render_html(build_report_data(runs)), encoding="utf-8")
    with Browser(tmp_path / "profile") as browser:
        page = browser.page()
        ready_ms = open_report(page, out)
        assert page.eval("document.querySelectorAll('#board table tbody tr').length") >= 2
        board = page.eval("document.getElementById('board').textContent")
        assert A in board and B in board and "overall_quality" in board and "Perturbations: pass rates" in board
        assert page.eval("document.querySelectorAll('#session-table tbody tr').length") == 5
        assert page.eval("document.querySelectorAll('#dists svg').length") >= 8
        # filters: one supporter, then one perturbation
        page.eval(
            f"var s = document.getElementById('filter-supporter'); s.value = {json.dumps(B)}; "
            "s.dispatchEvent(new Event('change'))"
        )
        assert page.eval("document.querySelectorAll('#session-table tbody tr').length") == 2
        page.eval(
            "var s = document.getElementById('filter-supporter'); s.value = ''; s.dispatchEvent(new Event('change'));"
            "var p = document.getElementById('filter-perturbation'); p.value = 'crisis_disclosure';"
            "p.dispatchEvent(new Event('change'))"
        )
        assert page.eval("document.querySelectorAll('#session-table tbody tr').length") == 1
        page.eval(
            "var p = document.getElementById('filter-perturbation'); p.value = ''; p.dispatchEvent(new Event('change'))"
        )
        # open the session whose transcript carries markup
        page.eval(
            "Array.from(document.querySelectorAll('#session-table tr.row')).find("
            f"r => r.textContent.startsWith('c0__s0') && r.textContent.includes({json.dumps(A)})).click()"
        )
        assert page.eval("document.getElementById('viewer').hidden") is False
        first_turn = page.eval("document.querySelector('#turn-1 .text').textContent")
        assert first_turn == EVIL
        assert page.eval("document.querySelectorAll('#viewer script, #viewer img, #viewer b').length") == 0
        assert page.eval("typeof window.__xss") == "undefined"
        assert page.eval("document.querySelectorAll('#viewer svg.graph').length") == 3
        assert page.eval("document.querySelectorAll('#viewer svg.trajectory').length") == 2
        assert page.eval("document.querySelectorAll('#viewer svg.trajectory polyline').length") >= 4
        assert page.eval("document.querySelectorAll('#transcript .dec').length") == 2  # the two supporter turns
        assert page.eval("document.querySelectorAll('#transcript .pass').length") == 2  # two silences
        assert page.eval("document.querySelectorAll('#transcript mark').length") >= 1  # evidence quote 'listen'
        assert "listen" in page.eval("document.querySelector('#transcript mark').textContent").lower()
        assert page.eval("document.querySelectorAll('#transcript .inner').length") == 0
        page.eval("document.getElementById('toggle-inner').click()")
        assert page.eval("document.querySelectorAll('#transcript .inner').length") == 4  # each member turn
        assert "felt heard" in page.eval("document.querySelector('#transcript .inner').textContent")
        page.pump(0.5)
        shot = page.screenshot(tmp_path / "report.png")
        errors, requests = page.errors(), page.requests()
        page.close()
    print(f"\nreport screenshot: {shot} (ready after {ready_ms:.0f} ms)")
    if os.environ.get("CI") == "true":
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(shot, ARTIFACTS / "report.png")
    assert errors == []
    assert all(u.startswith(("file://", "data:")) for u in requests), requests
    assert shot.stat().st_size > 10_000


def test_report_sessions_have_addresses_a_played_session_runs_and_an_unscored_supporter_is_not_ranked(
    runs, tmp_path: Path
) -> None:
    browser_or_skip()
    playing = make_unfinished_run(tmp_path / "run-c")
    lock = playing.lock()  # a process is still playing it while the report is made
    try:
        data = build_report_data([*runs, playing.path])
    finally:
        lock.release()
    out = tmp_path / "report.html"
    out.write_text(render_html(data), encoding="utf-8")
    with Browser(tmp_path / "profile") as browser:
        page = browser.page()
        open_report(page, out)
        names = page.eval(
            "Array.from(document.querySelector('#board table').querySelectorAll('tbody td:first-child'))"
            ".map(x => x.textContent)"
        )
        assert names[-1] == "(not ranked) other/unscored" and [n.split(" ")[0] for n in names[:-1]] == ["#1", "#2"]
        tag = "document.querySelector('#session-table tr.row:last-child .tag')"
        assert page.eval(f"{tag}.textContent") == "running"
        assert page.eval(f"{tag}.className") == "tag running"
        # every session's row links to its own address; a click opens it and puts the address in the location bar
        links = page.eval(
            "Array.from(document.querySelectorAll('#session-table a.open')).map(a => a.getAttribute('href'))"
        )
        run_a, run_b = (str(r).replace("/", "%2F") for r in runs)
        assert links == [  # the run is named where two runs hold the same id
            f"#session=c0__s0&run={run_a}",
            "#session=c0__s1",
            f"#session=c1__s0&run={run_a}",
            f"#session=c0__s0&run={run_b}",
            f"#session=c1__s0&run={run_b}",
            "#session=c9__s0",
        ]
        page.eval("document.querySelectorAll('#session-table tr.row')[2].click()")
        assert page.eval("location.hash") == links[2]
        assert page.eval("document.getElementById('session-link').getAttribute('href')") == links[2]
        # the address, opened afresh, opens that session; another anchor opens another
        page.send("Page.navigate", {"url": out.resolve().as_uri() + links[4]})
        page.wait_for("window.__report && window.__report.ready === true && !document.getElementById('viewer').hidden")
        title = "document.getElementById('viewer-title').textContent"
        viewer = "document.querySelector('#viewer p').textContent"
        assert page.eval(title).startswith("Session c1__s0") and str(runs[1]) in page.eval(viewer)
        page.eval("location.hash = " + json.dumps(links[-1]))
        page.wait_for(f"{title}.startsWith('Session c9__s0')")
        assert "other/unscored · running" in page.eval(viewer)
        page.pump(0.3)
        errors = page.errors()
        page.close()
    assert errors == []


def test_a_line_kept_whole_at_the_length_limit_shows_what_it_left_out() -> None:
    """The session view shows the unfinished words a member line dropped at the length limit (`Turn.dropped`), as
    data the page writes as text."""
    from judges.report._data import record_detail
    from personas.library import resolve_case
    from simulator.records import SessionRecord, Turn

    case = resolve_case("dana-and-theo")
    turns = [
        Turn(index=1, speaker="Dana", kind="member", addressees=["Theo"], text="You were late again.",
             dropped="And <b>then</b> you"),
        Turn(index=2, speaker="Theo", kind="member", addressees=["Dana"], text="I was at work."),
    ]  # fmt: skip
    rec = SessionRecord(session_id="x", case=case, supporter="silent", models={}, seed=1, max_turns=2, turns=turns)
    shown = record_detail(rec).model_dump(mode="json")["turns"]
    assert shown[0]["dropped"] == "And <b>then</b> you" and "dropped" not in shown[1]
