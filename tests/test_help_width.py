"""Every command's `--help` at 80 columns: no line over 80, and nothing cut: each option's words (help, default,
env var, range) appear whole and in order, no word split across lines; one metavariable style; `run --supporter`
names every supporter spec kind the parser accepts (issue 43, item 6)."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.supporters import HUMAN, LADDER_STYLES

WIDTH = 80


def _paths(typer_app, prefix=()):
    yield prefix
    for command in typer_app.registered_commands:
        yield (*prefix, command.name or command.callback.__name__.replace("_", "-"))
    for group in typer_app.registered_groups:
        yield from _paths(group.typer_instance, (*prefix, group.name))


def _commands():
    _register()
    return list(dict.fromkeys(_paths(app)))


def _help(path: tuple[str, ...], width: int = WIDTH) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, (path, result.output)
    return result.output


def _command(path: tuple[str, ...]):
    """The click command behind `path`, and a context to read its parameters' help records in."""
    cmd = typer.main.get_command(app)
    ctx = cmd.make_context("rescue-sim", [], resilient_parsing=True)
    for name in path:
        cmd = cmd.get_command(ctx, name)
        ctx = cmd.make_context(name, [], parent=ctx, resilient_parsing=True)
    return cmd, ctx


def squash(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "rescue-sim")
def test_help_fits_80_columns_and_every_option_is_whole(path: tuple[str, ...]) -> None:
    out = _help(path)
    long = [line for line in out.splitlines() if len(line) > WIDTH]
    assert not long, f"{' '.join(path)} --help: {len(long)} line(s) over {WIDTH}: {long[0]!r}"
    words = set(out.split())
    cmd, ctx = _command(path)
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None or not record[1]:
            continue
        assert squash(record[1]) in squash(out), f"{' '.join(path)}: {param.name}'s help is not whole"
        split = [w for w in record[1].split() if w not in words]
        assert not split, f"{' '.join(path)}: {param.name}: word(s) broken across lines: {split}"
    for token in re.findall(r"<[a-z][a-z \[\]]*>", out):  # typer's `<str>`, `<int range>`, `<list[str]>`...
        assert token not in ("<str>", "<int>", "<bool>", "<path>", "<float>") and not token.startswith(
            ("<int", "<list", "<float")
        ), f"{' '.join(path)}: typer type {token} instead of a metavariable"


def test_one_metavariable_style_across_commands() -> None:
    """A value is an upper-case name (`MODEL`, `N`, `PATH`, `ID|PATH`, `RUN_DIR[,RUN_DIR...]`) or a choice `a|b`; a
    flag has none."""
    bad = []
    for path in _commands():
        cmd, ctx = _command(path)
        for param in cmd.get_params(ctx):
            if param.param_type_name != "option" or getattr(param, "is_flag", False):
                continue
            meta = param.metavar or ""
            upper = r"[A-Z][A-Z0-9_]*(\.[a-z]+)?(\[,[A-Z_]+\.\.\.\])?|[A-Z]+([,|][A-Z]+)+"
            if not (re.fullmatch(upper, meta) or re.fullmatch(r"[a-z0-9_-]+(\|[a-z0-9_-]+)+", meta)):
                bad.append(f"{' '.join(path)} --{param.name}: {meta!r}")
    assert not bad, bad


def test_run_help_names_every_supporter_spec_kind_and_its_out_default_whole() -> None:
    text = _help(("run",))
    flat = squash(text)
    kinds = ["provider/model", "URL#model", "module:function", "silent", "scripted", HUMAN]
    kinds += [f"{style}:M" for style in LADDER_STYLES]  # the parser's own list of ladder rungs
    missing = [k for k in kinds if not re.search(rf"(^|[ (`]){re.escape(k)}([ ,.;)`]|$)", flat)]
    assert not missing, f"run --help's --supporter omits {missing}"
    assert any("runs/<case>-<supporter>-<hash>" in line for line in text.splitlines())


def test_a_long_example_is_continued_as_one_shell_command() -> None:
    text = _help(("bench",))
    example = text.split("Example:\n", 1)[1].splitlines()
    assert len(example) > 1 and all(line.endswith(" \\") for line in example[:-1])
    joined = " ".join(line.removesuffix(" \\").strip() for line in example)
    assert joined.startswith("rescue-sim bench --data ") and joined.endswith("--dry-run")


def test_help_is_shorter_than_typer_s_boxes() -> None:
    """Issue 43 measured `run --help` at 91 lines with a 23-column description strip; plain two columns use 46."""
    text = _help(("run",))
    assert len(text.splitlines()) <= 65
    line = next(line for line in text.splitlines() if line.lstrip().startswith("--seed N"))
    assert line.index("Session seed") <= 34
