"""Judgment files in a run folder: `judgments/<session_id>.json`, written atomically, read back validated."""

from __future__ import annotations

from pathlib import Path

from judges.scoring._records import JUDGMENT_SCHEMA_VERSION, SessionJudgment
from personas.common.files import atomic_write_text
from simulator.runfolder import RunFolder, RunFolderError, refuse_newer


def _folder(folder: RunFolder | str | Path) -> RunFolder:
    return folder if isinstance(folder, RunFolder) else RunFolder(folder)


def judgment_path(folder: RunFolder | str | Path, session_id: str) -> Path:
    f = _folder(folder)
    return f.judgments_dir / f.session_path(session_id).name  # same id checks as session files


def write_judgment(folder: RunFolder | str | Path, judgment: SessionJudgment) -> Path:
    """Write (or replace) the session's judgment file atomically; returns its path."""
    path = judgment_path(folder, judgment.session_id)
    atomic_write_text(path, judgment.model_dump_json(indent=1))
    return path


def read_judgment(folder: RunFolder | str | Path, session_id: str) -> SessionJudgment | None:
    """The session's judgment, or None when it has not been judged. An unreadable file is a RunFolderError."""
    path = judgment_path(folder, session_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    # validated first and the version looked at after: parsing the text twice (once only for its version) was
    # a tenth of a never-served run page's first load; a newer layout is still named before any other error
    try:
        judgment = SessionJudgment.model_validate_json(text)
    except ValueError as err:
        refuse_newer(path, text, JUDGMENT_SCHEMA_VERSION, "judgment")
        first = str(err).splitlines()[0]
        raise RunFolderError(f"{path}: not a valid judgment ({first}); rerun `rescue-sim judge`") from None
    refuse_newer(path, judgment.schema_version, JUDGMENT_SCHEMA_VERSION, "judgment")
    return judgment
