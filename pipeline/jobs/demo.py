"""The demo's jobs in one Spark session: generate a log and its end offsets, replay it as a
stream with lag, ask the demo's questions, and one what-if.

    .venv/bin/python -m pipeline.jobs.demo --output out/demo

`jobs/demo.sh` (the README's first command) installs, clears the output folder and runs this.
Each step is the job itself, called with the command line in `steps` (the README's steps 1
to 3 print the same command lines, for one process each): one JVM and its warm-up instead of
four.
"""

from __future__ import annotations

import argparse
import importlib

from pipeline.java import SHORT_LIVED_JVM
from pipeline.jobs._common import (
    JobParser,
    add_profile_arg,
    cli,
    default_metastore,
    job_session,
    positive_int,
)
from pipeline.spark.runtime.session import session_conf

GROUPS = 40
EVENTS = 30_000
WHATIF_GROUP = "group-00028-billing"  # a range group of the demo's log, 18 rebalances
# The demo's JVM lives a minute or two: a short-lived JVM's options (pipeline/java.py; a
# stream or backfill run by its own job keeps the profile's). A profile that sets the
# driver's JVM options keeps its own.
JVM_OPTIONS = "spark.driver.extraJavaOptions"


def steps(out: str, groups: int = GROUPS, events: int = EVENTS) -> dict[str, list[str]]:
    """Each job the demo runs, in order, with its command line (without `--profile`)."""
    return {
        "generate": ["--output", f"{out}/events", "--end-offsets", f"{out}/end_offsets",
                     "--groups", str(groups), "--events", str(events), "--seed", "7",
                     "--bad-rows", "0.01", "--commits", "3"],
        # The log is five minutes long: a one-minute watermark delay lets lag cover most of it.
        "replay": ["--events", f"{out}/events", "--end-offsets", f"{out}/end_offsets",
                   "--warehouse", f"{out}/warehouse", "--checkpoint", f"{out}/checkpoint",
                   "--trigger", "available-now", "--watermark-delay", "1 minute"],
        "query": ["--warehouse", f"{out}/warehouse", "--demo"],
        # One what-if (docs/whatif.md): the demo's busiest eager group under cooperative-sticky.
        "whatif": ["--warehouse", f"{out}/warehouse", "--group", WHATIF_GROUP,
                   "--assignor", "cooperative-sticky"],
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__)
    p.add_argument("--output", default="out/demo", help="folder of the log and the warehouse")
    p.add_argument("--groups", type=positive_int, default=GROUPS, help="consumer groups")
    p.add_argument("--events", type=positive_int, default=EVENTS, help="rows in the log")
    add_profile_arg(p)
    return p.parse_args(argv)


@cli(parse)
def main(args: argparse.Namespace) -> int:
    """Runs the steps; returns the last one's exit status."""
    jobs = steps(args.output, args.groups, args.events)
    common = ["--profile", args.profile, *(["--debug"] if args.debug else []),
              *([f"--log-level={args.log_level}"] if args.log_level else [])]
    status = 0
    # The replay names its tables in the warehouse's metastore: the session opens it.
    own = JVM_OPTIONS in session_conf(args.profile, with_jars=False)
    with job_session("demo", args.profile, metastore=default_metastore(f"{args.output}/warehouse"),
                     args=args, extra_conf=None if own else {JVM_OPTIONS: " ".join(SHORT_LIVED_JVM)}
                     ) as spark:
        for job, argv in jobs.items():
            module = importlib.import_module(f"pipeline.jobs.{job}")
            status = module.main(argv + common, spark) or 0
    return status


if __name__ == "__main__":
    raise SystemExit(main())
