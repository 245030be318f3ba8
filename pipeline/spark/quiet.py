"""Warnings a Python worker would print once per group, and why each is harmless.

PySpark's `applyInPandasWithState` serializer pads every group's output with a frame of
`None`s (`dict.fromkeys(names)`, object dtype) and concatenates it to the frame the fold
returned; pandas 2.x warns (FutureWarning) that an all-NA or empty entry will stop being
ignored when the result's dtype is chosen. Our timestamp columns are datetime64 and the
padding rows are dropped by the serializer's counts, so the dtype pandas picks today is the
one Spark reads. The filter names that one message and PySpark's module; every other
warning still shows.
"""

from __future__ import annotations

import warnings

_PADDED_CONCAT = "The behavior of DataFrame concatenation with empty or all-NA entries"


def quiet_padded_concat() -> None:
    """Idempotent (`filterwarnings` replaces an identical filter): call it in the worker."""
    warnings.filterwarnings("ignore", message=_PADDED_CONCAT, category=FutureWarning,
                            module=r"pyspark\.sql\.pandas\.serializers")
