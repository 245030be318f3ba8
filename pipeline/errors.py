"""The one exception type for a user's mistake, raised at the edge of the package.

A `UsageError` says which input was wrong (a flag, a path, a column of the event log) and
what was expected, in one line; the jobs print that line and exit 2, with no traceback
(`--debug` shows it). It is a `ValueError`, so callers that catch bad values still do.
Anything else that escapes a job is a bug and keeps its traceback.
"""

from __future__ import annotations


class UsageError(ValueError):
    """A user's mistake: the message names the input and what was expected, in one line."""
