"""Rows to Prometheus metrics: a custom Collector over a swappable snapshot of the tables'
newest rows and the replay's progress, and the HTTP endpoint that serves it.

The caller (a stream's batch listener, the serving job) hands over plain rows, dicts or
anything with Spark's `asDict()`, as the newest rows of `group_lag`, `partition_lag` and
`group_state` give them, and a `ReplayProgress`; `publish` swaps them in at once, under a
lock, so a scrape sees one snapshot whole. Each scrape renders the snapshot afresh: a group
gone from the rows is gone from the metrics, nothing lingers in a registry. A caller that
reads only the lag rows newer than those it handed over last publishes with `merge`
(`merged`): they join the ones published, and the groups group_state no longer holds leave.

Cardinality: with `per_partition` off (the default) only group-level series are served,
about a dozen per group; on, four more per group partition (the partition metrics of
`catalogue`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from pipeline.metrics import catalogue
from pipeline.metrics.catalogue import GROUP_METRICS, KEYS, LAG, PARTITION_METRICS, PROGRESS_METRICS
from pipeline.metrics.replay_progress import ReplayProgress
from schemas.lag import STATUS_CODES

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Snapshot:
    """What one scrape shows: each table's newest row per key, and the replay's progress."""

    group_lag: tuple[Row, ...] = ()
    partition_lag: tuple[Row, ...] = ()
    group_state: tuple[Row, ...] = ()
    progress: ReplayProgress | None = None


def newest(rows: Iterable[Any], table: str) -> tuple[Row, ...]:
    """Per key of `table` (its contract key without sampled_at), the row with the latest
    sampled_at (the last given, for a table without one): two rows of one key would be two
    samples of one series, which Prometheus refuses."""
    kept: dict[tuple[Any, ...], Row] = {}
    for raw in rows:
        row: Row = raw.asDict() if hasattr(raw, "asDict") else raw
        key = tuple(row[k] for k in KEYS[table])
        old = kept.get(key)
        if old is None or "sampled_at" not in row or old["sampled_at"] <= row["sampled_at"]:
            kept[key] = row
    return tuple(kept.values())


def merged(kept: Iterable[Row], rows: Iterable[Any], table: str, groups: Container[str]
           ) -> tuple[Row, ...]:
    """The newest row per key of `kept` (what was published) and `rows` (what is newer)
    together, a tie going to `rows`; of the groups in `groups` only: a group that turned Dead
    or was deleted leaves, though no newer row of it will ever come."""
    return tuple(r for r in newest((*kept, *rows), table) if r["group_id"] in groups)


def checked(rows: tuple[Row, ...], table: str) -> tuple[Row, ...]:
    """`rows`, once every status among them is one of Burrow's: refused at `publish`, where
    the caller learns of it, rather than failing every scrape after."""
    for m in PARTITION_METRICS + GROUP_METRICS:
        if m.table == table and m.value == "code":
            bad = {r[m.column] for r in rows} - set(STATUS_CODES) - {None}
            if bad:
                raise ValueError(f"{table}.{m.column}: {sorted(bad)} are not Burrow's statuses "
                                 f"{sorted(STATUS_CODES, key=STATUS_CODES.__getitem__)}")
    return rows


def epoch_seconds(moment: datetime) -> float:
    """A timestamp as epoch seconds; a naive one is UTC, as everywhere in the project."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def family(metric: catalogue.Metric, rows: Iterable[Any]) -> Metric:
    """`metric`'s family over `rows` (a table's rows, or the progress snapshot); a row whose
    column is null gives no sample."""
    cls = CounterMetricFamily if metric.kind == "counter" else GaugeMetricFamily
    out = cls(metric.name, metric.help, labels=metric.labels)
    keys = () if metric.table == catalogue.PROGRESS else KEYS[metric.table]
    for row in rows:
        v = getattr(row, metric.column) if metric.table == catalogue.PROGRESS else row[metric.column]
        if v is None:
            continue
        labels = [str(row[k]) for k in keys]
        if metric.label:
            labels.append(str(v))
            v = STATUS_CODES[v] if metric.value == "code" else 1
        elif metric.timestamp:
            v = epoch_seconds(v)
        elif metric.ms:
            v = v / 1000  # a division: 95500 * 0.001 is not 95.5 in binary floating point
        out.add_metric(labels, float(v))
    return out


def families(snapshot: Snapshot, per_partition: bool) -> Iterator[Metric]:
    """Every family of the snapshot; the partition ones only when `per_partition`."""
    if per_partition:
        for m in PARTITION_METRICS:
            yield family(m, snapshot.partition_lag)
    for m in GROUP_METRICS:
        yield family(m, getattr(snapshot, m.table))
    if snapshot.progress is not None:
        for m in PROGRESS_METRICS:
            yield family(m, (snapshot.progress,))


class RowsCollector(Collector):
    """The collector: renders the current snapshot at each scrape, after calling `refresh`
    (if given: it publishes what is new, as a server over a warehouse does)."""

    def __init__(self, per_partition: bool = False,
                 refresh: Callable[[RowsCollector], None] | None = None) -> None:
        self.per_partition = per_partition
        self.refresh = refresh
        self._lock = threading.Lock()
        self._snapshot = Snapshot()

    def publish(self, *, group_lag: Iterable[Any] | None = None,
                partition_lag: Iterable[Any] | None = None,
                group_state: Iterable[Any] | None = None,
                progress: ReplayProgress | None = None, merge: bool = False) -> None:
        """Swap in new rows and/or progress; what is not given stays as it was. With `merge`,
        the lag rows given join those published instead of replacing them, and only the
        groups of group_state (as this call leaves it) keep theirs (`merged`). With the
        partition switch off, partition rows are not even kept."""
        if not self.per_partition:
            partition_lag = None
        given = (("group_lag", group_lag), ("partition_lag", partition_lag),
                 ("group_state", group_state))
        changes: dict[str, Any] = {
            t: checked(newest(rows, t), t) for t, rows in given if rows is not None}
        if progress is not None:
            changes["progress"] = progress
        with self._lock:
            old = self._snapshot
            if merge:
                live = {r["group_id"] for r in changes.get("group_state", old.group_state)}
                changes |= {t: merged(getattr(old, t), changes.get(t, ()), t, live) for t in LAG}
            self._snapshot = replace(old, **changes)

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._snapshot

    def collect(self) -> Iterator[Metric]:
        if self.refresh is not None:
            self.refresh(self)
        return families(self.snapshot(), self.per_partition)


class MetricsServer:
    """An HTTP endpoint serving `collector` alone (its own registry, no process metrics) at
    any path, as prometheus_client's `start_http_server` does. Port 0 takes a free port:
    `port` says which."""

    def __init__(self, collector: RowsCollector, port: int, host: str = "127.0.0.1") -> None:
        self.collector = collector
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self._httpd, self._thread = start_http_server(port, addr=host, registry=self.registry)
        self.host, self.port = host, int(self._httpd.server_port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


def serve(port: int, host: str = "127.0.0.1", per_partition: bool = False,
          refresh: Callable[[RowsCollector], None] | None = None) -> MetricsServer:
    """Start the endpoint on `host:port` with an empty snapshot; `server.collector.publish`
    fills it, or `refresh` at each scrape."""
    return MetricsServer(RowsCollector(per_partition, refresh), port, host)
