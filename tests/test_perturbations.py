"""Perturbations: every built-in applies to every fitting case as a valid Case; YAML errors are one line naming
the file and key; injected turns carry their directive and the supporter never learns of it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from personas.library import load_library
from personas.library import resolve_case as load_library_case
from simulator.engine import run_session
from simulator.llm.fake import FakeModelClient
from simulator.perturbations import (
    PRIVATE_FIELDS,
    PerturbationError,
    applies_to,
    apply_perturbation,
    builtin_perturbations,
    load_perturbation_file,
    parse_perturbation,
    plan_for,
    resolve_perturbation,
)
from simulator.session_state import SessionConfig
from simulator.supporters import CallableSupporter
from simulator.transcript import said_phrase
from tests._session_fixtures import couple_case, family_case
from tests._stress_fixtures import any_schema_reply

ISSUE_STRESSORS = {
    "crisis_disclosure",
    "risk_from_member",
    "escalation",
    "coalition_pressure",
    "silent_member",
    "walkout_threat",
    "hostility_to_supporter",
    "secret_revealed",
    "language_switch",
    "very_long_session",
    "prompt_injection",
}


def test_builtins_cover_the_issue_and_apply_to_every_case():
    perts = builtin_perturbations()
    assert ISSUE_STRESSORS <= set(perts)
    for case in load_library():
        for p in perts.values():
            if not applies_to(p, case):
                continue
            new_case, cfg, plan = apply_perturbation(p, case, SessionConfig(max_turns=4, seed=1))
            assert type(new_case).model_validate(new_case.model_dump()) == new_case  # a valid Case
            assert cfg.seed == 1
            # the plan read back from the saved (perturbed) case equals the one used to run it
            assert plan_for(p, new_case, cfg.max_turns, session_applied=True) == plan
            if p.inject is not None:
                (d,) = cfg.directions
                assert (d.at_member_turn, d.member, d.text, d.source) == (
                    plan.at_member_turn,
                    plan.speaker,
                    plan.directive,
                    p.name,
                )
                assert d.said_if == tuple(p.check.said_if)  # the member's line is re-asked without one
                assert d.opening == p.inject.opening
                assert d.opening is None or said_phrase(p.check.said_if, d.opening)  # an opening says it
                assert d.at_member_turn + p.check.within - 1 <= cfg.max_turns  # room for the check's window
                assert not re.search(r"\$\{?(speaker|target|group_label|private)\b", d.text)  # all filled in
            # what the supporter's intake shows is untouched
            for key in ("setting", "presenting_problem", "history", "group", "title"):
                assert getattr(new_case, key) == getattr(case, key)
            for old, new in zip(case.members, new_case.members):
                assert (old.name, old.role, old.age, old.generation, old.background) == (
                    new.name,
                    new.role,
                    new.age,
                    new.generation,
                    new.background,
                )


def test_card_changes_and_session_changes():
    case = family_case()
    silent = builtin_perturbations()["silent_member"]
    new_case, _, plan = apply_perturbation(silent, case, SessionConfig(max_turns=6))
    member = new_case.member(plan.speaker)
    assert "nearly silent" in member.communication_style
    assert member.private_knowledge[-1].startswith("Feels nobody")
    assert "perturbed:silent_member" in new_case.tags
    crisis = builtin_perturbations()["crisis_disclosure"]
    new_case, _, plan = apply_perturbation(crisis, case, SessionConfig(max_turns=6))
    assert plan.speaker == "Lia"  # the youngest of the family
    assert [(f.kind.value, f.member) for f in new_case.risk_flags] == [("suicidal_ideation", "Lia")]
    long = builtin_perturbations()["very_long_session"]
    _, cfg, plan = apply_perturbation(long, case, SessionConfig(max_turns=6))
    assert cfg.max_turns == plan.max_turns == 24
    _, cfg, _ = apply_perturbation(long, case, SessionConfig(max_turns=30))
    assert cfg.max_turns == 40  # capped


def _with_inject(at: object = None, at_member_turn: int | None = None, within: int = 2, **extra):
    inject = {"text": "Say you are leaving.", "speaker": "first", **extra}
    inject.update({k: v for k, v in (("at", at), ("at_member_turn", at_member_turn)) if v is not None})
    return parse_perturbation(
        {"name": "leave", "title": "Leave", "description": "d", "inject": inject, "check": {"within": within}}
    )


@pytest.mark.parametrize(
    ("at", "turns", "within", "expected"),
    [
        # ceil(f x (T - within + 1)): a share of the turns still followed by `within` supporter decisions
        ("early", 8, 2, 2),
        ("middle", 8, 2, 4),
        ("late", 8, 2, 6),
        (1.0, 8, 2, 7),  # the last turn with room for the check: decisions after turns 7 and 8
        (0.01, 8, 2, 1),
        ("middle", 2, 2, 1),  # the smoke example: the only turn that leaves two decisions
        ("late", 6, 1, 5),
        ("middle", 3, 3, 1),
    ],
)
def test_relative_injection_resolves_within_the_turns_that_leave_room_for_the_check(at, turns, within, expected):
    p = _with_inject(at=at, within=within)
    plan = plan_for(p, couple_case(), turns)
    assert plan.at_member_turn == expected
    assert plan.at_member_turn + within - 1 <= turns  # the check's decisions all follow it


def test_a_stressor_that_cannot_play_in_time_is_rejected_never_moved():
    crisis = builtin_perturbations()["crisis_disclosure"]  # at: middle, within 2
    assert plan_for(crisis, couple_case(), 3).at_member_turn == 1
    with pytest.raises(PerturbationError) as err:
        plan_for(_with_inject(at_member_turn=4), couple_case(), 4)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("perturbation leave (at_member_turn: 4) would play at member turn 4 of 4")
    assert "use at_member_turn <= 3" in message and "at least 5 turns" in message
    with pytest.raises(PerturbationError, match="sessions of 1 member turns are too short for it"):
        plan_for(crisis, couple_case(), 1)
    # re-reading a saved record written before this was validated keeps it readable: moved, as it was played
    assert plan_for(_with_inject(at_member_turn=4), couple_case(), 4, strict=False).at_member_turn == 3
    # the default without either key is the absolute member turn 2
    assert plan_for(_with_inject(), couple_case(), 4).at_member_turn == 2


@pytest.mark.parametrize(
    ("inject", "expected"),
    [
        ({"at": "soon"}, "inject.at: 'soon': use early, middle, late or a fraction"),
        ({"at": 1.5}, "inject.at: a fraction must be above 0 and at most 1"),
        ({"at": 0}, "inject.at: a fraction must be above 0"),
        ({"at": "middle", "at_member_turn": 2}, "inject.at: give either `at` (relative) or `at_member_turn`"),
        ({"to": "target"}, "inject.to: `target` needs inject.target"),
    ],
)
def test_bad_injection_points_are_one_line_errors(inject, expected):
    data = {"name": "x", "title": "t", "description": "d", "inject": {"text": "hi", **inject}}
    with pytest.raises(PerturbationError) as err:
        parse_perturbation(data, source="mine.yaml")
    assert expected in str(err.value) and "\n" not in str(err.value)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(text, encoding="utf-8")
    return path


BASE = "name: mine\ntitle: Mine\ndescription: A test.\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (BASE + "inject: {text: hi, speakr: first}\n", "mine.yaml: inject.speakr: unknown key; remove it"),
        (BASE, "mine.yaml: (top level): inject, card or session: a perturbation must change something"),
        (BASE + "inject: {text: hi, speaker: boss}\n", "inject.speaker: 'boss' is not a member selector"),
        (
            BASE + "card: {members: [{who: first, set: {setting: x}}]}\n",
            "card.members.0.set.setting: only private member fields can change",
        ),
        (BASE + "inject: {text: hi}\ncheck: {address: target}\n", "check.address: `target` needs inject.target"),
        (BASE + "inject: {text: hi}\ncheck: {within: 0}\n", "check.within: Input should be greater than or equal to 1"),
        ("name: Bad Name\ntitle: t\ndescription: d\ninject: {text: hi}\n", "name: use lower-case letters"),
        (BASE + "inject: {text: [unclosed\n", "not valid YAML"),
    ],
)
def test_user_yaml_errors_name_file_and_key(tmp_path, body, expected):
    path = _write(tmp_path, body)
    with pytest.raises(PerturbationError) as err:
        load_perturbation_file(path)
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message
    assert expected in message


def test_user_perturbation_loads_by_path(tmp_path):
    _write(
        tmp_path,
        BASE + "inject: {speaker: second, text: 'Mention $target.', target: first}\n"
        "check: {within: 1, address: target, rubric: 'Pass if $target is protected.'}\n",
    )
    p = resolve_perturbation("mine.yaml", tmp_path)
    plan = plan_for(p, couple_case(), 4)
    assert (plan.speaker, plan.target, plan.directive, plan.at_member_turn) == ("Ben", "Ana", "Mention Ana.", 2)
    with pytest.raises(PerturbationError, match="unknown; built-ins: "):
        resolve_perturbation("no_such_thing")
    assert "private_knowledge" in PRIVATE_FIELDS


def test_injected_turn_carries_directive_and_the_supporter_never_sees_it():
    case = family_case()
    p = builtin_perturbations()["crisis_disclosure"]
    new_case, cfg, plan = apply_perturbation(p, case, SessionConfig(max_turns=3, tracker_every=0))
    seen: list[str] = []

    def supporter(view):
        seen.append(view.model_dump_json())
        return "Let's hear from everyone."

    client = FakeModelClient(default=any_schema_reply())
    record = asyncio.run(
        run_session(new_case, CallableSupporter(fn=supporter, spec="mine:fn"), client, cfg, session_id="x")
    )
    member_turns = [t for t in record.turns if t.kind == "member"]
    injected = member_turns[plan.at_member_turn - 1]
    assert injected.speaker == plan.speaker == "Lia"
    assert injected.directive == plan.directive
    assert [t.directive for t in member_turns if t is not injected] == [None] * (len(member_turns) - 1)
    # only the speaker's prompts for that turn carry the direction
    with_directive = [c for c in client.calls if plan.directive in c.prompt.instructions]
    assert len(with_directive) >= 2 and all(c.role == "member" for c in with_directive)
    assert all(c.prompt.instructions.count("Lia") for c in with_directive)
    assert all(plan.directive not in c.prompt.context for c in client.calls)
    assert seen, "the supporter was asked"
    for view in seen:
        assert plan.directive not in view
        assert "crisis_disclosure" not in view and "perturbed:" not in view
        assert "suicidal_ideation" not in view  # the risk flag the perturbation added stays off the intake


@pytest.mark.parametrize("seed", [0, 1])
def test_a_directed_line_is_spoken_to_whom_its_direction_names(seed):
    """Issue 23: `coalition_pressure` played at its turn in 4 of 4 fake sessions yet was never delivered. Part of
    why: the floor addressed the directed line to another member (`Theo (to Dana): "`) while the direction said
    "turn to the counsellor and press them", so the prompt contradicted itself. The direction now names whom
    its line is spoken to, and the floor honours it."""
    case = load_library_case("dana-and-theo")
    for name, expected in (("coalition_pressure", lambda plan: ["Therapist"]), ("escalation", lambda p: [p.target])):
        p = builtin_perturbations()[name]
        new_case, cfg, plan = apply_perturbation(p, case, SessionConfig(max_turns=4, seed=seed, tracker_every=0))
        client = FakeModelClient(default=any_schema_reply())
        record = asyncio.run(
            run_session(new_case, CallableSupporter(fn=lambda view: None, spec="m:f"), client, cfg, session_id="x")
        )
        directed = next(t for t in record.turns if t.directive == plan.directive)
        assert directed.speaker == plan.speaker and directed.addressees == expected(plan)
        line_calls = [c for c in client.calls if c.prompt.prefill and plan.directive in c.prompt.instructions]
        assert line_calls and all(
            c.prompt.prefill.startswith(f"{plan.speaker} (to {expected(plan)[0]}):") for c in line_calls
        )


def test_a_language_switch_stressor_is_not_re_asked_away_by_the_fidelity_check():
    """The fidelity check re-asks a line that leaves the session's language; for `language_switch` that is the
    stressor itself, so its directed line is exempt (`inject.allow`) and only that line."""
    case = load_library_case("dana-and-theo")
    spanish = "No puedo más con esto, de verdad, porque nunca me escuchas y yo estoy muy cansada de todo."
    p = builtin_perturbations()["language_switch"]
    new_case, cfg, plan = apply_perturbation(p, case, SessionConfig(max_turns=4, seed=0, tracker_every=0))
    client = FakeModelClient(default=any_schema_reply(spanish))
    record = asyncio.run(
        run_session(new_case, CallableSupporter(fn=lambda view: None, spec="m:f"), client, cfg, session_id="x")
    )

    def language_flags(turn):  # on the accepted turn or on any rejected attempt (the fake repeats itself too)
        return [f for f in turn.flags + [g for r in turn.reasks for g in r.flags] if f.check == "language_switch"]

    directed = next(t for t in record.turns if t.directive == plan.directive)
    assert directed.speaker == plan.speaker and not language_flags(directed)
    others = [t for t in record.turns if t.kind == "member" and t is not directed]
    assert others and all(language_flags(t) for t in others)  # still caught everywhere else
