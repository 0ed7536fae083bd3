"""A supporter repeating its own earlier line is a recorded fact (issue 33, item 3): measured from the record, shown
to the judges, capping the rubric's `repeat_cap` dimensions, counted per supporter on the leaderboard, and the
supporter's own behaviour, never a simulator fault. Fake judges only."""

from __future__ import annotations

import asyncio
import json

from typer.testing import CliRunner

from judges import build_leaderboard, faulted, judge_session, load_rubric
from judges.scoring import (
    REPEAT_MIN_COVERAGE,
    Rubric,
    read_judgment,
    repeat_runs,
    repeated_lines,
    write_judgment,
)
from simulator.cli import app as cli_app
from simulator.faults import detect_faults
from simulator.llm.fake import FakeModelClient
from simulator.records import SessionRecord, Turn
from simulator.runfolder import RunFolder
from tests._session_fixtures import couple_session, fill_reply

CAPPED = ("strategy_fit", "target_fit", "relation_sensitivity")  # repeat_cap 2 in the default rubric
ASK_THEO = "Theo, can you tell Dana what it is like for you when she waits for you?"
REPEATING = [
    ("Dana", "You promised you would be home by six and you were not."),
    ("Theo", "I had a deadline, and you know how my boss gets about those."),
    ("Therapist", ASK_THEO),
    ("Dana", "He never tells me anything, that is the whole problem here."),
    ("Therapist", "Dana, what do you most want Theo to understand about those evenings?"),
    ("Theo", "I guess I just feel like whatever I do it is never enough."),
    ("Therapist", ASK_THEO),  # t7: t3 again, word for word
]


def transcript(lines: list[tuple[str, str]], session_id: str = "s1", supporter: str = "a") -> SessionRecord:
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


def judged(record: SessionRecord):
    client = FakeModelClient(default=lambda call: fill_reply(call.schema, record=record))  # the judge gives 4s
    return asyncio.run(judge_session(record, client, ["fake/judge"], load_rubric(), judge_mode="verdict")), client


def score_of(judgment, item: str, dimension: str):
    return next(s for s in judgment.verdicts[0].scores if s.item == item and s.dimension == dimension)


def test_a_line_said_again_word_for_word_or_nearly_is_a_repeat():
    [r] = repeated_lines(transcript(REPEATING))
    assert (r.turn, r.repeats_turn, r.coverage, r.quote) == (7, 3, 1.0, ASK_THEO)
    nearly = [*REPEATING[:6], ("Therapist", "So " + ASK_THEO)]  # one word added: 16 of its 17 words
    [r] = repeated_lines(transcript(nearly))
    assert (r.turn, r.repeats_turn, round(r.coverage, 3)) == (7, 3, 0.941)


def test_a_question_frame_used_again_or_turned_to_the_other_partner_is_not_a_repeat():
    frame = [*REPEATING[:2], ("Therapist", "What do you think the hardest part is?"), REPEATING[3]]
    frame.append(("Therapist", "So what do you think the real worry is?"))
    found = repeat_runs(transcript(frame).turns[4], transcript(frame).turns[:4])
    assert found is not None and round(found.coverage, 2) == 0.56 < REPEAT_MIN_COVERAGE  # 5 of its 9 words
    turned = [*REPEATING[:6], ("Therapist", "Dana, can you tell Theo what it is like for you when he waits for you?")]
    assert repeated_lines(transcript(frame)) == [] and repeated_lines(transcript(turned)) == []


def test_a_repeat_is_shown_to_the_judges_and_caps_the_rubrics_dimensions():
    record = transcript(REPEATING)
    j, client = judged(record)
    assert [(r.turn, r.repeats_turn) for r in j.repeated_lines] == [(7, 3)] and j.copied_lines == []
    block = client.calls[0].prompt.context.split("<<<FACTS\n")[1].split("\nFACTS>>>")[0].splitlines()
    assert block == [f'- t7 repeats the counsellor\'s own turn 3 (100% of its words): "{ASK_THEO}"']
    for dim in CAPPED:
        capped = score_of(j, "t7", dim)
        assert (capped.score, capped.capped_from) == (2, 4) and j.aggregate("t7", dim).mean == 2
        assert score_of(j, "t3", dim).score == 4  # the first time it was said is not capped
    assert score_of(j, "t7", "timing").score == 4  # no repeat_cap
    assert score_of(j, "session", "session_relation_sensitivity").capped_from == 4
    assert score_of(j, "session", "overall_quality").score == 4


def test_a_repeat_is_the_supporters_doing_never_a_simulator_fault():
    record = transcript(REPEATING)
    j, _ = judged(record)
    assert detect_faults(record) == [] and faulted(record, j) is None


def _folder(tmp_path) -> RunFolder:
    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    for record in (transcript(REPEATING, "rep"), couple_session("clean", supporter="a")):
        folder.write_session(record)
        write_judgment(folder, judged(record)[0])
    return folder


def test_the_leaderboard_counts_repeated_turns_per_supporter(tmp_path):
    folder = _folder(tmp_path)
    [row] = build_leaderboard([folder.path]).rows
    assert (row.scored, row.simulator_failures) == (2, 0)  # a repeat leaves no session out
    assert (row.repeated_turns, row.supporter_turns, row.repeated_share) == (1, 5, 0.2)  # 3 + 2 supporter turns
    cli_app._register()
    out = CliRunner().invoke(cli_app.app, ["leaderboard", str(folder.path)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    line = next(x for x in out.output.splitlines() if "repeated turns" in x and "1/5" in x)
    assert line.split() == ["repeated", "turns", "1/5"]


def test_judgments_and_rubrics_written_before_repeats_were_measured_still_load(tmp_path):
    folder = _folder(tmp_path)
    path = folder.path / "judgments" / "rep.json"
    old = json.loads(path.read_text())
    del old["repeated_lines"]
    for dim in old["rubric"]["dimensions"]:
        dim.pop("repeat_cap", None)
    path.write_text(json.dumps(old))
    back = read_judgment(folder, "rep")
    assert back is not None and back.repeated_lines == [] and back.rubric.active[1].repeat_cap is None
    [row] = build_leaderboard([folder.path]).rows
    assert row.repeated_turns == 1  # counted from the session record, not the judgment
    # a rubric without repeat caps keeps the digest it had before the field existed (computed then: f358fe84ba50)
    mini = {
        "name": "mini",
        "version": 1,
        "description": "d",
        "dimensions": [
            {"id": "fit", "level": "intervention", "kind": "scale", "min": 1, "max": 5, "copy_cap": 2,
             "question": "Fit?", "evidence": "e", "anchors": {1: "a", 2: "b", 3: "c", 4: "d", 5: "e"}},
        ],
    }  # fmt: skip
    assert Rubric.model_validate(mini).digest == "f358fe84ba50"


def test_the_repeat_cap_applies_to_checklist_scores():
    """Checklist scores are capped like verdict scores: every item says yes (two good and two bad items on
    strategy fit: 3 on 1-5), and the repeated turn 7 is held to the rubric's 2."""
    record = transcript(REPEATING)
    client = FakeModelClient(yes=lambda call: 0.99)
    j = asyncio.run(judge_session(record, client, ["fake/judge"], load_rubric(), judge_mode="checklist"))
    capped = score_of(j, "t7", "strategy_fit")
    assert (capped.score, capped.capped_from, capped.value) == (2, 3, 2.0)
    assert score_of(j, "t3", "strategy_fit").score == 3  # the first time it was said is not capped
