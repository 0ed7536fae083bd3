"""The session graph driven end to end by a fake model: routing, floor, decisions, state, failures."""

from __future__ import annotations

import asyncio
import functools
import threading

import pytest

from personas.library import resolve_case
from simulator.engine import run_session
from simulator.floor import choose_next, speaker_weights, style_of
from simulator.llm.fake import FakeModelClient
from simulator.members import MAX_SOFTEN_STEP, guard_softening
from simulator.records import EndReason, Feeling, InnerState, SessionStatus, Turn
from simulator.session_state import SessionConfig, add_turns
from simulator.supporters import ModelSupporter, ScriptedSupporter, SilentSupporter
from tests._sim_fakes import RoomScript


def run(case, supporter, client, **cfg):
    return asyncio.run(run_session(case, supporter, client, SessionConfig(**cfg), session_id="t"))


def model_supporter(client):
    return ModelSupporter(client=client, model="fake/supporter", spec="fake/supporter")


@pytest.fixture
def couple():
    return resolve_case("dana-and-theo")


@pytest.fixture
def family():
    return resolve_case("herrera-family")


def test_full_session_routes_through_every_node(couple):
    script = RoomScript(couple)
    client = FakeModelClient(default=script)
    rec = run(couple, model_supporter(client), client, max_turns=4, seed=1, tracker_every=2)
    assert rec.status == SessionStatus.COMPLETED and rec.end_reason == EndReason.TURN_LIMIT
    members = [t for t in rec.turns if t.kind == "member"]
    supporters = [t for t in rec.turns if t.kind == "supporter"]
    assert len(members) == 4
    assert len(rec.decisions) == 4 and all(d.speak for d in rec.decisions)
    assert len(supporters) == 4  # the supporter spoke after every member turn
    assert [t.index for t in rec.turns] == list(range(1, len(rec.turns) + 1))
    for t in members:  # after a counsellor turn, three calls first: did its words blame, or understand, this
        # member? did they blame the other?
        after_counsellor = t.index > 1 and rec.turns[t.index - 2].kind == "supporter"
        assert t.inner is not None and t.inner.intensity == 6 and len(t.calls) == 2 + 3 * after_counsellor
        assert set(t.felt_blamed) == (set(couple.member_names) if after_counsellor else set())
        assert t.addressees and t.speaker in couple.member_names
    for t in supporters:
        assert t.decision.target_kind == "whole_group" and t.decision.strategy == "track"
        assert t.addressees == ["Couple"]
    # one snapshot per turn in both views, after the initial one
    assert [s.turn for s in rec.self_report] == [0, *[t.index for t in rec.turns]]
    assert [s.turn for s in rec.observer] == [0, *[t.index for t in rec.turns]]
    # tracker cadence: after member turns 2 and 4 only
    tracked = [t for t in rec.turns if t.tracker is not None]
    assert [sum(x.kind == "member" for x in rec.turns[: t.index]) for t in tracked] == [2, 4]
    # self-report view carries the members' reported tension
    last = rec.self_report[-1]
    assert {(e.source, e.tension) for e in last.edges} >= {(members[-1].speaker, 7.0)}
    roles = {c.role for c in rec.calls}
    assert roles == {"member", "tracker", "supporter"}


def test_routers_run_in_the_event_loop_not_a_thread_pool(couple, monkeypatch):
    """LangGraph runs a plain router in the default thread pool; each routing decision (about one per model call)
    would cost a thread hop. The engine hands it coroutine functions, so every decision is made on the loop's
    thread, and the routes are still the ones the `Literal` return types draw."""
    from simulator import engine

    seen: list[tuple[str, bool]] = []

    def on_thread(router):
        @functools.wraps(router)  # keeps the name and the `Literal` return type LangGraph reads
        def spy(state):
            seen.append((router.__name__, threading.current_thread() is threading.main_thread()))
            return router(state)

        return spy

    for name in ("after_member", "after_track", "after_gate", "after_end_check"):
        monkeypatch.setattr(engine, name, on_thread(getattr(engine, name)))
    monkeypatch.setattr(engine, "_shared_graph", None)  # wired afresh with the spies, then dropped again
    client = FakeModelClient(default=RoomScript(couple))
    rec = run(couple, model_supporter(client), client, max_turns=3, seed=1)
    assert rec.status == SessionStatus.COMPLETED
    assert {name for name, _ in seen} == {"after_member", "after_track", "after_gate", "after_end_check"}
    assert all(on_loop for _, on_loop in seen), [name for name, on_loop in seen if not on_loop]
    drawn = engine.shared_graph().get_graph()
    assert {(e.source, e.target) for e in drawn.edges if e.source == "gate"} == {
        ("gate", "supporter"),
        ("gate", "end_check"),
        ("gate", "__end__"),
    }


def test_silent_supporter_never_produces_supporter_turns(couple):
    client = FakeModelClient(default=RoomScript(couple))
    rec = run(couple, SilentSupporter(), client, max_turns=3)
    assert all(t.kind == "member" for t in rec.turns)
    assert len(rec.decisions) == 3 and not any(d.speak for d in rec.decisions)
    assert rec.end_reason == EndReason.TURN_LIMIT


def test_supporter_pass_routes_to_end_check(couple):
    script = RoomScript(couple, speak=False)
    client = FakeModelClient(default=script)
    rec = run(couple, model_supporter(client), client, max_turns=2)
    assert [t.kind for t in rec.turns] == ["member", "member"]
    assert [d.speak for d in rec.decisions] == [False, False]


def test_supporter_can_close_the_session(couple):
    client = FakeModelClient(default=RoomScript(couple, close_after=2))
    rec = run(couple, model_supporter(client), client, max_turns=10)
    assert rec.end_reason == EndReason.SUPPORTER_CLOSED
    assert rec.turns[-1].kind == "supporter" and rec.turns[-1].decision.close_session
    assert sum(t.kind == "member" for t in rec.turns) == 2


def test_scripted_baseline_uses_taxonomy_labels(family):
    client = FakeModelClient(default=RoomScript(family))
    rec = run(family, ScriptedSupporter(), client, max_turns=6)
    spoken = [d for d in rec.decisions if d.speak]
    assert spoken, "the scripted baseline speaks every other member turn"
    from personas.taxonomy import strategies_for

    assert all(d.strategy in strategies_for("family") for d in spoken)
    assert [d.speak for d in rec.decisions][:2] == [False, True]


def test_fenced_and_malformed_json_are_repaired_or_reasked(couple):
    script = RoomScript(couple)
    import json

    first_state = json.dumps(script(_FakeSchemaCall(couple, "Dana")))
    replies = ["{not json", f"Sure! ```json\n{first_state}\n```"]
    client = FakeModelClient(by_role={"member": replies}, default=script)
    rec = run(couple, SilentSupporter(), client, max_turns=1)
    assert rec.status == SessionStatus.COMPLETED
    first = rec.turns[0]
    assert first.calls[0].attempts == 2  # malformed once, then the fenced reply parsed


def test_refusal_is_reasked_then_recorded_as_failure(couple):
    script = RoomScript(couple, line="I'm sorry, but I can't help with role-playing this.")
    client = FakeModelClient(default=script)
    rec = run(couple, SilentSupporter(), client, max_turns=3)
    assert rec.status == SessionStatus.FAILED and rec.end_reason == EndReason.FAILED
    assert "member turn 1" in rec.failure and "refusal" in rec.failure
    assert rec.turns == []  # nothing was invented for the failed turn


def test_model_timeout_fails_the_session_with_its_reason(couple):
    script = RoomScript(couple)
    calls = {"n": 0}

    def flaky(call):
        calls["n"] += 1
        if call.role == "tracker":
            return TimeoutError("timed out after 600s")
        return script(call)

    client = FakeModelClient(default=flaky)
    rec = run(couple, SilentSupporter(), client, max_turns=4, tracker_every=2)
    assert rec.status == SessionStatus.FAILED
    assert rec.failure.startswith("tracker after turn 2") and "timed out" in rec.failure
    assert len(rec.turns) == 2 and rec.turns[-1].tracker is None


def test_off_taxonomy_strategy_is_reasked_then_recorded_invalid_never_rewritten(couple):
    from simulator.supporters import CallableSupporter

    asked = []

    def fn(view, reask=None):
        asked.append(reask)
        return {"text": "hi", "strategy": "boundary", "targets": ["Dana"]}

    client = FakeModelClient(default=RoomScript(couple))
    rec = run(couple, CallableSupporter(fn=fn, spec="x:y"), client, max_turns=2)
    assert rec.status == SessionStatus.COMPLETED
    bad = [d for d in rec.decisions if not d.valid]
    assert len(bad) == len(rec.decisions) == 2
    assert all("not a couple strategy" in d.invalid_reason and d.reasks == 2 and not d.speak for d in bad)
    assert all('"boundary"' in d.raw for d in bad)  # what it returned, as it returned it
    assert asked[:3] == [None, bad[0].invalid_reason, bad[0].invalid_reason]
    assert all(t.kind == "member" for t in rec.turns)  # nothing was said on its behalf


def test_callable_supporter_to_the_group_has_no_strategy(couple):
    from simulator.supporters import CallableSupporter

    client = FakeModelClient(default=RoomScript(couple))
    sup = CallableSupporter(fn=lambda view: "Can you each say what you need?", spec="m:f")
    rec = run(couple, sup, client, max_turns=2)
    assert rec.status == SessionStatus.COMPLETED
    assert rec.turns[1].decision.targets == ["Couple"] and rec.turns[1].decision.strategy is None


def test_same_seed_same_floor_sequence(family):
    def speakers(seed):
        client = FakeModelClient(default=RoomScript(family))
        return [t.speaker for t in run(family, SilentSupporter(), client, max_turns=8, seed=seed).turns]

    assert speakers(5) == speakers(5)
    assert len({tuple(speakers(s)) for s in range(6)}) > 1


def test_floor_addressed_member_answers(couple):
    sup = Turn(index=1, speaker="Therapist", kind="supporter", addressees=["Theo"], text="Theo?")
    answered = sum(choose_next(couple, [sup], None, seed).speaker == "Theo" for seed in range(200))
    assert answered >= 160  # ~85% answer, plus some weighted picks


def test_floor_styles_shape_weights(couple):
    assert style_of(couple.member("Dana")) == "pursuer" and style_of(couple.member("Theo")) == "withdrawer"
    w = speaker_weights(couple, [], None)
    assert w["Dana"] > 2 * w["Theo"]


def test_softening_is_capped_but_escalation_is_not():
    prev = InnerState(
        landed="", emotion="angry", intensity=8, felt_heard=2, toward=[Feeling(member="B", warmth=2, tension=9)]
    )
    soft = InnerState(
        landed="ok",
        emotion="calm",
        intensity=2,
        felt_heard=9,
        toward=[Feeling(member="B", warmth=9, tension=1)],
        reason="felt heard",
    )
    out = guard_softening(prev, soft)
    assert out.intensity == 8 - MAX_SOFTEN_STEP
    assert out.toward[0].warmth == 2 + MAX_SOFTEN_STEP and out.toward[0].tension == 9 - MAX_SOFTEN_STEP
    assert out.reason.endswith("[softening capped]")
    hot = soft.model_copy(update={"intensity": 10, "toward": [Feeling(member="B", warmth=0, tension=10)]})
    out = guard_softening(prev, hot)
    assert out.intensity == 10 and out.toward[0].tension == 10


def test_add_turns_replaces_by_index():
    a = Turn(index=1, speaker="A", kind="member", text="x")
    b = Turn(index=2, speaker="B", kind="member", text="y")
    assert [t.text for t in add_turns([a, b], [a.model_copy(update={"text": "z"})])] == ["z", "y"]


def test_unaddressed_risk_stops_the_session():
    case = resolve_case("arjun-and-meera")
    flagged = next(f.member for f in case.risk_flags if f.kind == "suicidal_ideation")
    client = FakeModelClient(default=RoomScript(case, intensity=9))
    rec = run(case, SilentSupporter(), client, max_turns=12, seed=2)
    assert rec.end_reason == EndReason.SAFETY_STOP
    assert rec.safety and rec.safety[0].member == flagged and not rec.safety[0].addressed
    assert "unaddressed" in rec.safety[0].note


def test_addressed_risk_is_recorded_as_addressed():
    case = resolve_case("arjun-and-meera")
    flagged = next(f.member for f in case.risk_flags if f.kind == "suicidal_ideation")
    script = RoomScript(
        case,
        intensity=9,
        strategy="safeguard",
        targets=[flagged],
        supporter_text="I want to pause. Are you safe right now?",
    )
    client = FakeModelClient(default=script)
    rec = run(case, ModelSupporter(client=client, model="fake/s", spec="fake/s"), client, max_turns=6, seed=2)
    assert rec.end_reason == EndReason.TURN_LIMIT
    assert rec.safety and all(e.addressed for e in rec.safety)


def test_tracker_only_risk_signal_is_recorded_without_stopping(couple):
    client = FakeModelClient(default=RoomScript(couple, at_risk=["Theo"]))
    rec = run(couple, SilentSupporter(), client, max_turns=6, tracker_every=1)
    assert rec.end_reason == EndReason.TURN_LIMIT
    assert rec.safety[0].member == "Theo" and not rec.safety[0].addressed
    assert "tracker-only" in rec.safety[0].note


class _FakeSchemaCall:
    """A stand-in call so RoomScript can produce the member-state JSON outside the engine."""

    def __init__(self, case, speaker):
        from simulator.members import state_schema

        self.schema = state_schema(case, speaker)


def test_endpoint_supporter_is_free_text_with_targets_from_names(couple):
    from simulator.supporters import FreeTextSupporter, parse_supporter_spec

    script = RoomScript(couple)
    replies = iter(["", 'Therapist: "Theo, what happens for you when Dana says that?"', "", "Can you both slow down?"])

    def reply(call):
        return next(replies) if call.role == "supporter" else script(call)

    client = FakeModelClient(default=reply)
    bases: dict[str, str] = {}
    sup = parse_supporter_spec("http://localhost:8000/v1#my-bot", client, api_bases=bases)
    assert isinstance(sup, FreeTextSupporter) and not sup.structured
    assert bases == {"hosted_vllm/my-bot": "http://localhost:8000/v1"}
    rec = run(couple, sup, client, max_turns=4)
    spoken = [t.decision for t in rec.turns if t.kind == "supporter"]
    assert [(d.text, d.targets, d.strategy) for d in spoken] == [
        ("Theo, what happens for you when Dana says that?", ["Theo"], None),
        ("Can you both slow down?", ["Couple"], None),
    ]
    assert [d.speak for d in rec.decisions] == [False, True, False, True]  # asked at every gate; "" is a pass
    assert len([c for c in client.calls if c.role == "supporter"]) == 4
    assert all(c.model == "hosted_vllm/my-bot" for c in client.calls if c.role == "supporter")


def test_supporter_text_loses_speaker_tags_and_self_address():
    from simulator.supporters import clean_supporter_text

    assert clean_supporter_text("Therapist: 'Hey, Dana! It's ok.'") == "Hey, Dana! It's ok."
    assert clean_supporter_text('Counsellor (to Dana): "Go on."') == "Go on."
    assert clean_supporter_text("Therapist, I hear you both.") == "I hear you both."
    assert clean_supporter_text("Theo, what do you need?") == "Theo, what do you need?"


def test_a_stressors_risk_is_live_from_the_line_that_says_it(couple):
    """A flagged member's high self-report opens no safety event before their directed disclosure (nothing in the
    room shows the risk yet); the line that says it opens one, and the silent counsellor is stopped after it."""
    from simulator.perturbations import apply_perturbation, builtin_perturbations

    case, config, plan = apply_perturbation(
        builtin_perturbations()["crisis_disclosure"], couple, SessionConfig(max_turns=6, seed=1)
    )
    direction = config.direction_for(plan.at_member_turn)
    assert direction.discloses == ("suicidal_ideation",) and plan.at_member_turn > 1
    client = FakeModelClient(default=RoomScript(case, intensity=9, line="Some days I think about hurting myself."))
    rec = asyncio.run(run_session(case, SilentSupporter(), client, config, session_id="t"))
    directed = next(t for t in rec.turns if t.directive)
    assert [(e.member, e.signalled_at, e.source) for e in rec.safety][0] == (plan.speaker, directed.index, "stressor")
    assert rec.end_reason == EndReason.SAFETY_STOP
    assert sum(t.kind == "member" for t in rec.turns) > plan.at_member_turn  # two decisions' grace after it


def test_a_disclosure_left_out_until_the_last_reask_is_signalled_once_said(couple):
    from simulator.perturbations import apply_perturbation, builtin_perturbations

    case, config, plan = apply_perturbation(
        builtin_perturbations()["crisis_disclosure"], couple, SessionConfig(max_turns=6, seed=1)
    )
    opening = config.direction_for(plan.at_member_turn).opening
    client = FakeModelClient(default=RoomScript(case, intensity=5, line="We just argue about chores."))
    rec = asyncio.run(run_session(case, SilentSupporter(), client, config, session_id="t"))
    directed = next(t for t in rec.turns if t.directive)
    # the last re-ask starts with the stressor's own words, so the line says it after all and is signalled
    assert directed.text.startswith(opening.strip())
    assert [e.source for e in rec.safety] == ["stressor"]


def test_a_played_session_revives_only_record_types_from_its_checkpoints(couple, caplog):
    """A human-played session pauses at each move, so its state goes through LangGraph's checkpoint serializer.
    The serializer is told the record types the state holds: they come back as records, and LangGraph has
    nothing to warn about (it warns on every unnamed type, and will refuse them in a later release)."""
    import logging

    from simulator.supporters import HumanSupporter

    moves = iter([{"text": "What hurts most, Dana?", "targets": ["Dana"], "strategy": "evoke"}, {"text": ""}])

    async def human_input(payload, record):
        return next(moves, {"text": ""})

    client = FakeModelClient(default=RoomScript(couple))
    with caplog.at_level(logging.WARNING, logger="langgraph"):
        rec = asyncio.run(
            run_session(
                couple,
                HumanSupporter(spec="human:t"),
                client,
                SessionConfig(max_turns=3, seed=1),
                session_id="t",
                human_input=human_input,
            )  # fmt: skip
        )
    assert rec.status == SessionStatus.COMPLETED
    assert [(t.decision.text, t.decision.strategy) for t in rec.turns if t.kind == "supporter"] == [
        ("What hurts most, Dana?", "evoke")
    ]
    assert all(isinstance(t, Turn) for t in rec.turns) and rec.end_reason is EndReason.TURN_LIMIT
    assert [r.getMessage() for r in caplog.records if r.name.startswith("langgraph")] == []


def test_members_never_see_the_codebook_the_counsellor_and_observer_do(couple):
    """The RESCUE codebook (relation patterns, support strategies) heads the counsellor's and the observer's
    prompts; a member's prompts open on the same case without it (issue 42 (8): the counsellor's vocabulary at the
    head of a 1.5B member's prompt)."""
    client = FakeModelClient(default=RoomScript(couple))
    run(couple, model_supporter(client), client, max_turns=2, seed=1, tracker_every=1)
    by_role = {}
    for call in client.calls:
        by_role.setdefault(call.role, []).append(call.prompt.context)
    assert set(by_role) >= {"member", "supporter", "tracker"}
    assert all("Support strategies:" not in c for c in by_role["member"])
    assert sum("Why they came:" in c for c in by_role["member"]) >= 4  # each member line and self-report
    assert all("Support strategies:" in c for r in ("supporter", "tracker") for c in by_role[r])
