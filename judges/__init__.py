"""judges: how a session is scored. Rubrics as data, LLM judge panels with agreement statistics, trajectory
metrics over relation states (no model), leaderboards with bootstrap CIs, and judge validation on RESCUE data.

Imports only `personas` and simulator's records, model client types, transcript helpers and run folders.
"""

# PyPI's `judges` is another project with this import name; `rescue-sim` checks this mark before it starts.
__rescue_sim__ = True

from judges.boards._leaderboard import DimensionSummary, Leaderboard, SupporterRow, build_leaderboard
from judges.room_audit._audit import FidelityReport, FidelitySummary, audit_record, fidelity_report
from judges.room_audit._sim_vs_real import SimVsReal
from judges.room_audit._turn_taking import FloorComparison, TurnTaking, TurnTakingRow
from judges.scoring._faults import FaultTally, faulted
from judges.scoring._judge import judge_session, judge_units, judging_mode, registered_judges, rubric_judge
from judges.scoring._panel import aggregate_scores, dimension_agreement, panel_agreement, session_values
from judges.scoring._records import DimensionScore, Evidence, JudgeVerdict, JudgmentStatus, SessionJudgment
from judges.scoring._repeat import judge_stability, read_stability, read_trials, write_stability, write_trial
from judges.scoring._rubric import RubricError, load_rubric
from judges.scoring._store import judgment_path, read_judgment, write_judgment
from judges.scoring._trajectory import (
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
from judges.stats._agreement import cohen_kappa, krippendorff_alpha, majority, median
from judges.stats._intervals import (
    MeanCI,
    bootstrap_ci,
    difference_separates,
    gini,
    mean_ci,
    paired_difference_ci,
    units_for_sign_test,
)
from judges.stress_checks._board import PerturbationBoard, pass_hat_k
from judges.stress_checks._checks import check_session
from judges.stress_checks._results import CheckResult, CheckStatus, JudgeProbe, read_check, write_check
from judges.validity import validity_for
from judges.validity._labels import JudgeValidation, strategy_items, validate_judge

__all__ = [
    # rubrics
    "RubricError",
    "load_rubric",
    # simulator faults: left out of supporter scores
    "FaultTally",
    "faulted",
    # judging
    "registered_judges",
    "rubric_judge",
    "judge_session",
    "judge_units",
    "judging_mode",
    "write_judgment",
    "read_judgment",
    "judgment_path",
    # records
    "SessionJudgment",
    "JudgeVerdict",
    "JudgmentStatus",
    "DimensionScore",
    "Evidence",
    # panels and agreement
    "aggregate_scores",
    "panel_agreement",
    "dimension_agreement",
    "cohen_kappa",
    "krippendorff_alpha",
    "majority",
    "median",
    # statistics
    "MeanCI",
    "bootstrap_ci",
    "difference_separates",
    "paired_difference_ci",
    "units_for_sign_test",
    "mean_ci",
    "gini",
    # trajectory metrics
    "trajectory_metrics",
    "per_turn",
    "relation_change",
    "distress",
    "pattern_shares",
    "group_objective",
    "attention_shares",
    "felt_heard",
    "insider_outsider_gap",
    # fidelity of the simulated room
    "FidelityReport",
    "FidelitySummary",
    "audit_record",
    "fidelity_report",
    "SimVsReal",
    "FloorComparison",
    "TurnTaking",
    "TurnTakingRow",
    # leaderboard
    "Leaderboard",
    "SupporterRow",
    "DimensionSummary",
    "build_leaderboard",
    "session_values",
    # repeated judgments
    "judge_stability",
    "read_stability",
    "read_trials",
    "write_stability",
    "write_trial",
    # perturbation checks
    "CheckResult",
    "CheckStatus",
    "JudgeProbe",
    "check_session",
    "read_check",
    "write_check",
    "pass_hat_k",
    "PerturbationBoard",
    # judge validation
    "JudgeValidation",
    "strategy_items",
    "validate_judge",
    # validity cards (rescue-sim gold sessions)
    "validity_for",
]
