"""How a session unfolds: run records, model access, the LangGraph engine, supporters, the runner and the CLI.

The names below are the front door for Python users (`import simulator as rs`; README, "From Python"): they
live in `simulator.api` (the app layer) and are imported on first use, so `import simulator`
loads neither litellm nor the engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simulator.api import (
        Case,
        Leaderboard,
        RunFolder,
        SessionJudgment,
        SessionRecord,
        StressConfig,
        judge_run,
        judge_session,
        judged_sessions,
        leaderboard,
        load_case,
        load_stress,
        model_client,
        open_run,
        run,
        stress,
        supporter,
    )

__all__ = [
    "model_client",
    "supporter",
    "load_case",
    "run",
    "judge_session",
    "judge_run",
    "load_stress",
    "stress",
    "leaderboard",
    "open_run",
    "judged_sessions",
    "Case",
    "SessionRecord",
    "SessionJudgment",
    "StressConfig",
    "Leaderboard",
    "RunFolder",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'simulator' has no attribute {name!r}")
    value = getattr(importlib.import_module("simulator.api"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
