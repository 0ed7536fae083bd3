"""`rescue-sim models`: which model plays which role, and (with --check) whether each one answers."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from simulator.cli._common import EXIT_FAILED, console, user_errors
from simulator.cli._models import make_client, model_settings

if TYPE_CHECKING:
    from simulator.llm.preflight import Problem, UnusableModels

ROLES = ("member", "supporter", "tracker", "judge")
# What a user sets to change the model of a role (named in preflight errors).
ROLE_OPTIONS = {
    "supporter": "--supporter",
    "member": "--member-model",
    "tracker": "--tracker-model",
    "judge": "--judge-model or --judges",
}


def _fix(roles: tuple[str, ...]) -> str:
    own = [ROLE_OPTIONS.get(r, f"the {r} model") for r in roles]
    text = "change it with " + ", ".join(own)
    if any(r != "supporter" for r in roles):
        per_role = ", ".join(o for r, o in zip(roles, own, strict=True) if r != "supporter")
        text = "change it with --model, or per role with " + per_role
        if "supporter" in roles:
            text += ", and --supporter"
    if "judge" in roles:
        text += "; or skip judging with --no-judge"
    return text


def problem_line(problem: Problem, label: str | None = None) -> str:
    """`supporter model 'x/y': unknown model; use provider/model, … (change it with --supporter)`."""
    reason = problem.reason.removeprefix(f"model {problem.model!r}: ")
    reason = reason.replace(f"unknown model {problem.model!r}", "unknown model")
    what = f"{label!r}" if label else f"model {problem.model!r}"
    return f"{', '.join(problem.roles)} {what}: {reason} ({_fix(problem.roles)})"


def unusable_line(err: UnusableModels, labels: dict[str, str] | None = None) -> str:
    """The pre-check's problems (`simulator.llm.preflight.preflight`) as `run` words them: one line per model,
    with the options that change it (`labels`: how to name a model to the user, e.g. the `URL#model` they typed)."""
    return "\n       ".join(problem_line(p, (labels or {}).get(p.model)) for p in err.problems)


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
