"""Library errors said as command-line flags: a library names its parameters (`supporter_knows 'x': ...`), a
command names its options (`--supporter-knows 'x': ...`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from personas.common.errors import ParameterError, UserError


@contextmanager
def said_as_flags(flags: dict[str, str]) -> Iterator[None]:
    """Within the block, a `ParameterError` about a parameter in `flags` (parameter -> option) becomes the same
    UserError worded with the option; other errors pass unchanged."""
    try:
        yield
    except ParameterError as err:
        if err.parameter not in flags:
            raise
        raise UserError(err.said_as(flags[err.parameter])) from None
