"""What every command shares: the console, and turning user errors into one line and exit code 2."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

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
