"""Building the model client from command-line options and RESCUE_SIM_* environment variables.

The factory itself lives in `simulator.llm.settings` (the library's, shared with the Python front door). Every
command gets its client through `make_client` here, which looks that factory up on each call: replacing
`simulator.llm.settings.make_client` (what tests do, with a fake) reaches every command, the front door and the
model pre-check at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.llm import settings as binding
from simulator.llm.client import ModelSettings
from simulator.llm.settings import model_settings, provider_limits
from simulator.llm.types import ModelClient

__all__ = ["make_client", "model_settings", "models_line", "provider_limits"]


def make_client(settings: ModelSettings) -> ModelClient:
    """The client a command calls every model through: `simulator.llm.settings.make_client`, the one seam."""
    return binding.make_client(settings)


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
