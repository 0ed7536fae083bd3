"""Hand-made session records for perturbation checks: a tiny script language, so each test reads as a transcript.

    record(case, [("m", "Ana", "You never listen."), ("pass",), ("m", "Ben", "...", DIRECTIVE), ("s", "Ben", "Ben, are you safe?")])

`("m", speaker, text[, directive])` is a member turn, `("s", target, text)` a supporter turn (after a decision to
speak), `("pass",)` a decision to stay silent after the last member turn.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from personas.case import Case
from simulator.records import EndReason, SessionRecord, SessionStatus, SupporterDecision, Turn


def record(
    case: Case,
    script: list[tuple],
    *,
    perturbation: str | None = None,
    session_id: str = "s1",
    supporter: str = "fake/supporter",
    seed: int = 0,
    trial: int = 0,
    max_turns: int = 3,
    status: SessionStatus = SessionStatus.COMPLETED,
) -> SessionRecord:
    turns: list[Turn] = []
    decisions: list[SupporterDecision] = []
    for step in script:
        index = len(turns) + 1
        if step[0] == "m":
            directive = step[3] if len(step) > 3 else None
            turns.append(
                Turn(index=index, speaker=step[1], kind="member", addressees=[], text=step[2], directive=directive)
            )
        elif step[0] == "pass":
            decisions.append(SupporterDecision(after_turn=turns[-1].index, speak=False))
        else:
            d = SupporterDecision(after_turn=turns[-1].index, speak=True, targets=[step[1]], text=step[2])
            decisions.append(d)
            turns.append(
                Turn(index=index, speaker="Therapist", kind="supporter", addressees=[step[1]], text=step[2], decision=d)
            )
    return SessionRecord(
        session_id=session_id,
        case=case,
        supporter=supporter,
        models={"member": "fake/model"},
        seed=seed,
        trial=trial,
        perturbation=perturbation,
        max_turns=max_turns,
        status=status,
        end_reason=EndReason.TURN_LIMIT if status == SessionStatus.COMPLETED else EndReason.FAILED,
        failure=None if status == SessionStatus.COMPLETED else "member turn 2: boom",
        turns=turns,
        decisions=decisions,
    )


def _fill(node: dict, defs: dict) -> object:
    if "$ref" in node:
        return _fill(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in node:
        return _fill(node["anyOf"][0], defs)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type")
    if kind == "object":
        return {k: _fill(v, defs) for k, v in node.get("properties", {}).items()}
    if kind == "array":
        n = node.get("minItems", 0)
        item = node["items"]
        if n == 0:
            return []
        if "$ref" in item:
            item_def = defs[item["$ref"].rsplit("/", 1)[-1]]
            props = item_def.get("properties", {})
            key = next((k for k, v in props.items() if "enum" in v or "$ref" in v), None)
            if key and "enum" in props[key]:  # one entry per allowed name (e.g. feelings toward each member)
                return [{**_fill(item_def, defs), key: e} for e in props[key]["enum"][:n]]
        return [_fill(item, defs) for _ in range(n)]
    return {"string": "it stung", "integer": 5, "number": 5, "boolean": False}.get(kind)


def steady_yes(call) -> float:
    """A FakeModelClient `yes`: every checklist question answered yes with p = 0.7 (the checklist judge, the
    default of every path that judges, gets an answer; tests of its arithmetic choose their own)."""
    return 0.7


def any_schema_reply(line: str = "I can't do this any more.", *, lines: Sequence[str] = ()):
    """A FakeModelClient `default` that answers any schema with its first allowed values (empty optional lists,
    so no risk is flagged) and free text with `line`: robust to fields the simulator's schemas gain. With `lines`,
    free text cycles through them instead: a room that does not repeat itself (no simulator fault)."""
    texts = itertools.cycle(lines) if lines else itertools.repeat(line)

    def reply(call) -> object:
        if call.schema is None:
            return next(texts)
        schema = call.schema.model_json_schema()
        return _fill(schema, schema.get("$defs", {}))

    return reply
