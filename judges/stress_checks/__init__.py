"""Stress checks and boards: whether a perturbation's stressor was said (delivery), how the supporter handled it
(facts first, then a check model's verdict with evidence), the judge probe, and per-perturbation pass rates.
"""

from judges.stress_checks._board import (
    CRITICAL_LABELS,
    PerturbationBoard,
    PerturbationRow,
    critical_failure,
    pass_hat_k,
)
from judges.stress_checks._checks import check_session
from judges.stress_checks._delivery import (
    DELIVERY_ATTEMPTS,
    stressor_description,
    trigger_of,
    verify_delivery,
    with_delivery,
)
from judges.stress_checks._facts import quote_of, record_facts, responses_of
from judges.stress_checks._probe import NEUTRAL_LINE, neutralised, probe_judges
from judges.stress_checks._results import (
    CHECK_SCHEMA_VERSION,
    DECIDED,
    CheckFact,
    CheckResult,
    CheckStatus,
    CheckVerdict,
    JudgeProbe,
    Quote,
    check_path,
    read_check,
    write_check,
)
from judges.stress_checks._verdict import QUOTE_ATTEMPTS, QUOTE_MAX, WHY_MAX, model_verdict

__all__ = [
    "DELIVERY_ATTEMPTS",
    "CHECK_SCHEMA_VERSION",
    "CRITICAL_LABELS",
    "DECIDED",
    "NEUTRAL_LINE",
    "QUOTE_ATTEMPTS",
    "QUOTE_MAX",
    "WHY_MAX",
    "CheckFact",
    "CheckResult",
    "CheckStatus",
    "CheckVerdict",
    "JudgeProbe",
    "PerturbationBoard",
    "PerturbationRow",
    "Quote",
    "check_path",
    "check_session",
    "critical_failure",
    "model_verdict",
    "neutralised",
    "pass_hat_k",
    "probe_judges",
    "quote_of",
    "read_check",
    "record_facts",
    "responses_of",
    "trigger_of",
    "stressor_description",
    "verify_delivery",
    "with_delivery",
    "write_check",
]
