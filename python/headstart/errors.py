"""Errors a user can cause. main() turns each into one line and an exit status, never a traceback."""


class HeadstartError(Exception):
    """Something the user can fix: the message says what happened and what to do."""

    exit_status = 1


class UsageError(HeadstartError):
    exit_status = 2
