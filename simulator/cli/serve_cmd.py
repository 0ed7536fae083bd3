"""`rescue-sim serve [RUNS_DIR]`: the room in a browser. Thin over `simulator.serve.serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from simulator.cli._common import print_path, user_errors
from simulator.cli._models import make_client, model_settings


@user_errors
def serve(
    runs_dir: Annotated[Path, typer.Argument(metavar="RUNS_DIR", help="Folder of run folders.")] = Path("runs"),
    host: Annotated[str, typer.Option(help="Interface to listen on; beyond loopback needs --token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one).")] = 8000,
    token: Annotated[
        str | None,
        typer.Option(help="Secret every request must carry (needed beyond loopback).", envvar="RESCUE_SIM_SERVE_TOKEN"),
    ] = None,
    rate: Annotated[
        list[Path] | None,
        typer.Option(help="An `export --format jsonl` items file to rate on /rate (repeatable; never the key)."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="Model playing the personas and tracker in played sessions.", envvar="RESCUE_SIM_MODEL"),
    ] = None,
) -> None:
    """Browse run folders, watch sessions live, play the counsellor and rate, in a browser (a local web app).

    Each run shows as the HTML report does; a session still being written grows on screen.

    Played sessions are recorded as supporter human:<name> in a new run folder under RUNS_DIR.
    """
    from simulator.serve import serve as run_server

    settings = model_settings(model)

    def ready(url: str) -> None:
        print_path(f"serving {escape(str(runs_dir))} (Ctrl-C stops) at", url, style="bold")

    run_server(
        runs_dir,
        host=host,
        port=port,
        token=token,
        client_factory=lambda: make_client(settings),
        rate=list(rate or ()),
        on_ready=ready,
    )
