"""A supporter turn spliced from several members' lines is a copied line too (issue 23, item 6).

The README's first command (dana-and-theo, embedded model) gave a counsellor turn made of Dana's turn 1 and Theo's
turn 2, each under half of it, which a one-source check let through. Copies are now measured as the share of the
supporter's words that are verbatim runs from earlier member turns, summed over sources; the sources are recorded
in the one fact the judges see and the copy cap reads. Fake judges only.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from judges import judge_session, load_rubric
from judges.scoring import read_judgment, write_judgment
from judges.scoring._facts import COPY_MIN_COVERAGE, copied_lines, copy_runs
from simulator.llm.fake import FakeModelClient
from simulator.records import SessionRecord, Turn
from tests._session_fixtures import couple_session, fill_reply

CAPPED = ("strategy_fit", "target_fit", "relation_sensitivity")  # copy_cap 2 in the default rubric

# The README's first command on the embedded model (dana-and-theo, 4 member turns): turn 4 hands Dana's turn 3
# back to Theo; turn 6 is Dana's turn 1, one sentence of its own, and the end of Theo's turn 2.
FIRST_COMMAND = [
    ("Dana", "Therapist, could you please remind me what I need to do with Theo?"),
    (
        "Theo",
        "Hey, I was just trying to figure out what to do with the promotion. Maybe we can talk about it separately "
        "sometime.",
    ),
    (
        "Dana",
        "Okay, I appreciate you taking this time. Maybe we can talk about it together later and see if there's a way "
        "to make things work out for both of us.",
    ),
    (
        "Therapist",
        "Hey Theo, I appreciate your taking this time. Maybe we can talk about it together later and see if there's "
        "a way to make things work out for both of us.",
    ),
    (
        "Theo",
        "Thank you for reminding me about that. I understand now why you're being extra cautious with the promotion.",
    ),
    (
        "Therapist",
        "could you please remind me what I need to do with Theo? It's important for us to work together on this. "
        "Maybe we can talk about it separately sometime.",
    ),
]


def transcript(lines: list[tuple[str, str]], case: str = "dana-and-theo") -> SessionRecord:
    from personas.library import resolve_case

    return couple_session().model_copy(
        update={
            "case": resolve_case(case),
            "turns": [
                Turn(index=i, speaker=who, kind="supporter" if who == "Therapist" else "member", text=text)
                for i, (who, text) in enumerate(lines, start=1)
            ],
        }
    )


def copies_in(record: SessionRecord) -> list[tuple[int, list[tuple[int, str]], float]]:
    return [(c.turn, [(s.turn, s.member) for s in c.sources], round(c.coverage, 3)) for c in copied_lines(record)]


def judged(record: SessionRecord):
    client = FakeModelClient(default=lambda call: fill_reply(call.schema, record=record))  # the judge gives 4s
    return asyncio.run(judge_session(record, client, ["fake/judge"], load_rubric(), judge_mode="verdict")), client


def score_of(judgment, item: str, dimension: str):
    return next(s for s in judgment.verdicts[0].scores if s.item == item and s.dimension == dimension)


def test_the_first_commands_splice_is_found_with_both_sources() -> None:
    record = transcript(FIRST_COMMAND)
    # t6: 29 words; "could you please remind me what i need to do with theo" (12) from Dana's turn 1, "maybe we can
    # talk about it separately sometime" (8) from Theo's turn 2; neither line is half of it
    (t4, t6) = copied_lines(record)
    assert [(s.turn, s.member, round(s.coverage, 3)) for s in t6.sources] == [(1, "Dana", 0.414), (2, "Theo", 0.276)]
    assert t6.turn == 6 and round(t6.coverage, 3) == 0.69 == round(sum(s.coverage for s in t6.sources), 3)
    # t4 is Dana's turn 3 handed back, one source (its opening words are its own)
    assert (t4.turn, [(s.turn, s.member) for s in t4.sources], round(t4.coverage, 3)) == (4, [(3, "Dana")], 0.839)


def test_a_splice_is_shown_to_the_judges_and_caps_scores_like_a_single_copy() -> None:
    record = transcript(FIRST_COMMAND)
    j, client = judged(record)
    assert [(c.turn, [s.turn for s in c.sources]) for c in j.copied_lines] == [(4, [3]), (6, [1, 2])]
    block = client.calls[0].prompt.context.split("<<<FACTS\n")[1].split("\nFACTS>>>")[0].splitlines()
    assert block[0].startswith("- t4 copies Dana's turn 3 (84% of its words): \"Hey Theo,")
    assert block[1].startswith(
        "- t6 splices earlier member lines (69% of its words): Dana's turn 1 (41%), Theo's turn 2 (28%): "
        '"could you please remind me'
    )
    for turn in ("t4", "t6"):
        for dim in CAPPED:
            capped = score_of(j, turn, dim)
            assert (capped.score, capped.capped_from) == (2, 4) and j.aggregate(turn, dim).mean == 2
        assert score_of(j, turn, "timing").score == 4  # no copy_cap
    assert score_of(j, "session", "session_relation_sensitivity").score == 2


def test_a_splice_alone_caps_its_turn() -> None:
    """Without the single-source copy at t4, the splice at t6 is what caps the session: one path for both."""
    lines = list(FIRST_COMMAND)
    lines[3] = ("Therapist", "Theo, what goes on for you when Dana asks to be reminded what to do with you?")
    record = transcript(lines)
    j, _ = judged(record)
    assert [c.turn for c in j.copied_lines] == [6]
    assert (score_of(j, "t6", "strategy_fit").score, score_of(j, "t4", "strategy_fit").score) == (2, 4)
    assert score_of(j, "session", "session_relation_sensitivity").capped_from == 4


REFLECTING_BOTH = [
    ("Dana", "I feel invisible in my own home, like nobody sees how hard I work to keep this family together."),
    ("Theo", "I work late because someone has to pay for all of this, and nobody thanks me for it either."),
    (
        "Therapist",
        "Dana, you said 'I feel invisible in my own home', and Theo, you said 'nobody thanks me for it'. It sounds "
        "like you are both working hard and both waiting to be seen by the other. What would it take to notice "
        "each other this week?",
    ),
]


def test_a_reflection_quoting_a_phrase_from_each_member_is_not_a_copy() -> None:
    record = transcript(REFLECTING_BOTH)
    found = copy_runs(record.turns[2], record.turns[:2])
    assert found is not None and [s.turn for s in found.sources] == [1, 2]  # both quotes are verbatim runs...
    assert round(found.coverage, 3) == 0.261 < COPY_MIN_COVERAGE  # ...12 of its 46 words
    assert copied_lines(record) == []
    j, client = judged(record)
    assert j.copied_lines == [] and "FACTS" not in client.calls[0].prompt.context
    assert score_of(j, "t3", "strategy_fit").score == 4


def test_a_member_echoing_the_counsellor_is_no_source() -> None:
    """Words the counsellor said first, then a member echoed, are the counsellor's own when it says them again."""
    reframe = "It sounds like you are both caught in a loop where each of you feels unheard."
    lines = [
        ("Dana", "He is always on his phone when I talk to him about my day."),
        ("Therapist", reframe),
        ("Theo", "Maybe. It sounds like we are both caught in a loop where each of us feels unheard."),
        ("Therapist", "Yes: you are both caught in a loop where each of you feels unheard, and it hurts."),
    ]
    assert copied_lines(transcript(lines)) == []
    # the same line said first by Theo is his, and handing it back is a copy
    lines[1] = ("Therapist", "What happens for each of you when that happens?")
    lines[2] = ("Theo", "I think we are both caught in a loop where each of you feels unheard.")
    assert copies_in(transcript(lines)) == [(4, [(3, "Theo")], 0.706)]


def test_judgments_keep_the_sources_and_read_back_the_one_source_layout(tmp_path: Path) -> None:
    record = transcript(FIRST_COMMAND)
    j, _ = judged(record)
    (tmp_path / "judgments").mkdir()
    (tmp_path / "manifest.json").write_text("{}")
    path = write_judgment(tmp_path, j)
    back = read_judgment(tmp_path, j.session_id)
    assert back is not None and back.copied_lines == j.copied_lines and back.schema_version == 3
    # a judgment written before splices were measured named one copied turn: it reads as one source
    old = json.loads(path.read_text())
    old["schema_version"] = 1
    old["copied_lines"] = [
        {"turn": 6, "copies_turn": 5, "member": "Theo", "overlap": 1.0, "share": 0.95, "quote": "I understand"}
    ]
    path.write_text(json.dumps(old))
    (line,) = read_judgment(tmp_path, j.session_id).copied_lines
    assert (line.turn, line.coverage, [(s.turn, s.member, s.coverage) for s in line.sources]) == (
        6,
        0.95,
        [(5, "Theo", 0.95)],
    )
