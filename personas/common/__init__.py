"""Helpers every layer shares and none owns: the user-facing error type, atomic file writes, the prompt loader.

They live under `personas/` only because it is the bottom layer; nothing here knows about cases or sessions.
"""

from personas.common.errors import UserError
from personas.common.files import atomic_write_bytes, atomic_write_text
from personas.common.prompts import load_prompt, render_prompt

__all__ = ["UserError", "atomic_write_bytes", "atomic_write_text", "load_prompt", "render_prompt"]
