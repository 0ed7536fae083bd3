"""The Starlette app behind `rescue-sim serve`: routes, the token gate and the security headers.

Pages: `/` (the run folders under RUNS_DIR), `/run?name=RUN` (the HTML report's page and script for one run,
session details fetched on demand from `/api/session`), `/play` (be the counsellor). Every response carries a
content-security policy (own scripts only, no inline handlers, no other origin); every request passes the gate.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import threading
from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from judges.report import render_html, report_script_hash
from judges.report._html import ASSETS as REPORT_ASSETS
from personas.common.errors import Param, UserError
from personas.library import load_library
from simulator.llm.types import ModelClient
from simulator.runfolder import RunFolderError
from simulator.serve._live import LiveRuns, LiveStart
from simulator.serve._play import MoveRefused, PlayMove, PlayRooms, PlayStart
from simulator.serve._rate import RatingGiven, RatingRefused, RatingSheets
from simulator.serve._runs import PathRefused, RunsRoot, ServeError

ASSETS = Path(__file__).parent / "assets"
STATIC = {
    "dom.js": "text/javascript",
    "play.js": "text/javascript",
    "start.js": "text/javascript",
    "rate.js": "text/javascript",
    "serve.css": "text/css",
}
TOKEN_COOKIE = "rescue_sim_token"
TOKEN_HEADER = "x-rescue-sim-token"
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """`127.0.0.1:8000` -> `127.0.0.1`, `[::1]:8000` -> `[::1]`."""
    return header.split("]")[0] + "]" if header.startswith("[") else header.rsplit(":", 1)[0]


def _line(status: int, text: str) -> PlainTextResponse:
    return PlainTextResponse(text.splitlines()[0] if text else "error", status_code=status)


class Gate:
    """Every request: the token when one is set (header, or a cookie set from a first `?token=` visit), and on a
    loopback server without a token, a loopback Host header (a page on another site cannot reach the app through
    DNS rebinding). Every response: the security headers."""

    def __init__(self, app: ASGIApp, token: str | None, loopback_only: bool):
        self.app, self.token, self.loopback_only = app, token, loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self.refuse(request)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode()))
        if self.token and "token" in query:  # first visit with ?token=: keep it in a cookie, drop it from the URL
            rest = urlencode({k: v for k, v in query.items() if k != "token"})
            response = RedirectResponse(scope["path"] + ("?" + rest if rest else ""), status_code=303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
            await self.secure(response)(scope, receive, send)
            return

        async def with_headers(message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"content-security-policy"]
                csp = dict(message.get("headers", [])).get(b"content-security-policy", PAGE_CSP.encode())
                headers += [
                    (b"content-security-policy", csp),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"cache-control", b"no-store"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)

    def refuse(self, request: Request) -> Response | None:
        origin = request.headers.get("origin")
        if request.method not in ("GET", "HEAD") and origin is not None:
            host = request.headers.get("host") or ""
            if origin.split("://", 1)[-1] != host:  # a form on another site posting here (CSRF)
                return _line(403, f"origin {origin!r} refused: changes come only from this server's own pages")
        if self.token:
            given = request.headers.get(TOKEN_HEADER) or request.cookies.get(TOKEN_COOKIE) or ""
            given = given or request.query_params.get("token", "")
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return _line(401, "token missing or wrong: open the URL with ?token=… as printed by rescue-sim serve")
        elif self.loopback_only:
            host = _host_name(request.headers.get("host") or "")
            if not is_loopback(host):
                return _line(403, f"host {host!r} refused: this server answers on localhost only")
        return None

    @staticmethod
    def secure(response: Response) -> Response:
        response.headers["content-security-policy"] = PAGE_CSP
        response.headers["referrer-policy"] = "no-referrer"
        return response


def _index_page(runs: RunsRoot) -> str:
    rows = "".join(
        f'<tr><td class="l"><a href="/run?{escape(urlencode({"name": r.name}))}">{escape(r.name)}</a></td>'
        f'<td class="l"><span class="tag {escape(r.status)}">{escape(r.status_text)}</span></td>'
        f'<td>{r.sessions}</td><td class="l">{escape(r.kind)}</td><td class="l">{escape(r.supporter)}</td>'
        f'<td class="l">{escape(r.created)}</td></tr>'
        for r in runs.runs()
    )
    body = (
        f'<table><thead><tr><th class="l">run folder</th><th class="l">status</th><th>sessions</th>'
        f'<th class="l">kind</th><th class="l">supporter</th><th class="l">created</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        if rows
        else '<p class="note">No run folders here yet: <code>rescue-sim run</code> writes them, or play one.</p>'
    )
    return _shell(
        "rescue-sim",
        f'<p>Run folders in {escape(runs.root.name)}/. <a href="/start">Start a session</a> · <a href="/play">Play the counsellor</a></p>'
        f"<section><h2>Runs</h2>{body}</section>",
    )


def _shell(title: str, main: str, script: str | None = None) -> str:
    tag = f'<script src="/assets/dom.js"></script><script src="/assets/{script}"></script>' if script else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><link rel="stylesheet" href="/assets/report.css">'
        '<link rel="stylesheet" href="/assets/serve.css"></head>'
        f'<body><header><h1>{escape(title)}</h1><nav><a href="/">All runs</a> · <a href="/start">Start a session</a> · '
        '<a href="/play">Play</a> · <a href="/rate">Rate</a></nav>'
        f"</header><main>{main}</main>{tag}</body></html>"
    )


def _state(request: Request):
    """What build_app put on the app: the runs root, the rating sheets, the play rooms, the live runs."""
    return request.app.state


def _run_refused(name: str) -> PlainTextResponse:
    return _line(404, f"run {name!r}: not a run folder inside RUNS_DIR")


async def _json_body(request: Request, model):
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise MoveRefused("send the form as application/json")
    try:
        return model.model_validate_json(await request.body())
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "body"
        raise MoveRefused(f"{where}: {first['msg']}") from None


def _room_id(request: Request) -> str:
    return request.query_params.get("id", "")


# -- pages and assets --------------------------------------------------------------------------------------------


async def index(request: Request) -> Response:
    return HTMLResponse(_index_page(_state(request).runs))


async def run_page(request: Request) -> Response:
    name, runs = request.query_params.get("name", ""), _state(request).runs
    try:
        data = await run_in_threadpool(runs.report_data, name)  # a cold build must not stall live rooms
    except PathRefused:
        return _run_refused(name)
    except RunFolderError as err:
        return _line(422, str(err))
    query = urlencode({"name": name})
    data = data.model_copy(update={"detail_url": f"/api/session?{query}&id=", "live_url": f"/api/live?{query}&id="})
    html = render_html(data, served=True, home="/")
    csp = PAGE_CSP.replace("script-src 'self'", f"script-src {report_script_hash()}").replace(
        "style-src 'self'", "style-src 'unsafe-inline'"
    )
    return HTMLResponse(html, headers={"content-security-policy": csp})


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name == "report.css":
        return FileResponse(REPORT_ASSETS / "report.css", media_type="text/css")
    if name not in STATIC:
        return _line(404, f"no asset {name!r}")
    return FileResponse(ASSETS / name, media_type=STATIC[name])


async def start_page(request: Request) -> Response:
    return HTMLResponse(_shell("Start a session", '<div id="start-run"></div>', "start.js"))


async def rate_page(request: Request) -> Response:
    return HTMLResponse(_shell("Rate", '<div id="rate"></div>', "rate.js"))


async def play_page(request: Request) -> Response:
    return HTMLResponse(_shell("Play the counsellor", '<div id="play"></div>', "play.js"))


# -- a run's sessions, finished and live -------------------------------------------------------------------------


async def session_api(request: Request) -> Response:
    name, sid = request.query_params.get("name", ""), request.query_params.get("id", "")
    try:
        detail = await run_in_threadpool(_state(request).runs.detail, name, sid)
    except PathRefused:
        return _run_refused(name)
    except RunFolderError as err:
        return _line(404, str(err))
    return Response(detail.model_dump_json(), media_type="application/json")


async def live_api(request: Request) -> Response:
    state = _state(request)
    name, sid = request.query_params.get("name", ""), request.query_params.get("id", "")
    try:
        state.runs.resolve(name)
    except PathRefused:
        return _run_refused(name)
    return StreamingResponse(
        state.lives.events(name, sid, request.is_disconnected, state.stopping),
        media_type="text/event-stream",
        headers={"x-accel-buffering": "no"},
    )


async def run_start(request: Request) -> Response:
    try:
        live = await _state(request).lives.start(await _json_body(request, LiveStart))
    except (MoveRefused, UserError) as err:
        return _line(400, str(err))
    return JSONResponse({"run": live.run, "session": live.session_id})


async def run_options(request: Request) -> Response:
    return JSONResponse(await run_in_threadpool(_state(request).lives.options))


# -- rating ------------------------------------------------------------------------------------------------------


async def rate_batches(request: Request) -> Response:
    return JSONResponse(
        [
            {"batch": str(k), "name": b.name, "items": len(b.items), "dimensions": list(b.dimensions)}
            for k, b in enumerate(_state(request).sheets.batches)
        ]
    )


async def rate_batch(request: Request) -> Response:
    sheets = _state(request).sheets
    try:
        batch = sheets.batch(request.query_params.get("batch", ""))
        given = sheets.given(batch, request.query_params.get("rater", ""))
    except KeyError:
        return _line(404, "no such batch: the server rates the files given with --rate")
    except RatingRefused as err:
        return _line(400, str(err))
    return JSONResponse({**batch.public(), "given": given})


async def rate_save(request: Request) -> Response:
    sheets = _state(request).sheets
    try:
        batch = sheets.batch(request.query_params.get("batch", ""))
        saved = sheets.save(batch, await _json_body(request, RatingGiven))
    except KeyError:
        return _line(404, "no such batch: the server rates the files given with --rate")
    except (RatingRefused, MoveRefused) as err:
        return _line(400, str(err))
    return JSONResponse({"saved": saved})


# -- playing the counsellor --------------------------------------------------------------------------------------


async def cases_api(request: Request) -> Response:
    return JSONResponse([{"id": c.id, "title": c.title, "group": c.group} for c in load_library()])


async def play_start(request: Request) -> Response:
    try:
        room = await _state(request).rooms.start(await _json_body(request, PlayStart))
    except (MoveRefused, UserError) as err:
        return _line(400, str(err))
    return JSONResponse(room.public())


async def play_state(request: Request) -> Response:
    state = _state(request)
    try:
        since = int(request.query_params.get("since", "-1"))
        room = await state.rooms.wait_change(_room_id(request), since, timeout=20.0, stopping=state.stopping)
    except ValueError:
        return _line(400, "since: a number")
    except KeyError:
        return _line(404, f"no room {_room_id(request)!r} (rooms end when the server stops)")
    return JSONResponse(room.public())


async def play_move(request: Request) -> Response:
    try:
        _state(request).rooms.submit(_room_id(request), await _json_body(request, PlayMove))
    except KeyError:
        return _line(404, f"no room {_room_id(request)!r}")
    except MoveRefused as err:
        return _line(400, str(err))
    return JSONResponse({"ok": True})


async def play_leave(request: Request) -> Response:
    rooms = _state(request).rooms
    try:
        await rooms.abandon(_room_id(request))
        return JSONResponse(rooms.get(_room_id(request)).public())
    except KeyError:
        return _line(404, f"no room {_room_id(request)!r}")


ROUTES = [
    Route("/", index),
    Route("/run", run_page),
    Route("/api/session", session_api),
    Route("/assets/{name}", asset),
    Route("/api/live", live_api),
    Route("/start", start_page),
    Route("/api/run", run_start, methods=["POST"]),
    Route("/api/run/options", run_options),
    Route("/rate", rate_page),
    Route("/api/rate/batches", rate_batches),
    Route("/api/rate/batch", rate_batch),
    Route("/api/rate/save", rate_save, methods=["POST"]),
    Route("/play", play_page),
    Route("/api/cases", cases_api),
    Route("/api/play", play_start, methods=["POST"]),
    Route("/api/play/state", play_state),
    Route("/api/play/move", play_move, methods=["POST"]),
    Route("/api/play/leave", play_leave, methods=["POST"]),
]


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette):
    """Warm the runs' report data in a thread at start; end the play rooms and live runs at stop."""
    if app.state.warm:
        threading.Thread(target=app.state.runs.warm, name="warm-runs", daemon=True).start()
    yield
    await app.state.rooms.close()
    await app.state.lives.close()


def build_app(
    runs_dir: str | Path,
    *,
    client_factory: Callable[[], ModelClient],
    token: str | None = None,
    loopback_only: bool = True,
    warm: bool = True,
    idle_s: float | None = None,
    rate: Sequence[str | Path] = (),
    stopping: Callable[[], bool] = lambda: False,
) -> ASGIApp:
    """The whole app over RUNS_DIR. `client_factory` makes the model client of played sessions (on first use).
    `warm` builds each run's report data in a thread at start, so first page loads do not wait for it. `rate`:
    exported JSONL batches to rate on `/rate`. `stopping()` says the server is shutting down: event streams and long
    polls end so that it can. The handlers above read what they need from `app.state`."""
    runs = RunsRoot(runs_dir)
    app = Starlette(routes=ROUTES, lifespan=_lifespan)
    app.state.runs = runs
    app.state.sheets = RatingSheets(list(rate))
    app.state.rooms = PlayRooms(runs, client_factory, **({"idle_s": idle_s} if idle_s is not None else {}))
    app.state.lives = LiveRuns(runs, client_factory)
    app.state.stopping = stopping
    app.state.warm = warm
    return Gate(app, token, loopback_only)


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback host without a token (one line, before anything starts)."""
    if not is_loopback(host) and not token:
        raise ServeError(
            Param("host"),
            f" {host}: serving beyond this machine needs a token; pass ",
            Param("token"),
            " SECRET (or set RESCUE_SIM_SERVE_TOKEN)",
        )
