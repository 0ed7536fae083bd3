"""Responsiveness of the simulated room (judges.room_audit): on hand-built records whose members' states move by
known amounts after supporter turns, the metric returns those amounts; a room that ignores the supporter gives
~0 against the null drift; two supporters that leave the family in different places separate, equal ones do not.
No model calls."""

from __future__ import annotations

import random

import pytest

from judges.room_audit import (
    default_pairs,
    final_state,
    responsiveness,
    session_responsiveness,
    trajectory_separation,
)
from simulator.records import Feeling, InnerState, SessionRecord, SupporterDecision, Turn
from tests._session_fixtures import couple_case, family_case

START = {"intensity": 5.0, "felt_heard": 5.0, "warmth": 5.0, "tension": 5.0}


def room(
    order: str,
    *,
    after,
    null,
    supporter: str = "good",
    seed: int = 0,
    move_after: str = "disclose",
    move_null: str = "defend",
    family: bool = False,
    target: str | None = None,
    rng: random.Random | None = None,
    reading: str | None = None,
) -> SessionRecord:
    """A session from `order` (member initials, `*` for a supporter turn). Each member's first self-report is
    START; every later one moves by `after` when a supporter turn came right before it, else by `null` (dicts of
    dimension -> change, or callables drawing one from `rng`)."""
    case = family_case() if family else couple_case()
    names = {n[0]: n for n in case.member_names}
    state: dict[str, dict[str, float]] = {}
    turns: list[Turn] = []
    for ch in order:
        i = len(turns) + 1
        if ch == "*":
            to = target or case.group_label
            decision = SupporterDecision(after_turn=i - 1, speak=True, targets=[to], text=f"Supporter turn {i}.")
            turns.append(Turn(index=i, speaker="Therapist", kind="supporter", addressees=[to], text=decision.text,
                              decision=decision))  # fmt: skip
            continue
        name = names[ch]
        after_s = bool(turns) and turns[-1].kind == "supporter"
        if name not in state:
            state[name] = dict(START)
        else:
            delta = after if after_s else null
            for dim in START:
                step = delta(rng) if callable(delta) else delta
                state[name][dim] = min(10.0, max(0.0, state[name][dim] + step.get(dim, 0.0)))
        s = state[name]
        others = [n for n in case.member_names if n != name]
        inner = InnerState(
            landed="x",
            emotion="hurt",
            intensity=round(s["intensity"]),
            felt_heard=round(s["felt_heard"]),
            toward=[Feeling(member=o, warmth=s["warmth"], tension=s["tension"]) for o in others],
        )
        turns.append(Turn(index=i, speaker=name, kind="member", addressees=others, text=f"line {i}", inner=inner,
                          move=move_after if after_s else move_null, reading=reading if after_s else None))  # fmt: skip
    return SessionRecord(
        session_id=f"{supporter}-{seed}", case=case, supporter=supporter, models={}, seed=seed, max_turns=8,
        turns=turns,
    )  # fmt: skip


TALKING = "AB" + "*A*B" * 3  # every later member turn right after a supporter turn
SILENT = "ABABABAB"  # the room on its own
GOOD = {"intensity": -1, "felt_heard": 1, "warmth": 1, "tension": -1}
HARSH = {"intensity": 1, "felt_heard": -1, "warmth": -1, "tension": 1}  # 3 steps each: no clamping at 0 or 10
DRIFT = {"intensity": 1, "felt_heard": 0, "warmth": 0, "tension": 1}


def test_known_changes_after_supporter_turns_come_back_exactly_net_of_the_null_drift():
    sessions = [
        *(session_responsiveness(room(TALKING, after=GOOD, null=DRIFT, seed=s)) for s in range(3)),
        *(session_responsiveness(room(TALKING, after=HARSH, null=DRIFT, supporter="harsh", seed=s)) for s in range(3)),
        *(session_responsiveness(room(SILENT, after=DRIFT, null=DRIFT, supporter="silent", seed=s)) for s in range(3)),
    ]
    report = responsiveness(sessions)
    rows = {r.supporter: r for r in report.supporters}
    assert report.null["intensity"].mean == 1 and report.null["tension"].mean == 1 and report.null_steps == 3 * 6
    good, harsh, silent = rows["good"], rows["harsh"], rows["silent"]
    assert good.after_steps == 3 * 6 and good.null_steps == 0 and silent.after_steps == 0
    for dim, amount in GOOD.items():
        assert good.dimensions[dim].after.mean == pytest.approx(amount)
        assert good.dimensions[dim].net.mean == pytest.approx(amount - DRIFT[dim])
    for dim, amount in HARSH.items():
        assert harsh.dimensions[dim].net.mean == pytest.approx(amount - DRIFT[dim])
    assert good.dimensions["tension"].net.high == pytest.approx(-2)  # constant effect: a zero-width interval
    assert silent.dimensions["tension"].net.mean is None  # never spoke: nothing to react to
    assert good.moves_after == {"disclose": 18}
    assert report.null_moves == {"defend": 3 * 8 + 6 * 2}  # silent turns, and each talking session's first two
    assert good.move_shift == 1.0  # disjoint move tables


def _noisy(mean: float, spread: float = 1.5):
    def draw(rng: random.Random) -> dict[str, float]:
        return {dim: rng.gauss(mean, spread) for dim in ("felt_heard", "warmth", "tension")}

    return draw


def test_a_room_that_ignores_the_supporter_is_about_zero_against_the_null_and_a_reacting_one_is_not():
    rng = random.Random(7)
    same = _noisy(0.0)
    ignoring = [session_responsiveness(room(TALKING, after=same, null=same, seed=s, rng=rng, move_after="defend"))
                for s in range(30)]  # fmt: skip
    null = [session_responsiveness(room(SILENT, after=same, null=same, supporter="silent", seed=s, rng=rng))
            for s in range(30)]  # fmt: skip
    reacting = [session_responsiveness(room(TALKING, after=_noisy(-1.0), null=same, supporter="reacting", seed=s,
                                            rng=rng)) for s in range(30)]  # fmt: skip
    rows = {r.supporter: r for r in responsiveness([*ignoring, *null, *reacting]).supporters}
    for dim in ("felt_heard", "warmth", "tension"):
        flat = rows["good"].dimensions[dim].net
        assert flat.low < 0 < flat.high and abs(flat.mean) < 0.4, (dim, flat)
        moved = rows["reacting"].dimensions[dim].net
        assert moved.high < 0 and moved.mean == pytest.approx(-1.0, abs=0.4), (dim, moved)
    assert rows["good"].move_shift == 0.0  # `defend` whatever the supporter did: no shift from the null moves
    assert rows["reacting"].move_shift == 1.0


def test_trajectory_separation_finds_a_known_difference_in_final_state_and_none_between_equals():
    good = [session_responsiveness(room(TALKING, after=GOOD, null=DRIFT, supporter="m", seed=s)) for s in range(6)]
    bad = [session_responsiveness(room(TALKING, after=HARSH, null=DRIFT, supporter="sides:m", seed=s))
           for s in range(6)]  # fmt: skip
    twin = [session_responsiveness(room(TALKING, after=GOOD, null=DRIFT, supporter="twin", seed=s)) for s in range(6)]
    # each member made 3 steps: tension 5 - 3 = 2 (good) vs 5 + 3 = 8 (harsh)
    assert final_state(room(TALKING, after=GOOD, null=DRIFT)) == {"intensity": 2.0, "warmth": 8.0, "tension": 2.0}
    sep = trajectory_separation([*good, *bad], "m", "sides:m")
    assert sep.pairs == 6 and sep.separates
    # the same difference on every pair leaves its spread unknown: below the sign test's 6 pairs, no separation
    few = trajectory_separation([*good[:4], *bad[:4]], "m", "sides:m")
    assert few.pairs == 4 and few.final["tension"].mean == pytest.approx(-6) and not few.separates
    assert sep.final["tension"].mean == pytest.approx(2 - 8) and sep.final["tension"].separates
    assert sep.final["warmth"].mean == pytest.approx((5 + 3) - (5 - 3))
    equal = trajectory_separation([*good, *twin], "m", "twin")
    assert not equal.separates and equal.final["tension"].mean == 0
    assert default_pairs(["m", "sides:m", "silent"]) == [("m", "sides:m")]
    assert responsiveness([*good, *bad]).separations == []  # pairs are asked for (fidelity_report adds sides:M)
    one = trajectory_separation([good[0], bad[0]], "m", "sides:m")
    assert one.pairs == 1 and not one.separates  # a single pair claims nothing


def test_steps_know_what_came_before_them():
    """First turns give a move but no change; a turn right after the supporter is `after_supporter` (addressed
    when the supporter named that member); a member who spoke before the supporter and again after another
    member is `earlier_supporter` (in neither pool); one with only members since their last turn is the null."""
    rec = room("MSL*MSLM*L", after=GOOD, null=DRIFT, family=True, target="Mona")
    steps = session_responsiveness(rec).steps
    assert [(s.turn, s.member, s.context, s.addressed, s.change is None) for s in steps] == [
        (1, "Mona", "no_supporter", False, True),
        (2, "Sam", "no_supporter", False, True),
        (3, "Lia", "no_supporter", False, True),
        (5, "Mona", "after_supporter", True, False),
        (6, "Sam", "earlier_supporter", False, False),
        (7, "Lia", "earlier_supporter", False, False),
        (8, "Mona", "no_supporter", False, False),
        (10, "Lia", "after_supporter", False, False),
    ]
    assert steps[3].change == GOOD


# ---- through `rescue-sim fidelity` ----------------------------------------------------------------------------


def test_fidelity_command_shows_responsiveness_per_supporter_and_the_sides_separation(tmp_path):
    from typer.testing import CliRunner

    from simulator.cli import app as cli_app
    from simulator.runfolder import RunFolder

    run = RunFolder(tmp_path / "run")
    run.open({"case": "ana-and-ben"})
    for s in range(6):
        for rec in (
            room(TALKING, after=GOOD, null=DRIFT, supporter="m", seed=s),
            room(TALKING, after=HARSH, null=DRIFT, supporter="sides:m", seed=s, move_after="attack", reading="set_off"),
            room(SILENT, after=DRIFT, null=DRIFT, supporter="silent", seed=s),
        ):
            run.write_session(rec.model_copy(update={"session_id": f"{rec.supporter.replace(':', '_')}-{s}"}))
    cli_app._register()
    result = CliRunner().invoke(cli_app.app, ["fidelity", str(run.path)], env={"COLUMNS": "220"})
    assert "Traceback" not in result.output
    out = result.output
    assert "Responsiveness: the room after the supporter's turns vs on its own" in out
    assert "Δ tension" in out and "-2.00 [-2.00, -2.00]" in out  # m: -1 per step against +1 drift
    assert "attack 100%" in out and "disclose 100%" in out and "defend 100%" in out
    assert "read as" in out and "set_off 100%" in out
    assert "Trajectory separation, m minus sides:m" in out and "tension -6.00 [-6.00, -6.00] *" in out
    assert "they separate" in out
    bad = CliRunner().invoke(cli_app.app, ["fidelity", str(run.path), "--pair", "m"])
    assert bad.exit_code == 2 and "--pair m: expected two supporter specs" in bad.output
    both = CliRunner().invoke(cli_app.app, ["fidelity", str(run.path), "--pair", "m,silent", "--json"])
    seps = __import__("json").loads(both.output)["responsiveness"]["separations"]
    assert [(s["a"], s["b"]) for s in seps] == [("m", "silent"), ("m", "sides:m")]


def test_sensitivity_reports_responsiveness_per_rung_and_claims_nothing_on_a_same_answer_room(tmp_path, monkeypatch):
    """Every member reports the same state whatever happens: the room answers every rung alike, the top rung and
    `sides` leave it in the same place, and the report says so."""
    import json

    from typer.testing import CliRunner

    from simulator.cli import app as cli_app
    from simulator.llm.fake import FakeModelClient
    from simulator.runner.sensitivity_stats import SensitivityReport
    from tests._stress_fixtures import any_schema_reply

    same = any_schema_reply()

    def speaking(call):  # the same state for every member turn; every supporter always speaks
        reply = same(call)
        if call.schema is not None and call.schema.__name__ == "SupporterReply":
            reply.update(speak=True, text="Let us slow down and hear each other.")
        return reply

    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: FakeModelClient(default=speaking))
    cli_app._register()
    out = tmp_path / "run"
    args = ["sensitivity", "--model", "fake/model", "--cases", "dana-and-theo", "--seeds", "0-1", "--turns", "4",
            "--perturbations", "none", "--tracker-every", "0", "--out", str(out), "--rungs", "all"]  # fmt: skip
    result = CliRunner().invoke(cli_app.app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    resp = SensitivityReport.model_validate(json.loads((out / "sensitivity.json").read_text())).responsiveness
    assert resp is not None
    rows = {r.supporter: r for r in resp.supporters}
    assert (rows["silent"].null_steps, rows["silent"].after_steps) == (2 * 2, 0)  # each member's second turn x 2
    models = [rows[f"{style}fake/model"] for style in ("", "generic:", "lecture:", "sides:")]
    assert all(r.after_steps >= 2 * 2 and r.null_steps == 0 and r.units == 2 for r in models)  # they always speak
    # the room answers every model rung alike (the fake's states only drift down to its floor, capped per turn)
    assert all(r.dimensions == models[0].dimensions and r.moves_after == models[0].moves_after for r in models)
    (sep,) = resp.separations
    assert (sep.a, sep.b, sep.pairs) == ("fake/model", "sides:fake/model", 2) and not sep.separates
    assert all(d.mean == 0 for d in sep.final.values())
    assert "Responsiveness: the room after" in result.output
    assert "Trajectory separation, model minus sides" in result.output and "do not separate" in result.output


# ---- members react to what the supporter did (prompt and move menu) -------------------------------------------


def _member_calls(turns, seed=3, blamed=False, understood=False):
    import asyncio

    from personas.library import resolve_case
    from simulator.llm.fake import FakeModelClient
    from simulator.members import member_turn
    from tests._sim_fakes import RoomScript

    case = resolve_case("dana-and-theo")
    script = RoomScript(case, line="I am so tired of this.", blamed=blamed, understood=understood)
    client = FakeModelClient(default=script)
    turn = asyncio.run(member_turn(client, case, turns, "Theo", ["Therapist"], seed=seed, window=16))
    return client.calls, turn


def _state_call(turns, seed=3, **appraised):
    calls, _ = _member_calls(turns, seed, **appraised)
    return next(c.prompt.instructions for c in calls if c.schema is not None)


def test_after_the_counsellor_spoke_the_member_is_first_asked_what_its_words_did_to_him():
    dana = Turn(index=1, speaker="Dana", kind="member", addressees=["Theo"], text="You are never home.")
    said = "Theo, you should have called her back. You got this wrong."
    counsellor = Turn(index=2, speaker="Therapist", kind="supporter", addressees=["Theo"], text=said)
    calls, turn = _member_calls([dana, counsellor])
    blame, understanding = calls[0], calls[1]  # asked in turn: blamed? then (not blamed) understood?
    assert blame.schema is None and blame.prompt.prefill.endswith(
        f'Counsellor to Theo: "{said}"\nDoes it blame or criticise Theo?'
    )
    assert "Does it blame or criticise Alex? yes" in blame.prompt.prefill  # labelled examples come first
    assert understanding.prompt.prefill.endswith("Does it show understanding of Theo?")
    dana_asked = calls[2]  # Dana heard it too: asked only whether it blamed her
    assert dana_asked.prompt.prefill.endswith(f'Counsellor to Theo: "{said}"\nDoes it blame or criticise Dana?')
    assert len(turn.calls) == 5 and turn.reading == "missed"  # the appraisals are part of the turn
    assert turn.felt_blamed == {"Theo": False, "Dana": False}
    # neither: missed
    prompt = _state_call([dana, counsellor])
    assert f'The counsellor just said, to Theo: "{said}"' in prompt and "reading = missed;" in prompt
    assert "Theo now: intensity 6, felt_heard 5." in prompt and "felt heard by the counsellor 5/10" in prompt
    # understood (and not blamed): softened
    assert "reading = softened;" in _state_call([dana, counsellor], understood=True)
    # blamed: set_off, the second question is not asked, and no softening move or cue is offered
    calls, turn = _member_calls([dana, counsellor], blamed=True, understood=True)
    assert len(turn.calls) == 4 and turn.reading == "set_off"
    assert turn.felt_blamed == {"Theo": True, "Dana": True}  # this fake room answers yes for everyone
    blamed = _state_call([dana, counsellor], blamed=True)
    assert "Those words blamed or criticised Theo: they set Theo off." in blamed and "reading = set_off;" in blamed
    assert "cue =" not in blamed and "soften" not in blamed.split("move = ")[1].split(".")[0]
    after_member = _state_call([dana])
    assert "The line Theo just heard: Dana (to Theo)" in after_member and "counsellor just said" not in after_member
    calls, turn = _member_calls([dana])
    assert len(turn.calls) == 2 and turn.felt_blamed == {}  # no counsellor turn to appraise


def test_the_move_menu_rotates_with_seed_and_turn_so_defend_is_not_always_offered_first():
    import re

    from simulator.members import move_menu, moves_on_offer

    dana = Turn(index=1, speaker="Dana", kind="member", addressees=["Theo"], text="You are never home.")
    firsts = set()
    for seed in range(10):
        menu = re.search(r"move = what Theo does next, in Theo's style: ([a-z_, ]+)\.", _state_call([dana], seed))
        assert menu is not None
        listed = menu.group(1).split(", ")
        assert sorted(listed) == sorted(moves_on_offer(False))  # no softening move without a counsellor turn
        firsts.add(listed[0])
    assert firsts == set(moves_on_offer(False))  # every move leads the menu for some seed
    assert move_menu(True, 0)[0] == "defend" and move_menu(True, 1)[-1] == "defend"


def test_the_numbers_move_at_least_as_far_as_the_reading_says_and_blame_rules_out_softening():
    """The 1.5B member copied its current numbers whatever the counsellor did; after a counsellor turn they now
    move at least REACTION[reading] in the reading's direction (further if the model says so)."""
    import asyncio

    from personas.library import resolve_case
    from personas.taxonomy import SOFTENING_MOVES
    from simulator.llm.fake import FakeModelClient
    from simulator.members import REACTION, member_turn, state_schema
    from tests._sim_fakes import RoomScript

    case = resolve_case("dana-and-theo")
    after = list(state_schema(case, "Theo", reading="set_off").model_json_schema()["properties"])
    assert after[:2] == ["landed", "reading"] and "reading" not in state_schema(case, "Theo").model_fields
    said = "Theo, slowing down here: you are trying, and it shows."
    turns = [
        Turn(index=1, speaker="Dana", kind="member", addressees=["Theo"], text="You are never home."),
        Turn(index=2, speaker="Therapist", kind="supporter", addressees=["Theo"], text=said),
    ]
    theo = case.member("Theo")  # card: intensity 6, felt heard 5; toward Dana from the card's viewpoint
    before = next(v for v in case.viewpoints if v.source == "Theo" and v.target == "Dana")

    def play(reading, **kw):
        appraised = {"blamed": reading == "set_off", "understood": reading == "softened"}
        script = RoomScript(case, move="soften", cue="you are trying", reading=reading, **appraised, **kw)
        return asyncio.run(member_turn(FakeModelClient(default=script), case, turns, "Theo", ["Therapist"], seed=0,
                                       window=16))  # fmt: skip

    # the model copies its numbers (intensity 6, tension as before); the reading moves them anyway
    copied = {"intensity": theo.baseline_intensity, "warmth": int(before.warmth), "tension": int(before.tension)}
    set_off = play("set_off", **copied)  # blamed: only set_off is offered, and no softening move
    assert set_off.reading == "set_off" and set_off.move not in SOFTENING_MOVES
    assert set_off.inner.intensity == theo.baseline_intensity + REACTION["set_off"]["intensity"]
    assert set_off.inner.felt_heard == 5 + REACTION["set_off"]["felt_heard"]
    (toward,) = set_off.inner.toward
    assert (toward.warmth, toward.tension) == (before.warmth - 1, before.tension + 1)
    softened = play("softened", **copied)  # earned (the cue quotes the counsellor): a little calmer and warmer
    assert softened.reading == "softened" and not softened.flags
    assert softened.inner.intensity == theo.baseline_intensity - 1 and softened.inner.felt_heard == 5 + 2
    missed = play("missed", intensity=2, tension=2)  # the model's own larger move is kept (within the soften cap)
    assert missed.reading == "missed" and missed.inner.felt_heard == 4 and missed.inner.intensity == 6 - 2


def test_the_live_view_says_what_the_counsellors_words_did_to_the_member():
    from rich.console import Console

    from simulator.cli._render import render_turn

    inner = InnerState(
        landed="", emotion="hurt", intensity=8, felt_heard=2, toward=[Feeling(member="Dana", warmth=3, tension=8)]
    )
    console = Console(width=200, record=True)
    for reading in ("set_off", None):
        turn = Turn(index=3, speaker="Theo", kind="member", text="Here we go.", inner=inner, reading=reading)
        console.print(render_turn(turn, couple_case()))
    shown = console.export_text()
    assert "inner: the counsellor's words set them off · hurt 8/10" in shown
    assert "inner: hurt 8/10" in shown  # a turn after a member's line has no reading to show


def test_blamed_share_is_the_share_of_turns_after_the_counsellor_read_as_blame():
    from judges.room_audit import blamed_share

    def record(readings):
        turns = [
            Turn(index=i + 1, speaker="Theo", kind="member", text=f"line {i}", reading=r)
            for i, r in enumerate(readings)
        ]
        return SessionRecord.model_construct(turns=turns)

    assert blamed_share(record([None, "set_off", "missed", "set_off", "softened"])) == 0.5  # a record from before
    assert blamed_share(record([None, None])) is None  # the counsellor never spoke: nothing to read
    # every member who heard the line answers: a line siding with the next speaker still counts the one it blamed
    asked = [Turn(index=2, speaker="Dana", kind="member", text="Exactly.", reading="softened",
                  felt_blamed={"Dana": False, "Theo": True}),
             Turn(index=4, speaker="Theo", kind="member", text="Fine.", reading="missed",
                  felt_blamed={"Theo": False, "Dana": False})]  # fmt: skip
    assert blamed_share(SessionRecord.model_construct(turns=asked)) == 0.25


def test_heard_gain_is_the_mean_change_in_felt_heard_right_after_the_counsellor():
    from judges.room_audit import heard_gain

    mixed = {"felt_heard": 2}, {"felt_heard": -3}  # after the counsellor / the room on its own
    assert heard_gain(room(TALKING, after=GOOD, null=DRIFT)) == 1  # 6 steps of +1; first turns give no step
    assert heard_gain(room(TALKING, after=HARSH, null=DRIFT)) == -1
    assert heard_gain(room("AB*AB*A", after=mixed[0], null=mixed[1])) == 2  # the null steps (B, A) left out
    assert heard_gain(room(SILENT, after=GOOD, null=DRIFT)) is None  # the counsellor never spoke
    assert heard_gain(room("A*B", after=GOOD, null=DRIFT)) is None  # only a first turn after it: no step


def test_every_member_is_asked_whether_the_counsellors_line_blamed_them():
    """A line siding with Dana against Theo, answered by Dana: Dana reads no blame and softens, and Theo, who
    was blamed but does not speak next, is still asked; blamed_share counts him."""
    import asyncio

    from judges.room_audit import blamed_share
    from personas.library import resolve_case
    from simulator.llm.fake import FakeModelClient
    from simulator.members import member_turn
    from tests._sim_fakes import RoomScript

    case = resolve_case("dana-and-theo")
    script = RoomScript(case, line="Thank you.", understood=True)

    def reply(call):
        if call.schema is None and call.prompt.prefill.endswith("Does it blame or criticise Theo?"):
            return " yes"
        return script(call)

    theo = Turn(index=1, speaker="Theo", kind="member", addressees=["Dana"], text="I was at work.")
    sides = Turn(index=2, speaker="Therapist", kind="supporter", addressees=["Dana"],
                 text="Dana, you're right: Theo keeps letting you down.")  # fmt: skip
    turn = asyncio.run(member_turn(FakeModelClient(default=reply), case, [theo, sides], "Dana", ["Therapist"],
                                   seed=0, window=16))  # fmt: skip
    assert turn.reading == "softened" and turn.felt_blamed == {"Dana": False, "Theo": True}
    record = SessionRecord.model_construct(turns=[theo, sides, turn])
    assert blamed_share(record) == 0.5  # asked only of the next speaker, as before, it read 0.0


def test_sensitivity_separates_a_blaming_rung_by_the_rooms_reading_on_six_units(tmp_path, monkeypatch):
    """A room whose members read blame exactly when the counsellor blames them and understanding when it names
    what is hard: `sides` blames on every turn, the top rung never does, so blamed_share and heard_gain put them
    in the declared order and, on 6 units, separate them; the judge metrics, answered alike for both, do not."""
    import json

    from typer.testing import CliRunner

    from simulator.cli import app as cli_app
    from simulator.llm.fake import FakeModelClient
    from simulator.runner.sensitivity_stats import SensitivityReport
    from tests._stress_fixtures import any_schema_reply
    from tests.test_delivery import ROOM_LINES

    room = any_schema_reply(lines=ROOM_LINES)  # a room that does not repeat itself: no simulator fault

    def reply(call):
        if call.schema is None and "\nDoes it" in call.prompt.prefill:  # an appraisal (simulator.members.appraise)
            said, question = call.prompt.prefill.rsplit("\n", 2)[-2:]
            if question.startswith("Does it blame or criticise"):
                return " yes" if "your fault" in said else " no"
            if question.startswith("Does it show understanding of"):
                return " yes" if "sounds hard" in said else " no"
        answer = room(call)
        if call.schema is not None and call.schema.__name__ == "SupporterReply":
            blames = "already decided who is right" in call.prompt.instructions
            answer.update(speak=True, text="Theo, this is your fault." if blames else "This sounds hard for you both.")
        return answer

    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: FakeModelClient(default=reply))
    cli_app._register()
    out = tmp_path / "run"
    args = ["sensitivity", "--model", "fake/model", "--rungs", "model,sides", "--cases", "dana-and-theo",
            "--seeds", "0-5", "--turns", "3", "--perturbations", "none", "--tracker-every", "0", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(cli_app.app, args, env={"COLUMNS": "200"})
    report = SensitivityReport.model_validate(json.loads((out / "sensitivity.json").read_text()))
    metrics = {m.id: m for m in report.metrics}
    blamed = metrics["blamed_share"]
    assert blamed.top_bottom.shared_units == 6 and blamed.top_bottom.separates and blamed.top_bottom.as_declared
    assert blamed.top_bottom.difference == pytest.approx(1.0)  # sides: every reading blame; model: none
    heard = metrics["heard_gain"]  # understood: at least 2 points more heard; blamed: at least 2 less
    assert heard.top_bottom.shared_units == 6 and heard.top_bottom.separates and heard.top_bottom.as_declared
    assert heard.top_bottom.difference >= 4 - 1e-9
    assert not metrics["balance"].top_bottom.separates  # the judge answered both rungs alike
    assert result.exit_code == 1, result.output
