"""Human ratings: import them from rating tools, store them in the run folder, measure the judges against them
(judge-human agreement per dimension, agreement among raters) and correct supporter means with them (PPI)."""

from judges.ratings._agreement import HumanAgreement, RatingPair, agreement, agreement_by_dimension
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
from judges.ratings._ppi import PPIEstimate, ppi_estimates, ppi_mean
from judges.ratings._store import RatingsFile, StoredRating, rated_item_ids, read_ratings, write_ratings

__all__ = [
    "RATING_FORMATS",
    "HumanAgreement",
    "ImportResult",
    "ItemIndex",
    "PPIEstimate",
    "RatingPair",
    "RatingsError",
    "RatingsFile",
    "RatingsFileError",
    "StoredRating",
    "agreement",
    "agreement_by_dimension",
    "import_ratings",
    "item_index",
    "parse_ratings_file",
    "ppi_estimates",
    "ppi_mean",
    "rated_item_ids",
    "rating_pairs",
    "read_ratings",
    "runs_agreement",
    "write_ratings",
]
