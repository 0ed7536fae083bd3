"""PyPI's `judges` shares rescue-sim's import name: the command refuses to start on a `judges` that is not its own."""

from __future__ import annotations

import sys
import types

import pytest

import judges
from simulator.cli.app import check_own_judges


def test_rescue_sims_own_judges_passes():
    assert judges.__rescue_sim__ is True
    check_own_judges()  # no exit


def test_another_judges_package_is_refused_in_one_line(monkeypatch, capsys):
    other = types.ModuleType("judges")
    other.__file__ = "/venv/lib/python3.11/site-packages/judges/__init__.py"
    monkeypatch.setitem(sys.modules, "judges", other)
    with pytest.raises(SystemExit) as exit_:
        check_own_judges()
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: the `judges` package at /venv/")
    assert "PyPI's `judges`" in err and "its own virtual environment" in err
