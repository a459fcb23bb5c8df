"""What an issue keeps of itself across runs, in hidden markers of its body: never read back
from its prose.  A body is data anyone may have edited, so a marker is taken only with its exact
types (``from_json`` returns None otherwise) and the next body is written from what was valid.

  IssueState   a root cause's issue: occurrences, first and last seen, platforms
  TrackedRow   a row of a class's tracking issue (precision, NaN/Inf, unisolated, unsupported)

Base64 of JSON: no "-->" in a value can end the comment."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any

from ..records.bundle import BundleMeta
from ..records.summary import ROOT_CAUSE_KEY

STATE = re.compile(r"<!-- gbft-issue-state: ([A-Za-z0-9+/=]*) -->")
ROWS = re.compile(r"<!-- gbft-tracking-rows: ([A-Za-z0-9+/=]*) -->")
MAX_MARKER = 4096  # base64 characters: a state is a few hundred
_DATE = re.compile(r"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\dZ)?")
_DAY = re.compile(r"\d{4}-\d\d-\d\d")


def encode_marker(data: Any) -> str:
    """What a hidden marker holds: base64 of JSON, so that no "-->" can end the comment."""
    return base64.b64encode(json.dumps(data, separators=(",", ":")).encode()).decode()


def decode_marker(pattern: re.Pattern[str], body: str, limit: int = 0) -> Any:
    """The JSON in a body's marker (``pattern``'s group 1, at most ``limit`` characters when
    given); None when there is none or it is not base64 of JSON (an edited body)."""
    m = pattern.search(body or "")
    if m is None or (limit and len(m.group(1)) > limit):
        return None
    try:
        return json.loads(base64.b64decode(m.group(1), validate=True))
    except (ValueError, RecursionError):  # not base64, not UTF-8, not JSON, nested to exhaust the parser
        return None


def _date(v: str) -> str:
    return v if _DATE.fullmatch(v) else ""


def _strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _count(v: Any) -> bool:
    return type(v) is int and v >= 0


@dataclass(frozen=True)
class IssueState:
    occurrences: int
    first_seen: str = ""
    last_seen: str = ""
    platforms: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"occurrences": self.occurrences, "first_seen": self.first_seen, "last_seen": self.last_seen,
                "platforms": list(self.platforms)}

    @staticmethod
    def from_json(d: Any) -> IssueState | None:
        if not (isinstance(d, dict) and _count(d.get("occurrences")) and _strs(d.get("platforms"))
                and all(isinstance(d.get(k), str) and (not d[k] or _DATE.fullmatch(d[k]))
                        for k in ("first_seen", "last_seen"))):
            return None
        return IssueState(d["occurrences"], d["first_seen"], d["last_seen"], tuple(d["platforms"]))

    @staticmethod
    def of(meta: BundleMeta) -> IssueState:
        """What the issue of a bundle keeps: its occurrences, first and last seen, platforms (the
        dates only in their exact form: a bundle is untrusted data)."""
        return IssueState(meta.occurrences, _date(meta.first_seen), _date(meta.last_seen),
                          tuple(sorted(p[:40] for p in meta.platforms)[:8]))

    @staticmethod
    def decode(body: str) -> IssueState | None:
        return IssueState.from_json(decode_marker(STATE, body, MAX_MARKER))

    def encode(self) -> str:
        return encode_marker(self.to_json())


@dataclass(frozen=True)
class TrackedRow:
    key: str
    title: str
    count: int
    ops: tuple[str, ...]
    platforms: tuple[str, ...]
    first_seen: str  # days (YYYY-MM-DD)
    last_seen: str

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "title": self.title, "count": self.count, "ops": list(self.ops),
                "platforms": list(self.platforms), "first_seen": self.first_seen, "last_seen": self.last_seen}

    @staticmethod
    def from_json(r: Any) -> TrackedRow | None:
        if not (isinstance(r, dict) and isinstance(r.get("key"), str) and re.fullmatch(ROOT_CAUSE_KEY, r["key"])
                and isinstance(r.get("title"), str) and _count(r.get("count"))
                and _strs(r.get("ops")) and _strs(r.get("platforms"))
                and all(isinstance(r.get(k), str) and _DAY.fullmatch(r[k]) for k in ("first_seen", "last_seen"))):
            return None
        return TrackedRow(r["key"], r["title"], r["count"], tuple(r["ops"]), tuple(r["platforms"]), r["first_seen"],
                          r["last_seen"])

    @staticmethod
    def decode(body: str) -> list[TrackedRow]:
        """The rows a tracking issue's body holds (the valid ones)."""
        rows = decode_marker(ROWS, body)
        return [x for x in map(TrackedRow.from_json, rows) if x is not None] if isinstance(rows, list) else []

    @staticmethod
    def encode(rows: list[TrackedRow]) -> str:
        return encode_marker([r.to_json() for r in rows])
