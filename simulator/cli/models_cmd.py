"""`rescue-sim models`: which model plays which role, and (with --check) whether each one answers."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated

import typer
from rich.table import Table

from simulator.cli._common import EXIT_FAILED, console, user_errors
from simulator.cli._models import make_client, model_settings

ROLES = ("member", "supporter", "tracker", "judge")


@user_errors
def models(
    model: Annotated[str | None, typer.Option(help="Default model.", envvar="RESCUE_SIM_MODEL")] = None,
    check: Annotated[bool, typer.Option("--check", help="Make one tiny real call to each configured model.")] = False,
) -> None:
    """List configured models per role; --check calls each once."""
    from simulator.llm.types import ModelConfigError, ModelError, Prompt

    settings = model_settings(model, no_cache=check)  # a health check must reach the model, not the cache
    client = make_client(settings)
    by_model: dict[str, list[str]] = {}
    for role in ROLES:
        by_model.setdefault(settings.model_for(role), []).append(role)
    table = Table(title="models", title_justify="left")
    table.add_column("model")
    table.add_column("roles")
    if check:
        table.add_column("check")
        table.add_column("latency", justify="right")
    failed = False

    async def probe(m: str) -> tuple[str, str]:
        started = time.perf_counter()
        try:
            c = await client.complete(
                Prompt(context="Health check.", instructions="Reply with the single word: ready"),
                role="check",
                model=m,
                max_tokens=5,
                temperature=0.0,
                seed=0,
            )
        except ModelError as err:
            return f"[red]failed[/]: {err.reason}", f"{time.perf_counter() - started:.1f}s"
        except ModelConfigError as err:
            return f"[red]failed[/]: {err}", "-"
        return f"[green]ok[/] ({c.text.strip()[:20]!r})", f"{time.perf_counter() - started:.1f}s"

    for m, roles in by_model.items():
        row = [m, ", ".join(roles)]
        if check:
            status, latency = asyncio.run(probe(m))
            failed = failed or status.startswith("[red]")
            row += [status, latency]
        table.add_row(*row)
    console.print(table)
    if failed:
        raise typer.Exit(EXIT_FAILED)
