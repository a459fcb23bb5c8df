"""Reading the state a campaign carries between runs: known bugs, the search state, the campaign
record.  A corrupt or truncated one (a job killed while writing, a cache restored half-way) is
a one-line error naming the file, and a copy is kept beside it (``FILE.corrupt``) before any
run could write a new one: never a silent reset, which would re-report every known bug as new.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path


class StateFileError(ValueError):
    """A state file that cannot be read: the message names it and where its copy is."""


def read_state(path: Path, what: str) -> dict[str, object]:
    """The JSON object in ``path`` (``what`` it holds, for the message)."""
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise corrupt(path, what, getattr(e, "msg", type(e).__name__)) from None
    if not isinstance(data, dict):
        raise corrupt(path, what, "not a JSON object")
    return data


def corrupt(path: Path, what: str, why: str) -> StateFileError:
    """The error for a state file that is unreadable (or of the wrong shape), its copy kept."""
    backup = path.with_name(path.name + ".corrupt")
    shutil.copy2(path, backup)
    return StateFileError(f"{path}: the {what} is corrupt or truncated ({why}); a copy is kept at {backup}: "
                          f"restore the file, or run without it")


def write_atomic(path: Path, text: str) -> None:
    """``text`` into ``path`` whole or not at all (a job killed mid-write leaves the old file)."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk: no half file left beside the whole old one
        raise
