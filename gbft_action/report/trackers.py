"""Issue trackers behind one interface, chosen by name from ``TRACKERS``.

``github`` files real issues (PyGithub; imported only when chosen), ``files``
writes each issue and comment as Markdown under ``OUT/issues/`` (a dry run that
still remembers what it filed, so a second run comments instead of refiling),
``none`` records nothing.  Existing issues are found by a hidden marker in the
body, ``<!-- gbft-fingerprint: ID -->`` (plus ``-alias`` markers for renamed
fingerprints), among the issues carrying the bot's label.  An issue per root
cause carries ``<!-- gbft-root-cause: KEY -->`` and a ``gbft-fingerprint-alias``
for each fingerprint it merges (so an issue filed under any of them is found);
a tracking issue carries ``<!-- gbft-tracking: KEY -->`` and nothing else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from ..records.summary import FINGERPRINT_ID, ROOT_CAUSE_KEY  # noqa: F401 - the forms markers take
from .local import make_dir, write_file

TRACKING_KEY = r"gbft-[a-z-]{1,40}-tracking"
MARKER = re.compile(r"<!--\s*gbft-(?:(?:fingerprint|root-cause)(?:-alias)?:\s*"
                    rf"({FINGERPRINT_ID}|{ROOT_CAUSE_KEY})|tracking:\s*({TRACKING_KEY}))\s*-->")


def marker_ids(body: str) -> list[str]:
    """The ids an issue body answers to, in order (its own key first)."""
    return [m.group(1) or m.group(2) for m in MARKER.finditer(body or "")]


@dataclass
class Issue:
    number: int
    state: str  # open | closed
    body: str
    url: str = ""
    state_reason: str = ""  # completed | not_planned | reopened | ""


class TrackerError(Exception):
    """The tracker refused one write (locked, deleted, 404, 422, a 5xx after retries): the
    reporter records it for that issue and goes on."""

    def __init__(self, number: int | None, status: int, reason: str) -> None:
        super().__init__(f"{status}: {reason}" if status else reason)
        self.number, self.status = number, status


class IssueTracker(Protocol):
    name: str

    def index(self) -> dict[str, Issue]:
        """Every bot issue (open and closed), by fingerprint id and alias."""

    def create(self, fid: str, title: str, body: str) -> Issue: ...

    def comment(self, number: int, body: str) -> None: ...

    def has_comment(self, number: int, marker: str) -> bool:
        """Whether a comment holding ``marker`` is already there (writes are idempotent)."""

    def update_body(self, number: int, body: str) -> None: ...

    def reopen(self, number: int) -> None: ...

    def close(self, number: int) -> None: ...


def index_issues(issues: list[Issue]) -> dict[str, Issue]:
    idx: dict[str, Issue] = {}
    for iss in sorted(issues, key=lambda i: i.number):  # the oldest issue wins a duplicate marker
        for fid in marker_ids(iss.body):
            idx.setdefault(fid, iss)
    return idx


class NoneTracker:
    """Files nothing; every bug reads as new (the report says what would be filed)."""

    name = "none"

    def index(self) -> dict[str, Issue]:
        return {}

    def create(self, fid: str, title: str, body: str) -> Issue:
        return Issue(0, "open", body)

    def comment(self, number: int, body: str) -> None:
        pass

    def has_comment(self, number: int, marker: str) -> bool:
        return False

    def update_body(self, number: int, body: str) -> None:
        pass

    def reopen(self, number: int) -> None:
        pass

    def close(self, number: int) -> None:
        pass


class FilesTracker:
    """A dry run: issues and comments as Markdown files, with an index of what was filed."""

    name = "files"

    def __init__(self, out: Path, **_: Any) -> None:
        self.dir = out / "issues"
        make_dir(self.dir)
        self._index_path = self.dir / "index.json"
        self._issues: dict[int, dict[str, Any]] = {}
        if self._index_path.exists():
            self._issues = {int(k): v for k, v in json.loads(self._index_path.read_text()).items()}

    def _save(self) -> None:
        write_file(self._index_path, json.dumps(self._issues, indent=2, sort_keys=True) + "\n")

    def _file(self, number: int) -> Path:
        return self.dir / f"{number:04d}.md"

    def index(self) -> dict[str, Issue]:
        return index_issues([Issue(n, v["state"], self._file(n).read_text(), str(self._file(n)))
                             for n, v in self._issues.items()])

    def create(self, fid: str, title: str, body: str) -> Issue:
        number = max(self._issues, default=0) + 1
        write_file(self._file(number), f"# {title}\n\n{body}")
        self._issues[number] = {"state": "open", "title": title, "comments": 0}
        self._save()
        return Issue(number, "open", body, str(self._file(number)))

    def comment(self, number: int, body: str) -> None:
        self._issues[number]["comments"] += 1
        k = self._issues[number]["comments"]
        write_file(self.dir / f"{number:04d}-comment-{k}.md", body)
        self._save()

    def has_comment(self, number: int, marker: str) -> bool:
        return any(marker in p.read_text() for p in self.dir.glob(f"{number:04d}-comment-*.md"))

    def update_body(self, number: int, body: str) -> None:
        write_file(self._file(number), f"# {self._issues[number]['title']}\n\n{body}")

    def reopen(self, number: int) -> None:
        self._issues[number]["state"] = "open"
        self._save()

    def close(self, number: int) -> None:
        self._issues[number]["state"] = "closed"
        self._save()


def _github(**kw: Any) -> IssueTracker:
    from .github import GitHubTracker  # PyGithub only when chosen

    return GitHubTracker(**kw)


TRACKERS: dict[str, Callable[..., IssueTracker]] = {
    "github": _github,
    "files": lambda **kw: FilesTracker(kw["out"]),
    "none": lambda **kw: NoneTracker(),
}


def make_tracker(name: str, **kw: Any) -> IssueTracker:
    if name not in TRACKERS:
        raise ValueError(f"unknown tracker {name!r} (allowed: {', '.join(TRACKERS)})")
    return TRACKERS[name](**kw)


__all__ = ["FINGERPRINT_ID", "Issue", "IssueTracker", "MARKER", "ROOT_CAUSE_KEY", "TRACKERS", "TRACKING_KEY",
           "TrackerError", "make_tracker", "marker_ids"]
