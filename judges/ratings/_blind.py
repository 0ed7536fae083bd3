"""Blinding: what a rater sees of a unit, with the supporter behind an alias and no model named anywhere.

A rater item holds only what a rater needs: the case's public framing (title, setting, presenting problem,
members' names, roles and ages), the transcript (whole, or the window before and including the intervention),
the dimensions to rate, and the supporter's alias. Inner states, decisions, model calls, judge scores and the
run's configuration stay out. Any model id or supporter spec of the run that appears in that text (a model
naming itself, say) is replaced by `[model]`, and the finished file is scanned once more before it is written:
a leak is an error, never a file.

Aliases (`Supporter A`, `Supporter B`, ...) are given in the order of a hash of the supporter specs, so the same
set of supporters gets the same aliases in every export, whatever order the run folders come in. The key
(alias -> spec, item -> run, session and unit) goes to a separate file.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from pydantic import Field

from judges.ratings._select import Pick
from judges.scoring._records import SessionJudgment
from personas.common.errors import UserError
from personas.common.records import Record
from simulator.records import SessionRecord

EXPORT_SCHEMA_VERSION = 2  # 2: each item carries its inclusion probability and design
REDACTED = "[model]"
DEFAULT_WINDOW = 6  # turns of context before an intervention


class BlindingError(UserError):
    """The export would name a model; nothing was written."""


class RaterMember(Record):
    name: str
    role: str
    age: int | None = None


class RaterCase(Record):
    """The case as a rater needs it: public framing only (no private knowledge, no inner states)."""

    title: str
    group: str
    setting: str
    presenting_problem: str
    members: list[RaterMember]


class RaterTurn(Record):
    turn: int = Field(description="Turn number in the session.")
    speaker: str
    to: list[str] = Field(default_factory=list, description="Addressees.")
    text: str
    focus: bool = Field(default=False, description="The intervention to rate (intervention units).")


class RaterItem(Record):
    """One item for a human rater. Nothing here names a model."""

    item_id: str = Field(description="Stable id; ratings come back with it.")
    unit: str = Field(description="`session` (rate the whole session) or `intervention` (rate the focus turn).")
    turn: int | None = Field(default=None, description="The focus turn, for intervention units.")
    supporter: str = Field(description="The supporter's alias, e.g. `Supporter A`.")
    pair: str | None = Field(default=None, description="Pair id: rate both items of a pair side by side.")
    position: str | None = Field(default=None, description="`A` or `B` within the pair.")
    case: RaterCase
    transcript: list[RaterTurn]
    dimensions: list[str] = Field(description="Dimension ids to rate, in rubric order.")


class KeyItem(Record):
    item_id: str
    run: str
    session_id: str
    unit: str
    turn: int | None = None
    supporter: str
    alias: str
    strategy: str
    reason: str
    pair: str | None = None
    position: str | None = None
    pi: float | None = Field(
        description="Probability that the design drew this item from its frame; null: picked deterministically."
    )
    design: str = Field(description="`random`, `stratified`, `active` or `unknown-probability`.")


class ExportKey(Record):
    """The unblinding key, written beside the export (`<name>.key.json`); never send it to raters."""

    schema_version: int = EXPORT_SCHEMA_VERSION
    batch: str = Field(description="Batch id, also stored in each run's ratings.json (ties ratings to their pi).")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    format: str
    file: str
    runs: list[str]
    seed: int
    window: int
    aliases: dict[str, str] = Field(description="Alias -> supporter spec.")
    items: list[KeyItem]


def aliases_for(supporters: Iterable[str]) -> dict[str, str]:
    """Supporter spec -> `Supporter A`, `Supporter B`, ... ordered by a hash of the spec (stable, order-free)."""
    specs = sorted(set(supporters), key=lambda s: hashlib.sha256(s.encode()).hexdigest())
    letters = string.ascii_uppercase
    out = {}
    for i, spec in enumerate(specs):
        tag = letters[i % 26] + (str(i // 26) if i >= 26 else "")
        out[spec] = f"Supporter {tag}"
    return out


def model_strings(record: SessionRecord, judgment: SessionJudgment | None = None) -> set[str]:
    """Every model id and supporter spec a session and its judgment name (call records included)."""
    out = {record.supporter, *record.models.values()}
    out.update(f.model for m in record.case.members for f in m.inferred)
    for t in record.turns:
        out.update(c.model for c in t.calls)
        if t.tracker and t.tracker.call:
            out.add(t.tracker.call.model)
        if t.decision and t.decision.call:
            out.add(t.decision.call.model)
    out.update(d.call.model for d in record.decisions if d.call)
    if judgment is not None:
        out.update(judgment.judges)
        out.add(judgment.supporter)
        for v in judgment.verdicts:
            out.add(v.judge)
            out.update(c.model for c in v.calls)
    return {s for s in out if s}


def _plain_word(s: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z]+", s))


def secrets_of(strings: Iterable[str]) -> list[str]:
    """What must never appear in an export: each model string, and its model part (after `#` or the last `/`).

    Plain words (`silent`, `scripted`: built-in baselines, not model ids) are left alone, or every transcript
    saying "you were silent" would be censored; longest first, so a full id is replaced before its parts.
    """
    out: set[str] = set()
    for s in strings:
        parts = {s, s.split("#", 1)[-1], s.split("#", 1)[0], s.rsplit("/", 1)[-1], s.rsplit(":", 1)[-1]}
        out.update(p for p in parts if len(p) >= 3 and not _plain_word(p))
    return sorted(out, key=lambda p: (-len(p), p))


def scrub(text: str, secrets: Sequence[str]) -> str:
    for s in secrets:
        if s.lower() in text.lower():
            text = re.sub(re.escape(s), REDACTED, text, flags=re.IGNORECASE)
    return text


def find_leaks(blob: str, secrets: Sequence[str]) -> list[str]:
    low = blob.lower()
    return [s for s in secrets if s.lower() in low]


def rater_item(pick: Pick, record: SessionRecord, alias: str, secrets: Sequence[str], window: int) -> RaterItem:
    u = pick.unit
    turns = record.turns
    if u.unit == "intervention":
        turns = [t for t in record.turns if u.turn is not None and u.turn - window <= t.index <= u.turn]
    case = record.case
    return RaterItem(
        item_id=u.item_id,
        unit=u.unit,
        turn=u.turn,
        supporter=alias,
        pair=pick.pair,
        position=pick.position,
        case=RaterCase(
            title=scrub(case.title, secrets),
            group=case.group,
            setting=scrub(case.setting, secrets),
            presenting_problem=scrub(case.presenting_problem, secrets),
            members=[RaterMember(name=m.name, role=m.role, age=m.age) for m in case.members],
        ),
        transcript=[
            RaterTurn(
                turn=t.index,
                speaker=t.speaker,
                to=list(t.addressees),
                text=scrub(t.text, secrets),
                focus=u.unit == "intervention" and t.index == u.turn,
            )
            for t in turns
        ],
        dimensions=list(u.dimensions),
    )


def key_item(pick: Pick, alias: str) -> KeyItem:
    u = pick.unit
    return KeyItem(
        item_id=u.item_id,
        run=u.run,
        session_id=u.session_id,
        unit=u.unit,
        turn=u.turn,
        supporter=u.supporter,
        alias=alias,
        strategy=pick.strategy,
        reason=pick.reason,
        pair=pick.pair,
        position=pick.position,
        pi=pick.pi,
        design=pick.design,
    )
