"""Named stressors for stress runs: card changes, mid-session injections and session changes, each with the
check its handling is judged by. Built-ins live in `builtin/*.yaml`; users add their own YAML files."""

from simulator.perturbations._library import (
    BUILTIN_DIR,
    applies_to,
    apply_perturbation,
    builtin_perturbations,
    injection_turn,
    load_perturbation_file,
    parse_perturbation,
    plan_for,
    resolve_perturbation,
    select_member,
)
from simulator.perturbations._schema import (
    PERTURBATION_SCHEMA_VERSION,
    POSITIONS,
    PRIVATE_FIELDS,
    CardChange,
    CheckSpec,
    Injection,
    MemberChange,
    Perturbation,
    PerturbationError,
    PerturbationPlan,
    RiskChange,
    SessionChange,
)

__all__ = [
    "BUILTIN_DIR",
    "PERTURBATION_SCHEMA_VERSION",
    "POSITIONS",
    "PRIVATE_FIELDS",
    "CardChange",
    "CheckSpec",
    "Injection",
    "MemberChange",
    "Perturbation",
    "PerturbationError",
    "PerturbationPlan",
    "RiskChange",
    "SessionChange",
    "applies_to",
    "apply_perturbation",
    "builtin_perturbations",
    "injection_turn",
    "load_perturbation_file",
    "parse_perturbation",
    "plan_for",
    "resolve_perturbation",
    "select_member",
]
