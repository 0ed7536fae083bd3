"""Scoring one session: rubrics as data, the judge prompts and their JSON schemas, LLM judge panels and their
aggregation, judge repeat trials (flip rates), trajectory metrics over relation states, and the judgment store.
"""

from judges.scoring._checklist import checklist_digest, checklist_questions, score_dimension
from judges.scoring._facts import (
    COPY_MIN_COVERAGE,
    COPY_RUN_WORDS,
    REPEAT_MIN_COVERAGE,
    REPEAT_RUN_WORDS,
    copied_lines,
    copy_runs,
    repeat_runs,
    repeated_lines,
    voiced_lines,
)
from judges.scoring._judge_run import judge_all, judge_hook
from judges.scoring._panel import SURE_P, LabelledShare, labelled_shares, session_values
from judges.scoring._records import CopiedLine, ItemAnswer, RepeatedLine, SessionJudgment, VoicedLine
from judges.scoring._rubric import Rubric, RubricError, load_rubric
from judges.scoring._store import read_judgment, write_judgment

__all__ = [
    "ItemAnswer",
    "checklist_digest",
    "checklist_questions",
    "score_dimension",
    "COPY_MIN_COVERAGE",
    "COPY_RUN_WORDS",
    "CopiedLine",
    "RepeatedLine",
    "REPEAT_MIN_COVERAGE",
    "REPEAT_RUN_WORDS",
    "Rubric",
    "RubricError",
    "SessionJudgment",
    "copied_lines",
    "copy_runs",
    "repeat_runs",
    "repeated_lines",
    "voiced_lines",
    "VoicedLine",
    "judge_all",
    "judge_hook",
    "load_rubric",
    "read_judgment",
    "session_values",
    "labelled_shares",
    "LabelledShare",
    "SURE_P",
    "write_judgment",
]
