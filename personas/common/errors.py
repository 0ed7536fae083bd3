"""The one error family the CLI turns into a single line and exit code 2."""


class UserError(Exception):
    """A problem the user can fix (bad file, bad option, missing key). `str()` is one line naming the fix."""


class ParameterError(UserError):
    """A bad value of one named parameter of a library function: `str()` names the parameter as the library calls it
    (`supporter_knows 'x': use one of intake, oracle`); a command says it with its own option name (`said_as`)."""

    def __init__(self, parameter: str, detail: str):
        self.parameter = parameter
        self.detail = detail  # the value as shown and the fix: `'x': use one of intake, oracle`
        super().__init__(f"{parameter} {detail}")

    def said_as(self, option: str) -> str:
        """The same line with the command's name for the parameter: `--supporter-knows 'x': use one of ...`."""
        return f"{option} {self.detail}"
