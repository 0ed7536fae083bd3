"""Scripted model behaviour for engine tests: valid replies to every simulator schema, with knobs."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field

from personas.case import Case


def _literal_values(annotation: object) -> tuple:
    return typing.get_args(annotation)


@dataclass
class RoomScript:
    """Answers member, tracker and supporter calls for one case. Override fields to steer a test."""

    case: Case
    intensity: int = 6
    warmth: int = 4
    tension: int = 7
    speak: bool = True
    strategy: str | None = None  # default: first strategy of the group
    targets: list[str] | None = None  # default: the group label
    close_after: int | None = None  # supporter closes at its n-th decision
    at_risk: list[str] = field(default_factory=list)
    line: str = "I don't know why we're even here."
    move: str = "defend"  # the member move every self-report picks (personas.taxonomy.MEMBER_MOVES)
    cue: str = ""  # supporter words named as the softening cause (only where the schema offers `cue`)
    reading: str = "missed"  # what a supporter turn did (only where the schema offers `reading`: right after one)
    blamed: bool = False  # the answers to the appraisals of a counsellor turn (simulator.members.appraise)
    understood: bool = False
    supporter_text: str = "Let's slow down and hear each other."
    attends_safety: bool = True  # the safety verdict on a supporter turn after a risk signal
    decisions: int = 0

    def __call__(self, call) -> object:
        if call.schema is None:
            last = call.prompt.prefill.rsplit("\n", 1)[-1]  # the appraisal's question (simulator.members.appraise)
            if last.startswith("Does it blame or criticise"):
                return " yes" if self.blamed else " no"
            if last.startswith("Does it show understanding of"):
                return " yes" if self.understood else " no"
            return self.line
        name = call.schema.__name__
        if name == "MemberStateReply":
            feeling = call.schema.model_fields["toward"].annotation.__args__[0]
            others = _literal_values(feeling.model_fields["member"].annotation)
            reply = {
                "landed": "it stung",
                "emotion": "hurt",
                "intensity": self.intensity,
                "felt_heard": 4,
                "toward": [{"member": o, "warmth": self.warmth, "tension": self.tension} for o in others],
                "reason": "same old fight",
            }
            if "move" in call.schema.model_fields:  # softening moves are not offered after a blaming turn
                offered = _literal_values(call.schema.model_fields["move"].annotation)
                reply["move"] = self.move if self.move in offered else offered[0]
            if "cue" in call.schema.model_fields:
                reply["cue"] = self.cue
            if "reading" in call.schema.model_fields:  # offered: set_off when blamed, else softened / missed
                offered = _literal_values(call.schema.model_fields["reading"].annotation)
                reply["reading"] = self.reading if self.reading in offered else offered[0]
            return reply
        if name == "TrackerReply":  # names and labels come from the schema, so one script serves any case
            item = call.schema.model_fields["emotions"].annotation.__args__[0]
            names = _literal_values(item.model_fields["person"].annotation)
            patterns = _literal_values(call.schema.model_fields["pattern"].annotation)
            pattern = self.case.relation_pattern if self.case.relation_pattern in patterns else patterns[0]
            return {
                "pattern": pattern,
                "emotions": [{"person": n, "emotion": "tense", "intensity": 6} for n in names],
                "viewpoints": [],
                "at_risk": [n for n in self.at_risk if n in names],
            }
        if name == "SupporterReply":
            self.decisions += 1
            targets = _literal_values(call.schema.model_fields["targets"].annotation.__args__[0])
            strategies = _literal_values(call.schema.model_fields["strategy"].annotation)
            reply = {
                "speak": self.speak,
                "targets": self.targets or [targets[-1]],
                "strategy": self.strategy or strategies[0],
                "text": self.supporter_text,
                "close_session": self.close_after is not None and self.decisions >= self.close_after,
            }
            if "verdict" in call.schema.model_fields:  # the `sides` rung states its verdict first
                reply["verdict"] = "they keep letting the other down"
            return reply
        if name == "SafetyVerdictReply":
            quote = self.supporter_text if self.attends_safety else ""
            return {"quote": quote, "reasoning": "scripted verdict", "attended": self.attends_safety}
        raise AssertionError(f"unexpected schema {name}")
