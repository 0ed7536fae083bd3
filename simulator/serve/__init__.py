"""`rescue-sim serve`: the room in a browser. Browse run folders (the HTML report's own page and script, one
renderer), watch sessions live, play the counsellor as a `human:<name>` supporter and rate an exported batch
blind, all in one small local web app.

Why Starlette + uvicorn: a small ASGI toolkit (no ORM, no template engine we need, no build step), the same shape
as Datasette (a few routes over files, plain JavaScript on the pages), already in our environment through
sse-starlette and inspect-ai, and async like the engine, so a played session runs in the server's own event loop
and its pauses are plain awaits. FastAPI would add only schema generation on top of it; Flask is not async.

Safe by default: binds to 127.0.0.1; any other host needs a token (checked on every request); every page runs under
a content-security policy that allows only its own scripts; model text is set as text, never as markup; a run name
from the browser is resolved and must stay inside RUNS_DIR.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from pathlib import Path

from personas.common.errors import Param
from simulator.llm.types import ModelClient
from simulator.serve._app import build_app, check_bind, is_loopback
from simulator.serve._play import PlayMove, PlayRooms, PlayStart
from simulator.serve._runs import PathRefused, RunsRoot, ServeError

__all__ = [
    "PathRefused",
    "PlayMove",
    "PlayRooms",
    "PlayStart",
    "RunsRoot",
    "ServeError",
    "bind_socket",
    "build_app",
    "check_bind",
    "is_loopback",
    "serve",
]


def bind_socket(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a port in use is one clear line rather than a server log."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a listener still refuses
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as err:
        sock.close()
        raise ServeError(
            Param("port"),
            f" {port}: cannot listen on {host}:{port} ({err.strerror or err}); pass another ",
            Param("port"),
        ) from None
    return sock


def serve(
    runs_dir: str | Path,
    *,
    host: str,
    port: int,
    token: str | None,
    client_factory: Callable[[], ModelClient],
    rate: Sequence[str | Path] = (),
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Check everything that can be wrong before starting (RUNS_DIR, host without token, port), then serve until
    Ctrl-C. `on_ready(url)` gets the URL to open (with the token in it, when there is one)."""
    import uvicorn

    check_bind(host, token)
    server: list[uvicorn.Server] = []  # event streams and long polls end once it is told to stop
    app = build_app(
        runs_dir,
        client_factory=client_factory,
        token=token,
        loopback_only=is_loopback(host),
        rate=rate,
        stopping=lambda: bool(server) and server[0].should_exit,
    )
    sock = bind_socket(host, port)
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}/" + (f"?token={token}" if token else "")
    if on_ready is not None:
        on_ready(url)
    server.append(uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)))
    server[0].run(sockets=[sock])
