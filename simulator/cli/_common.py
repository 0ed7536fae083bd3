"""What every command shares: the console, and turning user errors into one line and exit code 2."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from typer._click.formatting import HelpFormatter as _ClickFormatter
from typer.core import TyperCommand, TyperGroup

from personas.common.errors import ParameterError, UserError

P = ParamSpec("P")
R = TypeVar("R")

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

EXIT_USAGE = 2  # bad input: file, field or option the user must fix
EXIT_FAILED = 1  # the job ran but some of it failed (model failures, failed sessions)


def print_error(message: str, console: Console | None = None) -> None:
    """`error: <message>` (rich markup, escaped by the caller) on stderr: one line where a program reads it (a pipe,
    a test), and on a terminal wrapped at spaces to its width, so no line runs past the edge and no word is cut
    there (the terminal itself would break lines mid-word; issue 43 measured 330-character lines)."""
    out = console or err_console
    out.print(f"[bold red]error:[/] {message}", markup=True, soft_wrap=not out.is_terminal)


def print_path(label: str, path: str | Path, note: str = "", *, to: Console | None = None, style: str = "") -> None:
    """`label path note` on one line where that fits the terminal; else `label` (and `note`) on a line and the path
    on the next, alone. Rich would break a path at the edge, mid-name ("dana-and-theo__" / "s0.json"), and a path cut
    so cannot be copied (issue 43): here one longer than the whole width is broken only after a `/`. `label` and
    `note` are rich markup, the path plain text in `style`."""
    from rich.text import Text

    out = to or console
    head, tail, where = Text.from_markup(label), Text.from_markup(note), Text(str(path), style=style)
    one = Text.assemble(head, " ", where, *((" ", tail) if note else ()))
    if one.cell_len <= out.width:
        out.print(one, soft_wrap=True)
        return
    out.print(Text.assemble(head, *((" ", tail) if note else ())))
    for line in path_lines(str(path), out.width):
        out.print(Text(line, style=style), soft_wrap=True)


def path_lines(path: str, width: int) -> list[str]:
    """`path` in lines of at most `width` columns, broken only after a `/` (a name longer than a line stays whole)."""
    lines = [""]
    for part in re.split(r"(?<=/)", path):
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return lines


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print one error line to stderr and return the Exit to raise."""
    print_error(message)
    return typer.Exit(code)


def as_flag(param: str, flags: dict[str, str] | None = None) -> str:
    """The flag a command takes a library parameter from: `flags[param]`, else `--` and the name with dashes."""
    return (flags or {}).get(param) or "--" + param.replace("_", "-")


def flag_names(**flags: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator under `user_errors`: the command's flag for each library parameter not named as `as_flag` says
    (`@flag_names(fmt="--format")`), so a library's `ParameterError` is printed in the flags the user typed."""

    def mark(fn: Callable[P, R]) -> Callable[P, R]:
        fn.flag_names = flags  # type: ignore[attr-defined]
        return fn

    return mark


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator for commands: a UserError becomes one line on stderr and exit code 2, never a traceback. A library's
    `ParameterError` names its parameters; the line says them as the command's flags."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ParameterError as err:
            flags = getattr(fn, "flag_names", None)
            raise fail(_escape(err.worded(lambda param: as_flag(param, flags)))) from None
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
# Typer's boxed help gives the words a 23-column strip at 80 columns and cuts what does not fit (`--out`'s default
# ended "runs/<case>-<supporter…"), prints `<bool>` after every flag, types as `<str>` or `<list[str]>` and arguments
# as `{run_dir}` or `[[RUN_DIR]...]...` depending on how each was declared. These classes print click's plain
# two-column help instead, wrapped to the terminal (at most HELP_MAX_WIDTH) at spaces only, so a default, a path or
# an env var is never cut, and give every command one form: values as upper-case names (`--model MODEL`,
# `--turns N`, `--out PATH`), choices as `a|b`, flags without a type, arguments as upper-case names
# (`RUN_DIR`, `[RUN_DIR]...`, `PATH...`), and the worked example on lines of its own (continued with ` \` where
# it is longer than the terminal, so it still pastes as one command).

HELP_MAX_WIDTH = 120


def _argument_name(param) -> str:
    raw = param.metavar or param.name or "ARG"
    return raw.strip("[]{}.").upper() or "ARG"


def _option_metavar(param, ctx) -> str:
    """`MODEL`, `N`, `PATH`, `a|b`: the value an option takes, named as every command names it (typer would print
    its type: `<str>`, `<int range>`, `<list[str]>`)."""
    kind = str(param.display_type(ctx) or "").strip("<>")
    kind = kind.removeprefix("list[").removesuffix("]")
    if "|" in kind:
        return kind
    if kind.startswith("int"):
        return "N"
    if kind.startswith("float"):
        return "X"
    if kind.lower() == "path":
        return "PATH"
    long = max(param.opts, key=len).lstrip("-")
    return long.rsplit("-", 1)[-1].upper() or "VALUE"


def _tidy_params(params: list, ctx) -> list:
    # typer vendors its own click: recognise parameters by their kind, not by class
    for p in params:
        if p.param_type_name == "option" and getattr(p, "is_flag", False) and p.metavar is None:
            p.metavar = ""  # a flag takes no value: show no type
        elif p.param_type_name == "option" and p.metavar is None:
            p.metavar = _option_metavar(p, ctx)
        elif p.param_type_name == "argument" and not getattr(p, "_rescue_tidy", False):
            p.metavar = _argument_name(p)
            p._rescue_tidy = True
    return params


def _argument_usage(p) -> str:
    name = p.metavar or _argument_name(p)
    name = name if p.required else f"[{name}]"
    return name + ("..." if p.nargs != 1 and not name.endswith("...") else "")


def _usage_pieces(command, ctx) -> list[str]:
    pieces = [command.options_metavar] if command.options_metavar else []
    for p in command.get_params(ctx):
        if p.param_type_name == "argument":
            pieces.append(_argument_usage(p))
    return pieces


def _format_options(command, ctx, formatter) -> None:
    """Arguments as in the usage line (`RUN_DIR...`, no type), then options, as two definition lists."""
    args, opts = [], []
    for p in command.get_params(ctx):
        record = p.get_help_record(ctx)
        if record is None:
            continue
        if p.param_type_name == "argument":
            args.append((_argument_usage(p).strip("[]").replace("]", ""), record[1]))
        else:
            opts.append(record)
    for title, rows in (("Arguments", args), ("Options", opts)):
        if rows:
            with formatter.section(title):
                formatter.write_dl(rows)


def _format_commands(group, ctx, formatter) -> None:
    """Each command with its first sentence whole (click cuts it to one line with `...`)."""
    rows = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        text = " ".join((cmd.short_help or cmd.help or "").split("\n\n")[0].split())
        first = text.split(". ")[0].rstrip(".")
        rows.append((name, first + "."))
    if rows:
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def wrap_words(text: str, width: int, indent: str = "", first: str | None = None) -> list[str]:
    """`text` in lines of at most `width` columns, broken at spaces only (never inside a word, a path or at a
    hyphen); paragraphs (blank-line separated) kept. A word longer than a line stands alone on its line."""
    import textwrap

    lines: list[str] = []
    for n, para in enumerate(text.split("\n\n")):
        if n:
            lines.append("")
        lines += textwrap.wrap(
            " ".join(para.split()),
            width,
            initial_indent=indent if (first is None or lines) else first,
            subsequent_indent=indent,
            break_on_hyphens=False,
            break_long_words=False,
        ) or [""]
    return lines


def shell_lines(command: str, width: int, indent: str = "  ") -> list[str]:
    """A shell command in lines of at most `width` columns, continued with ` \\` (it pastes as one command)."""
    words, lines, line = command.split(), [], indent
    for word in words:
        if line.strip() and len(line) + 1 + len(word) + 2 > width:
            lines.append(line + " \\")
            line = indent + "    " + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
    return [*lines, line]


class HelpFormatter(_ClickFormatter):
    """click's formatter, wrapping at spaces only (click's also breaks at hyphens: a default such as
    `runs/<case>-<supporter>-<hash>` could be split)."""

    def __init__(self, indent_increment: int = 2, width: int | None = None, max_width: int | None = None):
        super().__init__(indent_increment, width, max_width or HELP_MAX_WIDTH)

    def write_text(self, text: str) -> None:
        self.write("\n".join(wrap_words(text, self.width, " " * self.current_indent)) + "\n")

    def write_dl(self, rows, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        first_col = min(max((len(r[0]) for r in rows), default=0), col_max) + col_spacing
        pad = " " * (first_col + self.current_indent)
        for term, text in rows:
            head = " " * self.current_indent + term
            if not text:
                self.write(head + "\n")
                continue
            if len(term) > first_col - col_spacing:  # a long option: its words start on the next line
                self.write(head + "\n")
                head = pad
            else:
                head = head.ljust(len(pad))
            self.write("\n".join(wrap_words(text, self.width, pad, first=head)) + "\n")


def _format_epilog(command, ctx, formatter) -> None:
    if not command.epilog:
        return
    formatter.write_paragraph()
    example = command.epilog.strip()
    if example.startswith("Example: "):  # the command on lines of its own, whole
        formatter.write("Example:\n" + "\n".join(shell_lines(example.removeprefix("Example: "), formatter.width)))
        formatter.write("\n")
    else:
        with formatter.indentation():
            formatter.write_text(example)


class HelpContext(TyperCommand.context_class):
    formatter_class = HelpFormatter


class HelpCommand(TyperCommand):
    context_class = HelpContext

    def get_params(self, ctx):
        return _tidy_params(super().get_params(ctx), ctx)

    def collect_usage_pieces(self, ctx):
        return _usage_pieces(self, ctx)

    def format_options(self, ctx, formatter):
        _format_options(self, ctx, formatter)

    def format_help(self, ctx, formatter):  # click's plain layout, not typer's boxes
        return super(TyperCommand, self).format_help(ctx, formatter)

    def format_epilog(self, ctx, formatter):
        _format_epilog(self, ctx, formatter)


class HelpGroup(TyperGroup):
    context_class = HelpContext

    def get_params(self, ctx):
        return _tidy_params(super().get_params(ctx), ctx)

    def format_help(self, ctx, formatter):
        return super(TyperGroup, self).format_help(ctx, formatter)

    def format_options(self, ctx, formatter):
        _format_options(self, ctx, formatter)
        _format_commands(self, ctx, formatter)

    def format_epilog(self, ctx, formatter):
        _format_epilog(self, ctx, formatter)

    def get_command(self, ctx, cmd_name):
        cmd = super().get_command(ctx, cmd_name)
        if type(cmd) is TyperCommand:  # commands registered anywhere get the same help style
            cmd.__class__ = HelpCommand
        elif type(cmd) is TyperGroup:
            cmd.__class__ = HelpGroup
        return cmd


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
