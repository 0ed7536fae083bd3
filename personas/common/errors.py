"""The one error family the CLI turns into a single line and exit code 2."""


class UserError(Exception):
    """A problem the user can fix (bad file, bad option, missing key). `str()` is one line naming the fix."""
