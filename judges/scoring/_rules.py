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

from collections.abc import Callable

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


__all__ = ["RULES", "Rule", "apply_rule", "checklist_rule", "rule_names"]
