"""Reading a YAML file with the line of a syntax error: the one loader behind case cards, rubrics, perturbations and
stress configs, each of which says the error in its own words (file, line, fix)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml

from personas.common.errors import UserError


class YamlFileError(UserError):
    """A YAML file that is not there (`kind="missing"`) or does not parse (`kind="syntax"`: `line` is 1-based, None
    where the parser gave no position, and `problem` is what it found). Other read errors (a folder, no permission)
    are left as the OSError they are, for the caller to word or pass on."""

    def __init__(self, path: Path, kind: Literal["missing", "syntax"], problem: object = "", line: int | None = None):
        self.path, self.kind, self.problem, self.line = path, kind, problem, line
        super().__init__(f"{path}: no such file" if kind == "missing" else f"{path}: {self.where}: not valid YAML")

    @property
    def where(self) -> str:
        """`line N`, or `YAML` when the parser gave no line."""
        return f"line {self.line}" if self.line is not None else "YAML"


def load_yaml(path: Path) -> Any:
    """The parsed content of a UTF-8 YAML file; a YamlFileError when it is missing or not valid YAML."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise YamlFileError(path, "missing") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark else None
        raise YamlFileError(path, "syntax", getattr(err, "problem", err), line) from None
