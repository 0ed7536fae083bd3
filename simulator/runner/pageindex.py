"""A run's served page data kept beside it, `<run>/.serve-index.json`, so `rescue-sim serve`'s first page of a run
is one small read instead of validating every session and judgment (seconds for 200 judged sessions).

The file's first line is its key: a digest of every file of the run (relative path, size, mtime; dot-files such as
the lock, temp files and the index itself left out) and of the code that builds the data. A file added, removed or
rewritten changes the key, so a stale index is rebuilt, never trusted. The data is stored with the run's name left
empty and filled in when served, so one index serves the run under any name (`serve runs/` or `serve runs/x`).

A build keeps each session's entry (its row, rubric dimensions and leaderboard facts: `judges.report.SessionEntry`)
in `<run>/.serve-entries.json`, beside the (path, size, mtime) of the files it was read from (record, judgment,
judgment trials, check). A later build (the run changed after its command: sessions added, rewritten or re-judged)
reads again only the sessions whose files changed and sums the rest from their kept entries, the same sums a build
from scratch makes; entries written by other code are ignored.

`refresh_index` is called where a command finishes writing a run (`run_specs`, so `run`/`play`/`stress`/
`sensitivity`, and `judge`): a never-served run's first page is then quick too. It is best-effort: an index that
cannot be built or written (a read-only folder, a damaged record) is skipped and the server builds it as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from personas.common.files import atomic_write_text
from simulator.runfolder import RunFolder, package_versions

if TYPE_CHECKING:
    from judges.report import ReportData

INDEX_NAME = ".serve-index.json"
ENTRIES_NAME = ".serve-entries.json"  # per-session entries, so a changed run reads again only what changed
INDEX_VERSION = 2  # bump when what a page's data holds changes without a package version change (2: name-free)


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


def index_key(run: Path) -> str:
    """A digest of every file of the run (relative path, size, mtime), dot-files left out, and of the code."""
    h = hashlib.sha256(f"{INDEX_VERSION}|{_code_version()}".encode())
    for rel, size, mtime in sorted(_files(run, "")):
        h.update(f"\n{rel}|{size}|{mtime}".encode())
    return h.hexdigest()


def named(data: ReportData, name: str) -> ReportData:
    """The page data with the run's name filled in (the index holds it with the name left empty)."""
    return data.model_copy(
        update={"runs": [name], "sessions": [s.model_copy(update={"run": name}) for s in data.sessions]}
    )


def _session_files(folder: RunFolder, sid: str) -> list[list]:
    """(relative path, size, mtime ns) of every file a session's entry is read from: its record, judgment,
    judgment trials and stress check (those that exist)."""
    name = folder.session_path(sid).name
    paths = [folder.sessions_dir / name, folder.judgments_dir / name, folder.path / "checks" / name]
    trials = folder.judgments_dir / "trials" / sid
    if trials.is_dir():
        paths += sorted(trials.glob("*.json"))
    out = []
    for p in paths:
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        out.append([p.relative_to(folder.path).as_posix(), st.st_size, st.st_mtime_ns])
    return out


def _entries_key() -> str:
    return f"{INDEX_VERSION}|{_code_version()}"


def read_entries(run: Path) -> dict[str, dict]:
    """The per-session entries kept at the last build (session id -> {"files", "entry"}), when the same code wrote
    them; empty otherwise (or when unreadable)."""
    try:
        raw = (run / ENTRIES_NAME).read_bytes()
    except OSError:
        return {}
    head, _, body = raw.partition(b"\n")
    if head.decode("ascii", "replace") != _entries_key():
        return {}
    try:
        kept = json.loads(body)
    except ValueError:
        return {}
    return kept if isinstance(kept, dict) else {}


def build_index_data(run: Path) -> ReportData:
    """The run's page data without session details (fetched one by one) and with its name left empty.

    Each session's entry (its row, rubric dimensions and leaderboard facts) is reused from `.serve-entries.json`
    when none of its files changed since (same path, size and mtime, taken before it was read), else read again:
    a run with a few sessions added or rewritten after its command reads only those. The entries are kept again
    for the next build (best-effort)."""
    from judges.report import SessionEntry, build_report_data, read_entry

    kept = read_entries(run)
    fresh: dict[str, dict] = {}

    def entry(folder: RunFolder, sid: str) -> SessionEntry:
        files = _session_files(folder, sid)
        old = kept.get(sid)
        if isinstance(old, dict) and old.get("files") == files:
            try:
                reused = SessionEntry.model_validate(old.get("entry"))
            except ValueError:
                reused = None
            if reused is not None:
                fresh[sid] = old
                return reused
        new = read_entry(folder, sid)[0]
        fresh[sid] = {"files": files, "entry": new.model_dump(mode="json")}
        return new

    data = build_report_data([run], details=False, entries=entry, running=False)
    if fresh != kept:
        with contextlib.suppress(OSError, TypeError, ValueError):
            atomic_write_text(run / ENTRIES_NAME, _entries_key() + "\n" + json.dumps(fresh), fsync=False)
    return named(data, "").model_copy(update={"unreadable": [Path(u).name for u in data.unreadable]})


def read_index(run: Path, key: str) -> ReportData | None:
    """The page data kept at the last build, when its key is this one; None otherwise (or when unreadable)."""
    from judges.report import ReportData

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


def write_index(run: Path, key: str, data: ReportData) -> bool:
    """Keep the (name-free) page data beside the run (first line: its key); a folder that cannot be written
    (read-only) is served all the same, only rebuilt at each start. Whether it was written."""
    try:
        atomic_write_text(run / INDEX_NAME, key + "\n" + data.model_dump_json(), fsync=False)
    except OSError:
        return False
    return True


def _keyed(run: Path, key: str) -> bool:
    """Whether the index beside the run carries this key (its first line only: the data is not read)."""
    try:
        with (run / INDEX_NAME).open("rb") as f:
            return f.readline().rstrip(b"\n").decode("ascii", "replace") == key
    except OSError:
        return False


def refresh_index(run: str | Path) -> bool:
    """Build and write the run's index now, unless it is already current; whether a current index is there after.
    Never raises: a run that cannot be indexed is simply built by the server when first served."""
    path = Path(run)
    try:
        key = index_key(path)
        if _keyed(path, key):
            return True
        data = build_index_data(path)
        if index_key(path) != key:  # written to while built: the server builds it when it is served
            return False
        return write_index(path, key, data)
    except Exception:  # noqa: BLE001 - an index is a speed-up: never the reason a run or judge fails
        return False
