"""The known-answer lines of tests/fixtures/known_answers.yaml, asked as the checklist judge asks them.

Each line becomes a session record (its case, the case's shared room, then the counsellor's line to its addressees)
and is asked exactly the items `judge` asks about that turn (`judges.scoring.turn_asks`, the same context and item
prompt): the safety dimension's three items, scored into its label by `score_dimension`, and target_fit's
`third_person` item, read as its P(yes): answered by its rule as `judge` answers it (`rule: third_person` in the
shipped rubric; no model call), or asked where a rubric drops the rule. Used by tests/test_known_answers.py (fake and
embedded judges) and tests/benchmarks/known_answer_bench.py (prints every figure).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from judges.scoring import load_rubric
from judges.scoring._checklist import answer_asks, score_dimension, turn_asks
from judges.scoring._records import AnchorReading
from personas.library import resolve_case
from simulator.records import SUPPORTER, SafetyEvent, SessionRecord, Turn
from tests._session_fixtures import couple_session

KNOWN = Path(__file__).parent / "fixtures" / "known_answers.yaml"
HELD_OUT = KNOWN.with_name("known_answers_heldout.yaml")  # written before the safety items were anchored
RISK = KNOWN.with_name("known_answers_risk.yaml")  # rooms where a member has just shown a risk
RISK_HELD_OUT = KNOWN.with_name("known_answers_risk_heldout.yaml")  # written before the misses_risk rule
RISK_FRESH = KNOWN.with_name("known_answers_risk_fresh.yaml")  # written at stop 49, before its changes
RISK_BLIND = KNOWN.with_name("known_answers_risk_blind.yaml")  # by a helper that saw no rule or word list
RISK_SEALED = KNOWN.with_name("known_answers_risk_sealed.yaml")  # the same, and unread before it was scored
RISK_SEALED2 = KNOWN.with_name("known_answers_risk_sealed2.yaml")  # the same, before the items were asked alone
THIRD_PERSON = ("target_fit", "third_person")


@dataclass(frozen=True)
class KnownLine:
    id: str
    case: str
    to: tuple[str, ...]
    line: str
    check: str  # `safety` or `third_person`
    expect: str  # safety: ok | not_ok; third_person: yes | no
    risk: tuple[str, int] | None = None  # (member, room line) where a risk showed, from the file's `risks`


@dataclass
class Reading:
    """What the judge made of one known line."""

    known: KnownLine
    p: dict[str, float] = field(default_factory=dict)  # item id -> P(yes)
    method: dict[str, str] = field(default_factory=dict)  # item id -> how it was read (logprobs, samples, rule)
    anchored: dict[str, AnchorReading] = field(default_factory=dict)  # anchored items: what P(yes) was made of
    label: str | None = None  # safety: the dimension's label
    failed: str | None = None

    @property
    def answer(self) -> str | None:
        """The judge's answer in the expectation's terms."""
        if self.failed is not None:
            return None
        if self.known.check == "safety":
            return "ok" if self.label == "ok" else "not_ok"
        return "yes" if self.p["third_person"] > 0.5 else "no"

    @property
    def passed(self) -> bool:
        return self.answer == self.known.expect


def load_known(path: Path = KNOWN) -> tuple[dict[str, list[tuple[str, str]]], list[KnownLine]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    rooms = {case: [(who, text) for who, text in lines] for case, lines in data["rooms"].items()}
    risks = {case: (r["member"], int(r["at"])) for case, r in (data.get("risks") or {}).items()}
    lines = []
    for entry in data["lines"]:
        [(check, expect)] = entry["expect"].items()
        case = entry["case"]
        lines.append(
            KnownLine(entry["id"], case, tuple(entry["to"]), entry["line"], check, str(expect), risks.get(case))
        )
    return rooms, lines


def known_record(known: KnownLine, room: list[tuple[str, str]]) -> SessionRecord:
    """The case, its room's member lines, then the counsellor's line (the last turn); no passes; a safety event
    where the room's risk showed (as the tracker records one), else none."""
    turns = [Turn(index=i, speaker=who, kind="member", text=text) for i, (who, text) in enumerate(room, start=1)]
    turns.append(
        Turn(index=len(turns) + 1, speaker=SUPPORTER, kind="supporter", text=known.line, addressees=list(known.to))
    )
    safety = (
        [SafetyEvent(member=known.risk[0], signalled_at=known.risk[1], source="tracker", addressed=False)]
        if known.risk
        else []
    )
    return couple_session(f"known-{known.id}").model_copy(
        update={"case": resolve_case(known.case), "turns": turns, "decisions": [], "safety": safety}
    )


async def read_known(client, model: str, lines: list[KnownLine], rooms, rubric=None) -> list[Reading]:
    """Each line's reading by `model`, one line after another (the embedded model keeps each case's prefix)."""
    rubric = rubric or load_rubric()
    dims = {d.id: d for d in rubric.active}
    out = []
    for known in lines:
        record = known_record(known, rooms[known.case])
        turn = record.turns[-1].index
        dim = dims["safety"] if known.check == "safety" else dims[THIRD_PERSON[0]]
        asks = [a for a in turn_asks(record, dim, turn) if known.check == "safety" or a.item.id == THIRD_PERSON[1]]
        answered, _ = await answer_asks(client, model, record, asks, seed=record.seed)
        reading = Reading(known)
        answers = []
        for a, answer in zip(asks, answered, strict=True):
            if isinstance(answer, str):
                reading.failed = answer
                break
            answers.append(answer)
            reading.p[a.item.id] = answer.p_yes
            reading.method[a.item.id] = answer.method
            if answer.anchored is not None:
                reading.anchored[a.item.id] = answer.anchored
        if reading.failed is None and known.check == "safety":
            scored = score_dimension(dim, f"t{turn}", answers, record.case.member_names)
            if isinstance(scored, str):
                reading.failed = scored
            else:
                reading.label = scored.label
        out.append(reading)
    return out


def summary(readings: list[Reading]) -> dict[tuple[str, str], tuple[int, int]]:
    """(check, expected answer) -> (lines read as expected, lines)."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for r in readings:
        key = (r.known.check, r.known.expect)
        ok, n = out.get(key, (0, 0))
        out[key] = (ok + r.passed, n + 1)
    return out


__all__ = [
    "HELD_OUT",
    "KNOWN",
    "RISK",
    "RISK_HELD_OUT",
    "KnownLine",
    "Reading",
    "known_record",
    "load_known",
    "read_known",
    "summary",
]
