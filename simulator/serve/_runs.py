"""The run folders under RUNS_DIR as the browser may reach them: names checked against the root (a path from the
browser never leaves it), and each run's report data built once and kept until a file in the run changes.

A run's page data is also kept on disk, in `<run>/.serve-index.json` (see simulator.runner.pageindex), keyed on every file
of the run and on the code's version, and stored without the run's name, which is filled in here: reading it back is
one small file (milliseconds) instead of validating every session and judgment (seconds), under any served name.
The commands that write a run leave one behind, so even a never-served run's first page is quick.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from judges.report import ReportData, SessionDetail, session_detail, with_running
from personas.common.errors import ParameterError
from simulator.records import SessionStatus
from simulator.runfolder import RunFolder, RunFolderError
from simulator.runner.pageindex import INDEX_NAME, build_index_data, index_key, named, read_index, write_index

__all__ = ["INDEX_NAME", "PathRefused", "RunEntry", "RunsRoot", "ServeError"]


class ServeError(ParameterError):
    """A bad RUNS_DIR, host, token, port or rating batch: one line for the person starting the server (naming the
    parameter, which the command says as its flag)."""


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
    status: str = "completed"  # running, completed, failed or incomplete: the tag's class
    status_text: str = "completed"  # what the runs list says, e.g. `running · 1 of 2 finished`


def _stamp(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def run_status(folder: RunFolder) -> tuple[str, str]:
    """(kind, words) of a run folder for the runs list, from results.jsonl (one line per finished session) and the
    writer's lock: `running` while a process writes it, else `incomplete` when sessions stopped unfinished,
    `failed` when some failed, `completed` when all completed (or none yet)."""
    ids = folder.session_ids()
    try:
        finished = {r.session_id: r.status for r in folder.results() if r.session_id in set(ids)}
    except RunFolderError:
        return "failed", "results.jsonl unreadable"
    failed = sum(s == SessionStatus.FAILED for s in finished.values())
    unfinished = len(ids) - len(finished)
    if folder.being_written():
        return "running", f"running · {len(finished)} of {len(ids)} finished"
    parts = [f"{failed} failed"] if failed else []
    if unfinished:
        parts.insert(0, f"{unfinished} stopped unfinished (rerun to resume)")
        return "incomplete", " · ".join(parts)
    if failed:
        return "failed", f"{failed} of {len(ids)} failed"
    return "completed", "completed" if ids else "no sessions yet"


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
            status, text = run_status(folder)
            out.append(
                RunEntry(
                    name=self.name_of(d),
                    sessions=len(folder.session_ids()),
                    kind=manifest.kind,
                    supporter=str(supporter or "–"),
                    created=manifest.created_at.strftime("%Y-%m-%d %H:%M"),
                    status=status,
                    status_text=text,
                )
            )
        return out

    def report_data(self, name: str) -> ReportData:
        """The run's report data without session details (fetched one by one), rebuilt only when the run changed:
        kept in memory, and on disk (`.serve-index.json`) for the next start. Unfinished sessions of a run being
        written now show as running (looked at on every call: the kept data never says so)."""
        data = self._built(name)
        return with_running(data, {data.runs[0]} if RunFolder(self.resolve(name)).being_written() else set())

    def _built(self, name: str) -> ReportData:
        run = self.resolve(name)
        with self._guard:
            lock = self._locks.setdefault(run, threading.Lock())
        with lock:  # a second request for the same run waits for the build in progress instead of repeating it
            key = index_key(run)
            hit = self._cache.get(run)
            if hit is not None and hit[0] == key:
                return hit[1]
            data = read_index(run, key)
            if data is None:
                data = build_index_data(run)
                if index_key(run) == key:  # nothing changed while it was built: keep it for the next start
                    write_index(run, key, data)
            data = named(data, self.name_of(run))
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
        return hit is not None and hit[0] == index_key(run)

    def detail(self, name: str, session_id: str) -> SessionDetail:
        return session_detail(self.resolve(name), session_id)
