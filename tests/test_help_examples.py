"""Every command's --help ends with a worked example (the README's guide points users there)."""

from __future__ import annotations

from typer.testing import CliRunner

from simulator.cli.app import _register, app


def _commands(typer_app, prefix=()):
    for command in typer_app.registered_commands:
        if command.hidden:  # an old name kept for scripts: its help is the new command's
            continue
        yield (*prefix, command.name or command.callback.__name__.replace("_", "-"))
    for group in typer_app.registered_groups:
        yield from _commands(group.typer_instance, (*prefix, group.name))


def test_every_command_help_shows_an_example():
    _register()
    commands = list(_commands(app))
    assert len(commands) >= 18
    missing = []
    for path in commands:
        result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
        assert result.exit_code == 0, (path, result.output)
        if "Example: rescue-sim " + " ".join(path) not in " ".join(result.output.split()):
            missing.append(" ".join(path))
    assert not missing, f"no example in --help of: {', '.join(missing)} (add one to simulator/cli/_examples.py)"
