"""Human ratings, end to end: choose items for raters from run folders, blind them and write them in a rating
tool's format (`export_items`); import the ratings back into the run folder (`import_ratings`); measure the judges
against them (judge-human agreement per dimension, agreement among raters); and correct supporter means with them
(prediction-powered inference weighted by each rated item's known inclusion probability; see `_designs`, `_ppi`).
"""

from judges.ratings._agreement import HumanAgreement, RatingPair, agreement, agreement_by_dimension
from judges.ratings._blind import BlindingError, ExportKey, RaterItem, aliases_for, model_strings, secrets_of
from judges.ratings._export import ExportError, ExportResult, export_items
from judges.ratings._formats import FORMATS, label_studio_config, sibling
from judges.ratings._import import (
    ImportResult,
    ItemIndex,
    RatingsError,
    import_ratings,
    item_index,
    rating_pairs,
    runs_agreement,
)
from judges.ratings._parse import RATING_FORMATS, RatingsFileError, parse_ratings_file
from judges.ratings._plan import PlanError, PlanRow, RatingsPlan, plan_ratings, read_plan
from judges.ratings._ppi import PPIEstimate, effective_n, hajek_mean, ipw_ppi_mean, ppi_estimates
from judges.ratings._select import (
    STRATEGIES,
    Pick,
    Quota,
    Selection,
    SelectionError,
    parse_caps,
    parse_quotas,
    select_units,
)
from judges.ratings._store import (
    BatchSummary,
    RatingsFile,
    StoredRating,
    batch_summaries,
    rated_item_ids,
    read_ratings,
    write_ratings,
)
from judges.ratings._units import Unit, UnitPool, collect_units, item_id
from judges.ratings._weights import FittedDimension, fit_item_weights, weights_rubric

__all__ = [
    "FittedDimension",
    "fit_item_weights",
    "weights_rubric",
    "PlanError",
    "PlanRow",
    "RatingsPlan",
    "plan_ratings",
    "read_plan",
    "BatchSummary",
    "batch_summaries",
    "BlindingError",
    "ExportError",
    "ExportKey",
    "ExportResult",
    "FORMATS",
    "HumanAgreement",
    "ImportResult",
    "ItemIndex",
    "PPIEstimate",
    "Pick",
    "Quota",
    "RATING_FORMATS",
    "RaterItem",
    "RatingPair",
    "RatingsError",
    "RatingsFile",
    "RatingsFileError",
    "STRATEGIES",
    "Selection",
    "SelectionError",
    "StoredRating",
    "Unit",
    "UnitPool",
    "agreement",
    "agreement_by_dimension",
    "aliases_for",
    "collect_units",
    "export_items",
    "import_ratings",
    "item_id",
    "item_index",
    "label_studio_config",
    "model_strings",
    "parse_caps",
    "parse_quotas",
    "parse_ratings_file",
    "ppi_estimates",
    "ipw_ppi_mean",
    "hajek_mean",
    "effective_n",
    "rated_item_ids",
    "rating_pairs",
    "read_ratings",
    "runs_agreement",
    "secrets_of",
    "select_units",
    "sibling",
    "write_ratings",
]
