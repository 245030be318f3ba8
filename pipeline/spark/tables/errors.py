"""Spark's errors as the one-line `UsageError` the jobs print.

Spark's ParseException and AnalysisException carry the statement, a caret and the plan over
many lines; a user needs the first: what is wrong and where. They are turned into a
`UsageError` around the user's own SQL (`user_sql`) and around a job's start-up
(`at_startup`: its tables, checkpoint and sources, where what fails is the user's folder or
setting); raised by the pipeline's own queries later they are bugs and keep their traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, ParseException

from pipeline.errors import UsageError


def first_line(exc: BaseException) -> str:
    """The headline of a Spark error, without the statement, caret and plan it adds below (of
    a Java exception reached through py4j: the Java exception's own message)."""
    text = (str(exc.java_exception.toString()) if isinstance(exc, Py4JJavaError)
            else str(exc)).strip()
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


@contextmanager
def at_startup(what: str, todo: str) -> Iterator[None]:
    """A job's start-up step on `what` (a table, a checkpoint, named with its path): any error
    in it is one line saying what failed where, Spark's or Java's headline, and `todo`."""
    try:
        yield
    except UsageError:
        raise
    except Exception as exc:  # py4j's, Spark's, the filesystem's errors alike
        raise UsageError(f"{what}: {first_line(exc)} {todo}") from exc
