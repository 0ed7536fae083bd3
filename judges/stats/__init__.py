"""Statistics shared by every score: agreement coefficients (kappa, Krippendorff's alpha), bootstrap
confidence intervals and distances between distributions (Jensen-Shannon, Wasserstein). Pure functions over lists; no model, no files.
"""

from judges.stats._agreement import (
    cohen_kappa,
    krippendorff_alpha,
    majority,
    median,
)
from judges.stats._distances import js_distance, wasserstein
from judges.stats._intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MeanCI,
    bootstrap_ci,
    difference_separates,
    gini,
    mean_ci,
    paired_difference_ci,
    t_interval,
    units_for_sign_test,
)

__all__ = [
    "js_distance",
    "wasserstein",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "MeanCI",
    "bootstrap_ci",
    "t_interval",
    "difference_separates",
    "paired_difference_ci",
    "units_for_sign_test",
    "cohen_kappa",
    "gini",
    "krippendorff_alpha",
    "majority",
    "mean_ci",
    "median",
]
