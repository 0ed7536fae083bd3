"""Run folders: `manifest.json`, `sessions/<id>.json`, `results.jsonl`, `judgments/<id>.json`.

Every file is written atomically (temp file + rename), so a killed process never leaves a half-written one;
`results.jsonl` is append-only (one line per finished session) and `reconcile()` repairs it when a run resumes:
a half-written last line is dropped, duplicates collapse to the latest line, and a session whose final record
was written but whose line was not gets its line. A rerun of the same command finds finished sessions and
skips them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from personas.common.errors import Param, ParameterError
from personas.common.files import atomic_write_text
from simulator.records import SessionRecord, SessionStatus

MANIFEST_VERSION = 1
_PACKAGES = ("rescue-sim", "litellm", "langgraph", "pydantic", "networkx", "llama-cpp-python")


class RunFolderError(ParameterError):
    """A run folder that cannot be read or written as asked; where the fix is another folder, it names `out_dir`,
    the parameter the runners take the folder as (a command's --out)."""


OUT_DIR = Param("out_dir")


def refuse_newer(path: Path, found: str | int, current: int, what: str) -> None:
    """A RunFolderError when a file of the run (its text, or its parsed `schema_version`) is of a newer layout than
    this code's `current`: named before any validation error, since the fix is an upgrade, not a rerun."""
    version: object = found
    if isinstance(found, str):
        try:
            version = json.loads(found).get("schema_version", 0)
        except (ValueError, AttributeError):
            version = 0
    if isinstance(version, int) and version > current:
        raise RunFolderError(f"{path}: written by a newer rescue-sim ({what} schema {version}); upgrade to read it")


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
    trial: int = 0
    perturbation: str | None = None
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


@dataclass(frozen=True)
class StoredSession:
    """One session file of a run folder as read: its record, or (`record` None) the RunFolderError that says why it
    could not be read. Each reader decides what an unreadable session means to it: skipped, listed or refused."""

    session_id: str
    record: SessionRecord | None
    error: RunFolderError | None = None

    def loaded(self) -> SessionRecord:
        """The record; the RunFolderError when the file could not be read."""
        if self.record is None:
            assert self.error is not None
            raise self.error
        return self.record


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
                    "use another ",
                    OUT_DIR,
                    " folder",
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

    def read_session(self, session_id: str) -> StoredSession:
        """`load_session` that does not raise for an unreadable file: the error comes back in the StoredSession."""
        try:
            return StoredSession(session_id, self.load_session(session_id))
        except RunFolderError as err:
            return StoredSession(session_id, None, err)

    def read_sessions(self) -> Iterator[StoredSession]:
        """Every saved session in id order, each read as it is reached; an unreadable one comes back with its error
        (the loop every reader of a run folder shares)."""
        for session_id in self.session_ids():
            yield self.read_session(session_id)

    def sessions(self) -> list[SessionRecord]:
        """Every saved session's record; a RunFolderError at the first that cannot be read."""
        return [s.loaded() for s in self.read_sessions()]

    def status(self, session_id: str) -> SessionStatus | None:
        """Status of a saved session, or None if there is none (or it cannot be read: it will be rerun)."""
        path = self.session_path(session_id)
        if not path.is_file():
            return None
        try:
            return SessionStatus(json.loads(path.read_text(encoding="utf-8")).get("status"))
        except (ValueError, OSError):
            return None

    def write_session(self, record: SessionRecord, *, durable: bool = True) -> Path:
        """Write the record atomically. `durable=False` skips the fsync (checkpoints of unfinished sessions:
        still safe against a killed process, only an OS crash could lose the latest checkpoint)."""
        path = self.session_path(record.session_id)
        atomic_write_text(path, record.model_dump_json(indent=1), fsync=durable)
        return path

    def has_judgment(self, session_id: str) -> bool:
        return (self.judgments_dir / self.session_path(session_id).name).is_file()

    def lock(self) -> FolderLock:
        """Hold the folder for one writer (released when the process ends, however it ends)."""
        return FolderLock(self.path / ".lock")

    def being_written(self) -> bool:
        """Whether a process (this one included) holds the folder's writer lock now: a run, play or stress is
        writing it, so its unfinished sessions are running rather than stopped. Creates nothing."""
        return lock_held(self.path / ".lock")

    # -- results ---------------------------------------------------------------------------------------------
    @staticmethod
    def result_of(record: SessionRecord) -> SessionResult:
        return SessionResult(
            session_id=record.session_id,
            case_id=record.case.id,
            supporter=record.supporter,
            seed=record.seed,
            trial=record.trial,
            perturbation=record.perturbation,
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

    def append_result(self, record: SessionRecord) -> SessionResult:
        """Append the session's line to results.jsonl in one write (a rerun's line supersedes an earlier one)."""
        result = self.result_of(record)
        line = (result.model_dump_json() + "\n").encode("utf-8")
        fd = os.open(self.results_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        return result

    def _read_results(self) -> tuple[list[SessionResult], bool]:
        """Lines of results.jsonl, and whether the file ends in a torn (half-written) line."""
        if not self.results_path.is_file():
            return [], False
        text = self.results_path.read_text(encoding="utf-8", errors="replace")
        lines = text.split("\n")
        torn = bool(lines[-1].strip())  # a complete file ends with a newline; a kill mid-append leaves a stub
        out = []
        for n, line in enumerate(lines[:-1], start=1):
            if line.strip():
                try:
                    out.append(SessionResult.model_validate_json(line))
                except ValueError:
                    raise RunFolderError(f"{self.results_path}:{n}: unreadable result line") from None
        return out, torn

    def results(self) -> list[SessionResult]:
        """One result per session id (the latest line wins), in the order sessions first finished."""
        lines, _ = self._read_results()
        latest: dict[str, SessionResult] = {}
        for r in lines:
            latest[r.session_id] = r
        return list(latest.values())

    def reconcile(self) -> dict[str, SessionStatus]:
        """Make results.jsonl say what the session files say, and return each saved session's status.

        Session files are the truth (each is written whole before its result line is appended). A completed
        result line is trusted without rereading its session (a completed session is never rewritten); every
        other session file is read. results.jsonl is rewritten atomically, once, only when it needs repair: a
        torn last line, duplicate lines, a line for a session that is running again, or a missing line.
        """
        lines, torn = self._read_results()
        by_id: dict[str, SessionResult] = {}
        for r in lines:
            by_id[r.session_id] = r
        statuses: dict[str, SessionStatus] = {}
        keep: dict[str, SessionResult] = {}
        for sid in self.session_ids():
            line = by_id.get(sid)
            if line is not None and line.status == SessionStatus.COMPLETED:
                statuses[sid] = SessionStatus.COMPLETED
                keep[sid] = line
                continue
            status = self.status(sid)
            if status is None:
                continue
            statuses[sid] = status
            if status == SessionStatus.INCOMPLETE:
                continue  # unfinished: no line until it finishes
            if line is not None and line.status == status:
                keep[sid] = line
            else:
                try:
                    keep[sid] = self.result_of(self.load_session(sid))
                except RunFolderError:
                    statuses.pop(sid)  # unreadable: it will be rerun
        order = {sid: i for i, sid in enumerate(by_id)}
        rows = sorted(keep.values(), key=lambda r: order.get(r.session_id, len(order)))
        if torn or len(lines) != len(rows) or any(by_id.get(r.session_id) is not r for r in rows):
            atomic_write_text(self.results_path, "".join(r.model_dump_json() + "\n" for r in rows))
        return statuses


def lock_held(path: Path) -> bool:
    """Whether another open file holds an flock on `path`: a shared lock is tried and at once given back (a writer
    that asks in that instant waits for it: see FolderLock). False where the file is absent or locks do not exist."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing gives back the shared lock, if it was taken
    return False


class FolderLock:
    """An exclusive advisory lock on a file (flock): a second writer on the same run folder is refused. A reader
    that only looks (`lock_held`) holds a shared lock for an instant; the writer retries for a moment before it
    refuses, so a look never turns a writer away."""

    RETRY_S = 0.25

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock (one writer per folder is then the user's job)
            return
        deadline = time.monotonic() + self.RETRY_S
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.01)
                    continue
            os.close(self._fd)
            self._fd = None
            raise RunFolderError(
                f"{path.parent}: another rescue-sim process is writing this run folder; wait for it or use another ",
                OUT_DIR,
            ) from None
        os.ftruncate(self._fd, 0)
        os.write(self._fd, str(os.getpid()).encode())

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
