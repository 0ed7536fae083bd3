"""Run folders: `manifest.json`, `sessions/<id>.json`, `results.jsonl`, `judgments/<id>.json`.

Every write is atomic (temp file + rename), so a killed process never leaves a half-written file, and a
rerun of the same command finds finished sessions and skips them.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from personas.common.files import atomic_write_text
from personas.common.errors import UserError
from simulator.records import SessionRecord, SessionStatus

MANIFEST_VERSION = 1
_PACKAGES = ("rescue-sim", "litellm", "langgraph", "pydantic", "networkx", "llama-cpp-python")


class RunFolderError(UserError):
    pass


class RunManifest(BaseModel):
    """What produced a run: its config, the config's hash, package versions and seeds."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = MANIFEST_VERSION
    kind: str = Field(default="run", description="`run` for simulations; other tools may add kinds.")
    config: dict[str, Any] = Field(
        description="Everything that changes the sessions: cases, supporter, models, seeds..."
    )
    config_hash: str
    packages: dict[str, str] = Field(default_factory=dict)
    python: str = ""
    platform: str = ""
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))


class SessionResult(BaseModel):
    """One line of results.jsonl: the outcome of a finished (or failed) session, for quick tables."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    case_id: str
    supporter: str
    seed: int
    status: SessionStatus
    end_reason: str | None
    failure: str | None
    turns: int
    member_turns: int
    supporter_turns: int
    wall_s: float
    totals: dict[str, float]
    finished_at: datetime | None


def config_hash(config: dict[str, Any]) -> str:
    blob = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def package_versions() -> dict[str, str]:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _safe_id(session_id: str) -> str:
    if not session_id or "/" in session_id or "\\" in session_id or session_id.startswith("."):
        raise ValueError(f"invalid session id {session_id!r}")
    return session_id


class RunFolder:
    """A run folder on disk. Reading never writes; writing never truncates what is already there."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.json"

    @property
    def sessions_dir(self) -> Path:
        return self.path / "sessions"

    @property
    def judgments_dir(self) -> Path:
        return self.path / "judgments"

    @property
    def results_path(self) -> Path:
        return self.path / "results.jsonl"

    def exists(self) -> bool:
        return self.manifest_path.is_file()

    # -- manifest --------------------------------------------------------------------------------------------
    def read_manifest(self) -> RunManifest:
        try:
            return RunManifest.model_validate_json(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunFolderError(f"{self.path}: not a run folder (no manifest.json)") from None
        except ValueError as err:
            raise RunFolderError(f"{self.manifest_path}: unreadable manifest ({str(err).splitlines()[0]})") from None

    def open(self, config: dict[str, Any], kind: str = "run") -> RunManifest:
        """Create the folder with its manifest, or reopen it when the config matches (resume).

        A folder made by a different config is refused rather than mixed: results from two configs in one
        folder would be indistinguishable later.
        """
        digest = config_hash(config)
        if self.exists():
            manifest = self.read_manifest()
            if manifest.config_hash != digest:
                changed = sorted(k for k in {*manifest.config, *config} if manifest.config.get(k) != config.get(k))
                raise RunFolderError(
                    f"{self.path}: holds a run with a different config (changed: {', '.join(changed) or 'unknown'}); "
                    "use another --out folder"
                )
            return manifest
        manifest = RunManifest(
            kind=kind,
            config=config,
            config_hash=digest,
            packages=package_versions(),
            python=sys.version.split()[0],
            platform=f"{platform.system()} {platform.machine()} ({os.cpu_count()} cpus)",
        )
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.manifest_path, manifest.model_dump_json(indent=2))
        return manifest

    # -- sessions --------------------------------------------------------------------------------------------
    def session_path(self, session_id: str) -> Path:
        return self.sessions_dir / f"{_safe_id(session_id)}.json"

    def session_ids(self) -> list[str]:
        return sorted(p.stem for p in self.sessions_dir.glob("*.json")) if self.sessions_dir.is_dir() else []

    def load_session(self, session_id: str) -> SessionRecord:
        path = self.session_path(session_id)
        try:
            return SessionRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            known = ", ".join(self.session_ids()) or "none"
            raise RunFolderError(f"{self.path}: no session {session_id!r}; sessions: {known}") from None
        except ValueError as err:
            raise RunFolderError(f"{path}: not a valid session record ({str(err).splitlines()[0]})") from None

    def sessions(self) -> list[SessionRecord]:
        return [self.load_session(s) for s in self.session_ids()]

    def status(self, session_id: str) -> SessionStatus | None:
        """Status of a saved session, or None if there is none (or it cannot be read: it will be rerun)."""
        path = self.session_path(session_id)
        if not path.is_file():
            return None
        try:
            return SessionStatus(json.loads(path.read_text(encoding="utf-8")).get("status"))
        except (ValueError, OSError):
            return None

    def write_session(self, record: SessionRecord) -> Path:
        path = self.session_path(record.session_id)
        atomic_write_text(path, record.model_dump_json(indent=1))
        return path

    # -- results ---------------------------------------------------------------------------------------------
    def append_result(self, record: SessionRecord) -> SessionResult:
        """Add the session's line to results.jsonl (rewritten atomically; one line per session id)."""
        result = SessionResult(
            session_id=record.session_id,
            case_id=record.case.id,
            supporter=record.supporter,
            seed=record.seed,
            status=record.status,
            end_reason=record.end_reason,
            failure=record.failure,
            turns=len(record.turns),
            member_turns=sum(t.kind == "member" for t in record.turns),
            supporter_turns=sum(t.kind == "supporter" for t in record.turns),
            wall_s=record.wall_s,
            totals=record.totals(),
            finished_at=record.finished_at,
        )
        lines = {r.session_id: r for r in self.results()}
        lines[result.session_id] = result
        atomic_write_text(self.results_path, "".join(r.model_dump_json() + "\n" for r in lines.values()))
        return result

    def results(self) -> list[SessionResult]:
        if not self.results_path.is_file():
            return []
        out = []
        for n, line in enumerate(self.results_path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    out.append(SessionResult.model_validate_json(line))
                except ValueError:
                    raise RunFolderError(f"{self.results_path}:{n}: unreadable result line") from None
        return out
