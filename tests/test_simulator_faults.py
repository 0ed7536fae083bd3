"""Simulator faults: each kind is found on a record built to show it (and nothing on a clean one), the runner
stores them when a session ends, and every supporter score leaves faulted sessions out, counted with why per
member model, unless --include-simulator-faults puts them back."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from typer.testing import CliRunner

from judges import build_leaderboard, faulted, judge_session, write_judgment
from judges.stress_checks import CheckResult, CheckStatus, PerturbationBoard
from personas.library import resolve_case
from simulator.cli import app as cli_app
from simulator.faults import FaultThresholds, detect_faults, fault_thresholds, with_faults
from simulator.llm.fake import FakeModelClient
from simulator.perturbations import builtin_perturbations, plan_for
from simulator.records import (
    DeliveryStatus,
    FaultKind,
    FidelityFlag,
    Reask,
    SessionRecord,
    SessionStatus,
    SimulatorFault,
    StressorDelivery,
    TrackerState,
)
from simulator.runfolder import RunFolder
from simulator.runner.session import SessionSpec, run_one
from simulator.session_state import SessionConfig
from simulator.supporters import ModelSupporter
from simulator.turn_checks import FAULTING, REPEATS, check_line, check_state, session_language
from tests._session_fixtures import couple_session, fill_reply
from tests._sim_fakes import RoomScript


def said(record: SessionRecord, index: int, text: str) -> SessionRecord:
    """The record with member turn `index` saying `text`, checked as the engine checks it: the flags the accepted
    line still fails after one re-ask (the rejected attempt kept as the re-ask)."""
    turns = list(record.turns)
    i = next(k for k, t in enumerate(turns) if t.index == index)
    t = turns[i]
    flags = check_line(
        text,
        speaker=t.speaker,
        case=record.case,
        turns=turns[:i],
        addressees=t.addressees,
        language=session_language(record.case),
        finish_reason="stop",
    )
    reask = Reask(part="line", attempt=1, text=text, flags=flags)
    turns[i] = t.model_copy(update={"text": text, "flags": flags, "reasks": [reask] if flags else []})
    return record.model_copy(update={"turns": turns})


def felt(record: SessionRecord, index: int, emotion: str) -> SessionRecord:
    """The record with member turn `index` reporting `emotion`, flagged by the self-report checks."""
    turns = list(record.turns)
    i = next(k for k, t in enumerate(turns) if t.index == index)
    t = turns[i]
    inner = t.inner.model_copy(update={"emotion": emotion})
    fields = {"landed": inner.landed, "cue": "", "emotion": emotion, "reason": inner.reason}
    flags = check_state(fields, intensity=inner.intensity, move=None, speaker=t.speaker, turns=turns[:i], language="en")
    turns[i] = t.model_copy(update={"inner": inner, "flags": flags})
    return record.model_copy(update={"turns": turns})


# ---- detection ---------------------------------------------------------------------------------------------------


def test_a_clean_record_has_no_faults():
    assert detect_faults(couple_session()) == []
    assert faulted(couple_session(), None) is None


CASES = {
    FaultKind.SPEAKS_FOR_ANOTHER: (lambda r: said(r, 4, "Ben: I never look at her. Maybe that is true."), 4, "Ana"),
    FaultKind.OUT_OF_ROLE: (lambda r: said(r, 4, "Thank you for sharing that. I want him to look at me."), 4, "Ana"),
    FaultKind.LANGUAGE_SWITCH: (
        lambda r: said(r, 4, "Je ne sais pas pourquoi tu es toujours comme ça avec moi."),
        4,
        "Ana",
    ),
    FaultKind.REPEAT_AFTER_REASK: (lambda r: said(r, 6, "You never listen to me."), 6, "Ana"),
}


@pytest.mark.parametrize("kind", list(CASES), ids=[k.value for k in CASES])
def test_each_turn_fault_is_found_with_its_turn_member_and_quote(kind):
    build, turn, member = CASES[kind]
    record = build(couple_session())
    faults = detect_faults(record)
    assert [(f.kind, f.turn, f.member) for f in faults] == [(kind, turn, member)]
    line = next(t.text for t in record.turns if t.index == turn)
    assert faults[0].quote and faults[0].quote in line


@pytest.mark.parametrize("check", [*FAULTING, *REPEATS], ids=lambda c: c.value)
def test_every_check_a_member_draw_is_chosen_to_avoid_faults_a_kept_line(check):
    # simulator.members keeps the draw with the fewest FAULTING and REPEATS flags: each must be a fault when kept
    record = couple_session()
    flag = FidelityFlag(check=check, detail="as recorded", evidence="", turn=2)
    turns = [
        t.model_copy(update={"flags": [flag], "reasks": [Reask(part="line", attempt=1, text=t.text, flags=[flag])]})
        if t.index == 4
        else t
        for t in record.turns
    ]
    faults = detect_faults(record.model_copy(update={"turns": turns}))
    assert [f.turn for f in faults] == [4]


def test_a_repeat_without_a_reask_is_not_a_repeat_fault():
    record = said(couple_session(), 6, "You never listen to me.")
    turns = [t.model_copy(update={"reasks": []}) for t in record.turns]
    assert detect_faults(record.model_copy(update={"turns": turns})) == []


def test_fidelity_flags_over_the_threshold_fault_the_member():
    once = felt(couple_session(), 4, "the meeting")  # Ana: 1 of her 3 turns flagged (not_an_emotion)
    assert detect_faults(once) == []
    twice = felt(once, 6, "the kitchen")  # 2 of 3: over the shipped 50%
    faults = detect_faults(twice)
    assert [(f.kind, f.turn, f.member) for f in faults] == [(FaultKind.FIDELITY_FLAGS, 4, "Ana")]
    assert "2 of 3 turns" in faults[0].detail and faults[0].quote == "the meeting"
    strict = FaultThresholds(
        flagged_turn_share=0.7, min_member_turns=2, counted_checks=fault_thresholds().counted_checks
    )
    assert detect_faults(twice, strict) == []


def test_a_failed_or_empty_tracker_is_a_fault():
    failed = couple_session().model_copy(
        update={"status": SessionStatus.FAILED, "failure": "tracker after turn 4: fake/tracker: timed out"}
    )
    [f] = detect_faults(failed)
    assert (f.kind, f.turn, f.member) == (FaultKind.TRACKER_FAILURE, 4, "tracker") and "timed out" in f.quote
    turns = list(couple_session().turns)
    turns[1] = turns[1].model_copy(update={"tracker": TrackerState(pattern="attack_attack")})
    [f] = detect_faults(couple_session().model_copy(update={"turns": turns}))
    assert (f.kind, f.turn) == (FaultKind.TRACKER_FAILURE, 2)


def test_an_unsaid_stressor_is_a_fault_and_faults_already_there_are_kept_once():
    delivery = StressorDelivery(
        perturbation="escalation", turn=4, member="Ana", status=DeliveryStatus.DIRECTED_NOT_SAID, reason="no threat"
    )
    record = couple_session().model_copy(update={"delivery": delivery})
    [f] = detect_faults(record)
    assert (f.kind, f.turn, f.member) == (FaultKind.STRESSOR_NOT_SAID, 4, "Ana")
    assert f.quote == "Maybe. I just want him to look at me." and "escalation" in f.detail
    from_check = SimulatorFault(kind=FaultKind.STRESSOR_NOT_SAID, turn=4, member="Ana", detail="from the check")
    stored = with_faults(record.model_copy(update={"simulator_faults": [from_check]}))
    assert stored.simulator_faults == [from_check]
    delivered = record.model_copy(update={"delivery": delivery.model_copy(update={"status": DeliveryStatus.DELIVERED})})
    assert detect_faults(delivered) == []


# ---- the runner stores them --------------------------------------------------------------------------------------


def _run(default) -> SessionRecord:
    case = resolve_case("dana-and-theo")
    client = FakeModelClient(default=default)
    spec = SessionSpec(
        session_id="t", case=case, supporter="fake/supporter", config=SessionConfig(max_turns=4, tracker_every=2)
    )
    supporter = ModelSupporter(client=client, model="fake/supporter", spec="fake/supporter")
    return asyncio.run(run_one(spec, client, supporter, models={"member": "fake/member"}))


def test_the_runner_stores_the_faults_of_a_finished_session():
    case = resolve_case("dana-and-theo")
    record = _run(RoomScript(case))  # every member line is the same: re-asked, still a repeat
    assert record.status == SessionStatus.COMPLETED
    kinds = {f.kind for f in record.simulator_faults}
    assert FaultKind.REPEAT_AFTER_REASK in kinds
    first = next(f for f in record.simulator_faults if f.kind == FaultKind.REPEAT_AFTER_REASK)
    assert first.quote == "I don't know why we're even here." and first.member in case.member_names

    lines = itertools.cycle(
        [
            # a clean room plays its case: each line brings something of the card (no `ungrounded_room` fault)
            "You took the promotion without asking me first.",
            "Because every time I ask about the IVF, you change the subject.",
            "That is not fair, I was at the logistics office until nine.",
            "Fine. Then tell me when the promotion leaves a good time.",  # no "Theo,": lines go to the counsellor
        ]
    )
    script = RoomScript(case)
    clean = _run(lambda call: next(lines) if call.schema is None else script(call))
    assert clean.status == SessionStatus.COMPLETED and clean.simulator_faults == []


# ---- supporter scores leave them out -----------------------------------------------------------------------------


def _judged(folder: RunFolder, record: SessionRecord, score_index: int, fidelity: int | None = None) -> None:
    def reply(call):
        out = fill_reply(call.schema, score_index=score_index)
        if fidelity is not None:
            for member in out.get("members", {}).values():
                member["persona_fidelity"]["score"] = fidelity
        return out

    folder.write_session(record)
    write_judgment(
        folder, asyncio.run(judge_session(record, FakeModelClient(default=reply), ["fake/judge"], judge_mode="verdict"))
    )


def _run_folder(tmp_path) -> RunFolder:
    """Supporter `a`: one clean session judged 4s, one whose record shows a language switch judged 1s, one the
    judges flagged (persona fidelity 1) judged 1s."""
    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    _judged(folder, couple_session("clean", supporter="a"), 3, fidelity=5)
    switched = said(couple_session("switched", supporter="a"), 4, "Je ne sais pas pourquoi tu es toujours comme ça.")
    _judged(folder, switched, 0, fidelity=5)
    _judged(folder, couple_session("flagged", supporter="a"), 0, fidelity=1)
    return folder


def test_faulted_sessions_are_absent_from_the_leaderboard_means_and_listed_with_why(tmp_path):
    folder = _run_folder(tmp_path)
    [row] = build_leaderboard([folder.path]).rows
    assert (row.completed, row.scored, row.simulator_failures) == (3, 1, 2)
    assert row.dimension("overall_quality").value.mean == 4.0  # the clean session alone
    listed = {s.session_id: s for s in row.simulator_faults.sessions}
    assert set(listed) == {"switched", "flagged"}
    assert listed["switched"].kinds == ["language_switch"] and "turn 4, Ana" in listed["switched"].reasons[0]
    assert listed["flagged"].kinds == ["simulator_failure"] and "persona_fidelity" in listed["flagged"].reasons[0]
    assert row.simulator_faults.by_member_model == {"fake/model": {"language_switch": 1, "simulator_failure": 1}}

    [back] = build_leaderboard([folder.path], include_faults=True).rows
    assert (back.scored, back.simulator_failures) == (3, 2) and back.simulator_faults.included
    assert back.dimension("overall_quality").value.mean == pytest.approx(2.0)  # (4 + 1 + 1) / 3


def test_leaderboard_cli_lists_them_and_the_flag_puts_them_back(tmp_path):
    folder = _run_folder(tmp_path)
    cli_app._register()
    runner = CliRunner()
    out = runner.invoke(cli_app.app, ["leaderboard", str(folder.path)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "simulator faults, a: 2 left out (fake/model: language_switch 1, simulator_failure 1)" in out.output
    assert "switched: language_switch (turn 4, Ana)" in out.output
    assert "4.00" in out.output
    back = runner.invoke(
        cli_app.app, ["leaderboard", str(folder.path), "--include-simulator-faults"], env={"COLUMNS": "200"}
    )
    assert back.exit_code == 0, back.output
    assert "2 put back" in back.output and "2.00" in back.output


def test_the_rating_export_and_the_report_use_the_same_predicate(tmp_path):
    from judges.ratings import collect_units
    from judges.report import build_report_data

    folder = _run_folder(tmp_path)
    pool = collect_units([folder.path])
    assert pool.skipped == {"simulator fault (language_switch)": 1, "simulator fault (simulator_failure)": 1}
    data = build_report_data([folder.path])
    marked = {s.id: s.faults for s in data.sessions if s.simulator_failure}
    assert set(marked) == {"switched", "flagged"} and "language_switch" in marked["switched"][0]


def test_fidelity_reports_the_fault_rate_per_member_model(tmp_path):
    from judges import fidelity_report

    report = fidelity_report([_run_folder(tmp_path).path])
    rate = report.fault_rate["fake/model"]
    assert (rate.sessions, rate.faulted) == (3, 2) and rate.rate == pytest.approx(2 / 3)
    assert rate.kinds == {"language_switch": 1, "simulator_failure": 1}


# ---- stress pass rates and pass^k --------------------------------------------------------------------------------


UNSAID = StressorDelivery(
    perturbation="escalation", turn=4, member="Ana", status=DeliveryStatus.DIRECTED_NOT_SAID, reason="no threat"
)
FAULTS = {
    "language_switch": lambda r: said(r, 4, "Je ne sais pas pourquoi tu es toujours comme ça."),
    "stressor_not_said": lambda r: r.model_copy(update={"delivery": UNSAID}),
}


@pytest.mark.parametrize("kind", list(FAULTS))
def test_stress_pass_rates_and_pass_hat_k_leave_faulted_sessions_out_and_count_them(kind):
    p = builtin_perturbations()["escalation"]
    base = couple_session()

    def session(trial: int, status: CheckStatus, fault: bool):
        rec = base.model_copy(update={"session_id": f"t{trial}", "trial": trial, "perturbation": p.name})
        if fault:
            rec = FAULTS[kind](rec)
        check = CheckResult(
            session_id=rec.session_id, case_id=rec.case.id, supporter=rec.supporter, perturbation=p.name,
            seed=0, trial=trial, critical=p.critical, status=status, reason="crafted", plan=plan_for(p, rec.case, 3),
        )  # fmt: skip
        return rec, check

    # three trials of one task: pass, pass, and a fail in a room that malfunctioned
    sessions = [session(0, CheckStatus.PASSED, False), session(1, CheckStatus.PASSED, False),
                session(2, CheckStatus.FAILED, True)]  # fmt: skip
    for include, expected in ((False, (2, 0, 1.0, 2, 1.0)), (True, (2, 1, 2 / 3, 3, 0.0))):
        board = PerturbationBoard(include_faults=include)
        for rec, check in sessions:
            board.add(rec, check, fault=faulted(rec, None))
        [row] = board.rows()
        assert (row.passed, row.failed, row.pass_rate, row.k, row.pass_hat_k) == pytest.approx(expected)
        assert row.simulator_faults == 1 and row.faults.sessions[0].kinds == [kind]


# ---- compare -----------------------------------------------------------------------------------------------------


def test_compare_leaves_a_faulted_session_out_of_its_matched_group(tmp_path):
    from judges.boards import compare_runs, match_sessions
    from simulator.runfolder import RunFolderError

    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "test"})
    folder.write_session(couple_session("a0", supporter="a"))
    folder.write_session(said(couple_session("b0", supporter="b"), 6, "You never listen to me."))
    groups, _, faults = match_sessions([folder.path])
    assert groups == {} and [s.session_id for s in faults.sessions] == ["b0"]
    assert faults.by_member_model == {"fake/model": {"repeat_after_reask": 1}}
    groups, _, faults = match_sessions([folder.path], include_faults=True)
    assert list(groups.values())[0].keys() == {"a", "b"} and faults.included
    with pytest.raises(RunFolderError, match="1 session\\(s\\) with simulator faults are left out"):
        asyncio.run(compare_runs([folder.path], FakeModelClient(), ["fake/judge"]))


def test_the_stress_command_table_counts_faulted_sessions_apart(tmp_path):
    from judges import write_check
    from simulator.runner.stress import check_rows

    p = builtin_perturbations()["escalation"]
    folder = RunFolder(tmp_path / "run")
    folder.open({"kind": "stress"})
    for trial, status, line in ((0, CheckStatus.PASSED, None), (1, CheckStatus.FAILED, "Ben: I never look at her.")):
        rec = couple_session(f"t{trial}").model_copy(update={"trial": trial, "perturbation": p.name})
        rec = said(rec, 4, line) if line else rec
        folder.write_session(rec)
        write_check(
            folder,
            CheckResult(
                session_id=rec.session_id,
                case_id=rec.case.id,
                supporter=rec.supporter,
                perturbation=p.name,
                seed=0,
                trial=trial,
                critical=p.critical,
                status=status,
                reason="crafted",
                plan=plan_for(p, rec.case, 3),
            ),  # fmt: skip
        )
    [row] = check_rows(folder, ["t0", "t1"])
    assert (row.passed, row.failed, row.pass_rate, row.simulator_faults) == (1, 0, 1.0, 1)
    assert row.faults.sessions[0].kinds == ["speaks_for_another"]


def test_the_session_footer_names_the_faults_of_old_and_new_records():
    from simulator.cli._render import session_footer

    record = said(couple_session(), 4, "Je ne sais pas pourquoi tu es toujours comme ça.")
    text = session_footer(record).plain
    assert "simulator fault: language_switch (turn 4, Ana)" in text and "left out of supporter scores" in text
    assert "simulator fault" not in session_footer(couple_session()).plain
