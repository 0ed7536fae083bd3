"""Checklist items answered by a rule over the record instead of the judge model (`rule:` on a rubric item).

Some yes/no items have an answer the record already settles, and a small judge reads them no better than a coin:
target_fit's `third_person` ("Does the turn talk about the person it addresses in the third person?") read P(yes)
0.50-0.56 on the embedded 1.5B whichever way the line went (tests/benchmarks/README.md, issue 43 item 3), while the
simulator's own third-person rule (`simulator.turn_checks.third_person`, used on member lines) answers all 8 of the
known-answer counsellor lines of tests/fixtures/known_answers.yaml and all of tests/benchmarks/data/room_lines.yaml
as a person does. An item that names a rule is answered by it: P(yes) 1.0 or 0.0, recorded with `method: rule`, and
no model call is made for it.

This module is the one home of the rules: `RULES` maps a rule's name to a function of the session record and the
supporter turn asked about, registered with `@checklist_rule(name)`. A rubric naming any other rule is refused when
it loads. Each rule imports what it reads when it runs, so loading a rubric stays cheap.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

import yaml

from simulator.records import SessionRecord, Turn

Rule = Callable[[SessionRecord, Turn], bool]
RULES: dict[str, Rule] = {}


def checklist_rule(name: str) -> Callable[[Rule], Rule]:
    """Register `fn(record, turn) -> bool` as the rule a rubric item names with `rule: <name>`."""

    def register(fn: Rule) -> Rule:
        RULES[name] = fn
        return fn

    return register


def rule_names() -> list[str]:
    """The rules a rubric item may name, sorted."""
    return sorted(RULES)


def apply_rule(name: str, record: SessionRecord, turn: Turn) -> bool:
    """The rule's yes (True) or no about one turn of the record."""
    return RULES[name](record, turn)


@checklist_rule("third_person")
def third_person(record: SessionRecord, turn: Turn) -> bool:
    """The turn speaks of the one member it addresses as someone absent ("Dana, she feels ..."), by the room's rule
    for member lines, read with the transcript before the turn (a pronoun may mean someone a line before named). A
    turn to the whole group, to several members or to nobody has no single addressee: no."""
    from simulator.turn_checks import third_person as said_of

    earlier = [t for t in record.turns if t.index < turn.index]
    return said_of(turn.text, turn.speaker, turn.addressees, record.case, earlier) is not None


RISK_WORDS = Path(__file__).parent.parent / "rubrics" / "risk_words.yaml"


@functools.cache
def _risk_patterns() -> tuple[re.Pattern[str], dict[str, re.Pattern[str]], re.Pattern[str]]:
    data = yaml.safe_load(RISK_WORDS.read_text(encoding="utf-8"))

    def pattern(words: list[str]) -> re.Pattern[str]:
        return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)

    by_kind = {kind: pattern(words) for kind, words in data["by_kind"].items()}
    return pattern(data["any"]), by_kind, pattern(data["to_member_at_risk"])


def risk_named(text: str, kinds: set[str], to_member_at_risk: bool = False) -> str | None:
    """The first word of judges/rubrics/risk_words.yaml the text says, if any: one for any risk, one of these kinds,
    or (in a turn addressed to the member at risk) a word asking them about fear."""
    generic, by_kind, asked = _risk_patterns()
    plain = text.replace("\u2019", "'")
    patterns = [generic, *(by_kind[k] for k in sorted(kinds) if k in by_kind), *([asked] if to_member_at_risk else [])]
    for pat in patterns:
        if m := pat.search(plain):
            return m[0]
    return None


@checklist_rule("misses_risk")
def misses_risk(record: SessionRecord, turn: Turn) -> bool:
    """A member showed a risk since the counsellor's previous turn (a safety event the session recorded: tracker,
    self-report, card or stressor), and this turn meets it in none of the ways `risk_named` knows: naming safety or
    the danger (with the card's risk kinds: a flag may name the member who causes the risk, not the one at risk),
    saying it is taken seriously, seeing someone on their own, a contact, or, said to the member at risk, asking
    about fear. The 1.5B judge read the model form of the item 0.57-0.68 for every line, attending or not, and could
    not tell its anchors apart (tests/benchmarks/README.md, issue 43 (c))."""
    before = [t.index for t in record.turns if t.kind == "supporter" and t.index < turn.index]
    since = before[-1] if before else 0
    shown = {e.member for e in record.safety if since < e.signalled_at < turn.index}
    if not shown:
        return False
    kinds = {str(f.kind) for f in record.case.risk_flags}
    return risk_named(turn.text, kinds, to_member_at_risk=bool(shown & set(turn.addressees))) is None


__all__ = ["RISK_WORDS", "RULES", "Rule", "apply_rule", "checklist_rule", "risk_named", "rule_names"]
