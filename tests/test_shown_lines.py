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
    monkeypatch.setattr("simulator.cli.run_cmd.make_client", lambda settings: client)
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
