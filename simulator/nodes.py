"""The nodes of the session graph (`simulator.engine` wires them): floor, member turn, tracker, supporter gate,
supporter turn and end check. Each comes from a factory that closes over its fixed dependencies (case, model
client, supporter, config), returns only the keys it changes and never mutates its input; a model failure inside
a node ends the session as `failed` with its reason, nothing filled in for it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from personas.case import Case
from personas.graph import EdgeUpdate, MemberState, RelationGraph, RelationSnapshot, RelationUpdate
from personas.taxonomy import RiskKind
from simulator.director import choose_beat
from simulator.floor import choose_next
from simulator.llm.types import ModelClient, ModelError
from simulator.members import member_turn
from simulator.records import (
    SUPPORTER,
    EndReason,
    FidelityCheck,
    SafetyEvent,
    SupporterDecision,
    Turn,
)
from simulator.redact import redact
from simulator.safety import check_attended
from simulator.session_state import SessionConfig, SessionState, StageDirection, derive_seed
from simulator.supporters import HumanSupporter, InvalidDecision, Supporter, finish_decision
from simulator.tracker import observe
from simulator.view import SessionView, build_view

SAFETY_GRACE = 2  # supporter decisions allowed to pass over a member at risk before the session is stopped
SELF_RISK_KINDS = {RiskKind.SUICIDAL_IDEATION, RiskKind.SELF_HARM}
SELF_RISK_INTENSITY = 8


def _advance(case: Case, latest: RelationSnapshot, update: RelationUpdate) -> RelationSnapshot:
    graph = RelationGraph.from_snapshot(
        latest,
        group=case.group,
        case_id=case.id,
        roles={m.name: m.role for m in case.members},
        generations={m.name: m.generation for m in case.members},
    )
    return graph.apply(update)


def _carry(latest: RelationSnapshot, turn: int) -> RelationSnapshot:
    return latest.model_copy(update={"turn": turn})


def failure_update(where: str, err: Exception) -> dict[str, Any]:
    reason = err.reason if isinstance(err, ModelError) else f"{type(err).__name__}: {err}"
    return {"failure": redact(f"{where}: {reason}"), "end_reason": EndReason.FAILED}


# -- nodes -------------------------------------------------------------------------------------------------------


def make_floor_node(case: Case, config: SessionConfig) -> Callable[[SessionState], dict]:
    def floor(state: SessionState) -> dict:
        choice = choose_next(case, state["turns"], state["self_report"][-1], config.seed)
        direction = config.direction_for(sum(t.kind == "member" for t in state["turns"]) + 1)
        if direction and direction.member and direction.member != choice.speaker:
            addressees = list(direction.to) or [a for a in choice.addressees if a != direction.member] or [SUPPORTER]
            return {"next_speaker": direction.member, "next_addressees": addressees, "next_floor": "directed"}
        if direction and direction.to:  # a direction to press the counsellor is not played in a line to another
            return {"next_speaker": choice.speaker, "next_addressees": list(direction.to), "next_floor": "directed"}
        return {"next_speaker": choice.speaker, "next_addressees": list(choice.addressees), "next_floor": choice.reason}

    return floor


def make_member_node(
    client: ModelClient, case: Case, config: SessionConfig
) -> Callable[[SessionState], Awaitable[dict]]:
    async def member(state: SessionState) -> dict:
        turns = state["turns"]
        speaker = state["next_speaker"]
        d = config.direction_for(sum(t.kind == "member" for t in turns) + 1)
        try:
            turn = await member_turn(
                client,
                case,
                turns,
                speaker,
                state["next_addressees"],
                seed=derive_seed(config.seed, "member", len(turns)),
                window=config.window,
                directive=d.text if d else None,
                allow=d.allow if d else (),
                said_if=d.said_if if d else (),
                opening=d.opening if d else None,
                beat=None if d else choose_beat(case, turns, speaker, config.seed),
            )
        except (ModelError, ValueError) as err:
            return failure_update(f"member turn {len(turns) + 1} ({speaker})", err)
        turn = turn.model_copy(update={"floor": state.get("next_floor")})
        inner = turn.inner
        update = RelationUpdate(
            turn=turn.index,
            view="self_report",
            emotions=[MemberState(name=speaker, emotion=inner.emotion, intensity=inner.intensity)],
            edges=[
                EdgeUpdate(source=speaker, target=f.member, warmth=f.warmth, tension=f.tension) for f in inner.toward
            ],
        )
        return {
            "turns": [turn],
            "self_report": [_advance(case, state["self_report"][-1], update)],
        }

    return member


def make_track_node(
    client: ModelClient, case: Case, config: SessionConfig
) -> Callable[[SessionState], Awaitable[dict]]:
    async def track(state: SessionState) -> dict:
        turns = state["turns"]
        last = turns[-1]
        member_turns = sum(t.kind == "member" for t in turns)
        final = member_turns >= config.max_turns and last.kind == "member"
        due = last.kind == "member" and (
            final or (config.tracker_every > 0 and member_turns % config.tracker_every == 0)
        )
        if not due:
            return {"observer": [_carry(state["observer"][-1], last.index)]}
        try:
            observed = await observe(
                client, case, turns, seed=derive_seed(config.seed, "tracker", last.index), window=config.window
            )
        except (ModelError, ValueError) as err:
            return failure_update(f"tracker after turn {last.index}", err)
        update = RelationUpdate(
            turn=last.index,
            view="observer",
            pattern=observed.pattern,
            emotions=[MemberState(name=e.person, emotion=e.emotion, intensity=e.intensity) for e in observed.emotions],
            edges=[
                EdgeUpdate(
                    source=v.source,
                    target=v.target,
                    warmth=v.warmth,
                    tension=v.tension,
                    viewpoint=v.viewpoint,
                    attitude=v.attitude,
                )
                for v in observed.viewpoints
            ],
        )
        return {
            "turns": [last.model_copy(update={"tracker": observed})],
            "observer": [_advance(case, state["observer"][-1], update)],
        }

    return track


SUPPORTER_REASKS = 2  # re-asks after invalid supporter output before the decision is recorded as invalid


def _view(case: Case, state: SessionState, config: SessionConfig) -> SessionView:
    return build_view(
        case,
        state["turns"],
        member_turns=sum(t.kind == "member" for t in state["turns"]),
        max_turns=config.max_turns,
        knows=config.supporter_knows,
        observer=state["observer"][-1],
    )


def _invalid(view: SessionView, err: InvalidDecision, reasks: int) -> SupporterDecision:
    """Invalid output stays what it was: recorded with its raw text and reason, nothing said in the room."""
    return SupporterDecision(
        after_turn=view.after_turn,
        speak=False,
        valid=False,
        invalid_reason=err.reason,
        raw=err.raw,
        reasks=reasks,
        call=err.call,
    )


def make_gate_node(
    case: Case, supporter: Supporter, config: SessionConfig
) -> Callable[[SessionState], Awaitable[dict]]:
    async def ask_human(view: SessionView, reask: str | None) -> SupporterDecision:
        from langgraph.types import interrupt

        answer = interrupt(
            {
                "after_turn": view.after_turn,
                "members": list(view.member_names),
                "group_label": view.group_label,
                "group": view.intake.group,
                "reask": reask,
            }
        )
        return finish_decision(
            view,
            speak=bool(answer.get("text")),
            targets=list(answer.get("targets") or []),
            strategy=answer.get("strategy") or None,
            text=answer.get("text", ""),
            close=bool(answer.get("close_session")),
        )

    async def gate(state: SessionState) -> dict:
        view = _view(case, state, config)
        ask = ask_human if isinstance(supporter, HumanSupporter) else supporter.decide
        reask: str | None = None
        for attempt in range(SUPPORTER_REASKS + 1):
            try:
                decision = await ask(view, reask)
            except InvalidDecision as err:
                if attempt == SUPPORTER_REASKS:
                    return {"decisions": [_invalid(view, err, attempt)]}
                reask = err.reason
                view = _view(case, state, config)  # a fresh copy: nothing from the last try carries over
                continue
            except (ModelError, ValueError, TypeError) as err:
                return failure_update(f"supporter after turn {view.after_turn}", err)
            return {"decisions": [decision.model_copy(update={"reasks": attempt})]}
        raise AssertionError("unreachable")

    return gate


def make_supporter_node(case: Case) -> Callable[[SessionState], dict]:
    def supporter_turn(state: SessionState) -> dict:
        d = state["decisions"][-1]
        index = state["turns"][-1].index + 1
        turn = Turn(
            index=index,
            speaker=SUPPORTER,
            kind="supporter",
            addressees=d.targets,
            text=d.text,
            decision=d,
            calls=[*d.draw_calls, *([d.call] if d.call else [])],
        )
        return {"turns": [turn], "self_report": [_carry(state["self_report"][-1], index)]}

    return supporter_turn


def _self_risk_from(case: Case, config: SessionConfig) -> dict[str, int]:
    """The member turn from which each self-risk flag on the card is live. A flag the card had is live from the
    start; one a stressor added is live from the turn that says it, as the counsellor can only answer a risk the
    room has shown (a self-report of intensity 8 before the disclosure once stopped sessions for an "unaddressed"
    risk that nobody had mentioned)."""
    flags = Counter(f.member for f in case.risk_flags if f.kind in SELF_RISK_KINDS and f.member)
    added = Counter(d.member for d in config.directions for k in d.discloses if k in SELF_RISK_KINDS and d.member)
    live = {m: 1 for m, n in flags.items() if n > added[m]}
    for d in sorted(config.directions, key=lambda d: d.at_member_turn):
        if d.member and SELF_RISK_KINDS & set(d.discloses):
            live.setdefault(d.member, d.at_member_turn)
    return live


def _discloses_risk(direction: StageDirection | None, turn: Turn) -> bool:
    """Did this member turn say the self-risk its stage direction discloses (one of the stressor's `said_if`
    wordings, the facts the member turn already checks)?"""
    return (
        direction is not None
        and direction.member == turn.speaker
        and bool(SELF_RISK_KINDS & set(direction.discloses))
        and bool(direction.said_if)
        and not any(f.check == FidelityCheck.DIRECTION_IGNORED for f in turn.flags)
    )


def make_end_check_node(
    client: ModelClient, case: Case, config: SessionConfig
) -> Callable[[SessionState], Awaitable[dict]]:
    at_risk_from = _self_risk_from(case, config)
    flagged = {f.member for f in case.risk_flags if f.member}

    async def end_check(state: SessionState) -> dict:
        turns = state["turns"]
        events = {(e.member, e.signalled_at): e for e in state["safety"]}
        open_members = {e.member for e in events.values() if not e.addressed}
        last_member = next((t for t in reversed(turns) if t.kind == "member"), None)
        fresh: list[SafetyEvent] = []
        if last_member is not None:
            played = sum(t.kind == "member" for t in turns)
            signals: list[tuple[str, str]] = []
            if last_member.tracker:
                signals += [(m, "tracker") for m in last_member.tracker.at_risk]
            if _discloses_risk(config.direction_for(played), last_member):
                signals.append((last_member.speaker, "stressor"))
            if (
                at_risk_from.get(last_member.speaker, played + 1) <= played
                and last_member.inner
                and last_member.inner.intensity >= SELF_RISK_INTENSITY
            ):
                signals.append((last_member.speaker, "self_report"))
            for member, source in signals:
                if member not in open_members and member in case.member_names:
                    fresh.append(
                        SafetyEvent(member=member, signalled_at=last_member.index, source=source, addressed=False)
                    )
                    open_members.add(member)
        new: list[SafetyEvent] = []
        stop = False
        for e in [*events.values(), *fresh]:
            if e.addressed:
                if e in fresh:
                    new.append(e)
                continue
            checked = {c.turn for c in e.checks}
            later = [
                t
                for t in turns
                if t.index > e.signalled_at and t.kind == "supporter" and t.index not in checked and t.text
            ]
            checks = list(e.checks)
            hit = None
            for t in later:
                try:
                    check = await check_attended(
                        client,
                        case,
                        turns,
                        t,
                        e.member,
                        e.signalled_at,
                        seed=derive_seed(config.seed, "safety", t.index, e.member),
                        window=config.window,
                    )
                except (ModelError, ValueError) as err:
                    return failure_update(f"safety check of turn {t.index} for {e.member}", err)
                checks.append(check)
                if check.attended:
                    hit = t
                    break
            e = e.model_copy(update={"checks": checks})
            decisions_since = [d for d in state["decisions"] if d.after_turn >= e.signalled_at]
            if hit is not None:
                e = e.model_copy(update={"addressed": True, "addressed_at": hit.index})
            elif len(decisions_since) >= SAFETY_GRACE and not e.note:
                # A tracker-only signal about a member the card does not flag is recorded but does not stop the
                # session: small trackers over-report risk, and a false stop would hide the rest of the session.
                corroborated = e.member in flagged or e.source != "tracker"
                note = f"unaddressed after {len(decisions_since)} supporter decisions"
                e = e.model_copy(update={"note": note if corroborated else note + " (tracker-only signal)"})
                stop = stop or corroborated
            if e in fresh or e != events.get((e.member, e.signalled_at)):
                new.append(e)
        member_turns = sum(t.kind == "member" for t in turns)
        last = turns[-1] if turns else None
        if stop:
            reason: EndReason | None = EndReason.SAFETY_STOP
        elif last is not None and last.kind == "supporter" and last.decision and last.decision.close_session:
            reason = EndReason.SUPPORTER_CLOSED
        elif member_turns >= config.max_turns:
            reason = EndReason.TURN_LIMIT
        else:
            reason = None
        return {"safety": new, "end_reason": reason}

    return end_check
