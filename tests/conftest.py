"""Shared pytest fixtures. Keep each fixture small and documented; add new ones in their own section."""

from __future__ import annotations

from pathlib import Path

import pytest

# ---- reference data -------------------------------------------------------------------------------------------

RESCUE_DIR = Path(__file__).resolve().parents[2] / "shared" / "rescue"
FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def rescue_dir() -> Path:
    """The RESCUE reference folder next to the repo (../shared/rescue); skips the test when it is absent."""
    if not RESCUE_DIR.is_dir():
        pytest.skip(f"RESCUE reference data not found at {RESCUE_DIR}")
    return RESCUE_DIR
