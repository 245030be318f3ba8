"""What every job shares: the argument parser, one way to fail, logging, and the coordinator
config (the packaged `pipeline/conf/coordinator.properties` unless a file is given).

A user's mistake (`UsageError`, an argparse error) ends a job with one line on stderr naming
the input and what was expected, and exit status 2; `--debug` shows the traceback instead.
Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import functools
import logging
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from importlib.resources import as_file
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from pipeline.errors import UsageError
from pipeline.fold import CoordinatorConfig
from pipeline.lag import LagConfig
from pipeline.metrics import MetricsServer, RowsCollector, serve
from pipeline.properties import read_properties
from pipeline.spark.events.validate import check_group, warehouse_tables
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.lag.samples import check_samples
from pipeline.spark.runtime.logs import LEVELS
from pipeline.spark.runtime.session import CONF_DIR, build_session, profile_path, stop_session
from pipeline.spark.stream.maintain import MIN_VACUUM_HOURS, Upkeep
from pipeline.spark.tables import paths
from pipeline.spark.tables.catalog import quote_name, register_views
from pipeline.spark.tables.options import check_trigger, interval_ms
from pipeline.times import event_time_ms

USAGE_EXIT = 2  # argparse's own status for a usage error


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed
    try:
        return installed("consumer-group-replay")
    except PackageNotFoundError:
        return "unknown"


def _version_line(prog: str) -> str:
    return f"{prog} (consumer-group-replay {version()})"


class _VersionOr(argparse.Action):
    """`--version` alone prints the version and exits; `--version N` stores N."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if values is None:
            print(_version_line(parser.prog))
            parser.exit()
        setattr(namespace, self.dest, values)


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default unless it has none worth printing (None, off, empty)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, []):
            return action.help
        return super()._get_help_string(action)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        # A flag (--share-state) is never cut at its hyphen.
        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent,
                             subsequent_indent=indent, break_on_hyphens=False)

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class JobParser(argparse.ArgumentParser):
    """An argparse parser whose --help shows every default and whose errors are one line."""

    def __init__(self, job_file: str, doc: str | None, *, version_value: str | None = None,
                 **kwargs: Any) -> None:
        """`job_file` names the program (`replay.py`, under pytest or spark-submit alike);
        `version_value`: the dest an integer after --version goes to (backfill's
        `--version N`, the log's Delta version, predates --version printing ours)."""
        super().__init__(prog=Path(job_file).name, description=(doc or "").split("\n\n")[0],
                         formatter_class=_Formatter, **kwargs)
        self.add_argument("--debug", action="store_true",
                          help="on an error, show the traceback instead of one line; and "
                               "every warning of Spark's (as --log-level WARN)")
        self.add_argument("--log-level", type=str.upper, choices=LEVELS,
                          help="log everything Spark and the libraries say at this level "
                               "(default: only what a user can act on)")
        if version_value is None:
            self.add_argument("--version", action="version", version=_version_line(self.prog))
        else:
            self.add_argument("--version", action=_VersionOr, dest=version_value, nargs="?",
                              type=int, metavar="N", help="alone: print the program's "
                              "version and exit; with N: as --log-version N")

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(USAGE_EXIT)


J = TypeVar("J", bound=Callable[..., Any])
T = TypeVar("T")


def cli(parse: Callable[[list[str] | None], argparse.Namespace]) -> Callable[[J], Callable[..., Any]]:
    """Make a job's entry point `main(argv, ...)` from `job(args, ...)`: it sets up logging,
    parses `argv` with `parse` and calls the job with the parsed arguments. A user's mistake
    becomes one line on stderr and SystemExit(2); with --debug in argv, or for any other
    exception, it propagates."""
    def decorate(job: J) -> Callable[..., Any]:
        @functools.wraps(job)
        def main(argv: list[str] | None = None, *args: Any, **kwargs: Any) -> Any:
            words = sys.argv[1:] if argv is None else list(argv)
            try:
                setup_logging()
                return job(parse(argv), *args, **kwargs)
            except UsageError as exc:
                if "--debug" in words:
                    raise
                print(f"{Path(job.__code__.co_filename).name}: error: {exc}", file=sys.stderr)
                raise SystemExit(USAGE_EXIT) from None
            except KeyboardInterrupt:
                if "--debug" in words:
                    raise
                print("interrupted", file=sys.stderr)
                raise SystemExit(130) from None
        return main
    return decorate


def arg_type(convert: Callable[[str], T], doc: str) -> Callable[[str], T]:
    """An argparse type from `convert`: its ValueError becomes argparse's own error (the
    parser prints it with the flag's name and exits 2)."""
    def parse(text: str) -> T:
        try:
            return convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__doc__ = f"argparse type: {doc}"
    return parse


def _checked(check: Callable[[str], object]) -> Callable[[str], str]:
    """The text itself, once `check` (which raises ValueError) accepts it."""
    def text_if_valid(text: str) -> str:
        check(text)
        return text
    return text_if_valid


event_time_arg = arg_type(event_time_ms, "an ISO-8601 event time (UTC unless an offset is "
                                         "given) as epoch ms")
trigger_arg = arg_type(check_trigger, "`available-now` or `processing-time:SECONDS` "
                                      "(`options.check_trigger`)")
interval_arg = arg_type(_checked(interval_ms), "an interval such as `10 minutes` "
                                               "(`options.interval_ms`)")
database_arg = arg_type(_checked(lambda text: text and quote_name(text)),
                        "`schema`, `catalog.schema`, or '' (register no names)")


def _whole(text: str, least: int, expected: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number{expected}")
    return value


def positive_int(text: str) -> int:
    return _whole(text, 1, " of at least 1")


def whole_number(text: str) -> int:
    """argparse type: 0 or more."""
    return _whole(text, 0, ", 0 or more")


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number above 0")
    return value


def add_upkeep_args(p: argparse.ArgumentParser) -> None:
    """The maintenance's settings (jobs/maintain.py, replay's --maintain-every)."""
    p.add_argument("--retain-days", type=positive_number, metavar="DAYS",
                   help="delete history and lag rows older than this many days of event time "
                        "(default: keep all)")
    p.add_argument("--vacuum-hours", type=positive_number, default=MIN_VACUUM_HOURS,
                   metavar="HOURS",
                   help=f"VACUUM the files no version younger than this reads (default and "
                        f"least: Delta's {MIN_VACUUM_HOURS})")


def upkeep_options(args: argparse.Namespace) -> Upkeep | None:
    """--maintain-every N and the maintenance's settings; None with `--maintain-every 0`."""
    if not args.maintain_every:
        if args.retain_days is not None:
            raise UsageError("--retain-days needs the stream's upkeep: --maintain-every 0 turns "
                             "it off; or run jobs/maintain.py on a schedule")
        return None
    if args.vacuum_hours < MIN_VACUUM_HOURS:
        raise UsageError(f"--vacuum-hours {args.vacuum_hours:g}: expected at least "
                         f"{MIN_VACUUM_HOURS} (Delta's floor)")
    return Upkeep(args.maintain_every, args.retain_days, args.vacuum_hours)


def metrics_port(text: str) -> int:
    """argparse type: a TCP port for the metrics endpoint, 0 for any free one."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a port from 0 (any free port) "
                                         "to 65535")
    return int(text)


def add_metrics_args(p: argparse.ArgumentParser, host: bool = True) -> None:
    """The Prometheus endpoint's flags (docs/metrics.md); `host`: with --metrics-host (a job
    with a --host of its own serves there)."""
    p.add_argument("--metrics-port", type=metrics_port, metavar="PORT",
                   help="serve Prometheus metrics on this port (0: any free port; the log "
                        "says the URL) (default: none)")
    if host:
        p.add_argument("--metrics-host", default="127.0.0.1",
                       help="address the metrics endpoint listens on (0.0.0.0: every interface)")
    p.add_argument("--metrics-per-partition", action="store_true",
                   help="also serve a series per group partition (partition_lag): four per "
                        "partition, against about ten per group without")


@contextmanager
def metrics_endpoint(args: argparse.Namespace, host: str, job: str,
                     refresh: Callable[[RowsCollector], None] | None = None
                     ) -> Iterator[MetricsServer | None]:
    """The endpoint --metrics-port asks for on `host` (None without it), its URL logged by
    `job`'s logger; stopped on leaving. `refresh`: see `RowsCollector`."""
    if args.metrics_port is None:
        yield None
        return
    try:
        server = serve(args.metrics_port, host, args.metrics_per_partition, refresh)
    except OSError as exc:
        raise UsageError(f"--metrics-port {args.metrics_port}: cannot listen on {host}: "
                         f"{exc.strerror or exc}") from None
    with server:
        logging.getLogger(job).info("Prometheus metrics: %s", server.url)
        yield server


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a fraction from 0 to 1")
    return value


profile_arg = arg_type(_checked(profile_path), "a profile under conf/profiles/, or a path "
                                             "to a .conf file")


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s",
                        datefmt="%H:%M:%S", stream=sys.stdout)
    # py4j logs every gateway call and callback at INFO: nothing a user acts on.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    # PySpark logs each SQL error it converts, with the JVM's stack, before raising it: the
    # error itself still reaches the job (one line, or its traceback with --debug).
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _settings(load: Callable[[Any], T], path: str | None, packaged: str, flag: str,
              expected: str) -> T:
    """Settings read by `load` from `path`, or from the packaged conf/`packaged`; a file that
    cannot be read or parsed is the user's error, said with `flag` and what was `expected`."""
    try:
        if path:
            return load(path)
        # as_file: the packaged file is a real file unless the wheel runs zipped (--py-files).
        with as_file(CONF_DIR / packaged) as found:
            return load(found)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{flag} {path}: {exc}; expected {expected}") from exc


def coordinator_config(path: str | None) -> CoordinatorConfig:
    return _settings(CoordinatorConfig.from_file, path, "coordinator.properties",
                     "--coordinator-conf", "a Kafka-style .properties file (see "
                     "conf/coordinator.properties)")


PARTITIONS_KEY = "offsets.topic.num.partitions"


def sets_partitions(path: str | None) -> bool:
    """The user's --coordinator-conf sets offsets.topic.num.partitions: then it overrides the
    count the ingest recorded on the log."""
    return bool(path) and PARTITIONS_KEY in read_properties(str(path))


def lag_config(path: str | None) -> LagConfig:
    return _settings(LagConfig.from_file, path, "lag.properties", "--lag-conf",
                     "a .properties file of lag.burrow.* settings (see conf/lag.properties)")


def add_warehouse_arg(p: argparse.ArgumentParser) -> None:
    """--warehouse: the folder of the output tables, which every job but the generator and
    the ingest reads or writes."""
    p.add_argument("--warehouse", required=True, help="where the output tables live")


def add_fold_args(p: argparse.ArgumentParser, watermark: str) -> None:
    """The flags of the jobs that fold a log into a warehouse (replay, backfill): the log,
    the warehouse and its database, the watermark delay (`watermark`: its help), lag, the
    metastore, the coordinator settings and the profile."""
    p.add_argument("--events", required=True, help="event log: Delta path or table name")
    add_warehouse_arg(p)
    p.add_argument("--database", default="consumer_groups", type=database_arg,
                   help="catalog database to register the tables in: schema, or catalog.schema "
                        "for a three-part name ('' for none)")
    p.add_argument("--watermark-delay", default="10 minutes", type=interval_arg, help=watermark)
    p.add_argument("--share-state", metavar="PATH",
                   help="the share-state log (jobs/ingest.py --share-state: the share "
                        "coordinator's __share_group_state, Delta): also write "
                        "share_partition_state")
    add_lag_args(p)
    add_metastore_arg(p)
    add_common_args(p)


def add_lag_args(p: argparse.ArgumentParser) -> None:
    """--end-offsets and --lag-conf: the lag tables (replay and backfill)."""
    p.add_argument("--end-offsets", metavar="PATH|TABLE",
                   help="end-offset samples (Delta: jobs/ingest.py --end-offsets, "
                        "jobs/generate.py --end-offsets, or your own; schemas/lag.py): also "
                        "write partition_lag, group_lag and rejected_samples")
    p.add_argument("--lag-conf", metavar="FILE",
                   help="lag settings, Burrow's names (default: the packaged "
                        "conf/lag.properties)")


def lag_options(spark: SparkSession, args: argparse.Namespace) -> LagOptions | None:
    """The lag options the arguments ask for, their samples table checked; None without."""
    if not args.end_offsets:
        if args.lag_conf:
            raise UsageError("--lag-conf goes with --end-offsets")
        return None
    check_samples(spark, args.end_offsets)
    return LagOptions(args.end_offsets, lag_config(args.lag_conf))


def add_common_args(p: argparse.ArgumentParser) -> None:
    """The flags every Spark job takes: coordinator settings and the session profile."""
    p.add_argument("--coordinator-conf", metavar="FILE",
                   help="coordinator settings, Kafka property names "
                        "(default: the packaged conf/coordinator.properties)")
    add_profile_arg(p)


def add_profile_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="local", type=profile_arg,
                   help="Spark settings: conf/profiles/<name>.conf (local, cluster, test) "
                        "or a .conf path")


def default_metastore(warehouse: str) -> str:
    """Where a Hive-catalog profile keeps the Derby metastore for `warehouse`: `_metastore`
    inside a local warehouse, so each warehouse has its own names and lock; `./metastore`
    when the warehouse is remote (Derby writes only to the local disk)."""
    if warehouse.startswith("file:"):
        return urlparse(warehouse).path.rstrip("/") + "/_metastore"
    return "metastore" if paths.is_uri(warehouse) else paths.join(paths.qualify(warehouse),
                                                                 "_metastore")


def add_metastore_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metastore", metavar="DIR",
                   help="embedded Derby metastore folder of a profile with a Hive catalog "
                        "(local) (default: WAREHOUSE/_metastore, ./metastore for a remote "
                        "warehouse)")


def log_level(args: argparse.Namespace) -> str | None:
    """The level the job logs everything at: --log-level, WARN with --debug, else None
    (only what a user can act on)."""
    level: str | None = getattr(args, "log_level", None)
    return level or ("WARN" if getattr(args, "debug", False) else None)


@contextmanager
def job_session(name: str, profile: str, spark: SparkSession | None = None, *,
                metastore: str | None = None, args: argparse.Namespace | None = None,
                extra_conf: Mapping[str, str] | None = None) -> Iterator[SparkSession]:
    """The job's Spark session, stopped when the job ends; one passed in (a test, a notebook
    calling `main(argv, spark)`) is used and left running. `metastore`: see `build_session`;
    `args`: the job's arguments, for its log level; `extra_conf`: settings over the
    profile's."""
    if spark is not None:
        yield spark
        return
    level = None if args is None else log_level(args)
    if level == "DEBUG":
        logging.getLogger().setLevel(logging.DEBUG)
    session = build_session(name, profile, extra_conf, metastore=metastore, log_level=level)
    try:
        yield session
    finally:
        stop_session(session)


def open_warehouse(session: SparkSession, warehouse: str, group: str | None = None) -> list[str]:
    """The tables of `warehouse` as SQL names (`register_views`), once the folder is checked
    to be a warehouse and `group`, if given, to have a row in it: a question's opening, each
    refusal one line. Returns the names."""
    warehouse_tables(session, warehouse)
    if group is not None:
        check_group(session, warehouse, group)
    return register_views(session, warehouse)
