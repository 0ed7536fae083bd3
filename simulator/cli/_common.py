"""What every command shares: the console, and turning user errors into one line and exit code 2."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from enum import Enum
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console

from personas.common.errors import UserError

P = ParamSpec("P")
R = TypeVar("R")

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

EXIT_USAGE = 2  # bad input: file, field or option the user must fix
EXIT_FAILED = 1  # the job ran but some of it failed (model failures, failed sessions)


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print one error line to stderr and return the Exit to raise."""
    err_console.print(f"[bold red]error:[/] {message}", markup=True, soft_wrap=True)
    return typer.Exit(code)


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator for commands: a UserError becomes one line on stderr and exit code 2, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except UserError as err:
            raise fail(_escape(str(err))) from None
        except KeyboardInterrupt:
            err_console.print("[yellow]interrupted[/]")
            sys.exit(130)

    return wrapper


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


# -- help text: one style for every command -------------------------------------------------------------------
# Typer prints `<bool>` after every flag and shows arguments as `{run_dir}`, `{RUN_DIR...}...` or
# `[[RUN_DIR]...]...` depending on how each was declared. These classes give every command the same form:
# flags without a type, arguments as upper-case names (`RUN_DIR`, `[RUN_DIR]...`, `PATH...`).


def _argument_name(param) -> str:
    raw = param.metavar or param.name or "ARG"
    return raw.strip("[]{}.").upper() or "ARG"


def _tidy_params(params: list) -> list:
    # typer vendors its own click: recognise parameters by their kind, not by class
    for p in params:
        if p.param_type_name == "option" and getattr(p, "is_flag", False) and p.metavar is None:
            p.metavar = ""  # a flag takes no value: show no type
        elif p.param_type_name == "argument" and not getattr(p, "_rescue_tidy", False):
            p.metavar = _argument_name(p)
            p._rescue_tidy = True
    return params


def _usage_pieces(command, ctx) -> list[str]:
    pieces = [command.options_metavar] if command.options_metavar else []
    for p in command.get_params(ctx):
        if p.param_type_name == "argument":
            name = p.metavar or _argument_name(p)
            name = name if p.required else f"[{name}]"
            pieces.append(name + ("..." if p.nargs != 1 else ""))
    return pieces


def _help_classes():
    from typer.core import TyperCommand, TyperGroup

    class HelpCommand(TyperCommand):
        def get_params(self, ctx):
            return _tidy_params(super().get_params(ctx))

        def collect_usage_pieces(self, ctx):
            return _usage_pieces(self, ctx)

    class HelpGroup(TyperGroup):
        def get_params(self, ctx):
            return _tidy_params(super().get_params(ctx))

        def get_command(self, ctx, cmd_name):
            cmd = super().get_command(ctx, cmd_name)
            if type(cmd) is TyperCommand:  # commands registered anywhere get the same help style
                cmd.__class__ = HelpCommand
            elif type(cmd) is TyperGroup:
                cmd.__class__ = HelpGroup
            return cmd

    return HelpCommand, HelpGroup


HelpCommand, HelpGroup = _help_classes()


class JudgeModeChoice(str, Enum):
    """`--judge-mode` of every command that judges: checklist items' answer probabilities, or verdicts."""

    checklist = "checklist"
    verdict = "verdict"


JUDGE_MODE_HELP = (
    "How the judge scores: each dimension from its rubric's yes/no checklist items, read as the judge's P(yes) "
    "(checklist, the default), or structured verdicts with scores and quotes (verdict)."
)
# one `--judge-mode` for `run`, `judge`, `stress` and `sensitivity` (stress's may be unset: its config decides)
JudgeModeOpt = Annotated[JudgeModeChoice, typer.Option("--judge-mode", help=JUDGE_MODE_HELP)]
