"""Running a command's coroutine to the end: `asyncio.run`, without formatting everything it returns."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)`, with the result handed back aside and the main task returning None.

    On Python 3.11 `asyncio.Runner` checks and restores its SIGINT handler with `signal.getsignal`, which turns the
    handler (a partial holding the finished main task) into an enum error message it then drops: the task's
    result is repr'd in full, twice. A run's summary holds every session record, so that cost grows with the
    run (0.3 s of CPU at the end of 64 short sessions). Ctrl-C behaves as with `asyncio.run`.
    """
    box: list[T] = []

    async def main() -> None:
        box.append(await coro)

    asyncio.run(main())
    return box[0]
