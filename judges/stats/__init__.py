"""Statistics shared by every score: agreement coefficients (kappa, Krippendorff's alpha) and bootstrap
confidence intervals. Pure functions over lists; no model, no files.
"""

from judges.stats._agreement import (
    cohen_kappa,
    krippendorff_alpha,
    majority,
    median,
)
from judges.stats._intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MeanCI,
    bootstrap_ci,
    gini,
    mean_ci,
    paired_difference_ci,
    t_interval,
)

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "MeanCI",
    "bootstrap_ci",
    "t_interval",
    "paired_difference_ci",
    "cohen_kappa",
    "gini",
    "krippendorff_alpha",
    "majority",
    "mean_ci",
    "median",
]
