"""Who is in the room: case cards, the RESCUE taxonomy, relation graphs and RESCUE import."""

from personas.case import Case, CardError, Member, RiskFlag, Viewpoint, load_case, parse_case
from personas.library import load_library, resolve_case, validate_paths

__all__ = [
    "Case",
    "CardError",
    "Member",
    "RiskFlag",
    "Viewpoint",
    "load_case",
    "load_library",
    "parse_case",
    "resolve_case",
    "validate_paths",
]
