"""judges: how a session is scored. Rubrics as data, LLM judge panels with agreement statistics, trajectory
metrics over relation states (no model), leaderboards with bootstrap CIs, and judge validation on RESCUE data.

Imports only `personas` and simulator's records, model client types, transcript helpers and run folders.
"""

from judges._agreement import cohen_kappa, krippendorff_alpha, majority, median
from judges._judge import SessionJudge, interventions_of, judge, judge_session, registered_judges, rubric_judge
from judges._leaderboard import DimensionSummary, Leaderboard, SupporterRow, build_leaderboard, session_values
from judges._panel import DISAGREEMENT_POINTS, aggregate_scores, dimension_agreement, panel_agreement, simulator_check
from judges._records import (
    JUDGMENT_SCHEMA_VERSION,
    AggregateScore,
    DimensionAgreement,
    DimensionScore,
    Evidence,
    JudgeFailure,
    JudgeVerdict,
    JudgmentStatus,
    PairKappa,
    SessionJudgment,
)
from judges._rubric import DEFAULT_RUBRIC, Dimension, Rubric, RubricError, Strength, load_rubric
from judges._stats import MeanCI, bootstrap_ci, gini, mean_ci
from judges._store import judgment_path, read_judgment, write_judgment
from judges._trajectory import (
    DEFAULT_GAMMA,
    DEFAULT_LAMBDA,
    AttentionShares,
    FeltHeard,
    GroupObjective,
    InsiderOutsiderGap,
    MemberAttention,
    MemberDistress,
    MemberGap,
    PairChange,
    PairGap,
    PatternShares,
    RelationChange,
    TrajectoryMetrics,
    attention_shares,
    distress,
    felt_heard,
    group_objective,
    insider_outsider_gap,
    pattern_shares,
    per_turn,
    relation_change,
    trajectory_metrics,
)
from judges._validate import (
    JudgeValidation,
    LabelStats,
    StrategyItem,
    ValidationItem,
    classification_report,
    strategy_items,
    strategy_labeler,
    validate_judge,
)

__all__ = [
    # rubrics
    "DEFAULT_RUBRIC",
    "Dimension",
    "Rubric",
    "RubricError",
    "Strength",
    "load_rubric",
    # judging
    "SessionJudge",
    "judge",
    "registered_judges",
    "rubric_judge",
    "judge_session",
    "interventions_of",
    "write_judgment",
    "read_judgment",
    "judgment_path",
    # records
    "JUDGMENT_SCHEMA_VERSION",
    "SessionJudgment",
    "JudgeVerdict",
    "JudgmentStatus",
    "JudgeFailure",
    "DimensionScore",
    "Evidence",
    "AggregateScore",
    "DimensionAgreement",
    "PairKappa",
    # panels and agreement
    "DISAGREEMENT_POINTS",
    "aggregate_scores",
    "panel_agreement",
    "dimension_agreement",
    "simulator_check",
    "cohen_kappa",
    "krippendorff_alpha",
    "majority",
    "median",
    # statistics
    "MeanCI",
    "bootstrap_ci",
    "mean_ci",
    "gini",
    # trajectory metrics
    "DEFAULT_GAMMA",
    "DEFAULT_LAMBDA",
    "TrajectoryMetrics",
    "trajectory_metrics",
    "per_turn",
    "RelationChange",
    "PairChange",
    "relation_change",
    "MemberDistress",
    "distress",
    "PatternShares",
    "pattern_shares",
    "GroupObjective",
    "group_objective",
    "AttentionShares",
    "MemberAttention",
    "attention_shares",
    "FeltHeard",
    "felt_heard",
    "InsiderOutsiderGap",
    "MemberGap",
    "PairGap",
    "insider_outsider_gap",
    # leaderboard
    "Leaderboard",
    "SupporterRow",
    "DimensionSummary",
    "build_leaderboard",
    "session_values",
    # judge validation
    "JudgeValidation",
    "ValidationItem",
    "LabelStats",
    "StrategyItem",
    "strategy_items",
    "strategy_labeler",
    "classification_report",
    "validate_judge",
]
