"""Exit codes, in one place, for both entry points (layer 0 of ``gbft_action.LAYERS``).

The CLI and the action are two programs with their own contracts: the CLI's 4 says a replay
failed differently, the action's 4 that the engine's build failed.  Each is an IntEnum, so a
code is compared and printed as the number the shell sees.
"""

from __future__ import annotations

from enum import IntEnum


class CliExit(IntEnum):
    """``gbft``: fuzz, replay, report, merge."""

    OK = 0
    FAILURES = 1  # fuzz: failures under --fail-on; replay: still fails the same way
    USAGE = 2  # bad arguments or input (one line says which)
    ERROR = 3  # the run could not finish (the output disk filled, a corrupt state file)
    DIFFERENT = 4  # replay: fails, but differently
    PARTIAL = 5  # report: GitHub refused some writes (report.json says which and why)


class ActionExit(IntEnum):
    """The GitHub Action's step."""

    OK = 0
    FAILED = 1  # the check fails (fail-on)
    CONFIG = 2  # an input is wrong (one ::error line names it)
    ERROR = 3  # incomplete: the report failed, or the output disk filled
    BUILD = 4  # build-command failed: no model ran
