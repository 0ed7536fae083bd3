"""One loader for prompt and rubric text kept as data files; code holds only short skeletons."""

from __future__ import annotations

import functools
from pathlib import Path
from string import Template

PROMPTS_DIR = Path(__file__).parent.parent / "prompts"  # personas/prompts


@functools.cache
def load_prompt(name: str, folder: Path = PROMPTS_DIR) -> Template:
    """`<folder>/<name>.md` as a `string.Template` ($placeholders, so JSON braces need no escaping)."""
    path = folder / f"{name}.md"
    return Template(path.read_text(encoding="utf-8").strip())


def render_prompt(prompt_name: str, folder: Path = PROMPTS_DIR, /, **values: object) -> str:
    """Fill a prompt file; a missing placeholder is a KeyError naming it (a bug, not user input)."""
    return load_prompt(prompt_name, folder).substitute({k: str(v) for k, v in values.items()})
