"""The run folders under RUNS_DIR as the browser may reach them: names checked against the root (a path from the
browser never leaves it), and each run's report data built once and kept until a file in the run changes."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from judges.report import ReportData, SessionDetail, build_report_data, session_detail
from personas.common.errors import UserError
from simulator.runfolder import RunFolder, RunFolderError


class ServeError(UserError):
    """A bad RUNS_DIR, host, token or port: one line for the person starting the server."""


class PathRefused(Exception):
    """A run name from the browser that is not a run folder inside RUNS_DIR (`../../etc/passwd`, a symlink out)."""


@dataclass(frozen=True)
class RunEntry:
    """One line of the runs list."""

    name: str
    sessions: int
    kind: str
    supporter: str
    created: str


def _stamp(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


class RunsRoot:
    """RUNS_DIR: the folder whose run folders (each a child with a manifest.json, or RUNS_DIR itself) are served."""

    def __init__(self, root: str | Path):
        path = Path(root)
        if not path.is_dir():
            raise ServeError(f"RUNS_DIR {root}: not a folder; pass a folder of run folders (default: runs)")
        self.root = path.resolve()
        self._cache: dict[Path, tuple[tuple[int, ...], ReportData]] = {}
        self._locks: dict[Path, threading.Lock] = {}
        self._guard = threading.Lock()

    def resolve(self, name: str) -> Path:
        """The run folder `name` names, or PathRefused: it must resolve (symlinks followed) inside RUNS_DIR and
        hold a manifest."""
        if not name or "\x00" in name:
            raise PathRefused(name)
        candidate = (self.root / name).resolve()
        if not candidate.is_relative_to(self.root) or not (candidate / "manifest.json").is_file():
            raise PathRefused(name)
        return candidate

    def name_of(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def runs(self) -> list[RunEntry]:
        """Every run folder directly under RUNS_DIR (and RUNS_DIR itself when it is one), newest first."""
        dirs = [self.root] if (self.root / "manifest.json").is_file() else []
        dirs += [p for p in self.root.iterdir() if p.is_dir() and (p / "manifest.json").is_file()]
        out = []
        for d in sorted(dirs, key=lambda p: -_stamp(p / "manifest.json")):
            folder = RunFolder(d)
            try:
                manifest = folder.read_manifest()
            except RunFolderError:
                continue
            config = manifest.config
            supporter = config.get("supporter") or ", ".join(sorted({str(s) for s in config.get("supporters", [])}))
            out.append(
                RunEntry(
                    name=self.name_of(d),
                    sessions=len(folder.session_ids()),
                    kind=manifest.kind,
                    supporter=str(supporter or "–"),
                    created=manifest.created_at.strftime("%Y-%m-%d %H:%M"),
                )
            )
        return out

    def _fingerprint(self, run: Path) -> tuple[int, ...]:
        # atomic writes rename into these folders, which changes their mtime: any new or rewritten file shows
        return tuple(_stamp(p) for p in (run, run / "sessions", run / "judgments", run / "results.jsonl"))

    def report_data(self, name: str) -> ReportData:
        """The run's report data without session details (fetched one by one), rebuilt only when the run changed."""
        run = self.resolve(name)
        with self._guard:
            lock = self._locks.setdefault(run, threading.Lock())
        with lock:  # a second request for the same run waits for the build in progress instead of repeating it
            key = self._fingerprint(run)
            hit = self._cache.get(run)
            if hit is not None and hit[0] == key:
                return hit[1]
            data = build_report_data([run], details=False)
            data = data.model_copy(
                update={
                    "runs": [self.name_of(run)],
                    "sessions": [s.model_copy(update={"run": self.name_of(run)}) for s in data.sessions],
                    "unreadable": [Path(u).name for u in data.unreadable],
                }
            )
            self._cache[run] = (key, data)
            return data

    def warm(self) -> None:
        """Build every run's data now (the server does this in a thread at start, so first page loads are quick)."""
        for entry in self.runs():
            try:
                self.report_data(entry.name)
            except (RunFolderError, PathRefused):
                continue

    def is_built(self, name: str) -> bool:
        """Whether the run's page data is built and still current (the benchmark waits for the start-up build)."""
        run = self.resolve(name)
        hit = self._cache.get(run)
        return hit is not None and hit[0] == self._fingerprint(run)

    def detail(self, name: str, session_id: str) -> SessionDetail:
        return session_detail(self.resolve(name), session_id)
