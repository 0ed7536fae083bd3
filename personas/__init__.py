"""Who is in the room: case cards, the RESCUE taxonomy, relation graphs and RESCUE import."""

from personas.case import CardError, Case, Member, RiskFlag, Viewpoint, load_case, parse_case
from personas.library import load_library, resolve_case, validate_paths

# networkx and the RESCUE parser load on first use, so `rescue-sim personas list` stays instant
_LAZY = {
    "RelationGraph": "personas.graph",
    "RelationSnapshot": "personas.graph",
    "RelationUpdate": "personas.graph",
    "GoldTrajectory": "personas.rescue",
    "RescueSample": "personas.rescue",
    "case_from_sample": "personas.rescue",
    "import_rescue": "personas.rescue",
    "load_rescue": "personas.rescue",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'personas' has no attribute {name!r}")


__all__ = [
    "Case",
    "CardError",
    "GoldTrajectory",
    "RelationGraph",
    "RelationSnapshot",
    "RelationUpdate",
    "RescueSample",
    "case_from_sample",
    "import_rescue",
    "load_rescue",
    "Member",
    "RiskFlag",
    "Viewpoint",
    "load_case",
    "load_library",
    "parse_case",
    "resolve_case",
    "validate_paths",
]
