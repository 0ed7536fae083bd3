"""Check every model a job will use before the job starts: a bad id, a missing key or a dead endpoint is one
line now, not a failed session minutes later.

Hosted models get litellm's lookup (provider known, key present: no call, no cost); the embedded model gets its
weights verified; OpenAI-compatible endpoints (`URL#model`) get one tiny call without retries, because only a
call shows that a server is up. Each distinct model is checked once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from personas.common.errors import UserError
from simulator.llm.types import ModelClient, ModelConfigError, ModelError, Prompt
from simulator.redact import redact

if TYPE_CHECKING:
    from simulator.llm.client import ModelSettings

PROBE = Prompt(context="Health check.", instructions="Reply with the single word: ready")


@dataclass(frozen=True)
class Problem:
    """A model that cannot be used: the roles it plays, the model id and why (one line, no secrets)."""

    roles: tuple[str, ...]
    model: str
    reason: str


def _by_model(uses: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for role, model in uses:
        roles = out.setdefault(model, [])
        if role not in roles:
            roles.append(role)
    return out


async def probe_endpoint(client: ModelClient, model: str, api_base: str) -> str | None:
    """One tiny call; None when it answered, else why not."""
    try:
        await client.complete(PROBE, role="check", model=model, max_tokens=5, temperature=0.0, seed=0)
    except (ModelError, UserError) as err:
        reason = err.reason if isinstance(err, ModelError) else str(err)
        return f"endpoint {redact(api_base)} did not answer ({reason}); start the server or fix the URL"
    return None


async def check_models(
    client: ModelClient,
    uses: Iterable[tuple[str, str]],
    *,
    endpoints: dict[str, str] | None = None,
    probe_client: ModelClient | None = None,
) -> list[Problem]:
    """Problems with the (role, model) pairs in `uses`; empty when every model is usable.

    `endpoints` maps model ids to OpenAI-compatible base URLs; those are probed with `probe_client` (give one
    without retries and with a short timeout, so a dead server is reported in seconds), else with `client`.
    """
    endpoints = endpoints or {}
    check_environment = getattr(client, "check_environment", None)
    problems: list[Problem] = []
    probes: dict[str, asyncio.Task] = {}
    by_model = _by_model(uses)
    for model, roles in by_model.items():
        if model in endpoints:
            probes[model] = asyncio.ensure_future(probe_endpoint(probe_client or client, model, endpoints[model]))
            continue
        if check_environment is None:
            continue
        try:
            check_environment(model)
        except UserError as err:  # unknown model, missing key, weights missing or corrupt
            problems.append(Problem(tuple(roles), model, str(err)))
    for model, task in probes.items():
        reason = await task
        if reason is not None:
            problems.append(Problem(tuple(by_model[model]), model, reason))
    return problems


class UnusableModels(ModelConfigError):
    """Models a job would call that cannot be used, found by `preflight` before any work: `problems` holds each
    one's roles, id and reason, in the order the job named them, for a caller to word (the CLI names its options)."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(f"{', '.join(p.roles)} model {p.model!r}: {p.reason}" for p in problems))


async def preflight(
    client: ModelClient, uses: Iterable[tuple[str, str]], *, settings: ModelSettings | None = None
) -> None:
    """Check every (role, model) in `uses` once, before a job writes or calls anything; raise `UnusableModels`
    listing each model that cannot be used. The one pre-check `run`, `stress`, `sensitivity`, `bench` and the Inspect
    tasks share (`serve` words the same `check_models`).

    Models bound to an OpenAI-compatible endpoint in `settings.api_bases` get one tiny call through a client built
    from `settings` without retries, with a short timeout and no cache, so a dead server is reported in seconds.
    """
    from simulator.llm import settings as binding

    probe_client = None
    endpoints = dict(settings.api_bases) if settings is not None else {}
    if settings is not None and settings.api_bases:
        probe_client = binding.make_client(
            settings.model_copy(update={"max_retries": 0, "cache": False, "timeout_s": 20.0})
        )
    problems = await check_models(client, uses, endpoints=endpoints, probe_client=probe_client)
    if problems:
        raise UnusableModels(problems)


__all__ = ["PROBE", "Problem", "UnusableModels", "check_models", "preflight", "probe_endpoint"]
