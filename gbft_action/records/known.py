"""The known-bugs file (``known_bugs.json``): each fingerprint seen, how often, where, when, and
its bundle.  It carries fingerprints across runs (``--state``): a fingerprint in it is not new.
bugs.bundle.BugBook and merge write it; both read it through ``read_known``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..statefile import corrupt, read_state
from .io import Fields, RecordError, write_record
from .keys import Fingerprint

KNOWN_FILE = "known_bugs.json"


@dataclass(frozen=True)
class KnownBug:
    fingerprint: Fingerprint
    title: str
    first_seen: str
    last_seen: str = ""
    count: int = 0
    platforms: tuple[str, ...] = ()
    bundle: str = ""  # its bundle's folder ("" when none was written)

    def to_json(self) -> dict[str, object]:
        return {"fingerprint": self.fingerprint.to_json(), "title": self.title, "first_seen": self.first_seen,
                "last_seen": self.last_seen, "count": self.count, "platforms": list(self.platforms),
                "bundle": self.bundle}

    @staticmethod
    def from_json(d: Any, where: str) -> KnownBug:
        f = Fields(d, where)
        if not isinstance(f.d.get("fingerprint"), dict):
            raise RecordError(f"{where}: no fingerprint in it")
        return KnownBug(Fingerprint.from_json(f.d["fingerprint"], f"{where}: fingerprint"), f.str("title"),
                        f.str("first_seen"), f.str("last_seen"), f.int("count", 0, 0), f.strs("platforms"),
                        f.str("bundle"))


def read_known(path: Path) -> dict[str, KnownBug]:
    """A known-bugs file, by fingerprint id.  It is state a next run reads (--state): a corrupt
    one is a one-line error with a copy kept (statefile), never a silent reset that would
    report every known bug as new again."""
    try:
        return {str(k): KnownBug.from_json(v, f"{path}: {k}") for k, v in read_state(path, "known bugs").items()}
    except RecordError as e:
        raise corrupt(path, "known bugs", str(e).removeprefix(f"{path}: ")) from None


def write_known(path: Path, known: dict[str, KnownBug]) -> None:
    write_record(path, {k: v.to_json() for k, v in known.items()})
