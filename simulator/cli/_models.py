"""Building the model client from command-line options and RESCUE_SIM_* environment variables, in one place."""

from __future__ import annotations

import os
from collections.abc import Sequence

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


def models_line(
    supporters: str, settings: ModelSettings, *, judges: Sequence[str] = (), judge: bool = True, check: bool = False
) -> str:
    """Every role's model in one line, as the command bound them, printed when a run starts: which roles a
    `--model` reached and which it left to the room's default. `supporters` is the supporter part, already worded
    (`supporter=M`, or a ladder's rungs); specs are redacted (a URL may carry a key)."""
    from simulator.redact import redact

    parts = [supporters, f"member={settings.model_for('member')}", f"tracker={settings.model_for('tracker')}"]
    if judge:
        parts.append("judge=" + ", ".join(judges or [settings.model_for("judge")]))
    if check:
        parts.append(f"check={settings.model_for('check')}")
    return redact("models: " + "; ".join(parts))


def make_client(settings: ModelSettings) -> LiteLLMClient:
    return LiteLLMClient(settings)
