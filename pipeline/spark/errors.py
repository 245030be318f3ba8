"""Spark's errors about a user's SQL, as the one-line `UsageError` the jobs print.

Spark's ParseException and AnalysisException carry the statement, a caret and the plan over
many lines; a user needs the first: what is wrong and where. They are turned into a
`UsageError` only around the user's own SQL (`user_sql`): raised by the pipeline's own
queries they are bugs and keep their traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.errors import AnalysisException, ParseException

from pipeline.errors import UsageError


def first_line(exc: BaseException) -> str:
    """The headline of a Spark error, without the statement, caret and plan it adds below."""
    text = str(exc).strip()
    line = text.splitlines()[0].strip() if text else type(exc).__name__
    return line.split(" SQLSTATE:")[0].rstrip(" .;") + "."


@contextmanager
def user_sql(label: str = "SQL") -> Iterator[None]:
    """Run the user's statement: a statement Spark cannot parse or resolve is the user's
    mistake, said in one line naming `label` (the argument it came from)."""
    try:
        yield
    except ParseException as exc:  # a subclass of AnalysisException: test it first
        raise UsageError(f"{label}: syntax error: {first_line(exc)}") from exc
    except AnalysisException as exc:
        raise UsageError(f"{label}: {first_line(exc)}") from exc
