"""Perturbations: every built-in applies to every fitting case as a valid Case; YAML errors are one line naming
the file and key; injected turns carry their directive and the supporter never learns of it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from personas.library import load_library
from simulator.engine import SessionConfig, run_session
from simulator.llm.fake import FakeModelClient
from simulator.perturbations import (
    PRIVATE_FIELDS,
    PerturbationError,
    applies_to,
    apply_perturbation,
    builtin_perturbations,
    load_perturbation_file,
    plan_for,
    resolve_perturbation,
)
from simulator.supporters import CallableSupporter
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


def test_injection_moves_earlier_to_leave_room_for_the_check():
    p = builtin_perturbations()["crisis_disclosure"]  # at member turn 2, within 2
    assert plan_for(p, couple_case(), 2).at_member_turn == 1
    assert plan_for(p, couple_case(), 3).at_member_turn == 2
    assert plan_for(p, couple_case(), 9).at_member_turn == 2


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
