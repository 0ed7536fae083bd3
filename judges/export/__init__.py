"""Choosing items for human raters from run folders, blinding them, and writing them in a rating tool's format.

`export_items` is the whole pipeline; `collect_units`, `select_units` and the renderers are its parts.
"""

from judges.export._blind import BlindingError, ExportKey, RaterItem, aliases_for, model_strings, secrets_of
from judges.export._export import ExportError, ExportResult, export_items
from judges.export._formats import FORMATS, label_studio_config, sibling
from judges.export._select import (
    STRATEGIES,
    Pick,
    Quota,
    Selection,
    SelectionError,
    parse_caps,
    parse_quotas,
    select_units,
)
from judges.export._units import Unit, UnitPool, collect_units, item_id

__all__ = [
    "FORMATS",
    "STRATEGIES",
    "BlindingError",
    "ExportError",
    "ExportKey",
    "ExportResult",
    "Pick",
    "Quota",
    "RaterItem",
    "Selection",
    "SelectionError",
    "Unit",
    "UnitPool",
    "aliases_for",
    "collect_units",
    "export_items",
    "item_id",
    "label_studio_config",
    "model_strings",
    "parse_caps",
    "parse_quotas",
    "secrets_of",
    "select_units",
    "sibling",
]
