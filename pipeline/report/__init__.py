"""A picture of one consumer group's life, drawn from the output tables and, when the
replay wrote them, the lag tables (pandas + matplotlib).

Pure: no Spark here. `jobs/report.py` loads one group's rows with Spark and calls `render`.
"""

from __future__ import annotations

from pipeline.report.membership import Lane, Span, lanes
from pipeline.report.render import Picture, render

__all__ = ["Lane", "Picture", "Span", "lanes", "render"]
