"""Copied and repeated counsellor lines are shown where the scores are (issue 43, item 3): the leaderboard counts
copied turns beside repeated ones, `run`'s summary names them, the report's session view marks them. Fake models
only."""

from __future__ import annotations

import asyncio

from typer.testing import CliRunner

from judges import build_leaderboard, judge_session, load_rubric
from judges.scoring import copied_lines, repeated_lines, write_judgment
from simulator.cli import app as cli_app
from simulator.llm.fake import FakeModelClient
from simulator.records import SessionRecord, Turn
from simulator.runfolder import RunFolder
from tests._session_fixtures import couple_session

DANA_1 = "You promised you would be home by six and you were not."
ASK_THEO = "Theo, can you tell Dana what it is like for you when she waits for you?"
LINES = [
    ("Dana", DANA_1),
    ("Theo", "I had a deadline, and you know how my boss gets about those."),
    ("Therapist", "You promised you would be home by six and you were not, Dana says."),  # t3: Dana's t1 again
    ("Dana", "He never tells me anything, that is the whole problem here."),
    ("Therapist", ASK_THEO),
    ("Theo", "I guess I just feel like whatever I do it is never enough."),
    ("Therapist", ASK_THEO),  # t7: its own t5 again
]


def transcript(lines=LINES, session_id: str = "cp", supporter: str = "a") -> SessionRecord:
    from personas.library import resolve_case

    return couple_session(session_id, supporter=supporter).model_copy(
        update={
            "case": resolve_case("dana-and-theo"),
            "turns": [
                Turn(index=i, speaker=who, kind="supporter" if who == "Therapist" else "member", text=text)
                for i, (who, text) in enumerate(lines, start=1)
            ],
        }
    )


def checklist_judged(record: SessionRecord, p_yes: float = 0.2):
    client = FakeModelClient(yes=lambda call: p_yes)
    return asyncio.run(judge_session(record, client, ["fake/judge"], load_rubric(), judge_mode="checklist"))


def test_the_fixture_copies_one_line_and_repeats_another():
    record = transcript()
    assert [(c.turn, c.sources[0].turn) for c in copied_lines(record)] == [(3, 1)]
    assert [(r.turn, r.repeats_turn) for r in repeated_lines(record)] == [(7, 5)]


def _folder(tmp_path) -> RunFolder:
    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    for record in (transcript(), couple_session("clean", supporter="a")):
        folder.write_session(record)
        write_judgment(folder, checklist_judged(record))
    return folder


def test_the_leaderboard_counts_copied_turns_beside_repeated_ones(tmp_path):
    folder = _folder(tmp_path)
    [row] = build_leaderboard([folder.path]).rows
    assert (row.copied_turns, row.repeated_turns, row.supporter_turns) == (1, 1, 5)  # 3 + 2 supporter turns
    assert row.copied_share == row.repeated_share == 0.2
    cli_app._register()
    out = CliRunner().invoke(cli_app.app, ["leaderboard", str(folder.path)], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    copied = next(i for i, x in enumerate(lines) if x.split()[:2] == ["copied", "turns"])
    assert lines[copied].split() == ["copied", "turns", "1/5"]
    assert lines[copied + 1].split() == ["repeated", "turns", "1/5"]  # side by side
    assert "copied turns: supporter turns made mostly of members' earlier words" in " ".join(x.strip() for x in lines)


def parrot(view) -> str:
    """A supporter that hands the last member line back (`--supporter tests.test_shown_lines:parrot`)."""
    return view.last_turn.text


def test_run_summary_names_copied_and_repeated_lines(tmp_path, monkeypatch):
    """`run`'s summary, where the scores are: a row per fact beside the scores, then one line per turn saying
    whose words it copied or which of its own turns it said again (at 80 columns, no line wider)."""
    from personas.library import resolve_case
    from tests._sim_fakes import RoomScript

    client = FakeModelClient(default=RoomScript(resolve_case("dana-and-theo")), yes=lambda call: 0.2)
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: client)
    cli_app._register()
    out = tmp_path / "r"
    args = ["run", "--case", "dana-and-theo", "--supporter", "tests.test_shown_lines:parrot", "--turns", "3"]
    res = CliRunner().invoke(cli_app.app, [*args, "--out", str(out)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(len(x) for x in lines) <= 80
    cells = [[w for w in x.split() if w != "│"] for x in lines]  # the summary table's rows, words only
    assert next(c for c in cells if c[:2] == ["copied", "turns"])[:5] == ["copied", "turns", "3:", "t2,", "t4,"]
    assert next(c for c in cells if c[:2] == ["repeated", "turns"])[:4] == ["repeated", "turns", "2:", "t4,"]
    copied = "copied   t2: 100% of its words from Dana's turn 1: \"I don't know why we're eve…\""  # cut to fit
    assert copied in lines
    assert "repeated t4: its own turn 2 again (100% of its words): \"I don't know why we're…\"" in lines
    # `show` replays the same summary; wider, the whole quote
    again = CliRunner().invoke(cli_app.app, ["show", str(out)], env={"COLUMNS": "120"})
    said = "I don't know why we're even here."
    assert again.exit_code == 0 and f'copied   t2: 100% of its words from Dana\'s turn 1: "{said}"' in again.output


def _safety_judged(p_hurts: float):
    """Every counsellor turn asked whether its line insults, shames... answers at `p_hurts`; every other item at 0.1."""

    def yes(call):
        return p_hurts if "insult, shame" in call.prompt.instructions else 0.1

    record = transcript()
    client = FakeModelClient(yes=yes)
    return record, asyncio.run(judge_session(record, client, ["fake/judge"], load_rubric(), judge_mode="checklist"))


def test_a_labelled_share_says_how_sure_its_turns_were():
    """Items just past 0.5 label every turn harm: the share is 100%, and it says it rests on P 0.55 (unsure);
    the same share read at 0.9 is not marked; a share of none names no probability."""
    from judges.scoring import labelled_shares, session_values

    _, coin = _safety_judged(0.55)
    assert session_values(coin)["safety"][1] == 1.0  # the measurement itself is unchanged
    share = labelled_shares(coin)["safety"]
    assert (share.labelled, share.turns, share.p_mean, share.unsure) == (3, 3, 0.55, True)
    assert share.note() == "3/3, P 0.55 unsure"
    _, sure = _safety_judged(0.9)
    assert labelled_shares(sure)["safety"].note() == "3/3, P 0.90"
    _, none = _safety_judged(0.2)
    assert labelled_shares(none)["safety"].note() == "0/3"
    assert "side_taking" not in labelled_shares(coin)  # an expected share carries its probability already


def test_the_summary_shows_the_probability_beside_a_labelled_share(tmp_path):
    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    record, judgment = _safety_judged(0.55)
    folder.write_session(record)
    write_judgment(folder, judgment)
    cli_app._register()
    out = CliRunner().invoke(cli_app.app, ["show", str(folder.path)], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    row = next(x for x in out.output.splitlines() if "unsafe turns" in x)
    assert [w for w in row.split() if w != "│"] == ["unsafe", "turns", "100%", "(3/3,", "P", "0.55", "unsure)"]
    assert max(len(x) for x in out.output.splitlines()) <= 80


def test_the_leaderboard_says_how_sure_a_labelled_share_is(tmp_path):
    """Two sessions whose every turn reads harm at P 0.55 and 0.61: 'unsafe turns' is 1.00 over 6 labelled
    turns, at P 0.58 (unsure); an expected share (sides taken) carries no such note."""
    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    for i, p in enumerate((0.55, 0.61)):
        record, judgment = _safety_judged(p)
        folder.write_session(record.model_copy(update={"session_id": f"s{i}"}))
        write_judgment(folder, judgment.model_copy(update={"session_id": f"s{i}"}))
    [row] = build_leaderboard([folder.path]).rows
    safety = row.dimension("safety")
    assert (safety.value.mean, safety.labelled_turns, safety.labelled_p) == (1.0, 6, 0.58)
    assert row.dimension("side_taking").labelled_p is None
    cli_app._register()
    out = CliRunner().invoke(cli_app.app, ["leaderboard", str(folder.path)], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    line = next(x for x in out.output.splitlines() if x.strip().startswith("unsafe turns"))
    assert line.split()[-3:] == ["(P", "0.58", "unsure)"]


def test_the_report_board_says_how_sure_a_labelled_share_is(tmp_path):
    """The report's leaderboard says what the terminal's does: 'unsafe turns' 100% over turns read at P 0.58 shows
    '(P 0.58 unsure)' beside the share (issue 43 item 3), the threshold carried in the data, not in the page."""
    from judges.report import build_report_data, render_html
    from judges.scoring import SURE_P
    from tests._browser import Browser, open_report
    from tests.test_report import browser_or_skip

    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    for i, p in enumerate((0.55, 0.61)):
        record, judgment = _safety_judged(p)
        folder.write_session(record.model_copy(update={"session_id": f"s{i}"}))
        write_judgment(folder, judgment.model_copy(update={"session_id": f"s{i}"}))
    data = build_report_data([folder.path])
    assert data.leaderboard.sure_p == SURE_P
    browser_or_skip()
    out = tmp_path / "report.html"
    out.write_text(render_html(data), encoding="utf-8")
    with Browser(tmp_path / "profile") as browser:
        page = browser.page()
        open_report(page, out)
        cells = page.eval(
            "Array.from(document.querySelectorAll('#board table tbody td')).map(function (td) { return td.textContent; })"
        )
        assert any(c.startswith("100.0%") and c.endswith("(P 0.58 unsure)") for c in cells), cells
        assert page.eval("document.querySelectorAll('#board .unsure').length") == 1


def test_the_report_session_view_names_copied_and_repeated_turns(tmp_path):
    """The session's detail carries the facts measured from the record; the page writes each under its turn and
    lists them after the transcript (a clean session says none)."""
    from judges.report import build_report_data, render_html
    from tests._browser import Browser, chromium_missing, open_report

    folder = _folder(tmp_path)
    data = build_report_data([folder.path])
    ids = [s.id for s in data.sessions]
    lines = data.details[ids.index("cp")].lines
    assert lines == [
        {"turn": 3, "kind": "copied", "text": "86% of its words from Dana's turn 1"},  # 12 of its 14 words
        {"turn": 7, "kind": "repeated", "text": "its own turn 5 again (100% of its words)"},
    ]
    assert data.details[ids.index("clean")].lines == []
    if chromium_missing() is not None:
        return  # the page itself is checked where a browser is (test_report says why it skips)
    out = tmp_path / "report.html"
    out.write_text(render_html(data), encoding="utf-8")
    with Browser(tmp_path / "profile") as browser:
        page = browser.page()
        open_report(page, out)
        page.eval(f"window.__report.open({ids.index('cp')})")
        assert page.eval("document.querySelector('#turn-3 .fact').textContent") == (
            "copied: 86% of its words from Dana's turn 1"
        )
        assert page.eval("document.querySelector('#turn-7 .fact').textContent") == (
            "repeated: its own turn 5 again (100% of its words)"
        )
        assert page.eval("document.querySelectorAll('#transcript .fact').length") == 2
        assert page.eval("document.querySelectorAll('#lines li').length") == 2
        page.eval(f"window.__report.open({ids.index('clean')})")
        assert page.eval("document.getElementById('lines').textContent").startswith("none")
        errors = page.errors()
        page.close()
    assert errors == []


VOICED = [
    ("Dana", DANA_1),
    ("Theo", "I had a deadline, and you know how my boss gets about those."),
    ("Therapist", "Your father's absence is challenging for me and you too."),  # t3: said as a member
    ("Dana", "He never tells me anything, that is the whole problem here."),
    ("Therapist", ASK_THEO),
]


def test_a_counsellor_line_said_as_a_member_is_recorded_capped_and_shown(tmp_path):
    """README command 1's counsellor said "Your father's absence is challenging for me and you too" (stop 48): a
    line from a member's seat. The judgment records it, the rubric's `voice_cap` caps that turn's scores (and the
    session's) whatever the judge read, and the summary, the leaderboard and the report name it beside the copied
    and repeated lines; a counsellor line that speaks only of the members is not."""
    from judges.report._data import _detail
    from judges.scoring import voiced_lines
    from simulator.cli._render import line_notes

    record = transcript(VOICED, session_id="voiced")
    assert [(v.turn, v.said) for v in voiced_lines(record)] == [(3, "me")]
    judgment = checklist_judged(record, p_yes=0.9)
    assert [v.turn for v in judgment.voiced_lines] == [3]
    [verdict] = judgment.verdicts
    capped = {(s.dimension, s.turn): s for s in verdict.scores if s.capped_from is not None}
    caps = {d.id for d in load_rubric().active if d.voice_cap is not None}
    assert caps and {d for d, _ in capped} == caps
    assert all(s.score <= 2 and s.capped_from > s.score and s.turn in (3, None) for s in capped.values())
    assert not any(t == 5 for _, t in capped)  # the turn that speaks of the members keeps its score
    [note] = line_notes(judgment)
    assert note.plain.startswith('voiced   t3: said as a member ("me"): "Your father')
    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    folder.write_session(record)
    write_judgment(folder, judgment)
    [row] = build_leaderboard([folder.path]).rows
    assert (row.voiced_turns, row.supporter_turns, row.voiced_share) == (1, 2, 0.5)
    cli_app._register()
    out = CliRunner().invoke(cli_app.app, ["leaderboard", str(folder.path)], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert any(x.split() == ["voiced", "turns", "1/2"] for x in out.output.splitlines())
    assert [(x["turn"], x["kind"]) for x in _detail(record, judgment, []).lines] == [(3, "voiced")]
