"""The run folders under RUNS_DIR as the browser may reach them: names checked against the root (a path from the
browser never leaves it), and each run's report data built once and kept until a file in the run changes.

A run's page data is also kept on disk, in `<run>/.serve-index.json`, keyed on every file of the run (relative
path, size, mtime; dot-files such as the lock, temp files and the index itself left out) and on the code's version:
building it reads and validates every session and judgment (about 4 s for 200 judged sessions on two cores), reading
it back is one small file (milliseconds), so a restarted server's first page of an unchanged run is quick. A file
added, removed or rewritten changes the key and the data is rebuilt; an index that cannot be read or written (a
read-only folder, a truncated file) is ignored, never trusted.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from judges.report import ReportData, SessionDetail, build_report_data, session_detail
from personas.common.errors import UserError
from personas.common.files import atomic_write_text
from simulator.runfolder import RunFolder, RunFolderError, package_versions

INDEX_NAME = ".serve-index.json"
INDEX_VERSION = 1  # bump when what a page's data holds changes without a package version change


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


def _files(folder: Path, prefix: str) -> list[tuple[str, int, int]]:
    """(relative path, size, mtime ns) of every file under `folder`, dot-files and dot-folders left out."""
    out: list[tuple[str, int, int]] = []
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return out
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                out.extend(_files(Path(entry.path), f"{prefix}{entry.name}/"))
            else:
                st = entry.stat()
                out.append((prefix + entry.name, st.st_size, st.st_mtime_ns))
        except FileNotFoundError:  # removed while listed: the next fingerprint sees it gone
            continue
    return out


_CODE_VERSION: list[str] = []


def _code_version() -> str:
    """The package version and the (path, size, mtime) of the code that builds page data (personas, simulator,
    judges): an edited checkout rebuilds its indexes instead of serving what older code computed. Once per process."""
    if not _CODE_VERSION:
        import judges
        import personas
        import simulator

        h = hashlib.sha256(package_versions().get("rescue-sim", "?").encode())
        for pkg in (personas, simulator, judges):
            root = Path(pkg.__file__).parent
            for rel, size, mtime in sorted(_files(root, "")):
                if rel.endswith(".py"):
                    h.update(f"\n{pkg.__name__}/{rel}|{size}|{mtime}".encode())
        _CODE_VERSION.append(h.hexdigest()[:16])
    return _CODE_VERSION[0]


def _read_index(run: Path, key: str) -> ReportData | None:
    """The page data kept at the last build, when its key is this one; None otherwise (or when unreadable)."""
    try:
        raw = (run / INDEX_NAME).read_bytes()
    except OSError:
        return None
    head, _, body = raw.partition(b"\n")
    if head.decode("ascii", "replace") != key:
        return None
    try:
        return ReportData.model_validate_json(body)
    except ValueError:
        return None


def _write_index(run: Path, key: str, data: ReportData) -> None:
    """Keep the page data beside the run for the next start (first line: its key); a folder that cannot be written
    (read-only) is served all the same, only rebuilt at each start."""
    try:
        atomic_write_text(run / INDEX_NAME, key + "\n" + data.model_dump_json(), fsync=False)
    except OSError:
        pass


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

    def _fingerprint(self, run: Path) -> str:
        """A digest of every file of the run (relative path, size, mtime), dot-files left out, and of the code."""
        h = hashlib.sha256(f"{INDEX_VERSION}|{_code_version()}|{self.name_of(run)}".encode())
        for rel, size, mtime in sorted(_files(run, "")):
            h.update(f"\n{rel}|{size}|{mtime}".encode())
        return h.hexdigest()

    def report_data(self, name: str) -> ReportData:
        """The run's report data without session details (fetched one by one), rebuilt only when the run changed:
        kept in memory, and on disk (`.serve-index.json`) for the next start."""
        run = self.resolve(name)
        with self._guard:
            lock = self._locks.setdefault(run, threading.Lock())
        with lock:  # a second request for the same run waits for the build in progress instead of repeating it
            key = self._fingerprint(run)
            hit = self._cache.get(run)
            if hit is not None and hit[0] == key:
                return hit[1]
            data = _read_index(run, key)
            if data is None:
                data = build_report_data([run], details=False)
                data = data.model_copy(
                    update={
                        "runs": [self.name_of(run)],
                        "sessions": [s.model_copy(update={"run": self.name_of(run)}) for s in data.sessions],
                        "unreadable": [Path(u).name for u in data.unreadable],
                    }
                )
                if self._fingerprint(run) == key:  # nothing changed while it was built: keep it for the next start
                    _write_index(run, key, data)
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
