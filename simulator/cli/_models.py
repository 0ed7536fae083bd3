"""Building the model client from command-line options and RESCUE_SIM_* environment variables, in one place."""

from __future__ import annotations

import os

from simulator.llm.client import LiteLLMClient, ModelSettings
from simulator.llm.embedded import local_model_id


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
    """
    gguf = os.environ.get("RESCUE_SIM_GGUF") or None
    default = model or os.environ.get("RESCUE_SIM_MODEL") or local_model_id(gguf)
    threads = os.environ.get("RESCUE_SIM_THREADS")
    return ModelSettings(
        default=default,
        roles={k: v for k, v in (roles or {}).items() if v},
        api_bases=dict(api_bases or {}),
        cache=not no_cache,
        gguf=gguf,
        n_threads=int(threads) if threads else None,
    )


def make_client(settings: ModelSettings) -> LiteLLMClient:
    return LiteLLMClient(settings)
