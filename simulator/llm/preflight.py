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

from personas.common.errors import UserError
from simulator.llm.types import ModelClient, ModelError, Prompt
from simulator.redact import redact

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


__all__ = ["PROBE", "Problem", "check_models", "probe_endpoint"]
