"""Validity: the relation-state tracker and the judge measured against RESCUE's human-verified gold.

`validate` (or `validate_tracker` / `validate_judges`) returns `ValidityCard`s keyed by instrument, model id and
prompt digest; `write_card` stores them under `validity_dir()`; `validity_for` / `dimension_validity` give the
`ValidityNote` that leaderboards and reports show next to a number ("not validated" when no card matches), from
the user's cards first, then the cards shipped in `judges/validity/shipped/` (`numbers_only` copies).
Scoring is pure (`judges.validity.scores`); the replay runs the session engine's own tracker node.

Names load on first use, so report modules can import `judges.scoring._validity_note` without pulling in the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "INSTRUMENTS": "judges.scoring._validity_note",
    "NOT_VALIDATED": "judges.scoring._validity_note",
    "Instrument": "judges.scoring._validity_note",
    "ValidityNote": "judges.scoring._validity_note",
    "CARD_SCHEMA_VERSION": "card",
    "DIMENSION_MEASURES": "card",
    "CardError": "card",
    "DataSource": "card",
    "JudgeValidity": "card",
    "TrackerValidity": "card",
    "ValidityCard": "card",
    "card_path": "card",
    "cards_json": "card",
    "dimension_validity": "card",
    "find_card": "card",
    "numbers_only": "card",
    "shipped_dir": "card",
    "headlines": "card",
    "read_card": "card",
    "read_cards": "card",
    "scored_nothing": "card",
    "validity_dir": "card",
    "validity_for": "card",
    "write_card": "card",
    "write_cards": "card",
    "Checkpoint": "replay",
    "ReplaySettings": "replay",
    "planned_checkpoints": "replay",
    "replay_tracker": "replay",
    "rescue_turns": "replay",
    "tracker_case": "replay",
    "CallEstimate": "run",
    "estimate_calls": "run",
    "usable_samples": "run",
    "validate": "run",
    "validate_judges": "run",
    "validate_tracker": "run",
    "EmotionScores": "scores",
    "JitterScores": "scores",
    "PatternScores": "scores",
    "RiskScores": "scores",
    "SeriesJitter": "scores",
    "ViewpointItem": "scores",
    "ViewpointScores": "scores",
    "emotion_scores": "scores",
    "gold_emotions": "scores",
    "gold_pattern": "scores",
    "gold_risk": "scores",
    "gold_viewpoints": "scores",
    "jitter_scores": "scores",
    "pattern_scores": "scores",
    "risk_scores": "scores",
    "series_jitter": "scores",
    "viewpoint_items": "scores",
    "viewpoint_scores": "scores",
}
__all__ = [
    "CARD_SCHEMA_VERSION",
    "DIMENSION_MEASURES",
    "INSTRUMENTS",
    "NOT_VALIDATED",
    "CallEstimate",
    "CardError",
    "Checkpoint",
    "DataSource",
    "EmotionScores",
    "Instrument",
    "JitterScores",
    "JudgeValidity",
    "PatternScores",
    "ReplaySettings",
    "RiskScores",
    "SeriesJitter",
    "TrackerValidity",
    "ValidityCard",
    "ValidityNote",
    "ViewpointItem",
    "ViewpointScores",
    "card_path",
    "cards_json",
    "dimension_validity",
    "emotion_scores",
    "estimate_calls",
    "find_card",
    "gold_emotions",
    "gold_pattern",
    "gold_risk",
    "gold_viewpoints",
    "headlines",
    "jitter_scores",
    "numbers_only",
    "pattern_scores",
    "planned_checkpoints",
    "read_card",
    "read_cards",
    "replay_tracker",
    "rescue_turns",
    "risk_scores",
    "scored_nothing",
    "series_jitter",
    "shipped_dir",
    "tracker_case",
    "usable_samples",
    "validate",
    "validate_judges",
    "validate_tracker",
    "validity_dir",
    "validity_for",
    "viewpoint_items",
    "viewpoint_scores",
    "write_card",
    "write_cards",
]

if TYPE_CHECKING:
    from judges.scoring._validity_note import INSTRUMENTS, NOT_VALIDATED, Instrument, ValidityNote
    from judges.validity.card import (
        CARD_SCHEMA_VERSION,
        DIMENSION_MEASURES,
        CardError,
        DataSource,
        JudgeValidity,
        TrackerValidity,
        ValidityCard,
        card_path,
        cards_json,
        dimension_validity,
        find_card,
        headlines,
        numbers_only,
        read_card,
        read_cards,
        scored_nothing,
        shipped_dir,
        validity_dir,
        validity_for,
        write_card,
        write_cards,
    )
    from judges.validity.replay import (
        Checkpoint,
        ReplaySettings,
        planned_checkpoints,
        replay_tracker,
        rescue_turns,
        tracker_case,
    )
    from judges.validity.run import (
        CallEstimate,
        estimate_calls,
        usable_samples,
        validate,
        validate_judges,
        validate_tracker,
    )
    from judges.validity.scores import (
        EmotionScores,
        JitterScores,
        PatternScores,
        RiskScores,
        SeriesJitter,
        ViewpointItem,
        ViewpointScores,
        emotion_scores,
        gold_emotions,
        gold_pattern,
        gold_risk,
        gold_viewpoints,
        jitter_scores,
        pattern_scores,
        risk_scores,
        series_jitter,
        viewpoint_items,
        viewpoint_scores,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'judges.validity' has no attribute {name!r}")
    value = getattr(importlib.import_module(module if "." in module else f"judges.validity.{module}"), name)
    globals()[name] = value
    return value
