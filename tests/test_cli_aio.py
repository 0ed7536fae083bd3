"""Commands run their coroutine with run_sync: the result comes back, and is never formatted on the way."""

from __future__ import annotations

import asyncio

from simulator.cli._aio import run_sync


class _Summary:
    """Stands in for a run summary; counts how often something formats it."""

    def __init__(self) -> None:
        self.reprs = 0

    def __repr__(self) -> str:
        self.reprs += 1
        return "_Summary()"


def test_result_is_returned_and_never_formatted():
    async def command() -> _Summary:
        await asyncio.sleep(0)
        return _Summary()

    summary = run_sync(command())
    assert isinstance(summary, _Summary)
    assert summary.reprs == 0  # asyncio.run formats a returned summary while restoring its SIGINT handler


def test_errors_propagate_as_with_asyncio_run():
    async def failing() -> None:
        raise ValueError("bad config")

    try:
        run_sync(failing())
    except ValueError as err:
        assert str(err) == "bad config"
    else:
        raise AssertionError("the coroutine's error was swallowed")
