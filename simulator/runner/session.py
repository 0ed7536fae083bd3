"""One session of a run: its spec, the metered client every executor shares, and `run_one`, the unit of work.

The executors (`simulator.runner.executors`) and the run loop (`simulator.runner.runs`) both build on this
module, so neither imports the other's internals.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from personas.case import Case
from simulator.engine import HumanInput, run_session
from simulator.faults import with_faults
from simulator.llm.types import CallRecord, Completion, ModelClient, ModelError, Prompt, Role
from simulator.records import SessionRecord
from simulator.redact import redact
from simulator.session_state import SessionConfig, derive_seed
from simulator.supporters import Supporter

# The session whose work is running in this task (and the tasks it starts): for attributing calls and logs.
CURRENT_SESSION: ContextVar[str | None] = ContextVar("rescue_sim_current_session", default=None)


class SessionSpec(BaseModel):
    """One session of a matrix: which card, which supporter, which seed, trial and perturbation, how it runs.

    `session_id` names the session's files and is what a rerun recognises, so it must be stable for the same
    spec (use `make_session_id`). `config.seed` must equal `seed`; trials above 0 run on a seed derived from
    (seed, trial), so repeats of one case and seed are distinct sessions that are still reproducible.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str = Field(
        description="Stable id, e.g. make_session_id(case.id, supporter, perturbation, seed, trial)."
    )
    case: Case = Field(description="The (possibly perturbed) card.")
    supporter: str = Field(description="A --supporter spec string.")
    seed: int = 0
    trial: int = Field(default=0, ge=0)
    perturbation: str | None = Field(default=None, description="Name of the perturbation applied, if any.")
    config: SessionConfig = Field(description="How the session runs; `.directions` carries mid-session injections.")

    @model_validator(mode="after")
    def _consistent(self) -> SessionSpec:
        if not self.session_id or "/" in self.session_id or "\\" in self.session_id or self.session_id[0] == ".":
            raise ValueError(f"session_id {self.session_id!r}: use letters, digits, '-', '_' and '.' only")
        if self.config.seed != self.seed:
            raise ValueError(f"config.seed ({self.config.seed}) must equal seed ({self.seed})")
        return self

    @property
    def engine_seed(self) -> int:
        """The seed the session engine and supporter run on: `seed` for trial 0, else derived from both."""
        return self.seed if self.trial == 0 else derive_seed(self.seed, "trial", self.trial)

    def engine_config(self) -> SessionConfig:
        return self.config if self.trial == 0 else self.config.model_copy(update={"seed": self.engine_seed})


def make_session_id(case_id: str, supporter: str, perturbation: str | None, seed: int, trial: int = 0) -> str:
    """`<case>__<supporter slug>__<perturbation or none>__s<seed>__t<trial>`; long or odd supporter specs get a
    short hash so two different specs never share a slug."""
    raw = redact(supporter)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", raw).strip("-").lower()
    if len(slug) > 40 or slug != raw.lower():
        slug = f"{slug[:32]}-{hashlib.sha256(raw.encode()).hexdigest()[:6]}".strip("-")
    pert = re.sub(r"[^A-Za-z0-9_-]+", "-", perturbation) if perturbation else "none"
    return f"{case_id}__{slug}__{pert}__s{seed}__t{trial}"


def session_id_for(case: Case, seed: int) -> str:
    """Session ids of `rescue-sim run` (one supporter per folder, no trials or perturbations)."""
    return f"{case.id}__s{seed}"


SupporterFactory = Callable[[SessionSpec, ModelClient], Supporter]


class MeteredClient:
    """A ModelClient that counts what passes through it (for progress and budget caps) and otherwise delegates.

    Build judge hooks over the same MeteredClient you pass to `run_specs`, so judge calls count too.
    """

    def __init__(self, inner: ModelClient):
        self.inner = inner
        self.calls = self.cache_hits = self.failed_calls = self.tokens = 0
        self.cost_usd = 0.0
        self.on_change: Callable[[], None] | None = None
        if hasattr(inner, "yes_probability"):  # checklist judges' questions count against the caps too
            self.yes_probability = self._yes_probability

    def model_for(self, role: Role) -> str:
        return self.inner.model_for(role)

    def __getattr__(self, name: str) -> Any:  # check_environment, embedded_stats, settings...
        return getattr(self.inner, name)

    async def complete(self, prompt: Prompt, *, role: Role, **kwargs: Any) -> Completion:
        try:
            out = await self.inner.complete(prompt, role=role, **kwargs)
        except ModelError as err:
            self._failed(err)
            raise
        self._count(out.call)
        return out

    async def _yes_probability(self, prompt: Prompt, *, role: Role, **kwargs: Any) -> Any:
        try:
            out = await self.inner.yes_probability(prompt, role=role, **kwargs)  # type: ignore[attr-defined]
        except ModelError as err:
            self._failed(err)
            raise
        self._count(out.call)
        return out

    def _failed(self, err: ModelError) -> None:
        self.calls += err.attempts
        self.failed_calls += 1
        if self.on_change:
            self.on_change()

    def _count(self, c: CallRecord) -> None:
        if c.cache_hit:
            self.cache_hits += 1
        else:
            self.calls += max(1, c.attempts)
            self.tokens += c.usage.prompt_tokens + c.usage.completion_tokens
            self.cost_usd += c.cost_usd or 0.0
        if self.on_change:
            self.on_change()

    def add(self, calls: int, tokens: int, cost_usd: float, cache_hits: int, failed_calls: int) -> None:
        """Counts from calls made elsewhere (a Ray worker's own client)."""
        self.calls += calls
        self.tokens += tokens
        self.cost_usd += cost_usd
        self.cache_hits += cache_hits
        self.failed_calls += failed_calls
        if self.on_change:
            self.on_change()


def default_supporter_factory(spec: SessionSpec, client: ModelClient) -> Supporter:
    """A supporter from its spec string, seeded by the session (endpoint URLs are registered on the client)."""
    from simulator.supporters import parse_supporter_spec

    api_bases: dict[str, str] = {}
    supporter = parse_supporter_spec(spec.supporter, client, seed=spec.engine_seed, api_bases=api_bases)
    settings = getattr(client, "settings", None)
    if api_bases and settings is not None:
        settings.api_bases.update(api_bases)
    return supporter


def _finalise(record: SessionRecord, spec: SessionSpec) -> SessionRecord:
    """The record as the spec names it: its seed (not the trial's derived one), trial and perturbation."""
    return record.model_copy(update={"seed": spec.seed, "trial": spec.trial, "perturbation": spec.perturbation})


async def run_one(
    spec: SessionSpec,
    client: ModelClient,
    supporter: Supporter,
    *,
    models: dict[str, str],
    on_update: Callable[[SessionRecord], None] | None = None,
    human_input: HumanInput | None = None,
    update_every_s: float = 0.0,
) -> SessionRecord:
    """Run one spec to its end (no files): the unit of work of every executor. `on_update` sees unfinished
    records at most once per `update_every_s` seconds (0: every step) and always the last one."""

    def update(record: SessionRecord) -> None:
        if on_update is not None:
            on_update(_finalise(record, spec))

    CURRENT_SESSION.set(spec.session_id)  # each session runs in its own task, so this stays with it
    record = await run_session(
        spec.case,
        supporter,
        client,
        spec.engine_config(),
        session_id=spec.session_id,
        models=models,
        on_update=update if on_update is not None else None,
        human_input=human_input,
        update_every_s=update_every_s,
    )
    # the room's malfunctions, found in the finished record: supporter scores leave such sessions out
    return with_faults(_finalise(record, spec))


@dataclass
class Hooks:
    """What an executor calls back into the runner (all in the driver's event loop)."""

    started: Callable[[SessionSpec], None]
    checkpoint: Callable[[SessionRecord, dict[str, Any]], None]
    finished: Callable[[SessionSpec, SessionRecord], Awaitable[None]]
    abandoned: Callable[[SessionSpec], None]
    stop: asyncio.Event
    update_every_s: float = 0.0
    placed: Callable[[SessionSpec, str | None], None] = lambda spec, node: None  # the Ray node a session ran on
    note: Callable[[str], None] = lambda text: None  # one line for the terminal (what a cluster was told)
