"""The offline HTML report: one self-contained file (inline CSS, JS and data; no network) with the leaderboard,
score distributions, filters and a session viewer (transcript, decisions, judge evidence, inner states, relation
graphs and trajectories). `write_report(run_dirs, out)`; `build_report_data` and `render_html` are its parts."""

from judges.report._data import (
    ReportData,
    SessionDetail,
    SessionEntry,
    SessionSummary,
    build_report_data,
    read_entry,
    record_detail,
    session_detail,
    with_running,
)
from judges.report._html import json_for_script, render_html, report_script_hash, write_report

__all__ = [
    "ReportData",
    "SessionDetail",
    "SessionEntry",
    "SessionSummary",
    "build_report_data",
    "json_for_script",
    "read_entry",
    "record_detail",
    "render_html",
    "report_script_hash",
    "session_detail",
    "with_running",
    "write_report",
]
