"""Names in the catalog without Spark: `--database` as schema or catalog.schema, and the
permanent functions and view reading the tables of that schema, never a session's temp views."""

from __future__ import annotations

import re

import pytest

from pipeline.jobs._common import default_metastore
from pipeline.spark.tables.catalog import FUNCTIONS, permanent_sql, quote_name
from schemas import OUTPUT_TABLES


def test_a_database_is_a_schema_or_a_catalog_and_schema() -> None:
    assert quote_name("consumer_groups") == "`consumer_groups`"
    assert quote_name("main.consumer_groups") == "`main`.`consumer_groups`"
    for bad in ("a.b.c", "a..b", ".a", "a`b"):
        with pytest.raises(ValueError, match="expected schema or catalog.schema"):
            quote_name(bad)


def test_permanent_objects_read_only_the_schemas_tables() -> None:
    made = permanent_sql("main.cg")
    assert set(made) == {*FUNCTIONS, "group_members"}
    for name, sql in made.items():
        assert sql.lstrip().startswith(("CREATE OR REPLACE FUNCTION `main`.`cg`."
                                        f"{name}(", "CREATE OR REPLACE VIEW `main`.`cg`."))
        assert "TEMPORARY" not in sql
        read = re.findall(r"\b(?:FROM|JOIN)\s+(\S+)", sql)
        tables = [t for t in read if t.strip("`").split("`.`")[-1] in OUTPUT_TABLES]
        assert tables and all(t.startswith("`main`.`cg`.`") for t in tables), (name, read)
        assert not set(read) & set(OUTPUT_TABLES), (name, read)


def test_each_local_warehouse_has_its_own_metastore() -> None:
    assert default_metastore("/data/wh/") == "/data/wh/_metastore"
    assert default_metastore("file:///data/wh") == "/data/wh/_metastore"
    assert default_metastore("s3a://lake/wh") == "metastore"
