"""The docs' SQL, lag and report examples run as printed, on the warehouse `jobs/demo.sh` builds.

The pages and sections that hold examples are EXAMPLE_SOURCES, below. Every
`jobs/query.py`, `jobs/export_offsets.py` and `jobs/report.py` command in their bash blocks
is run in-process, by the job's own `main(argv, spark)`, against the warehouse `bash
jobs/demo.sh` leaves (run once, as a new user runs it, its `out/demo/` a temporary folder;
its printed lines are checked too). Each must exit 0, and every table a query prints must
hold a row: an example that silently matches nothing (a group or a time not in the log)
fails. A `jobs/generate.py` or `jobs/replay.py` command there (the tour's) must ask what
the demo's own asks (their flags: pipeline/jobs/demo.py's steps, as jobs/demo.sh runs them).

Every `--as-of T` example is also asked, without --as-of, of a warehouse `jobs/backfill.py
--until T` builds from the same log, and must answer the same.

`tests/test_docs.py` accepts a command of README.md or docs/ when this test runs it
(`runs_here`).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from pipeline.jobs import demo as demo_job
from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.tables.catalog import DEMO_QUERIES, LAG_DEMO_QUERIES, register_views
from schemas import OUTPUT_TABLES, WAREHOUSE_TABLES
from schemas.lag import LAG_TABLES
from tests.jobs.jobs import load_job

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
# Where the examples live: (page, section heading), or (page, None) for every block of it.
EXAMPLE_SOURCES: tuple[tuple[str, str | None], ...] = (
    ("README.md", "## A five-minute tour"),
    ("docs/sql.md", None),
    ("docs/lag.md", None),
    ("docs/whatif.md", None),
)
# Kafka 4's share and streams groups: the demo's log has none, so these examples run on the
# golden case share-streams-by-hand's tables (tests/spark/test_golden_tables.py).
KAFKA4_SOURCE = ("docs/sql.md", "## Share and streams groups")
KAFKA4_OUT = "out/kafka4"
JOBS = ("query.py", "export_offsets.py", "report.py", "whatif.py")  # run by this test
DEMO_JOBS = ("generate.py", "replay.py")  # must be the demo's; the fixture runs them
DEMO_OUT = "out/demo"


def section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}") + 1
    end = text.find("\n## ", start)
    return text[start:] if end < 0 else text[start:end]


def bash_blocks(text: str) -> list[str]:
    """The body of each ```bash block of a Markdown text."""
    return re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)


JOURNAL_ONLY = "needs the journal"  # in a command's note: it answers nothing on a real log


def noted_commands(script: str) -> list[tuple[str, list[str]]]:
    """Each command of a bash script as (its note, its words): the note is the comment lines
    right above it, the words its own; `\\` continues a line, a quoted string may span
    lines, `#` starts a comment."""
    commands: list[tuple[str, list[str]]] = []
    note: list[str] = []
    pending = ""
    for line in script.replace("\\\n", " ").splitlines():
        if not pending and line.lstrip().startswith("#"):
            note.append(line.strip().lstrip("#").strip())
            continue
        pending = f"{pending}\n{line}" if pending else line
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        pending = ""
        if words:
            commands.append((" ".join(note), words))
        note = []
    assert not pending, f"unterminated command: {pending!r}"
    return commands


def shell_commands(script: str) -> list[list[str]]:
    """Each command of a bash script as its words (`noted_commands`, without the notes)."""
    return [words for _, words in noted_commands(script)]


def job_command(words: list[str], jobs: tuple[str, ...] = JOBS) -> tuple[str, list[str]] | None:
    """(job file name, its argv) if the command runs one of `jobs`."""
    for i, word in enumerate(words):
        if word.startswith("jobs/") and Path(word).name in jobs:
            return Path(word).name, words[i + 1:]
    return None


def source_commands(jobs: tuple[str, ...],
                    sources: tuple[tuple[str, str | None], ...] = EXAMPLE_SOURCES,
                    ) -> list[tuple[str, list[str]]]:
    """The commands of `sources` that run one of `jobs`, each once, in page order; a whole
    page's without its KAFKA4_SOURCE section, unless that is the source."""
    return [c for c, _ in noted_source_commands(jobs, sources)]


def noted_source_commands(jobs: tuple[str, ...],
                          sources: tuple[tuple[str, str | None], ...] = EXAMPLE_SOURCES,
                          ) -> list[tuple[tuple[str, list[str]], str]]:
    """`source_commands`, each with its note (`noted_commands`)."""
    found: list[tuple[tuple[str, list[str]], str]] = []
    for page, heading in sources:
        text = (ROOT / page).read_text(encoding="utf-8")
        if heading is None and page == KAFKA4_SOURCE[0]:
            text = text.replace(section(text, KAFKA4_SOURCE[1]), "")
        for block in bash_blocks(text if heading is None else section(text, heading)):
            for note, words in noted_commands(block):
                c = job_command(words, jobs)
                if c and c not in [f for f, _ in found]:
                    found.append((c, note))
    return found


EXAMPLES = source_commands(JOBS)
KAFKA4_EXAMPLES = source_commands(("query.py",), (KAFKA4_SOURCE,))


def demo_argv(job: str, out: Path) -> list[str]:
    """The argv jobs/demo.sh gives `job` (pipeline/jobs/demo.py's steps, at the sizes demo.sh
    passes), with its output folder at `out`."""
    script = (ROOT / "jobs" / "demo.sh").read_text()
    sizes = {flag: int(value) for flag, value in
             re.findall(r'--(groups|events) "\$\{\w+:-(\d+)\}"', script)}
    assert set(sizes) == {"groups", "events"}, "jobs/demo.sh passes --groups and --events"
    return demo_job.steps(str(out), **sizes)[job.removesuffix(".py")]


def same_as_demo(job: str, argv: list[str]) -> bool:
    """`argv` asks `job` for what jobs/demo.sh asks it: the same arguments once parsed (in
    any order, a default given or left out)."""
    parse = load_job(job.removesuffix(".py")).parse
    try:
        return bool(vars(parse(argv)) == vars(parse(demo_argv(job, Path(DEMO_OUT)))))
    except SystemExit:  # not even a command line of the job
        return False


def runs_here(job: str, argv: list[str]) -> bool:
    """Whether this test runs `job` with `argv` as a page prints it: one of the examples, or
    the demo's own generate or replay (the fixture's)."""
    return ((job, argv) in EXAMPLES or (job, argv) in KAFKA4_EXAMPLES
            or (job in DEMO_JOBS and same_as_demo(job, argv)))


# What the demo may print: a job's log line (time, logger, message), a table of answers,
# a title, a blank line, and the demo's last line.
OURS = re.compile(
    r"\d\d:\d\d:\d\d (generate|replay|query|backfill|progress|catalog|whatif) .*"  # loggers
    r"|\S+: [a-z_]+=\S+.*|  (recorded|simulated|what-if) +\d+ rebalances .*"  # a what-if
    r"|[|+].*"  # DataFrame.show's grid
    r"|== .*"  # a question's title
    r"|demo finished in \d+ s; tables under .*"
    r"|Prometheus metrics of them: .* --metrics-port \d+, then http://\S+/metrics .*"
    r"|")


@dataclass(frozen=True)
class DemoRun:
    out: Path  # what jobs/demo.sh leaves in out/demo
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """`bash jobs/demo.sh` as a new user runs it, its out/demo in a temporary folder: one
    run for the demo's own output and for every example below, which run on its warehouse."""
    out = tmp_path_factory.mktemp("demo")
    done = subprocess.run(["bash", str(ROOT / "jobs" / "demo.sh")], cwd=ROOT,
                          env=dict(os.environ, DEMO_OUT=str(out)),
                          capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stdout + done.stderr
    return DemoRun(out, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def demo(demo_run: DemoRun) -> Path:
    """out/demo: the event log, end offsets and warehouse jobs/demo.sh left there."""
    return demo_run.out


def test_the_demo_prints_only_the_projects_lines(demo_run: DemoRun) -> None:
    """The demo prints only the project's own lines: its jobs' progress and answers, never a
    line from Spark, Hive, Derby, the JVM or pip that nobody can act on
    (tests/jobs/test_demo_output.py: with --log-level they come back)."""
    output = demo_run.stdout + demo_run.stderr
    foreign = [line for line in output.splitlines() if not OURS.fullmatch(line)]
    assert not foreign, "\n".join(foreign[:20])
    assert "== groups furthest behind now, with the cause" in demo_run.stdout
    assert re.search(r"^  what-if +\d+ rebalances", demo_run.stdout, re.M)  # the demo's what-if
    assert "jobs/serve.py --warehouse" in demo_run.stdout.splitlines()[-1]  # the metrics


def in_demo(argv: list[str], demo: Path, out: str = DEMO_OUT) -> list[str]:
    """`out/demo/...` (or `out`'s) arguments, the warehouse and output files, moved into the
    test's folder."""
    return [re.sub(rf"^{re.escape(out)}(?=/|$)", str(demo), a) for a in argv]


def shown_tables(stdout: str) -> dict[str, int]:
    """Rows of each table jobs/query.py printed (`== title`, then DataFrame.show's grid)."""
    tables = {}
    for part in stdout.split("\n== ")[1:]:
        title, _, body = part.partition("\n")
        grid = [line for line in body.splitlines() if line.startswith("|")]
        assert grid, f"{title}: no table printed"
        tables[title] = len(grid) - 1  # the first line is the header
    return tables


def example_id(example: tuple[str, list[str]]) -> str:
    job, argv = example
    return f"{job} {' '.join(argv)}"[:90]


def test_the_share_and_streams_examples_are_queries_of_their_own_warehouse() -> None:
    assert len(KAFKA4_EXAMPLES) >= 5
    assert not set(map(example_id, KAFKA4_EXAMPLES)) & set(map(example_id, EXAMPLES))
    for _, argv in KAFKA4_EXAMPLES:
        assert argv[argv.index("--warehouse") + 1] == f"{KAFKA4_OUT}/warehouse", argv


def test_the_docs_show_each_job_against_the_demo_warehouse() -> None:
    assert {job for job, _ in EXAMPLES} == set(JOBS)
    assert len(EXAMPLES) >= 10
    for job, argv in EXAMPLES:
        warehouse = argv[argv.index("--warehouse") + 1]
        assert warehouse == f"{DEMO_OUT}/warehouse", (job, argv)
        if "--output" in argv:
            assert argv[argv.index("--output") + 1].startswith(f"{DEMO_OUT}/"), (job, argv)


def test_the_tour_generates_and_replays_as_the_demo_does() -> None:
    """The pages' generate and replay commands ask what jobs/demo.sh's ask: the warehouse
    the examples run on is the one those commands build."""
    shown = source_commands(DEMO_JOBS)
    assert {job for job, _ in shown} == set(DEMO_JOBS), shown
    for job, argv in shown:
        assert same_as_demo(job, argv), (job, argv, demo_argv(job, Path(DEMO_OUT)))
    assert not same_as_demo("replay.py", ["--events", "out/demo/events", "--warehouse",
                                          "out/demo/warehouse", "--checkpoint", "c"])


@pytest.mark.parametrize("example", EXAMPLES, ids=example_id)
def test_a_doc_example_runs_and_answers(example: tuple[str, list[str]], demo_run: DemoRun,
                                        spark: SparkSession,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    job, argv = example
    if job == "query.py" and same_as_demo(job, argv):
        # jobs/demo.sh ran this very command (a minute of the suite to run it again): its
        # answers are in the demo's output
        answered(job, argv, demo_run.stdout)
        return
    runs_and_answers(job, in_demo(argv, demo_run.out), spark, capsys)


def runs_and_answers(job: str, argv: list[str], spark: SparkSession,
                     capsys: pytest.CaptureFixture[str]) -> None:
    """`job` with `argv` exits 0, and a query prints tables that each hold a row (a job
    writing a file writes one that is not empty)."""
    try:
        result = load_job(job.removesuffix(".py")).main(argv, spark=spark)
    except SystemExit as e:
        result = e.code if isinstance(e.code, int) or e.code is None else f"exit: {e.code}"
    stdout = capsys.readouterr().out
    assert result in (None, 0) or isinstance(result, Path), f"{result!r}\n{stdout}"
    answered(job, argv, stdout)


def answered(job: str, argv: list[str], stdout: str) -> None:
    """A query printed tables that each hold a row; a job writing a file wrote one that is
    not empty."""
    if job == "query.py":
        tables = shown_tables(stdout)
        assert tables and all(tables.values()), f"empty answers: {tables}\n{stdout}"
        if "--demo" in argv:
            assert set(tables) == set(DEMO_QUERIES) | set(LAG_DEMO_QUERIES), tables
    elif job == "whatif.py":
        runs = re.findall(r"^  (recorded|simulated|what-if) +(\d+) rebalances", stdout, re.M)
        assert [r for r, _ in runs][:3] == ["recorded", "simulated", "what-if"], stdout
        assert int(runs[0][1]) > 0, stdout
        if "--output" in argv:
            output = Path(argv[argv.index("--output") + 1])
            assert {p.name for p in output.iterdir()} >= {"whatif_summary", "whatif_rebalances"}
            summary = DeltaTable(str(output / "whatif_summary")).to_pyarrow_table().to_pylist()
            assert {r["run"] for r in summary} == {"recorded", "simulated", "what-if"}
            # The demo's log is of 2023-11-14: its window, as the job printed it, not 1970.
            assert {r["window_start"].date().isoformat() for r in summary} == {"2023-11-14"}
        if "--report" in argv:
            page = Path(argv[argv.index("--report") + 1]).read_text()
            assert page.count("data:image/png;base64,") == 2 and "<td>what-if</td>" in page
    else:
        output = Path(argv[argv.index("--output") + 1])
        assert output.is_file() and output.stat().st_size > 0, output
        if job == "export_offsets.py":
            lines = output.read_text().splitlines()
            assert lines and all(re.fullmatch(r"[^,]+,\d+,\d+", line) for line in lines), lines


def test_the_demo_questions_answer_from_the_demo_warehouse(spark: SparkSession,
                                                           demo: Path) -> None:
    """`jobs/query.py --demo`'s questions, asked of the warehouse the demo's replay built:
    the groups it lists are the log's, ten of them, it finds the refused rows the demo's
    `--bad-rows` put in the log, and the demo's end offsets give every lag table and the
    lag question an answer."""
    registered = set(register_views(spark, str(demo / "warehouse")))
    assert registered == set(OUTPUT_TABLES) | set(LAG_TABLES)
    answers = {title: spark.sql(sql).collect() for title, sql in DEMO_QUERIES.items()}
    events = spark.read.format("delta").load(str(demo / "events"))
    groups = {r[0] for r in events.select("group_id").distinct().collect() if r[0]}
    assert {r["group_id"] for r in answers["groups now"]} <= groups
    assert len(answers["groups now"]) == min(10, len(groups))
    assert sum(r["rows"] for r in answers["refused or malformed rows, by reason"]) > 0
    lag = {title: spark.sql(sql).collect() for title, sql in LAG_DEMO_QUERIES.items()}
    assert lag and all(lag.values()), lag
    for rows in lag.values():
        assert {r["group_id"] for r in rows} <= groups



def test_query_help_names_every_table_view_and_function_a_query_can_use(
        spark: SparkSession, demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What register_views makes of the demo's warehouse, as Spark lists it, is all in
    `jobs/query.py --help`, and so are the tables only other warehouses have."""
    for r in spark.sql("SHOW VIEWS").collect():  # other tests' in the shared session
        if r["isTemporary"]:
            spark.catalog.dropTempView(r["viewName"])
    register_views(spark, str(demo / "warehouse"))
    with pytest.raises(SystemExit):
        load_job("query").parse(["--help"])
    shown = set(re.findall(r"\w+", capsys.readouterr().out))
    ours = {r[0].rsplit(".", 1)[-1] for r in spark.sql("SHOW USER FUNCTIONS").collect()}
    ours -= {"table_changes", "table_changes_by_path"}  # Delta's change feed, not ours
    views = {r["viewName"] for r in spark.sql("SHOW VIEWS").collect() if r["isTemporary"]}
    assert ours >= {"lag_as_of", "member_sessions", "rebalance_storms"}, ours
    assert "whatif" in shown
    assert not (ours | views | set(WAREHOUSE_TABLES)) - shown, sorted(
        (ours | views | set(WAREHOUSE_TABLES)) - shown)

AS_OF_EXAMPLES = [(job, argv) for job, argv in EXAMPLES if job == "query.py" and "--as-of" in argv]


@pytest.fixture(scope="module")
def backfilled(spark: SparkSession, demo: Path) -> Callable[[int], str]:
    """The demo's log backfilled `--until T` into a warehouse of its own, once per T."""
    built: dict[int, str] = {}

    def until(at_ms: int) -> str:
        if at_ms not in built:
            warehouse = demo / f"backfill-{at_ms}"
            run_backfill(spark, BackfillOptions(events=str(demo / "events"), until_ms=at_ms,
                                                warehouse=str(warehouse), database=None))
            built[at_ms] = str(warehouse)
        return built[at_ms]
    return until


def query_answers(spark: SparkSession, argv: list[str]) -> list[list[dict[str, Any]]]:
    """What jobs/query.py would print for `argv`, each answer's rows as sorted dicts."""
    query = load_job("query")
    args = query.parse(argv)
    register_views(spark, args.warehouse)
    return [sorted((r.asDict(recursive=True) for r in df.collect()), key=repr)
            for df in query.answers(spark, args).values()]


def _common(rows: list[dict[str, Any]], columns: set[str]) -> list[dict[str, Any]]:
    return sorted(({k: v for k, v in r.items() if k in columns} for r in rows), key=repr)


def test_the_docs_ask_about_the_past_in_both_forms() -> None:
    forms = {"sql" if any(" " in a for a in argv) else "group" for _, argv in AS_OF_EXAMPLES}
    assert forms == {"sql", "group"}, AS_OF_EXAMPLES


@pytest.mark.parametrize("example", AS_OF_EXAMPLES, ids=example_id)
def test_an_as_of_example_answers_as_a_backfill_until_that_time(
        example: tuple[str, list[str]], demo: Path, spark: SparkSession,
        backfilled: Callable[[int], str]) -> None:
    """`--as-of T` over the whole log's warehouse answers what the same question answers now
    over a warehouse backfilled `--until T`: the SQL form the same statement, the --group
    form the group's group_state, group_members and committed_offsets rows."""
    argv = in_demo(example[1], demo)
    args = load_job("query").parse(argv)
    then = query_answers(spark, argv)
    warehouse = backfilled(args.as_of)
    if args.sql:
        now = query_answers(spark, ["--warehouse", warehouse, args.sql])
    else:
        now = [query_answers(spark, ["--warehouse", warehouse,
                                f"SELECT * FROM {table} WHERE group_id = '{args.group}'"])[0]
               for table in ("group_state", "group_members", "committed_offsets")]
    assert len(then) == len(now)
    for asked, known in zip(then, now, strict=True):
        assert asked, f"{argv}: an empty answer"
        columns = set(asked[0]) & set(known[0] if known else asked[0])
        assert _common(asked, columns) == _common(known, columns)


def test_as_of_sql_naming_a_column_not_kept_per_moment_is_refused_with_the_columns_it_has(
        demo: Path, spark: SparkSession, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--warehouse", str(demo / "warehouse"), "--as-of", "2023-11-14T22:16:00",
            "SELECT group_id, rejected_count FROM group_state"]
    with pytest.raises(SystemExit) as exited:
        load_job("query").main(argv, spark=spark)
    assert exited.value.code == 2
    said = capsys.readouterr().err.strip()
    assert "\n" not in said
    assert re.search(r"rejected_count.*group_state: as of TIMESTAMP'2023-11-14 22:16:00.*"
                     r"columns group_id, state", said), said


def test_the_as_of_sql_examples_do_not_answer_with_the_current_state(
        demo: Path, spark: SparkSession) -> None:
    """The comparison above means something only if time changes some answer: ignoring
    --as-of (the old behaviour) must be caught."""
    differ = []
    for _, argv in AS_OF_EXAMPLES:
        args = load_job("query").parse(in_demo(argv, demo))
        if args.sql:
            now = query_answers(spark, ["--warehouse", args.warehouse, args.sql])
            differ.append(query_answers(spark, in_demo(argv, demo)) != now)
    assert any(differ), "every as-of SQL example answers as now"


# ---- another engine reads the demo's tables: delta-rs ----

def _plain(value: Any) -> Any:
    """A cell as comparable plain data, whichever engine read it: times as epoch
    microseconds (Spark gives the session's naive UTC, delta-rs aware UTC), structs as
    sorted items, lists as tuples."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return round(aware.timestamp() * 1_000_000)
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=False)
    if isinstance(value, dict):
        return tuple(sorted((k, _plain(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    return value


def test_delta_rs_reads_every_table_as_spark_does(spark: SparkSession, demo: Path) -> None:
    """Every output and lag table of the demo's warehouse, read by delta-rs (the `deltalake`
    package: the Rust engine behind DuckDB's, Polars' and many services' Delta readers),
    holds the rows Spark reads, column for column; and every table asks of its readers only
    protocol (1, 2) without table features, which every Delta reader supports."""
    from deltalake import DeltaTable

    for table in (*OUTPUT_TABLES, *LAG_TABLES):
        path = str(demo / "warehouse" / table)
        other = DeltaTable(path)
        protocol = other.protocol()
        assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2), table
        assert not protocol.reader_features and not protocol.writer_features, table
        ours = spark.read.format("delta").load(path)
        theirs = other.to_pyarrow_table()
        assert theirs.column_names == ours.columns, table
        got = Counter(_plain(list(r.values())) for r in theirs.to_pylist())
        want = Counter(_plain(list(r)) for r in ours.collect())
        assert got == want, f"{table}: {sum(got.values())} rows, Spark {sum(want.values())}"
        assert sum(want.values()) > 0 or table in ("error_responses", "rejected_samples"), table
