"""A run's served page data kept beside it, `<run>/.serve-index.json`, so `rescue-sim serve`'s first page of a run
is one small read instead of validating every session and judgment (seconds for 200 judged sessions).

The file's first line is its key: a digest of every file of the run (relative path, size, mtime; dot-files such as
the lock, temp files and the index itself left out) and of the code that builds the data. A file added, removed or
rewritten changes the key, so a stale index is rebuilt, never trusted. The data is stored with the run's name left
empty and filled in when served, so one index serves the run under any name (`serve runs/` or `serve runs/x`).

`refresh_index` is called where a command finishes writing a run (`run_specs`, so `run`/`play`/`stress`/
`sensitivity`, and `judge`): a never-served run's first page is then quick too. It is best-effort: an index that
cannot be built or written (a read-only folder, a damaged record) is skipped and the server builds it as before.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from personas.common.files import atomic_write_text
from simulator.runfolder import package_versions

if TYPE_CHECKING:
    from judges.report import ReportData

INDEX_NAME = ".serve-index.json"
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


def build_index_data(run: Path) -> ReportData:
    """The run's page data without session details (fetched one by one) and with its name left empty."""
    from judges.report import build_report_data

    data = build_report_data([run], details=False)
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
