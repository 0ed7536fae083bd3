"""Building the model client from command-line options and RESCUE_SIM_* environment variables.

The factory itself lives in `simulator.llm.settings` (the library's, shared with the Python front door); it is
imported here by name so the commands, and the tests that replace `make_client` here, keep working as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.llm.client import ModelSettings
from simulator.llm.settings import make_client, model_settings, provider_limits

__all__ = ["make_client", "model_settings", "models_line", "provider_limits"]


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
