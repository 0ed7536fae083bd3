"""The one error family the CLI turns into a single line and exit code 2."""

from __future__ import annotations

from collections.abc import Callable


class UserError(Exception):
    """A problem the user can fix (bad file, bad option, missing key). `str()` is one line naming the fix."""


class Param(str):
    """A parameter's name inside a `ParameterError`'s message: `str()` of the error shows it as is, a command shows
    it as the flag it took the value from."""


class ParameterError(UserError):
    """A bad value for a parameter of a library function. The message names parameters as the function does
    (`ParameterError(Param("n"), " 5: leaves 0 item(s) for random")` reads `n 5: leaves ...`); a command, which took
    the value from a flag, says it as that flag with `worded` (`--n 5: leaves ...`). A message without a `Param`
    is an ordinary UserError's."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts
        super().__init__("".join(parts))

    @property
    def params(self) -> list[str]:
        return [str(p) for p in self.parts if isinstance(p, Param)]

    def worded(self, name: Callable[[str], str]) -> str:
        """The message with each parameter said as `name(parameter)` (a command passes its flag for it)."""
        return "".join(name(str(p)) if isinstance(p, Param) else p for p in self.parts)
