"""The output tables as SQL names, and the questions about the past as SQL table functions.

`register_views` makes each `<warehouse>/<table>` Delta table a view, then defines:
  group_state_as_of(at)            each group as it was at `at` (from group_history)
  group_members_as_of(at)          its members then, one row each, with their assignment
  committed_offsets_as_of(at)      every committed offset then (from offset_history)
  rebalance_summary(since, until)  per group: count, duration mean/p50/p99, causes, cost
                                   (partitions moved; a streams group's: active tasks)
  rebalance_storms(window_minutes, min_rebalances)
                                   every rebalance closing a window with >= N of them
  member_sessions()                each member's stays: joined, left, why
and the view group_members (group_state's members, one row each). `bind_as_of` rebinds the
names to the tables as they were at a moment, for `jobs/query.py --as-of T "SQL"`.
`register_permanent` makes the same functions and view objects of a catalog schema, over the
tables registered there, so spark-sql and notebooks have them without this package, and
`comment_columns` gives the tables' columns the docs of `schemas/` as comments.
Arguments are SQL literals. Spark's named parameters (`spark.sql(text, args=...)`) are not
bound in this session (the Delta extension's analyzer sees the unbound marker first), so
jobs build the literal from a parsed value, never from the user's text (`timestamp_sql`),
and filter group ids with Column expressions.
"""

from __future__ import annotations

import logging
import re

from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.fold.states import DEAD
from pipeline.spark.tables import paths
from pipeline.spark.tables.options import read_delta
from pipeline.spark.tables.topics import topic_names, with_topic_names
from pipeline.spark.tables.whatif_sql import CALL as WHATIF_CALL
from pipeline.spark.tables.whatif_sql import INPUT_VIEW as WHATIF_VIEW
from pipeline.spark.tables.whatif_sql import register_whatif
from pipeline.times import utc_datetime
from schemas import (
    APPEND_TABLES,
    METADATA_TABLES,
    OUTPUT_TABLES,
    TIME_COLUMNS,
    WAREHOUSE_TABLES,
    Column,
)
from schemas.lag import ERR, LAG_TABLES, OK, STATUS_CODES, WARN, LagCause
from schemas.share_state import SHARE_TABLES
from schemas.tables import COMMITTED_OFFSETS, GROUP_HISTORY, GROUP_STATE, STATE_MEMBER_FIELDS


def timestamp_sql(ms: int) -> str:
    """A SQL timestamp literal for epoch milliseconds: digits and separators only, so no
    input can reach SQL through it. The year always has four digits (strftime's `%Y` writes
    year 1 as `1`, which Spark refuses)."""
    moment = utc_datetime(ms)
    return (f"TIMESTAMP'{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
            f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}."
            f"{moment.microsecond:06d}'")


AS_OF = ("group_state_as_of", "group_members_as_of", "committed_offsets_as_of")


def as_of(spark: SparkSession, function: str, at_ms: int, group: str | None = None) -> DataFrame:
    """One as-of table function's rows at `at_ms`, optionally of one group (a Column filter)."""
    if function not in AS_OF:
        raise ValueError(f"unknown as-of function {function!r}; one of {AS_OF}")
    rows = spark.sql(f"SELECT * FROM {function}({timestamp_sql(at_ms)})")
    return rows if group is None else rows.filter(F.col("group_id") == F.lit(group))


def register_views(spark: SparkSession, warehouse: str) -> list[str]:
    """Make every table under `warehouse` queryable by its name; returns the names.

    With a `topics` table, group_state and group_history name KIP-848 members' partitions
    (`members[].assignment`) through it: group_state by the newest name, group_history by
    the name seen at the row's time (`pipeline.spark.tables.topics`). `group_members` is a view of
    group_state's members, one row each, with group_members_as_of's columns."""
    names = []
    topics = topic_names(spark, warehouse)
    for table in (*WAREHOUSE_TABLES, *METADATA_TABLES):
        path = paths.join(paths.qualify(warehouse), table)
        if DeltaTable.isDeltaTable(spark, path):
            df = read_delta(spark, path)
            with_topic_names(df, topics, table).createOrReplaceTempView(table)
            names.append(table)
    if not set(names) & set(OUTPUT_TABLES):
        raise FileNotFoundError(f"no output tables under {warehouse!r}: run jobs/replay.py first")
    if {"group_history", "offset_history", "rebalances", "group_transitions"} <= set(names):
        for sql in FUNCTIONS.values():
            spark.sql(sql)
    if set(LAG_TABLES) <= set(names):
        for sql in LAG_FUNCTIONS.values():
            spark.sql(sql)
    if "group_state" in names:
        spark.sql(MEMBERS_NOW).createOrReplaceTempView(MEMBERS_VIEW)
        if "group_history" in names:
            register_whatif(spark)
    return names


def signature(sql: str) -> str:
    """`name(arg, ...)` of a CREATE FUNCTION statement: its argument names, without types."""
    found = re.search(r"FUNCTION\s+(\w+)\((.*?)\)\s*RETURNS", sql, re.S)
    if found is None:
        raise ValueError(f"not a CREATE FUNCTION ... RETURNS statement: {sql[:80]!r}")
    args = [part.split()[0] for part in found[2].split(",") if part.strip()]
    return f"{found[1]}({', '.join(args)})"


def names_help() -> str:
    """What a query can name once register_views has run, from the catalog itself (the
    `--help` of jobs/query.py)."""
    return (f"Tables: {', '.join(OUTPUT_TABLES)}; with --end-offsets {', '.join(LAG_TABLES)}; "
            f"with --share-state {', '.join(SHARE_TABLES)}; {', '.join(METADATA_TABLES)} "
            f"where the ingest recorded it. Views: {MEMBERS_VIEW}, {WHATIF_VIEW}. Table "
            f"functions: {', '.join(map(signature, FUNCTIONS.values()))}, {WHATIF_CALL}; with "
            f"the lag tables {', '.join(map(signature, LAG_FUNCTIONS.values()))}.")


# A table with no as-of form, kept to what was known at T by its time column. (topics is
# not filtered: a name learnt later still names an id logged before.)
HISTORY_TIME = {table: TIME_COLUMNS.get(table, "event_time")
                for table in (*APPEND_TABLES, *SHARE_TABLES)} | {"partition_lag": "sampled_at",
                                               "group_lag": "sampled_at",
                                               "rejected_samples": "sampled_at"}


def bind_as_of(spark: SparkSession, at_ms: int) -> dict[str, str]:
    """Rebind the registered views to the tables as they were at `at_ms`, for the statements
    that follow: group_state, committed_offsets and group_members to their as-of forms, the
    append-only tables to their rows up to then. Returns what each name now means.

    The as-of group_state is group_history's newest shape (Dead groups omitted), so it has
    the columns the shape has; counters, positions and deadlines of group_state are not kept
    per moment and are absent."""
    at = timestamp_sql(at_ms)
    # SHOW TABLES, not spark.catalog.listTables(): the latter decodes its rows with an
    # encoder that fails when expressions are interpreted (the `test` profile).
    tables = {r.tableName for r in spark.sql("SHOW TABLES").collect() if r.isTemporary}
    if not {"group_history", "offset_history"} <= tables:
        raise ValueError("--as-of needs group_history and offset_history: replay the log "
                         "again with this version")
    bound = {"group_state": spark.sql(STATE_AS_OF.format(at=at)),
             "committed_offsets": spark.sql(f"SELECT * FROM committed_offsets_as_of({at})"),
             MEMBERS_VIEW: spark.sql(f"SELECT * FROM group_members_as_of({at})")}
    said = {t: f"as of {at}" for t in bound}
    for table, column in HISTORY_TIME.items():
        if table in tables:
            bound[table] = spark.table(table).where(F.col(column) <= F.expr(at))
            said[table] = f"rows with {column} <= {at}"
    for table, df in bound.items():  # every frame is built before any name changes
        df.createOrReplaceTempView(table)
    return said


def _shapes_at(at: str) -> str:
    """group_history's rows at or before `at` (a SQL expression), the newest of each group
    numbered 1 (`newest`): the one window every as-of question about a group's shape reads."""
    return f"""(SELECT *, row_number() OVER (PARTITION BY group_id ORDER BY event_time DESC,
                   log_partition DESC, log_offset DESC, seq DESC) AS newest
          FROM group_history WHERE event_time <= {at})"""


def _columns(columns: tuple[Column, ...], prefix: str = "") -> str:
    """Columns of `schemas/` as a SELECT list (each name after `prefix`, say `m.`)."""
    return ", ".join(f"{prefix}`{c.name}`" for c in columns)


def _returns(columns: tuple[Column, ...]) -> str:
    """Columns of `schemas/` as a RETURNS TABLE list: their names and Spark types."""
    return ", ".join(f"`{c.name}` {c.type}" for c in columns)


# What group_history keeps per moment of group_state's columns (counters, positions and
# deadlines are not kept): the as-of group_state's columns, in group_state's order.
_SHAPE = {c.name for c in GROUP_HISTORY}
STATE_KEPT = tuple(c for c in GROUP_STATE if c.name in _SHAPE)
# group_state_as_of's: its members are group_members_as_of's rows.
_STATE_FUNCTION = tuple(c for c in STATE_KEPT if c.name not in ("members", "log_partition"))
_SINCE = Column("since", "timestamp", doc="when the group took this shape")

# The shape in group_history newest at `at`, with group_state's column names.
STATE_AS_OF = f"""
    SELECT {_columns(STATE_KEPT)}, event_time AS since
    FROM {_shapes_at("{at}")}
    WHERE newest = 1 AND state <> '{DEAD}'"""

# committed_offsets_as_of's columns but the group's type: the group's then, its shape newest at
# the time (as committed_offsets says the group's type now; every offset's group has a shape
# from the commit that made it on).
_OFFSET_OWN = tuple(c for c in COMMITTED_OFFSETS if c.name != "group_type")

# A member's fields as group_members and group_members_as_of list them, one row each.
MEMBER_FIELDS = ("member_id", "group_instance_id", "client_id", "client_host",
                 "session_timeout_ms", "rebalance_timeout_ms", "subscription", "assignment",
                 "joined_at", "assigned_partitions", "member_epoch", "member_state",
                 "process_id", "user_endpoint",
                 "client_tags", "topology_epoch", "assigned_tasks", "tasks_pending_revocation",
                 "target_tasks")
_MEMBER_BY_NAME = {c.name: c for c in STATE_MEMBER_FIELDS}
_MEMBER_VIEW = tuple(_MEMBER_BY_NAME[name] for name in MEMBER_FIELDS)
_GROUP_OF_MEMBER = tuple(c for c in GROUP_STATE if c.name in ("group_id", "generation_id"))
_MEMBER = _returns(_GROUP_OF_MEMBER + _MEMBER_VIEW)
_MEMBER_COLUMNS = _columns(_MEMBER_VIEW, "m.")

MEMBERS_VIEW = "group_members"  # the view of MEMBERS_NOW
# group_state's members, one row each: what group_members_as_of answers, now.
MEMBERS_NOW = f"""
    SELECT group_id, generation_id, {_MEMBER_COLUMNS}
    FROM group_state LATERAL VIEW explode(members) AS m WHERE state <> '{DEAD}'"""

# A group status's Burrow code, for the worst of a group's samples.
_STATUS_CODE = ("CASE status " + " ".join(f"WHEN '{s}' THEN {STATUS_CODES[s]}" for s in (ERR, WARN, OK))
                + " ELSE 0 END")

FUNCTIONS: dict[str, str] = {
    "group_state_as_of": f"""
        CREATE OR REPLACE TEMPORARY FUNCTION group_state_as_of(at TIMESTAMP)
        RETURNS TABLE ({_returns((*_STATE_FUNCTION, _SINCE))})
        RETURN SELECT {_columns(_STATE_FUNCTION)}, event_time AS since
        FROM {_shapes_at("at")}
        WHERE newest = 1 AND state <> '{DEAD}'""",
    "group_members_as_of": f"""
        CREATE OR REPLACE TEMPORARY FUNCTION group_members_as_of(at TIMESTAMP)
        RETURNS TABLE ({_MEMBER})
        RETURN SELECT group_id, generation_id, {_MEMBER_COLUMNS}
        FROM {_shapes_at("at")}
        LATERAL VIEW explode(members) AS m
        WHERE newest = 1 AND state <> '{DEAD}'""",
    "committed_offsets_as_of": f"""
        CREATE OR REPLACE TEMPORARY FUNCTION committed_offsets_as_of(at TIMESTAMP)
        RETURNS TABLE ({_returns(COMMITTED_OFFSETS)})
        RETURN SELECT {_columns(_OFFSET_OWN, "o.")}, s.group_type
        FROM (SELECT *, row_number() OVER (PARTITION BY group_id, topic, partition
                        ORDER BY event_time DESC, log_offset DESC) AS newest
              FROM offset_history WHERE event_time <= at AND change <> 'TXN_ABORTED') o
        LEFT JOIN {_shapes_at("at")} s ON s.group_id = o.group_id AND s.newest = 1
        WHERE o.newest = 1 AND o.change = 'COMMIT'""",
    "rebalance_summary": """
        CREATE OR REPLACE TEMPORARY FUNCTION rebalance_summary(since TIMESTAMP, until TIMESTAMP)
        RETURNS TABLE (group_id STRING, rebalances BIGINT, completed BIGINT,
                       mean_ms DOUBLE, p50_ms DOUBLE, p99_ms DOUBLE, max_ms BIGINT,
                       causes MAP<STRING, BIGINT>, partitions_moved BIGINT,
                       members_joined BIGINT, members_left BIGINT,
                       first_at TIMESTAMP, last_at TIMESTAMP, active_tasks_moved BIGINT)
        RETURN SELECT group_id, count(*), count_if(outcome = 'COMPLETED'),
                      avg(duration_ms), percentile(duration_ms, 0.5),
                      percentile(duration_ms, 0.99), max(duration_ms),
                      map_from_entries(collect_list(CASE WHEN k = 1 THEN struct(cause, n) END)),
                      sum(partitions_moved),
                      sum(members_joined), sum(members_left), min(completed_at),
                      max(completed_at), sum(active_tasks_moved)
        FROM (SELECT *, count(*) OVER (PARTITION BY group_id, cause) AS n,
                     row_number() OVER (PARTITION BY group_id, cause ORDER BY completed_at)
                       AS k
              FROM rebalances WHERE completed_at >= since AND completed_at < until)
        GROUP BY group_id""",
    "rebalance_storms": """
        CREATE OR REPLACE TEMPORARY FUNCTION rebalance_storms(window_minutes INT,
                                                              min_rebalances INT)
        RETURNS TABLE (group_id STRING, window_start TIMESTAMP, window_end TIMESTAMP,
                       rebalances BIGINT, causes ARRAY<STRING>)
        RETURN SELECT r.group_id, r.completed_at - make_dt_interval(0, 0, window_minutes, 0),
                      r.completed_at, count(*), array_distinct(collect_list(w.cause))
        FROM rebalances r JOIN rebalances w
          ON w.group_id = r.group_id AND w.completed_at <= r.completed_at
         AND w.completed_at > r.completed_at - make_dt_interval(0, 0, window_minutes, 0)
        GROUP BY r.group_id, r.completed_at
        HAVING count(*) >= min_rebalances""",
    "member_sessions": """
        CREATE OR REPLACE TEMPORARY FUNCTION member_sessions()
        RETURNS TABLE (group_id STRING, member_id STRING, group_instance_id STRING,
                       client_id STRING, client_host STRING, joined_at TIMESTAMP,
                       left_at TIMESTAMP, left_why STRING, generations BIGINT)
        RETURN WITH shapes AS (
            SELECT *, row_number() OVER (PARTITION BY group_id ORDER BY event_time,
                      log_partition, log_offset, seq) AS k
            FROM group_history),
          seen AS (
            SELECT s.group_id, s.k, s.generation_id, m.member_id, m.group_instance_id,
                   m.client_id, m.client_host
            FROM shapes s LATERAL VIEW explode(s.members) AS m),
          islands AS (
            SELECT *, k - row_number() OVER (PARTITION BY group_id, member_id ORDER BY k)
                      AS island
            FROM seen),
          stays AS (
            SELECT group_id, member_id, first(group_instance_id) AS group_instance_id,
                   first(client_id) AS client_id, first(client_host) AS client_host,
                   min(k) AS first_k, max(k) AS last_k,
                   count(DISTINCT generation_id) AS generations
            FROM islands GROUP BY group_id, member_id, island)
        SELECT st.group_id, st.member_id, st.group_instance_id, st.client_id, st.client_host,
               a.event_time, b.event_time,
               CASE WHEN b.k IS NULL THEN NULL
                    ELSE coalesce(try_element_at(filter(b.departures,
                                                        d -> d.member_id = st.member_id), 1).cause,
                                  t.cause, 'REMOVED') END,
               st.generations
        FROM stays st
        JOIN shapes a ON a.group_id = st.group_id AND a.k = st.first_k
        LEFT JOIN shapes b ON b.group_id = st.group_id AND b.k = st.last_k + 1
        LEFT JOIN (SELECT group_id, event_time, log_offset, max_by(cause, seq) AS cause
                   FROM group_transitions GROUP BY group_id, event_time, log_offset) t
          ON t.group_id = b.group_id AND t.event_time = b.event_time
         AND t.log_offset <=> b.log_offset""",
}


# The lag tables' questions (registered when the warehouse has them: --end-offsets).
LAG_FUNCTIONS: dict[str, str] = {
    "lag_as_of": """
        CREATE OR REPLACE TEMPORARY FUNCTION lag_as_of(at TIMESTAMP)
        RETURNS TABLE (sampled_at TIMESTAMP, group_id STRING, topic STRING, partition INT,
                       log_end_offset BIGINT, committed_offset BIGINT, offset_status STRING,
                       lag BIGINT, lag_ms BIGINT, lag_ms_basis STRING, member_id STRING,
                       client_id STRING, state STRING, generation_id INT, status STRING,
                       rule STRING, log_start_offset BIGINT, lost_records BIGINT,
                       lost_since TIMESTAMP, loss_eta_ms BIGINT, catch_up_ms BIGINT)
        RETURN SELECT p.sampled_at, p.group_id, p.topic, p.partition, p.log_end_offset,
                      p.committed_offset, p.offset_status, p.lag, p.lag_ms, p.lag_ms_basis,
                      p.member_id, p.client_id, p.state, p.generation_id, p.status, p.rule,
                      p.log_start_offset, p.lost_records, p.lost_since, p.loss_eta_ms,
                      p.catch_up_ms
        FROM partition_lag p
        JOIN (SELECT group_id, max(sampled_at) AS newest FROM group_lag
              WHERE sampled_at <= at GROUP BY group_id) g
          ON p.group_id = g.group_id AND p.sampled_at = g.newest""",
    "group_lag_between": f"""
        CREATE OR REPLACE TEMPORARY FUNCTION group_lag_between(since TIMESTAMP, until TIMESTAMP)
        RETURNS TABLE (group_id STRING, samples BIGINT, first_at TIMESTAMP, last_at TIMESTAMP,
                       max_total_lag BIGINT, peak_at TIMESTAMP, max_lag_ms BIGINT,
                       worst_status STRING, statuses MAP<STRING, BIGINT>,
                       causes MAP<STRING, BIGINT>, main_cause STRING,
                       max_lost_records BIGINT)
        RETURN SELECT group_id, count(*), min(sampled_at), max(sampled_at), max(total_lag),
                      max_by(sampled_at, struct(total_lag, sampled_at)), max(max_lag_ms),
                      max_by(status, {_STATUS_CODE}),
                      map_from_entries(collect_list(CASE WHEN s = 1 THEN struct(status, ns) END)),
                      map_from_entries(collect_list(CASE WHEN c = 1 AND cause IS NOT NULL
                                                    THEN struct(cause, nc) END)),
                      max_by(cause, struct(CASE WHEN cause IS NULL OR cause = '{LagCause.NONE}' THEN 0
                                                ELSE nc END, cause)),
                      max(lost_records)
        FROM (SELECT *, count(*) OVER (PARTITION BY group_id, status) AS ns,
                     row_number() OVER (PARTITION BY group_id, status ORDER BY sampled_at) AS s,
                     count(*) OVER (PARTITION BY group_id, cause) AS nc,
                     row_number() OVER (PARTITION BY group_id, cause ORDER BY sampled_at) AS c
              FROM group_lag WHERE sampled_at >= since AND sampled_at < until)
        GROUP BY group_id""",
}


DEMO_QUERIES: dict[str, str] = {
    "groups now": """
        SELECT group_id, state, generation_id, protocol, member_count, rebalance_count,
               rejected_count
        FROM group_state ORDER BY rebalance_count DESC, group_id LIMIT 10""",
    "most rebalanced groups, with their main cause": """
        SELECT group_id, count(*) AS rebalances, max_by(cause, cnt) AS main_cause,
               round(avg(duration_ms)) AS avg_ms, sum(partitions_moved) AS moved
        FROM (SELECT *, count(*) OVER (PARTITION BY group_id, cause) AS cnt FROM rebalances)
        GROUP BY group_id ORDER BY rebalances DESC LIMIT 5""",
    "refused or malformed rows, by reason": """
        SELECT reason, count(*) AS rows FROM rejected_events
        GROUP BY reason ORDER BY rows DESC""",
    "offsets committed per group": """
        SELECT group_id, count(*) AS partitions, sum(committed_offset) AS total_offset,
               max(commit_timestamp) AS last_commit
        FROM committed_offsets GROUP BY group_id ORDER BY partitions DESC LIMIT 5""",
}


# Asked by --demo when the warehouse has lag tables.
LAG_DEMO_QUERIES: dict[str, str] = {
    "groups furthest behind now, with the cause": """
        SELECT group_id, sampled_at, state, total_lag, round(max_lag_ms / 1000) AS behind_s,
               status, concat(worst_topic, '-', worst_partition) AS worst_partition,
               cause, cause_detail, cause_since
        FROM (SELECT *, row_number() OVER (PARTITION BY group_id ORDER BY sampled_at DESC) AS k
              FROM group_lag)
        WHERE k = 1 ORDER BY max_lag_ms DESC NULLS LAST, total_lag DESC, group_id LIMIT 10""",
}


log = logging.getLogger("catalog")
_TABLE_REF = re.compile(r"\b(FROM|JOIN)\s+(" + "|".join([*OUTPUT_TABLES, *LAG_TABLES]) + r")\b")


def quote_name(name: str) -> str:
    """`schema` or `catalog.schema` (Unity Catalog's three-part names) as quoted SQL."""
    parts = name.split(".")
    if len(parts) > 2 or not all(parts) or any("`" in p for p in parts):
        raise ValueError(f"database {name!r}: expected schema or catalog.schema")
    return ".".join(f"`{p}`" for p in parts)


def quote_path(path: str) -> str:
    """The Delta table at `path` as a SQL name: delta.`path`."""
    return "delta.`" + path.replace("`", "``") + "`"


def permanent_sql(database: str, lag: bool = False) -> dict[str, str]:
    """FUNCTIONS (with `lag`, LAG_FUNCTIONS too) and the group_members view as objects of
    `database`, reading its tables."""
    db = quote_name(database)

    def qualified(sql: str) -> str:
        return _TABLE_REF.sub(lambda m: f"{m[1]} {db}.`{m[2]}`", sql)

    functions = FUNCTIONS | (LAG_FUNCTIONS if lag else {})
    made = {name: qualified(sql.replace("CREATE OR REPLACE TEMPORARY FUNCTION ",
                                        f"CREATE OR REPLACE FUNCTION {db}.", 1))
            for name, sql in functions.items()}
    made[MEMBERS_VIEW] = (f"CREATE OR REPLACE VIEW {db}.`{MEMBERS_VIEW}` AS "
                          f"{qualified(MEMBERS_NOW)}")
    return made


def persistent_catalog(spark: SparkSession, database: str) -> bool:
    """Whether names in `database` outlive the session: a catalog.schema, or a Hive catalog."""
    return "." in database or spark.conf.get("spark.sql.catalogImplementation") == "hive"


def register_permanent(spark: SparkSession, database: str, lag: bool = False) -> list[str]:
    """Create (or replace) the functions and view in `database`, whose output tables are
    registered (with `lag`, the lag tables too); returns the names made. A catalog that
    keeps no SQL functions or views refuses with an AnalysisException: that is logged, and
    `register_views` still defines them in any one session."""
    made = []
    for name, sql in permanent_sql(database, lag).items():
        try:
            spark.sql(sql)
        except AnalysisException as exc:
            log.warning("%s.%s not registered in the catalog (%s); register_views defines it "
                        "in a session", database, name, str(exc).splitlines()[0])
            continue
        made.append(name)
    return made


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def comment_columns(spark: SparkSession, warehouse: str) -> list[str]:
    """Give each output table's columns the docs of `schemas/` as comments (DESCRIBE, a
    catalog's browser show them): one metadata commit per table that lacks them, none
    when they are there. A table whose columns are not this version's is left alone.
    Returns the tables changed."""
    changed = []
    for table, columns in WAREHOUSE_TABLES.items():
        path = paths.join(paths.qualify(warehouse), table)
        if not DeltaTable.isDeltaTable(spark, path):
            continue
        now = {f.name: f.metadata.get("comment", "")
               for f in read_delta(spark, path).schema.fields}
        if set(now) != {c.name for c in columns} or all(now[c.name] == c.doc for c in columns):
            continue
        ddl = ", ".join(f"`{c.name}` {c.type}" + (f" COMMENT {_sql_string(c.doc)}" if c.doc else "")
                        for c in columns)
        # REPLACE COLUMNS with the same columns: Delta's one way to set many comments at once.
        spark.sql(f"ALTER TABLE {quote_path(path)} REPLACE COLUMNS ({ddl})")
        changed.append(table)
    return changed
