"""`contract.arrow_schema`, the package's one conversion of a Spark schema to the Arrow schema
its rows cross into Python with, gives what PySpark's own conversion gives (its
`pyspark.sql.pandas.types.to_arrow_schema`, not public API, the oracle here) for every
schema of the contract: the event log's, the share-state log's, every table's and the
samples' (which `DataType.fromDDL` builds in the JVM)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import DecimalType, StructField, StructType

from pipeline.spark.lag.samples import samples_schema
from pipeline.spark.tables.contract import (
    arrow_schema,
    event_schema,
    share_log_schema,
    table_schema,
)
from schemas import WAREHOUSE_TABLES

SCHEMAS: dict[str, Callable[[], StructType]] = {
    "events": event_schema, "share-state log": share_log_schema, "samples": samples_schema,
    **{t: (lambda t=t: table_schema(t)) for t in WAREHOUSE_TABLES}}


@pytest.mark.spark
def test_every_contract_schema_is_the_arrow_schema_pyspark_converts_it_to(
        spark: SparkSession) -> None:
    for name, schema_of in SCHEMAS.items():
        schema = schema_of()
        assert arrow_schema(schema).equals(to_arrow_schema(schema, timezone="UTC")), name


def test_a_type_the_contract_does_not_use_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"no Arrow type for decimal\(10,2\)"):
        arrow_schema(StructType([StructField("price", DecimalType(10, 2))]))
