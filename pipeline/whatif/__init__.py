"""What-if: a classic group's recorded consumers played again under another assignor, static
membership, session or rebalance timeout or initial delay, through the same fold, with what
each run's rebalances cost (`what_if`). Pure Python: the jobs read the rows it needs from the
warehouse and write what it returns (docs/whatif.md)."""

from pipeline.whatif.compare import RUNS, WhatIf, check, what_if
from pipeline.whatif.script import WhatIfError
from pipeline.whatif.simulate import Change

__all__ = ["RUNS", "Change", "WhatIf", "WhatIfError", "check", "what_if"]
