"""Which issue tracker a run files to, by name: ``github`` (PyGithub, imported only when chosen),
``files`` (a folder of Markdown files) or ``none``.  Apart from ``trackers`` so that imports flow
one way: the GitHub tracker builds on ``trackers``, and only this module names both."""

from __future__ import annotations

from typing import Any, Callable

from .trackers import FilesTracker, IssueTracker, NoneTracker


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
