"""Issue trackers behind one interface, chosen by name (``report.choose``).

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
from typing import Any, Protocol

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
    state_reason: str = ""  # completed | not_planned | reopened | duplicate | ""
    author: str = ""  # who filed it: whose comments on it are the bot's own (filing.Filing)


@dataclass(frozen=True)
class Comment:
    id: int
    body: str
    author: str = ""


class TrackerError(Exception):
    """The tracker refused one write (locked, deleted, 404, 422, a 5xx after retries): the
    reporter records it for that issue and goes on."""

    def __init__(self, number: int | None, status: int, reason: str) -> None:
        super().__init__(f"{status}: {reason}" if status else reason)
        self.number, self.status = number, status


class IssueTracker(Protocol):
    """Reporters may run at once on one tracker: every read is a fresh look (filing.py
    re-reads right before each create and converges afterwards)."""

    name: str

    def issues(self, since: float | None = None) -> list[Issue]:
        """Every bot issue (open and closed); ``since``: those changed at or after that time
        (seconds since the epoch), at least."""

    def get(self, number: int) -> Issue: ...

    def create(self, fid: str, title: str, body: str) -> Issue: ...

    def comments(self, number: int) -> list[Comment]: ...

    def comment(self, number: int, body: str) -> None: ...

    def delete_comment(self, number: int, comment_id: int) -> None:
        """Remove one comment (a repeat of another reporter's); one already gone is no error."""

    def update_body(self, number: int, body: str) -> None: ...

    def reopen(self, number: int) -> None: ...

    def close(self, number: int, reason: str = "completed", body: str | None = None) -> None:
        """Close with GitHub's ``state_reason`` (completed, duplicate), the body replaced with it
        when given (in one write: a duplicate leaves the bot's view whole or not at all)."""


def index_issues(issues: list[Issue]) -> dict[str, Issue]:
    idx: dict[str, Issue] = {}
    for iss in sorted(issues, key=lambda i: i.number):  # the oldest issue wins a duplicate marker
        for fid in marker_ids(iss.body):
            idx.setdefault(fid, iss)
    return idx


class NoneTracker:
    """Files nothing; every bug reads as new (the report says what would be filed)."""

    name = "none"

    def issues(self, since: float | None = None) -> list[Issue]:
        return []

    def get(self, number: int) -> Issue:
        return Issue(number, "open", "")

    def create(self, fid: str, title: str, body: str) -> Issue:
        return Issue(0, "open", body)

    def comments(self, number: int) -> list[Comment]:
        return []

    def comment(self, number: int, body: str) -> None:
        pass

    def delete_comment(self, number: int, comment_id: int) -> None:
        pass

    def update_body(self, number: int, body: str) -> None:
        pass

    def reopen(self, number: int) -> None:
        pass

    def close(self, number: int, reason: str = "completed", body: str | None = None) -> None:
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

    def issues(self, since: float | None = None) -> list[Issue]:
        return [self.get(n) for n in self._issues]  # one process writes them: all is fresh

    def get(self, number: int) -> Issue:
        v = self._issues[number]
        # The file is "# title", a blank line, then the body, as create wrote it: the body alone.
        text = self._file(number).read_text().split("\n\n", 1)
        return Issue(number, v["state"], text[-1], str(self._file(number)), v.get("state_reason", ""))

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

    def comments(self, number: int) -> list[Comment]:
        found = (re.fullmatch(rf"{number:04d}-comment-(\d+)\.md", p.name) for p in self.dir.glob(f"{number:04d}-comment-*.md"))
        return sorted((Comment(int(m.group(1)), (self.dir / m.group(0)).read_text()) for m in found if m),
                      key=lambda c: c.id)

    def delete_comment(self, number: int, comment_id: int) -> None:
        (self.dir / f"{number:04d}-comment-{comment_id}.md").unlink(missing_ok=True)

    def update_body(self, number: int, body: str) -> None:
        write_file(self._file(number), f"# {self._issues[number]['title']}\n\n{body}")

    def reopen(self, number: int) -> None:
        self._issues[number].update(state="open", state_reason="reopened")
        self._save()

    def close(self, number: int, reason: str = "completed", body: str | None = None) -> None:
        if body is not None:
            self.update_body(number, body)
        self._issues[number].update(state="closed", state_reason=reason)
        self._save()


__all__ = ["Comment", "FINGERPRINT_ID", "Issue", "IssueTracker", "MARKER", "ROOT_CAUSE_KEY", "TRACKING_KEY",
           "TrackerError", "marker_ids"]
