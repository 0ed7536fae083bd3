"""The `rescue-sim` entry point: registers each command module; heavy imports happen inside commands."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="rescue-sim",
    help="Relation-aware multi-party emotional support simulator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


_registered = False


def _register() -> None:
    """Attach the command modules to `app`; safe to call more than once (tests build the app repeatedly)."""
    global _registered
    if _registered:
        return
    from simulator.cli import personas_cmd

    app.add_typer(personas_cmd.app, name="personas", help="Case cards: list, show, validate, graph, import RESCUE data.")
    _registered = True


def main() -> None:
    _register()
    app()


if __name__ == "__main__":
    main()
