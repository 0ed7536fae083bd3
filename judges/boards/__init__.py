"""Leaderboards: one row per supporter with bootstrap CIs, judge agreement, stress and fidelity sections and
human-rating corrections; and `compare`, pairwise judgments fitted to Bradley-Terry ratings.
"""

from judges.boards._compare import (
    BOOTSTRAP,
    BT_ALPHA,
    COMPARE_SCHEMA_VERSION,
    QUOTE_ATTEMPTS,
    CompareReport,
    PairQuote,
    PairVerdict,
    PositionBias,
    Rating,
    bt_data,
    compare_runs,
    fit_bradley_terry,
    judge_pair,
    match_sessions,
    position_bias,
    rate,
    win_rates,
    write_report,
)
from judges.boards._leaderboard import (
    LEADERBOARD_SCHEMA_VERSION,
    RANK_BY,
    DimensionSummary,
    Leaderboard,
    SupporterRow,
    build_leaderboard,
)

__all__ = [
    "BOOTSTRAP",
    "BT_ALPHA",
    "COMPARE_SCHEMA_VERSION",
    "LEADERBOARD_SCHEMA_VERSION",
    "QUOTE_ATTEMPTS",
    "RANK_BY",
    "CompareReport",
    "DimensionSummary",
    "Leaderboard",
    "PairQuote",
    "PairVerdict",
    "PositionBias",
    "Rating",
    "SupporterRow",
    "bt_data",
    "build_leaderboard",
    "compare_runs",
    "fit_bradley_terry",
    "judge_pair",
    "match_sessions",
    "position_bias",
    "rate",
    "win_rates",
    "write_report",
]
