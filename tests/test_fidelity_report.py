"""`rescue-sim fidelity`: metrics from saved sessions, null-supporter drift, simulated vs real (fake models)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges import audit_record, fidelity_report
from judges.room_audit._sim_vs_real import compare, load_golds
from judges.stats import js_distance
from personas.library import resolve_case
from personas.rescue import case_from_sample, gold_from_sample, load_rescue
from simulator.engine import run_session
from simulator.llm.fake import FakeModelClient
from simulator.records import Feeling, InnerState, SessionRecord, TrackerState, Turn
from simulator.runfolder import RunFolder
from simulator.session_state import SessionConfig
from simulator.supporters import ScriptedSupporter, SilentSupporter
from tests._sim_fakes import RoomScript

WIDE = {"COLUMNS": "220"}


def invoke(app, *args):
    result = CliRunner().invoke(app, [str(a) for a in args], env=WIDE)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def simulate(folder: Path, case, supporter, script: RoomScript, seeds=(0,), turns=4) -> RunFolder:
    run = RunFolder(folder)
    run.open({"case": case.id, "supporter": supporter.spec})
    for seed in seeds:
        client = FakeModelClient(default=script)
        rec = asyncio.run(
            run_session(case, supporter, client, SessionConfig(max_turns=turns, seed=seed), session_id=f"s{seed}")
        )
        run.write_session(rec)
    return run


# ---- the audit of one session -------------------------------------------------------------------------------


def _inner(emotion="hurt", intensity=6, landed="it stung", reason="same old"):
    return InnerState(landed=landed, emotion=emotion, intensity=intensity, felt_heard=4,
                      toward=[Feeling(member="Meera", warmth=3, tension=7)], reason=reason)  # fmt: skip


def test_audit_counts_repeats_flags_and_moves_of_an_old_style_record():
    """The session the issue describes, as an old record (no moves, no flags): every fault is found."""
    case = resolve_case("arjun-and-meera")
    meera_inner = _inner().model_copy(update={"toward": [Feeling(member="Arjun", warmth=3, tension=7)]})
    turns = [
        Turn(index=1, speaker="Meera", kind="member", addressees=["Therapist"], inner=meera_inner,
             text="I know you're talking about me, but I can't help feeling that we're not being listened to."),
        Turn(index=2, speaker="Arjun", kind="member", addressees=["Therapist"],
             inner=_inner(emotion="Meera's tone of voice remained a", landed="x" * 60),
             text="I know you're talking about me, but I can't help feeling that we're not being listened to."),
        Turn(index=3, speaker="Arjun", kind="member", addressees=["Therapist"], inner=_inner(reason="she 回应"),
             text="When you mentioned the motorbike accident, I froze."),
    ]  # fmt: skip
    rec = SessionRecord(session_id="x", case=case, supporter="silent", models={}, seed=1, max_turns=3, turns=turns)
    a = audit_record(rec)
    assert a.member_turns == 3 and a.verbatim_repeats == 1 and a.near_duplicates == 0
    assert a.repetition_rate == pytest.approx(1 / 3)
    assert a.flag_counts == {
        "cut_off": 2,  # the emotion phrase ends on "a"; `landed` is exactly the old 60-character cap
        "duplicate": 1,
        "false_reference": 1,
        "language_switch": 1,
        "not_an_emotion": 1,
    }
    assert a.language_drift == pytest.approx(1 / 3) and a.reask_rate == 0.0 and a.recorded_flag_counts == {}
    assert sorted(a.turn_flags) == [2, 3]


def test_the_audit_reads_a_line_kept_whole_at_the_length_limit_as_the_engine_did():
    """A line the length limit stopped, kept to its full sentences, is not cut; a saved line that stops
    mid-sentence at the limit (a record from before lines were kept whole) still is."""
    from simulator.llm.types import CallRecord

    case = resolve_case("arjun-and-meera")
    at_limit = [CallRecord(model="m", role="member", latency_s=0.0, finish_reason="length")]
    whole = "I sold the motorbike in March. Meera never even asked why."
    cut = "I found out about the motorbike from his brother. Not from him, and now he wants"  # saved before
    turns = [
        Turn(index=1, speaker="Arjun", kind="member", addressees=["Therapist"], text=whole, calls=at_limit,
             dropped="And she"),
        Turn(index=2, speaker="Meera", kind="member", addressees=["Therapist"], text=cut, calls=at_limit),
    ]  # fmt: skip
    rec = SessionRecord(session_id="x", case=case, supporter="silent", models={}, seed=1, max_turns=2, turns=turns)
    a = audit_record(rec)
    assert a.flag_counts == {"cut_off": 1} and sorted(a.turn_flags) == [2]


def test_insider_vs_tracker_gap_comes_from_the_record():
    case = resolve_case("arjun-and-meera")
    calm = {"person": "Arjun", "emotion": "calm", "intensity": 2}
    observed = TrackerState(pattern="pursue_withdraw", emotions=[calm])
    turns = [Turn(index=1, speaker="Arjun", kind="member", addressees=["Therapist"], text="I am fine, really.",
                  inner=_inner(intensity=6), tracker=observed, move="deflect")]  # fmt: skip
    rec = SessionRecord(session_id="g", case=case, supporter="scripted", models={}, seed=1, max_turns=1, turns=turns)
    a = audit_record(rec)
    assert a.intensity_gap == 4.0 and a.moves["Arjun"] == {"deflect": 1}


# ---- run folders, the command and null-supporter drift ------------------------------------------------------


def test_fidelity_command_reports_per_run_and_flags_a_room_that_heals_itself(app, tmp_path):
    case = resolve_case("dana-and-theo")
    # silent supporter, members reporting ever calmer states (the cap lets them drop 2 points a turn)
    healing = simulate(tmp_path / "heal", case, SilentSupporter(), RoomScript(case, intensity=0, tension=0))
    # about the case, so the director's check passes it, and anyone's to say (Theo saying "you took the promotion"
    # would give his own fact away)
    line = "We fight about the promotion and the IVF money every single evening."
    steady = simulate(tmp_path / "steady", case, SilentSupporter(), RoomScript(case, intensity=9, tension=9, line=line))
    report = fidelity_report([healing.path])
    drift = report.null_drift[0]
    assert drift.case_id == "dana-and-theo" and drift.flagged and drift.softening > report.threshold
    res = invoke(app, "fidelity", healing.path)
    assert res.exit_code == 1, res.output
    assert "Null-supporter drift" in res.output and "FLAGGED" in res.output
    assert "Moves per member" in res.output and "dana-and-theo/Dana" in res.output
    res = invoke(app, "fidelity", steady.path)
    assert res.exit_code == 0, res.output
    assert "FLAGGED" not in res.output
    # RoomScript says the same line every turn: every later member turn repeats it, re-asked, flagged; Theo's first
    # line begins with his card's words (the director's opener, "My father was absent ...") and the line after
    # them, so it is a near-duplicate, the two after it verbatim
    summary = fidelity_report([steady.path]).overall
    assert summary.member_turns == 4 and summary.verbatim_repeats == 2 and summary.near_duplicates == 1
    assert summary.reask_rate == 0.75
    flags = {"duplicate": 50.0, "near_duplicate": 25.0}
    assert summary.flags_per_100 == flags and summary.recorded_flags_per_100 == flags
    data = json.loads(invoke(app, "fidelity", steady.path, "--json").output)
    assert data["overall"]["verbatim_repeats"] == 2 and data["sessions"][0]["moves"]["Dana"]
    # the room measures (issue 42): every line brings the case, none speaks as the counsellor; the repeats of the
    # same speaker's line are not echoes (an echo re-says ANOTHER speaker)
    room = data["overall"]["room"]
    assert room["member_turns"] == 4 and room["grounded_turns"] == 4 and room["counsellor_voice_turns"] == 0
    assert data["sessions"][0]["room_turns"]["1"]["grounded"] == "card: promotion, ivf"
    assert "grounded" in res.output and "counsellor voice" in res.output and "100%" in res.output


def test_drift_is_only_read_from_silent_supporter_sessions(tmp_path):
    case = resolve_case("dana-and-theo")
    run = simulate(tmp_path / "r", case, ScriptedSupporter(), RoomScript(case, intensity=0, tension=0))
    assert fidelity_report([run.path]).null_drift == []


def test_not_a_run_folder_is_one_line_and_exit_2(app, tmp_path):
    res = invoke(app, "fidelity", tmp_path / "nope")
    assert res.exit_code == 2 and "not a run folder" in res.output and len(res.output.strip().splitlines()) <= 2


# ---- simulated vs real --------------------------------------------------------------------------------------

SAMPLE = {
    "sample_id": "kim_and_lee/001_fixture",
    "scenario": "couple",
    "participants": ["Kim", "Lee"],
    "rows": [
        {"row_index": 1, "primary_speaker": "Kim", "target": ["Therapist"], "dialogue_cleaned": "He is never home.",
         "utterance_type": "accusation", "internal_emotion": [{"person": "Kim", "emotion_description": "angry",
         "intensity": 7}], "viewpoints_attitudes": [{"source": "Kim", "target": "Lee", "viewpoint": "absent",
         "attitude": "resentful"}], "support_strategy": [], "relation_pattern": "attack_attack"},
        {"row_index": 2, "primary_speaker": "Lee", "target": ["Kim"], "dialogue_cleaned": "I work so we can live.",
         "utterance_type": "defense", "internal_emotion": [{"person": "Lee", "emotion_description": "defensive",
         "intensity": 5}], "viewpoints_attitudes": [], "support_strategy": [], "relation_pattern": "attack_attack"},
        {"row_index": 3, "primary_speaker": "Therapist", "target": ["Lee"], "dialogue_cleaned": "What is it like?",
         "utterance_type": "", "internal_emotion": [], "viewpoints_attitudes": [],
         "support_strategy": [{"provider": "Therapist", "target": ["Lee"], "strategy_type": "evoke",
         "strategy_content": "asks"}], "relation_cycle_state": "attack_attack"},
        {"row_index": 4, "primary_speaker": "Lee", "target": ["Therapist"], "dialogue_cleaned": "Lonely, honestly.",
         "utterance_type": "disclosure", "internal_emotion": [{"person": "Lee", "emotion_description": "sad",
         "intensity": 6}], "viewpoints_attitudes": [], "support_strategy": [], "relation_pattern": "pursue_withdraw"},
    ],
}  # fmt: skip


@pytest.fixture
def sample_file(tmp_path) -> Path:
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(SAMPLE) + "\n")
    return path


def test_js_distance_is_zero_for_the_same_shares_and_one_for_disjoint():
    assert js_distance({"a": 1, "b": 1}, {"a": 5, "b": 5}) == 0.0
    assert js_distance({"a": 3}, {"b": 2}) == 1.0
    assert js_distance({}, {"a": 1}) is None


def test_simulated_vs_real_table_for_a_rescue_derived_case(app, tmp_path, sample_file):
    sample = load_rescue(sample_file)[0]
    case = case_from_sample(sample)
    script = RoomScript(case, line="I keep telling you both the same thing and nobody listens.")
    run = simulate(tmp_path / "r", case, ScriptedSupporter(), script, seeds=(0, 1), turns=3)
    report = fidelity_report([run.path], rescue=sample_file)
    (c,) = report.sim_vs_real
    assert c.sample_id == SAMPLE["sample_id"] and c.sessions == 2 and c.member_turns == 6 and c.real_rows == 3
    rows = {r.measure: r for r in c.rows}
    assert set(rows) == {
        "utterance length (words)",
        "addressed to",
        "share of turns per member",
        "intensity (0-10)",
        "moves (RESCUE utterance types as moves)",
        "relation patterns (tracker vs gold)",
        "pattern transitions (whole matrix)",
    }
    # RESCUE: 4, 6, 2 words; simulation: 11 words every turn -> Wasserstein = 11 - mean(4, 6, 2) = 7
    assert rows["utterance length (words)"].distance == pytest.approx(7.0)
    # RESCUE intensities 7, 5, 6; simulation self-reports 6 every turn -> W1 = mean |6 - x| = 2/3
    assert rows["intensity (0-10)"].distance == pytest.approx(2 / 3, abs=1e-3)
    # every simulated move is `defend`; RESCUE has attack, defend, disclose once each
    assert rows["moves (RESCUE utterance types as moves)"].real == "attack 33%, defend 33%, disclose 33%"
    assert 0 < rows["moves (RESCUE utterance types as moves)"].distance < 1
    # gold transitions: attack_attack -> attack_attack (x2: rows 1-2, 2-3), attack_attack -> pursue_withdraw
    gold_rows = {t.from_pattern: t.real for t in c.transitions}
    assert gold_rows["attack_attack"] == {"attack_attack": 2, "pursue_withdraw": 1}
    res = invoke(app, "fidelity", run.path, "--rescue", sample_file)
    assert res.exit_code == 0, res.output
    assert f"Simulated vs real: {case.id}" in res.output and "pattern transitions by from-pattern" in res.output
    assert "utterance length" in res.output and "Jensen-Shannon" in res.output


def test_gold_files_from_import_rescue_are_read_too(tmp_path, sample_file):
    from personas.rescue import import_rescue

    import_rescue(sample_file, tmp_path / "cards")
    golds = load_golds(tmp_path / "cards")
    assert list(golds) == [SAMPLE["sample_id"]] and golds[SAMPLE["sample_id"]].rows


def test_without_rescue_source_the_command_says_how_to_compare(app, tmp_path, sample_file):
    case = case_from_sample(load_rescue(sample_file)[0])
    run = simulate(tmp_path / "r", case, ScriptedSupporter(), RoomScript(case), turns=2)
    res = invoke(app, "fidelity", run.path)
    assert res.exit_code == 0 and "pass --rescue PATH" in res.output


@pytest.mark.rescue
def test_simulated_vs_real_on_the_shared_rescue_samples(rescue_dir, tmp_path):
    samples = load_rescue(rescue_dir / "samples.jsonl")
    for sample in (samples[0], next(s for s in samples if s.group == "family")):
        case = case_from_sample(sample)
        run = simulate(tmp_path / case.id, case, ScriptedSupporter(), RoomScript(case), turns=3)
        c = compare(run.sessions(), gold_from_sample(sample))
        assert c.real_rows > 0 and c.member_turns == 3
        for row in c.rows:
            assert row.n_real > 0, row.measure
            assert row.distance is None or row.distance >= 0
            if row.metric == "jensen_shannon" and row.distance is not None:
                assert row.distance <= 1
        assert c.transitions, "RESCUE gold rows always carry pattern labels"


def test_leaderboard_shows_a_fidelity_section_when_asked(app, tmp_path):
    from judges import build_leaderboard

    case = resolve_case("dana-and-theo")
    run = simulate(tmp_path / "r", case, SilentSupporter(), RoomScript(case))
    assert build_leaderboard([run.path]).fidelity == {}  # not asked: nothing computed
    board = build_leaderboard([run.path], fidelity=True)
    # RoomScript's one line, the second time begun with Theo's card words (see the test above): 2 verbatim, 1 near
    silent = board.fidelity["silent"]
    assert silent.member_turns == 4 and silent.verbatim_repeats == 2 and silent.near_duplicates == 1
    res = invoke(app, "leaderboard", run.path, "--fidelity")
    assert res.exit_code == 0, res.output
    assert "fidelity of the simulated room, per supporter" in res.output and "duplicate 50" in res.output
    assert "fidelity of the simulated room" not in invoke(app, "leaderboard", run.path).output


def test_a_missing_rescue_source_names_the_option(app, tmp_path):
    case = resolve_case("dana-and-theo")
    run = simulate(tmp_path / "r", case, SilentSupporter(), RoomScript(case, intensity=9, tension=9), turns=1)
    res = invoke(app, "fidelity", run.path, "--rescue", tmp_path / "missing.jsonl")
    assert res.exit_code == 2 and "--rescue" in res.output and "no such file or folder" in res.output


def test_fidelity_tables_show_every_header_and_value_whole_at_80_columns(app, tmp_path):
    """Runs and supporters are columns and the measures rows, so at 80 columns no header or value is cut (each
    failed check on its own line); the legend names the numbered runs, the notes wrap to the terminal."""
    case = resolve_case("dana-and-theo")
    runs = [simulate(tmp_path / f"run{i}", case, SilentSupporter(), RoomScript(case, intensity=i)) for i in range(4)]
    narrow = {"COLUMNS": "80", "RESCUE_SIM_MODEL": "", "RESCUE_SIM_JUDGES": ""}
    res = CliRunner().invoke(app, ["fidelity", *(str(r.path) for r in runs)], env=narrow)
    assert res.exit_code in (0, 1), res.output
    lines = res.output.splitlines()
    assert "…" not in res.output and all(len(line) <= 80 for line in lines), res.output
    for label in ("member turns", "repeats", "re-asked", "flags / 100 turns", "recorded / 100", "language", "gap"):
        assert any(line.startswith(f" {label}") for line in lines), label
    assert "part 1 of 2" in res.output and all(f"#{i}" in res.output for i in range(1, 5))  # four runs: two tables
    report = fidelity_report([r.path for r in runs])
    for i, run in enumerate(report.by_run, start=1):
        assert f"#{i} {run}" in lines  # the legend: a run a line
    for flag, rate in report.overall.flags_per_100.items():
        assert any(line.strip().endswith(f"{flag} {rate:g}") or f"{flag} " in line for line in lines), flag
    board = CliRunner().invoke(app, ["leaderboard", *(str(r.path) for r in runs), "--fidelity"], env=narrow)
    assert board.exit_code == 0 and "…" not in board.output and all(len(x) <= 80 for x in board.output.splitlines())
    assert "— fidelity of the simulated room, per supporter" in board.output and "duplicate 50" in board.output
