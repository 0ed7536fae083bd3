"""One self-contained HTML file: the page skeleton, its CSS and JS (package data under `assets/`) and the data
as JSON in a `<script type="application/json">`, with `<`, `>` and `&` escaped so no text can close the element.

Model text is never markup: the script builds every node with `textContent`/`createTextNode` (no innerHTML), and a
Content-Security-Policy allows only the page's own script (by hash), no network, no inline event handlers, so
even markup that slipped through could neither run nor load anything.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

from judges.report._data import ReportData, build_report_data
from personas.common.files import atomic_write_text

ASSETS = Path(__file__).parent / "assets"


def json_for_script(data: str) -> str:
    """JSON text safe inside a `<script>` element: `<`, `>` and `&` as \\u escapes (still the same JSON)."""
    return data.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def report_script_hash() -> str:
    """The CSP source that allows the page's own script and nothing else (`'sha256-…'`)."""
    js = (ASSETS / "report.js").read_text(encoding="utf-8")
    return f"'sha256-{base64.b64encode(hashlib.sha256(js.encode('utf-8')).digest()).decode()}'"


def render_html(data: ReportData, *, served: bool = False, home: str | None = None) -> str:
    """The report page. `served=True` (a page from `rescue-sim serve`) lets the script fetch from its own origin
    (session details on demand); a file report connects to nothing. `home` adds a link back to that URL."""
    page = (ASSETS / "report.html").read_text(encoding="utf-8")
    css = (ASSETS / "report.css").read_text(encoding="utf-8")
    js = (ASSETS / "report.js").read_text(encoding="utf-8")
    payload = json_for_script(json.dumps(data.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")))
    title = f"rescue-sim report: {', '.join(Path(r).name for r in data.runs)}"
    values = {
        "CSP_SCRIPT": report_script_hash(),
        "CSP_CONNECT": "'self'" if served else "'none'",
        "HOME": f'<a href="{_text(home)}">All runs</a> · ' if home else "",
        "TITLE": _text(title),
        "STYLE": css,
        "DATA": payload,
        "SCRIPT": js,
    }
    # one pass over the skeleton: a value (model text in the data, say) is never searched for markers itself
    return re.sub(r"%%([A-Z_]+)%%", lambda m: values[m.group(1)], page)


def _text(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def write_report(run_dirs: Sequence[str | Path], out: str | Path) -> Path:
    """Build the report of `run_dirs` and write it atomically to `out`."""
    out = Path(out)
    atomic_write_text(out, render_html(build_report_data(run_dirs)))
    return out
