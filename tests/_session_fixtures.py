"""Hand-built session records for the judges' tests: small enough that every metric can be computed by hand.

The couple session (`couple_session`), Ana and Ben, six turns:

    1 Ana  (self-report: intensity 7, felt heard 3, toward Ben warmth 3 tension 7)   -> supporter passes
    2 Ben  (intensity 6, felt heard 4, toward Ana warmth 4 tension 6); tracker runs   -> supporter speaks
    3 Therapist to Couple, stated strategy `reframe`
    4 Ana  (intensity 5, felt heard 6, toward Ben warmth 5 tension 5)                 -> supporter speaks
    5 Therapist to Ana, stated strategy `evoke`
    6 Ana  (intensity 6, felt heard 7, toward Ben warmth 5 tension 4); tracker runs   -> supporter passes

Initial state (turn 0): Ana 6, Ben 5; Ana->Ben warmth 4 tension 6; Ben->Ana warmth 5 tension 5; pursue_withdraw.
Tracker at 2: attack_attack; Ana 8, Ben 5; Ana->Ben w3 t8, Ben->Ana w5 t5.
Tracker at 6: repair_softening; Ana 6, Ben 4; Ana->Ben w5 t3 (Ben->Ana not coded, stays w5 t5).
"""

from __future__ import annotations

import copy
from typing import Any

from personas.case import Case
from personas.graph import EdgeState, MemberState, RelationSnapshot
from simulator.records import (
    EndReason,
    Feeling,
    InnerState,
    ObservedEmotion,
    ObservedViewpoint,
    SessionRecord,
    SessionStatus,
    SupporterDecision,
    TrackerState,
    Turn,
)


def _member(name: str, role: str, emotion: str, intensity: int, generation: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "role": role,
        "age": 40 - 20 * generation,
        "generation": generation,
        "personality": f"{name} is direct and proud.",
        "communication_style": "pursues when hurt",
        "core_need": "to be seen",
        "core_fear": "being alone",
        "triggers": ["being ignored"],
        "softeners": ["being asked how they feel"],
        "baseline_emotion": emotion,
        "baseline_intensity": intensity,
    }


def couple_case() -> Case:
    return Case.model_validate(
        {
            "id": "ana-and-ben",
            "title": "Ana and Ben",
            "group": "couple",
            "setting": "A first session.",
            "presenting_problem": "They fight about attention.",
            "history": "Together ten years.",
            "members": [_member("Ana", "partner", "angry", 6), _member("Ben", "partner", "defensive", 5)],
            "viewpoints": [
                {
                    "source": "Ana",
                    "target": "Ben",
                    "viewpoint": "he ignores me",
                    "attitude": "resentful",
                    "warmth": 4,
                    "tension": 6,
                },
                {
                    "source": "Ben",
                    "target": "Ana",
                    "viewpoint": "she nags",
                    "attitude": "weary",
                    "warmth": 5,
                    "tension": 5,
                },
            ],
            "relation_pattern": "pursue_withdraw",
        }
    )


def family_case() -> Case:
    names = [("Mona", "mother", 0), ("Sam", "father", 0), ("Lia", "daughter", 1)]
    return Case.model_validate(
        {
            "id": "mona-family",
            "title": "The Mona family",
            "group": "family",
            "setting": "A family session.",
            "presenting_problem": "Lia stopped talking at home.",
            "history": "A move last year.",
            "members": [_member(n, r, "tense", 5, g) for n, r, g in names],
            "viewpoints": [
                {"source": a, "target": b, "viewpoint": "fine", "attitude": "guarded", "warmth": 5, "tension": 5}
                for a, _, _ in names
                for b, _, _ in names
                if a != b
            ],
            "relation_pattern": "mutual_disengagement",
        }
    )


def snap(
    turn: int, view: str, pattern: str, members: dict[str, float], edges: dict[tuple[str, str], tuple[float, float]]
) -> RelationSnapshot:
    """A snapshot from {name: intensity} and {(source, target): (warmth, tension)}."""
    return RelationSnapshot(
        turn=turn,
        view=view,
        pattern=pattern,  # type: ignore[arg-type]
        members=[MemberState(name=n, emotion="x", intensity=i) for n, i in members.items()],
        edges=[
            EdgeState(source=s, target=t, viewpoint="v", attitude="a", warmth=w, tension=te)
            for (s, t), (w, te) in edges.items()
        ],
    )


def _inner(intensity: int, heard: int, other: str, warmth: float, tension: float) -> InnerState:
    return InnerState(
        landed="it landed",
        emotion="hurt",
        intensity=intensity,
        felt_heard=heard,
        toward=[Feeling(member=other, warmth=warmth, tension=tension)],
    )


def couple_session(session_id: str = "s1", supporter: str = "fake/supporter", seed: int = 0) -> SessionRecord:
    case = couple_case()
    reframe = SupporterDecision(
        after_turn=2,
        speak=True,
        targets=["Couple"],
        strategy="reframe",
        text="It sounds like you are both caught in a loop where each feels unheard.",
    )
    evoke = SupporterDecision(
        after_turn=4, speak=True, targets=["Ana"], strategy="evoke", text="Ana, what happens inside when he looks away?"
    )
    tracker2 = TrackerState(
        pattern="attack_attack",
        emotions=[
            ObservedEmotion(person="Ana", emotion="angry", intensity=8),
            ObservedEmotion(person="Ben", emotion="defensive", intensity=5),
        ],
        viewpoints=[
            ObservedViewpoint(source="Ana", target="Ben", viewpoint="v", attitude="a", warmth=3, tension=8),
            ObservedViewpoint(source="Ben", target="Ana", viewpoint="v", attitude="a", warmth=5, tension=5),
        ],
    )
    tracker6 = TrackerState(
        pattern="repair_softening",
        emotions=[
            ObservedEmotion(person="Ana", emotion="sad", intensity=6),
            ObservedEmotion(person="Ben", emotion="calmer", intensity=4),
        ],
        viewpoints=[ObservedViewpoint(source="Ana", target="Ben", viewpoint="v", attitude="a", warmth=5, tension=3)],
    )
    turns = [
        Turn(
            index=1,
            speaker="Ana",
            kind="member",
            addressees=["Ben"],
            text="You never listen to me.",
            inner=_inner(7, 3, "Ben", 3, 7),
        ),
        Turn(
            index=2,
            speaker="Ben",
            kind="member",
            addressees=["Ana"],
            text="I do listen, you just never stop.",
            inner=_inner(6, 4, "Ana", 4, 6),
            tracker=tracker2,
        ),
        Turn(
            index=3, speaker="Therapist", kind="supporter", addressees=["Couple"], text=reframe.text, decision=reframe
        ),
        Turn(
            index=4,
            speaker="Ana",
            kind="member",
            addressees=["Therapist"],
            text="Maybe. I just want him to look at me.",
            inner=_inner(5, 6, "Ben", 5, 5),
        ),
        Turn(index=5, speaker="Therapist", kind="supporter", addressees=["Ana"], text=evoke.text, decision=evoke),
        Turn(
            index=6,
            speaker="Ana",
            kind="member",
            addressees=["Therapist"],
            text="I feel alone.",
            inner=_inner(6, 7, "Ben", 5, 4),
            tracker=tracker6,
        ),
    ]
    decisions = [
        SupporterDecision(after_turn=1, speak=False),
        reframe,
        evoke,
        SupporterDecision(after_turn=6, speak=False),
    ]
    ab, ba = ("Ana", "Ben"), ("Ben", "Ana")
    s0 = snap(0, "initial", "pursue_withdraw", {"Ana": 6, "Ben": 5}, {ab: (4, 6), ba: (5, 5)})
    sr = [
        s0,
        snap(1, "self_report", "pursue_withdraw", {"Ana": 7, "Ben": 5}, {ab: (3, 7), ba: (5, 5)}),
        snap(2, "self_report", "pursue_withdraw", {"Ana": 7, "Ben": 6}, {ab: (3, 7), ba: (4, 6)}),
        snap(3, "self_report", "pursue_withdraw", {"Ana": 7, "Ben": 6}, {ab: (3, 7), ba: (4, 6)}),
        snap(4, "self_report", "pursue_withdraw", {"Ana": 5, "Ben": 6}, {ab: (5, 5), ba: (4, 6)}),
        snap(5, "self_report", "pursue_withdraw", {"Ana": 5, "Ben": 6}, {ab: (5, 5), ba: (4, 6)}),
        snap(6, "self_report", "pursue_withdraw", {"Ana": 6, "Ben": 6}, {ab: (5, 4), ba: (4, 6)}),
    ]
    obs_2 = ({"Ana": 8, "Ben": 5}, {ab: (3, 8), ba: (5, 5)})
    ob = [
        s0,
        snap(1, "observer", "pursue_withdraw", {"Ana": 6, "Ben": 5}, {ab: (4, 6), ba: (5, 5)}),
        *(snap(t, "observer", "attack_attack", *obs_2) for t in (2, 3, 4, 5)),
        snap(6, "observer", "repair_softening", {"Ana": 6, "Ben": 4}, {ab: (5, 3), ba: (5, 5)}),
    ]
    return SessionRecord(
        session_id=session_id,
        case=case,
        supporter=supporter,
        models={"member": "fake/model"},
        seed=seed,
        max_turns=4,
        status=SessionStatus.COMPLETED,
        end_reason=EndReason.TURN_LIMIT,
        turns=turns,
        decisions=decisions,
        self_report=sr,
        observer=ob,
    )


# ---- canned judge replies ----------------------------------------------------------------------------------------


DEFAULT_QUOTE = "You never listen"  # words of turn 1 of couple_session(), the turn fill_reply cites by default


def fill_reply(
    schema: type,
    *,
    score_index: int = 3,
    label_index: int = 0,
    quote: str | None = None,
    turn_index: int = 0,
    record: SessionRecord | None = None,
) -> dict[str, Any]:
    """A valid reply for any judge schema: the `score_index`-th score, the `label_index`-th label (a strength that
    fits it: the lowest for the first, neutral, label), `ok: true`, one evidence item citing the `turn_index`-th
    turn the schema offers (the item's own turns), quoting `quote` or else the first three words of that turn
    (in `record`, default `couple_session()`)."""
    texts = {t.index: t.text for t in (record or couple_session()).turns}
    root = schema.model_json_schema()
    defs = root.get("$defs", {})

    def build_enum(node: dict[str, Any]) -> list[Any]:
        return defs[node["$ref"].rsplit("/", 1)[-1]]["enum"] if "$ref" in node else node["enum"]

    def build(node: dict[str, Any], key: str = "") -> Any:
        if "$ref" in node:
            return build(defs[node["$ref"].rsplit("/", 1)[-1]], key)
        if "enum" in node:
            values = node["enum"]
            if key == "score":
                return values[min(score_index, len(values) - 1)]
            if key == "t":
                return values[min(turn_index, len(values) - 1)]
            if key == "label":
                return values[min(label_index, len(values) - 1)]
            return values[0]
        kind = node.get("type")
        if kind == "object":
            props = node.get("properties", {})
            out = {k: build(v, k) for k, v in props.items()}
            if quote is None and "q" in out and out.get("t") in texts:  # quote the turn it cites
                out["q"] = " ".join(texts[out["t"]].split()[:3])
            if "label" in out and "strength" in out:  # neutral label (listed first) <-> lowest strength
                labels, strengths = (build_enum(props["label"]), build_enum(props["strength"]))
                out["strength"] = strengths[0] if out["label"] == labels[0] else strengths[1]
            return out
        if kind == "array":
            return [build(node["items"], key)]
        if kind == "string":
            if key == "q":  # judges must quote the turn they cite: turn 1 of couple_session() by default
                return quote or DEFAULT_QUOTE
            return "because of what was said"
        if kind == "boolean":
            return True
        if kind == "integer":
            return node.get("minimum", 1)
        raise AssertionError(f"unexpected schema node {node}")

    return build(root)


def with_path(reply: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `reply` with the value at `a/b/c` replaced (value `...` deletes the key)."""
    out = copy.deepcopy(reply)
    node = out
    *parents, last = path.split("/")
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    if value is ...:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out
