"""The GitHub issue tracker (PyGithub), careful about GitHub's limits.

* Writes are spaced by at least ``min_interval`` seconds (GitHub's secondary
  limits: at most 80 content-creating requests a minute).
* A 403/429 with ``retry-after`` or ``x-ratelimit-reset`` is waited out and
  retried; PyGithub's own retrying is off (``retry=None``) so that this policy
  is the only one and a POST is never repeated behind our back.
* A create that fails with a 5xx may still have created the issue: before
  retrying, list the label again and look for the marker.
* Existing issues are found by listing the label (open and closed, paginated),
  not by search, whose index lags behind creation.
* The token is never printed: it is kept out of reprs and redacted from logs.
"""

from __future__ import annotations

import contextlib
import logging
import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

import github
import requests
from github import Auth, Github, GithubException

from .trackers import Comment, Issue, TrackerError, index_issues

LABEL_COLOR = "d73a4a"


class RedactToken(logging.Filter):
    def __init__(self, token: str) -> None:
        super().__init__()
        self._token = token

    def filter(self, record: logging.LogRecord) -> bool:
        if self._token and self._token in record.getMessage():
            record.msg = record.getMessage().replace(self._token, "***")
            record.args = ()
        return True


class GitHubTracker:
    name = "github"

    def __init__(self, repo: str, token: str, base_url: str = "https://api.github.com", label: str = "gbft",
                 min_interval: float = 1.0, max_retries: int = 5, sleep: Callable[[float], None] = time.sleep,
                 **_: Any) -> None:
        if not token:
            raise ValueError("the github tracker needs a token (see --token-env)")
        self._redact = RedactToken(token)
        for name in ("github", "urllib3", "gbft_action"):
            logging.getLogger(name).addFilter(self._redact)
        # Our own pacing and retry policy only: PyGithub's default retry resends a POST
        # after a 5xx (a duplicate issue) and its throttle would add to ours.
        self._gh = Github(auth=Auth.Token(token), base_url=base_url, retry=None, per_page=100,
                          seconds_between_requests=None, seconds_between_writes=None)
        self.label = label
        self.min_interval = min_interval
        self.max_retries = max_retries
        self._sleep = sleep
        self._last_write = 0.0
        self.repo_name, self.base_url = repo, base_url
        self._comments: dict[int, Any] = {}  # listed comments by id: what delete_comment deletes
        with _setup(repo, base_url):
            self._repo = self._call(lambda: self._gh.get_repo(repo))
            self._ensure_label()

    def __repr__(self) -> str:  # never show the token
        return f"GitHubTracker(repo={self.repo_name!r}, label={self.label!r})"

    # -- reading ----------------------------------------------------------------------
    def issues(self, since: float | None = None) -> list[Issue]:
        # Pull requests carry no gbft marker, so they fall out of the index by
        # themselves; reading i.pull_request would cost a GET per issue.  Listed, never
        # searched: the search index lags behind creation by seconds to minutes.
        kw: dict[str, object] = {"state": "all", "labels": [self.label]}
        if since is not None:
            kw["since"] = datetime.fromtimestamp(since, timezone.utc)
        with _setup(self.repo_name, self.base_url):
            return [_issue(i) for i in self._call(lambda: list(self._repo.get_issues(**kw)))]

    def get(self, number: int) -> Issue:
        with _refused(number):
            return _issue(self._issue(number))

    def comments(self, number: int) -> list[Comment]:
        with _refused(number):
            found = self._call(lambda: list(self._issue(number).get_comments()))
        self._comments.update((c.id, c) for c in found)
        return [Comment(c.id, c.body or "", c.user.login if c.user else "") for c in found]

    # -- writing ----------------------------------------------------------------------
    def create(self, fid: str, title: str, body: str) -> Issue:
        with _refused(None):
            return self._create(fid, title, body)

    def _create(self, fid: str, title: str, body: str) -> Issue:
        for attempt in range(self.max_retries + 1):
            try:
                i = self._write(lambda: self._repo.create_issue(title=title, body=body, labels=[self.label]))
                return _issue(i)
            except GithubException as e:
                if e.status < 500 or attempt == self.max_retries:
                    raise
                # The issue may exist although the answer was an error: never file it twice.
                found = index_issues(self.issues()).get(fid)
                if found is not None:
                    return found
                self._sleep(min(2 ** attempt, 30))
        raise AssertionError("unreachable")

    def comment(self, number: int, body: str) -> None:
        with _refused(number):
            self._write(lambda: self._issue(number).create_comment(body))

    def delete_comment(self, number: int, comment_id: int) -> None:
        try:
            with _refused(number):
                self._write(lambda: self._comments[comment_id].delete())
        except TrackerError as e:
            if e.status != 404:  # deleted by another reporter first: what was asked is done
                raise

    def update_body(self, number: int, body: str) -> None:
        with _refused(number):
            self._write(lambda: self._issue(number).edit(body=body))

    def reopen(self, number: int) -> None:
        with _refused(number):
            self._write(lambda: self._issue(number).edit(state="open", state_reason="reopened"))

    def close(self, number: int, reason: str = "completed", body: str | None = None) -> None:
        kw: dict[str, object] = {"state": "closed", "state_reason": reason}
        if body is not None:
            kw["body"] = body
        with _refused(number):
            self._write(lambda: self._issue(number).edit(**kw))

    # -- plumbing ---------------------------------------------------------------------
    def _issue(self, number: int) -> Any:
        return self._call(lambda: self._repo.get_issue(number))

    def _ensure_label(self) -> None:
        try:
            self._call(lambda: self._repo.get_label(self.label))
        except GithubException as e:
            if e.status != 404:
                raise
            try:
                self._write(lambda: self._repo.create_label(self.label, LABEL_COLOR, "Filed by gbft-action"))
            except GithubException as e:  # 422 already_exists: another reporter created it meanwhile
                if e.status != 422:
                    raise

    def _write(self, fn: Callable[[], Any]) -> Any:
        wait = self._last_write + self.min_interval - time.monotonic()
        if wait > 0:
            self._sleep(wait)
        try:
            return self._call(fn)
        finally:
            self._last_write = time.monotonic()

    def _call(self, fn: Callable[[], Any]) -> Any:
        """Run one API call, waiting out rate limits (retry-after, x-ratelimit-reset)."""
        for attempt in range(self.max_retries + 1):
            try:
                return fn()
            except GithubException as e:
                delay = rate_limit_delay(e)
                if delay is None or attempt == self.max_retries:
                    raise
                self._sleep(delay)
        raise AssertionError("unreachable")


def _issue(i: Any) -> Issue:
    return Issue(i.number, i.state, i.body or "", i.html_url, i.state_reason or "", i.user.login if i.user else "")


class TrackerSetupError(ValueError):
    """GitHub cannot be used at all (unreachable, bad credentials, no permission): one line."""


@contextlib.contextmanager
def _setup(repo: str, url: str) -> Iterator[None]:
    """What can go wrong before any issue is touched, as one line naming the setting to fix."""
    try:
        yield
    except GithubException as e:
        message = _message(e)
        hint = {401: "the token was rejected: check the token (--token-env / github-token)",
                403: f"the token may not write issues or labels in {repo}: the job needs 'issues: write'",
                404: f"repository {repo} not found, or the token cannot see it"}.get(e.status, "GitHub refused")
        raise TrackerSetupError(f"{hint} ({e.status} {str(message)[:100]})") from None
    except (requests.exceptions.RequestException, OSError) as e:
        raise TrackerSetupError(f"cannot reach the GitHub API at {url} "
                                f"({type(e).__name__}): check --base-url / GITHUB_API_URL") from None


@contextlib.contextmanager
def _refused(number: int | None) -> Iterator[None]:
    """GitHub's refusal of one issue's write as a TrackerError, with GitHub's own message."""
    try:
        yield
    except GithubException as e:
        raise TrackerError(number, e.status, (_message(e) or "error")[:200]) from None


def _message(e: GithubException) -> str:
    """GitHub's own words for an error answer ("" when it gave none)."""
    return str(e.data.get("message", "")) if isinstance(e.data, dict) else ""


def rate_limit_delay(e: GithubException) -> float | None:
    """Seconds to wait for a rate-limit answer, or None when it is not one."""
    if e.status not in (403, 429):
        return None
    headers = {k.lower(): v for k, v in (e.headers or {}).items()}
    if "retry-after" in headers:
        try:
            return max(0.0, float(headers["retry-after"]))
        except ValueError:
            return 60.0
    if headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
        try:
            return max(0.0, float(headers["x-ratelimit-reset"]) - time.time()) + 1.0
        except ValueError:
            return 60.0
    if e.status == 429 or isinstance(e, github.RateLimitExceededException):
        return 60.0
    return None
