"""Real or simulated? (issue 42, item 5): matched pairs, blind prompts in both orders, accuracy with a cluster
bootstrap, the human rating batch and its key, the CLI option (fake models only)."""

from __future__ import annotations

import asyncio
import json
import random
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges.room_audit import (
    LinePair,
    cluster_bootstrap_ci,
    draw_pairs,
    pair_prompt,
    real_or_simulated,
    score_rating_sheets,
    write_rating_batch,
)
from judges.stats import bootstrap_ci
from personas.common.errors import UserError
from personas.rescue import case_from_sample, gold_from_sample, load_rescue
from simulator.cli import app as cli_app
from simulator.llm.fake import FakeModelClient
from simulator.records import SessionRecord, SessionStatus, Turn
from simulator.runfolder import RunFolder
from simulator.serve._rate import RatingGiven, RatingSheets, load_batch

WIDE = {"COLUMNS": "200"}


def _real_line(i: int, who: str) -> str:
    return f"{who} here, and the boat loan from spring number {i} is still on my mind"


def _sample(rows_per_member: int = 12) -> dict:
    """An invented couple sample: the therapist between alternating client rows, one short row per member."""
    rows, n = [], 0
    for i in range(rows_per_member):
        for who in ("Kim", "Lee"):
            n += 1
            rows.append({"row_index": n, "primary_speaker": who, "target": ["Therapist"],
                         "dialogue_cleaned": _real_line(i, who), "utterance_type": "accusation",
                         "internal_emotion": [{"person": who, "emotion_description": "hurt", "intensity": 6}],
                         "viewpoints_attitudes": [], "support_strategy": [], "relation_pattern": "attack_attack"})  # fmt: skip
        n += 1
        rows.append({"row_index": n, "primary_speaker": "Therapist", "target": ["Kim", "Lee"],
                     "dialogue_cleaned": "Say more.", "utterance_type": "", "internal_emotion": [],
                     "viewpoints_attitudes": [], "support_strategy": [], "relation_cycle_state": "attack_attack"})  # fmt: skip
    for who in ("Kim", "Lee"):
        n += 1
        rows.append({"row_index": n, "primary_speaker": who, "target": ["Therapist"], "dialogue_cleaned": "Yeah.",
                     "utterance_type": "defense", "internal_emotion": [], "viewpoints_attitudes": [],
                     "support_strategy": []})  # fmt: skip
    return {"sample_id": "kim_and_lee/001_fixture", "scenario": "couple", "participants": ["Kim", "Lee"], "rows": rows}


@pytest.fixture
def sample_file(tmp_path) -> Path:
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(_sample()) + "\n")
    return path


def _record(sample_file: Path, sid: str, lines: list[tuple[str, str]], model: str = "fake/member-1") -> SessionRecord:
    case = case_from_sample(load_rescue(sample_file)[0])
    turns, index = [], 0
    for speaker, text in lines:
        index += 1
        turns.append(Turn(index=index, speaker=speaker, kind="member", addressees=["Therapist"], text=text))
        index += 1
        turns.append(Turn(index=index, speaker="Therapist", kind="supporter", text="Tell me more about that."))
    return SessionRecord(session_id=sid, case=case, supporter="scripted", models={"member": model}, seed=0,
                         max_turns=len(lines), status=SessionStatus.COMPLETED, turns=turns)  # fmt: skip


def _sim(sid: str, i: int, who: str) -> str:
    return f"I feel like we should talk about our feelings, {who}, take {int(sid[1:]) * 100 + i}"


def _records(sample_file: Path, sessions: int = 6, turns: int = 4) -> list[SessionRecord]:
    return [
        _record(sample_file, f"s{s}", [(w, _sim(f"s{s}", i, w)) for i, w in enumerate(["Kim", "Lee"] * (turns // 2))])
        for s in range(sessions)
    ]


def _golds(sample_file: Path):
    gold = gold_from_sample(load_rescue(sample_file)[0])
    return {gold.sample_id: gold}


def _pairs(sample_file: Path, sessions: int = 6, turns: int = 4) -> list[LinePair]:
    pairs, unmatched = draw_pairs({"run": _records(sample_file, sessions, turns)}, _golds(sample_file))
    assert unmatched == 0
    return pairs


LINE_A = re.compile(r'Line A, said by \w+:\n"(.*?)"\n', re.S)


def _line_a(call) -> str:
    return LINE_A.search(call.prompt.context).group(1)


def _oracle(real_lines: set[str]):
    return lambda call: 1.0 if _line_a(call) in real_lines else 0.0


def _ask(pairs, yes, *, cluster="session"):
    client = FakeModelClient(yes=yes)
    return asyncio.run(real_or_simulated(pairs, client, "fake/check", cluster=cluster)), client


# ---- pairs --------------------------------------------------------------------------------------------------


def test_pairs_match_the_member_and_the_position_and_use_each_real_line_once(sample_file):
    pairs = _pairs(sample_file)
    assert len(pairs) == 24
    assert all(p.same_speaker and p.speaker == p.real_speaker for p in pairs)
    first = [p for p in pairs if p.session_id == "s0"]
    # the k-th member turn meets the same member's real row nearest the k-th client row
    assert [(p.position, p.real_position) for p in first] == [(1, 1), (2, 2), (3, 3), (4, 4)]
    assert len({p.real_row for p in pairs}) == len(pairs)  # no real line twice: sessions share none
    assert all("Yeah." not in p.real for p in pairs)  # under MIN_WORDS: never paired


def test_a_member_without_real_lines_left_takes_another_members_and_says_so(sample_file):
    records = [_record(sample_file, f"s{s}", [("Kim", _sim(f"s{s}", i, "Kim")) for i in range(5)]) for s in range(5)]
    pairs, unmatched = draw_pairs({"run": records}, _golds(sample_file))
    assert unmatched == 1 and len(pairs) == 24  # 25 Kim turns, 24 real rows in all: one left over
    assert sum(not p.same_speaker for p in pairs) == 12
    records.append(_record(sample_file, "s9", [("Kim", _sim("s9", 0, "Kim"))]))
    _, unmatched = draw_pairs({"run": records}, _golds(sample_file))
    assert unmatched == 2  # the 25th turn and the new one: every real row is taken


def test_sessions_of_other_cases_are_left_out(sample_file):
    from personas.library import resolve_case

    other = _records(sample_file, 1)[0].model_copy(update={"case": resolve_case("dana-and-theo")})
    assert draw_pairs({"run": [other]}, _golds(sample_file)) == ([], 0)


# ---- blind, both orders ---------------------------------------------------------------------------------------


def test_each_pair_is_asked_twice_with_the_lines_swapped_and_nothing_else_changed(sample_file):
    pairs = _pairs(sample_file, sessions=2)
    _, client = _ask(pairs, lambda call: 0.5)
    assert len(client.calls) == 2 * len(pairs)
    for pair, (first, second) in zip(pairs, zip(client.calls[::2], client.calls[1::2], strict=True), strict=True):
        a, b = first.prompt.context, second.prompt.context
        assert _line_a(first) == pair.real and _line_a(second) == pair.simulated
        swapped = a.replace(pair.real, "\0").replace(pair.simulated, pair.real).replace("\0", pair.simulated)
        assert swapped == b  # the order is the only difference between the two prompts
        assert first.prompt.instructions == second.prompt.instructions
        for text in (a, first.prompt.instructions):
            for leak in (pair.session_id, pair.sample_id, pair.pair_id, "RESCUE", "simulated"):
                assert leak not in text


def test_the_question_is_the_checklist_item_read_as_p_yes(sample_file):
    pair = _pairs(sample_file, sessions=1)[0]
    context, about, question = pair_prompt(pair, "real_first")
    _, client = _ask([pair], lambda call: 0.5)
    assert client.calls[0].prompt.context == context
    assert question in client.calls[0].prompt.instructions and "yes or no" in client.calls[0].prompt.instructions


# ---- readings ---------------------------------------------------------------------------------------------------


def test_a_judge_that_always_picks_the_real_line_scores_one(sample_file):
    pairs = _pairs(sample_file)
    result, _ = _ask(pairs, _oracle({p.real for p in pairs}))
    assert result.scored == 24 and result.failed == 0 and result.clusters == 6
    assert result.accuracy == 1.0 and result.hard_accuracy == 1.0
    assert result.accuracy_ci == (1.0, 1.0) and result.p_line_a == 0.5
    assert result.cases == {pairs[0].case_id: 24}


def test_a_coin_flip_judge_scores_about_half_with_an_interval_covering_half(sample_file):
    pairs = _pairs(sample_file)
    rng = random.Random(7)
    result, _ = _ask(pairs, lambda call: float(rng.random() < 0.5))
    assert 0.35 <= result.accuracy <= 0.65 and 0.35 <= result.hard_accuracy <= 0.65
    assert result.accuracy_ci[0] < 0.5 < result.accuracy_ci[1]
    assert result.hard_accuracy_ci[0] < 0.5 < result.hard_accuracy_ci[1]


def test_a_judge_that_always_leans_to_line_a_cannot_tell_and_its_lean_is_shown(sample_file):
    result, _ = _ask(_pairs(sample_file), lambda call: 0.8)
    assert result.accuracy == pytest.approx(0.5) and result.hard_accuracy == 0.5
    assert result.p_line_a == pytest.approx(0.8)


def test_failures_are_recorded_and_not_scored(sample_file):
    pairs = _pairs(sample_file, sessions=2)
    real = {p.real for p in pairs}
    broken = pairs[1].simulated

    def yes(call):
        return (
            RuntimeError("no probability on yes or no") if f'"{broken}"' in call.prompt.context else _oracle(real)(call)
        )

    result, _ = _ask(pairs, yes)
    assert result.failed == 1 and result.scored == len(pairs) - 1 and result.accuracy == 1.0
    failed = next(r for r in result.readings if r.failure)
    assert failed.pair_id == pairs[1].pair_id and "no probability" in failed.failure and failed.p_real is None


def test_one_cluster_gives_no_interval_and_the_sample_can_be_the_cluster(sample_file):
    pairs = _pairs(sample_file)
    result, _ = _ask(pairs, _oracle({p.real for p in pairs}), cluster="sample")
    assert result.clusters == 1 and result.accuracy_ci is None and "no interval" in result.note


def test_the_cluster_bootstrap_is_the_plain_bootstrap_when_every_cluster_holds_one_value():
    values = [0.1, 0.9, 0.4, 0.7, 0.55, 0.3, 1.0, 0.0]
    clusters = [f"c{i:02d}" for i in range(len(values))]
    assert cluster_bootstrap_ci(values, clusters) == pytest.approx(bootstrap_ci(values))
    # whole clusters move together: a cluster of many equal values cannot be split
    wide = cluster_bootstrap_ci([1.0] * 10 + [0.0] * 10, ["a"] * 10 + ["b"] * 10)
    assert wide[0] == 0.0 and wide[1] == 1.0


# ---- the human batch ----------------------------------------------------------------------------------------


def test_the_rating_batch_is_blind_loads_in_rate_and_scores_with_its_key(sample_file, tmp_path):
    pairs = _pairs(sample_file)
    paths = write_rating_batch(pairs, tmp_path / "ros.jsonl", records=_records(sample_file))
    batch = load_batch(paths.items)  # what `serve --rate` reads
    assert len(batch.items) == 24 and batch.dimensions["real_line"]["max"] == 2
    items_text = Path(paths.items).read_text() + Path(paths.csv).read_text()
    for p in pairs:
        assert p.session_id not in items_text and p.pair_id not in items_text and p.sample_id not in items_text
    assert '"real"' not in items_text and "key" not in Path(paths.items).read_text()
    key = json.loads(Path(paths.key).read_text())
    assert {k["real"] for k in key["items"]} == {"A", "B"}  # the order is drawn, not fixed
    for item, k in zip(batch.items, key["items"], strict=True):
        shown = item.transcript[0 if k["real"] == "A" else 1].text
        assert shown == k["pair"]["real"]
    sheets = RatingSheets([paths.items])
    for item, k in zip(batch.items, key["items"], strict=True):
        right = 1 if k["real"] == "A" else 2
        sheets.save(
            sheets.batches[0], RatingGiven(rater="ann", item_id=item.item_id, dimension="real_line", value=right)
        )
        sheets.save(sheets.batches[0], RatingGiven(rater="bo", item_id=item.item_id, dimension="real_line", value=1))
    scored = score_rating_sheets(paths.key, sorted(tmp_path.glob("ros.*.ratings.jsonl")))
    assert scored.ratings == 48 and scored.items == 24 and scored.by_rater["ann"] == 1.0
    assert scored.by_rater["bo"] == pytest.approx(sum(k["real"] == "A" for k in key["items"]) / 24)
    assert scored.confusion == pytest.approx(1 - scored.accuracy)


def test_a_line_naming_a_model_writes_no_batch(sample_file, tmp_path):
    records = [_record(sample_file, "s0", [("Kim", "as fake/member-1 I would say this much")])]
    pairs, _ = draw_pairs({"run": records}, _golds(sample_file))
    with pytest.raises(UserError, match="names a model"):
        write_rating_batch(pairs, tmp_path / "ros.jsonl", records=records)
    assert not list(tmp_path.glob("ros*"))


# ---- the command ------------------------------------------------------------------------------------------------


@pytest.fixture
def run_dir(tmp_path, sample_file) -> Path:
    run = RunFolder(tmp_path / "run")
    run.open({"case": "rescue", "supporter": "scripted"})
    for rec in _records(sample_file):
        run.write_session(rec)
    return run.path


def _invoke(*args):
    cli_app._register()
    result = CliRunner().invoke(cli_app.app, [str(a) for a in args], env=WIDE)
    assert "Traceback" not in result.output
    return result


def test_the_command_prints_json_and_a_table_and_writes_the_batch(monkeypatch, run_dir, sample_file, tmp_path):
    real = {_real_line(i, w) for i in range(12) for w in ("Kim", "Lee")}
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda s: FakeModelClient(yes=_oracle(real)))
    res = _invoke("fidelity", run_dir, "--real-or-simulated", "--rescue", sample_file, "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["accuracy"] == 1.0 and data["scored"] == 24 and data["clusters"] == 6
    res = _invoke("fidelity", run_dir, "--real-or-simulated", "--rescue", sample_file, "--rate-batch",
                  tmp_path / "b" / "ros.jsonl")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "Real or simulated?" in res.output and "1.00 [1.00, 1.00]" in res.output and "ros.key.json" in res.output
    assert (tmp_path / "b" / "ros.key.json").is_file()
    res = _invoke("fidelity", run_dir, "--rated", tmp_path / "b" / "ros.key.json")
    assert res.exit_code == 2 and "no rater sheet" in res.output


def test_the_command_needs_rescue(run_dir):
    res = _invoke("fidelity", run_dir, "--real-or-simulated")
    assert res.exit_code == 2 and "--rescue" in res.output


# ---- the shared RESCUE samples (skipped without ../shared/rescue) --------------------------------------------


@pytest.mark.rescue
def test_pairs_on_the_shared_rescue_samples(rescue_dir):
    samples = load_rescue(rescue_dir / "samples.jsonl")
    for sample in (samples[0], next(s for s in samples if s.group == "family")):
        case = case_from_sample(sample)
        lines = [(m, f"I feel like nobody hears me, {m}, turn {i}") for i, m in enumerate(case.member_names * 2)]
        rec = _record(rescue_dir / "samples.jsonl", "s0", []).model_copy(
            update={
                "case": case,
                "turns": [Turn(index=i + 1, speaker=s, kind="member", text=t) for i, (s, t) in enumerate(lines)],
            }  # fmt: skip
        )
        gold = gold_from_sample(sample)
        pairs, unmatched = draw_pairs({"run": [rec]}, {gold.sample_id: gold})
        assert pairs and unmatched == 0
        client_texts = {r.text.strip() for r in gold.rows if r.speaker in gold.participants}
        assert all(p.real in client_texts and p.speaker == p.real_speaker for p in pairs)
