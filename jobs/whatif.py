"""The file `spark-submit` runs for the job `pipeline.jobs.whatif`.

The job lives in the package (its docstring says what it reads and writes), so this file holds
nothing else and can be copied anywhere: with the wheel installed, or passed as
`--py-files consumer_group_replay-*.whl`, it runs the wheel's job (see docs/deploying.md).
"""

from pipeline.jobs.whatif import *  # noqa: F403 (a test loading this file gets the job's names)
from pipeline.jobs.whatif import main

if __name__ == "__main__":
    main()
