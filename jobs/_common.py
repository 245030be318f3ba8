"""What every job shares, under the name the job files once imported it by: the module is
`pipeline.jobs._common`."""

from pipeline.jobs._common import *  # noqa: F403
