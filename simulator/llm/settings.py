"""The model client from a model id, per-role overrides and the RESCUE_SIM_* environment variables, in one place.

The CLI, the Python front door (`simulator.api`) and the Inspect task all build their client here, so a model
is bound the same way wherever rescue-sim is driven from. Building a client imports no provider library: litellm
is imported on the first call (simulator/llm/client.py).
"""

from __future__ import annotations

import os

from simulator.llm.client import LiteLLMClient, ModelSettings
from simulator.llm.embedded import MAX_BATCH, local_model_id
from simulator.llm.types import LOCAL_PROVIDER


def model_settings(
    model: str | None = None,
    *,
    roles: dict[str, str | None] | None = None,
    no_cache: bool = False,
    api_bases: dict[str, str] | None = None,
) -> ModelSettings:
    """`--model` (or RESCUE_SIM_MODEL) is the default for every role; `roles` overrides single roles.

    With no model anywhere, the embedded offline model is used (RESCUE_SIM_GGUF picks another GGUF file).
    RESCUE_SIM_THREADS sets llama.cpp threads; RESCUE_SIM_HOME moves the cache folder.
    RESCUE_SIM_PROVIDER_CONCURRENCY caps model calls in flight per provider: `64` (every hosted provider) or
    `openai=64,anthropic=16` (the embedded `local` provider always stays at 1).
    """
    gguf = os.environ.get("RESCUE_SIM_GGUF") or None
    default = model or os.environ.get("RESCUE_SIM_MODEL") or local_model_id(gguf)
    threads = os.environ.get("RESCUE_SIM_THREADS")
    default_limit, limits = provider_limits(os.environ.get("RESCUE_SIM_PROVIDER_CONCURRENCY", ""))
    return ModelSettings(
        **({"default_concurrency": default_limit} if default_limit else {}),
        concurrency={**limits, LOCAL_PROVIDER: MAX_BATCH},  # calls the embedded model decodes together
        default=default,
        roles={k: v for k, v in (roles or {}).items() if v},
        api_bases=dict(api_bases or {}),
        cache=not no_cache,
        gguf=gguf,
        n_threads=int(threads) if threads else None,
    )


def provider_limits(text: str) -> tuple[int | None, dict[str, int]]:
    """`64` -> (64, {}); `openai=64,anthropic=16` -> (None, {...}); a bad value is one line naming the variable."""
    from personas.common.errors import UserError

    default, limits = None, {}
    try:
        for part in (p.strip() for p in text.split(",") if p.strip()):
            name, eq, value = part.rpartition("=")
            n = int(value)
            if n < 1:
                raise ValueError
            if eq:
                limits[name.strip()] = n
            else:
                default = n
    except ValueError:
        raise UserError(
            f"RESCUE_SIM_PROVIDER_CONCURRENCY={text!r}: use a number such as 64, or provider=number pairs such as "
            "openai=64,anthropic=16"
        ) from None
    return default, limits


def make_client(settings: ModelSettings) -> LiteLLMClient:
    """The client every role calls through (the one litellm client; tests replace this factory with a fake)."""
    return LiteLLMClient(settings)
