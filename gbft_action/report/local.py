"""The reporter's own files (report.json, summary.md, the files tracker's issues): each written
whole or not at all, so a killed or failed run never leaves a cut file that a rerun would take
as done; a write that fails is one ``ReportWriteError`` naming the file, which the entry points
turn into a one-line error and exit 3 (exitcodes: the run could not finish).
"""

from __future__ import annotations

from pathlib import Path

from ..statefile import write_atomic


class ReportWriteError(RuntimeError):
    """A file of the reporter's own could not be written (a read-only output, a full disk)."""


def write_file(path: Path, text: str) -> None:
    """``text`` into ``path`` atomically; ReportWriteError (one line) when it cannot be."""
    try:
        write_atomic(path, text)
    except OSError as e:
        raise ReportWriteError(f"cannot write {path}: {e.strerror or type(e).__name__} (the report's own output; "
                               f"free the disk or make it writable, then run the report again)") from None


def make_dir(path: Path) -> None:
    """``path`` and its parents; ReportWriteError (one line) when it cannot be made."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ReportWriteError(f"cannot create {path}: {e.strerror or type(e).__name__}") from None
