"""Commands named for what they check: `gold sessions` (was `validate`), `gold labels` (was `judge-validate`) and
`personas check` (was `personas validate`). The old names still run the same code, for scripts, hidden from --help."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from personas.library import LIBRARY_DIR
from simulator.cli.app import _register, app
from simulator.llm.fake import FakeModelClient
from tests._session_fixtures import fill_reply

FIXTURE = Path(__file__).parent / "fixtures" / "rescue_mini.jsonl"
ENV = {"COLUMNS": "200", "RESCUE_SIM_MODEL": ""}

# old name -> new name, and arguments that run the command without a model server
RENAMED = [
    (("validate",), ("gold", "sessions"), ["--data", str(FIXTURE), "--dry-run", "--json"]),
    (("judge-validate",), ("gold", "labels"), ["--data", str(FIXTURE), "--limit", "2", "--json"]),
    (("personas", "validate"), ("personas", "check"), [str(LIBRARY_DIR)]),
]


@pytest.fixture(autouse=True)
def _fake_model(monkeypatch):
    client = FakeModelClient(default=lambda call: fill_reply(call.schema))
    monkeypatch.setattr("simulator.llm.settings.make_client", lambda settings: client)


def _invoke(*args: str):
    _register()
    return CliRunner().invoke(app, list(args), env=ENV)


def _registered(path: tuple[str, ...]):
    """The typer registration of the command at `path` (its callback and whether it is hidden)."""
    _register()
    typer_app = app
    for group in path[:-1]:
        typer_app = next(g.typer_instance for g in typer_app.registered_groups if g.name == group)
    return next(c for c in typer_app.registered_commands if c.name == path[-1])


@pytest.mark.parametrize("old, new, args", RENAMED, ids=lambda x: " ".join(x) if isinstance(x, tuple) else "")
def test_an_old_name_runs_the_new_command_and_is_hidden_from_help(old, new, args) -> None:
    assert _registered(old).callback is _registered(new).callback
    assert _registered(old).hidden and not _registered(new).hidden
    before, after = _invoke(*old, *args), _invoke(*new, *args)
    assert after.exit_code == 0, after.output
    assert (before.exit_code, before.stdout) == (after.exit_code, after.stdout)
    listing = _invoke(*old[:-1], "--help").stdout
    names = [line.split()[0] for line in listing.split("Commands:", 1)[1].splitlines() if line[2:3].strip()]
    assert old[-1] not in names and new[0 if len(new) > len(old) else -1] in names


def test_the_gold_group_names_both_checks() -> None:
    out = _invoke("gold", "--help").stdout
    assert "sessions" in out and "labels" in out
    assert "relation-state tracker" in out and "labeller of annotated therapist utterances" in out
