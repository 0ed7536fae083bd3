"""Binding roles to other models than a client's own, per job: the served start page chooses member, tracker and
judge models per session while every session shares the server's one client (one call cache, one set of
provider limits, one embedded model in memory). `rescue-sim run` binds roles in its `ModelSettings` instead; both
end in the same thing: each call of a bound role names that model, and `model_for` says so to the record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.llm.types import Completion, ModelClient, Prompt, Role


class RoleBoundClient:
    """`inner` with `roles` (role -> model id) bound over its defaults; everything else is delegated."""

    def __init__(self, inner: ModelClient, roles: Mapping[str, str]):
        self.inner = inner
        self.roles = {r: m for r, m in roles.items() if m}
        if hasattr(inner, "yes_probability"):  # only a client that can answer it claims to (checklist judges)
            self.yes_probability = self._yes_probability

    def model_for(self, role: Role) -> str:
        return self.roles.get(role) or self.inner.model_for(role)

    def __getattr__(self, name: str) -> Any:  # check_environment, settings, embedded_stats...
        return getattr(self.inner, name)

    async def complete(self, prompt: Prompt, *, role: Role, model: str | None = None, **kwargs: Any) -> Completion:
        return await self.inner.complete(prompt, role=role, model=model or self.roles.get(role), **kwargs)

    async def _yes_probability(self, prompt: Prompt, *, role: Role, model: str | None = None, **kwargs: Any) -> Any:
        return await self.inner.yes_probability(prompt, role=role, model=model or self.roles.get(role), **kwargs)  # type: ignore[attr-defined]
