"""The one exception type the CLI turns into a single line and exit code 2."""


class AnalysisError(Exception):
    """Bad input that a user can fix: the message names the problem."""
