"""Tests of tests/github_fake.py, driven through PyGithub over real HTTP.

Raw ``urllib`` is used only where PyGithub would hide what GitHub said (its
own retrying of rate limits and 5xx; see the github_fake module docstring).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

github = pytest.importorskip("github")
pytest.importorskip("jsonschema")

import requests  # noqa: E402  (PyGithub's transport; its RetryError is part of the findings)
from github import Auth, Github, GithubException  # noqa: E402

from .github_fake import DEFAULT_OPENAPI_PATH, GitHubFake  # noqa: E402

assert DEFAULT_OPENAPI_PATH.exists(), f"GitHub's OpenAPI description is missing: {DEFAULT_OPENAPI_PATH}"

REPO = "octo/bugs"


@pytest.fixture
def fake() -> Iterator[GitHubFake]:
    with GitHubFake() as f:
        f.add_repo(REPO)
        yield f
        # Every test ends with a clean contract and a token that stayed in its header.
        f.assert_no_violations()
        f.assert_token_not_leaked()


def client(fake: GitHubFake, *, base_url: str | None = None, **kw: Any) -> Github:
    """PyGithub as the bot would build it; throttling off unless a test asks for it."""
    kw.setdefault("retry", None)
    kw.setdefault("seconds_between_requests", None)
    kw.setdefault("seconds_between_writes", None)
    return Github(auth=Auth.Token(fake.token), base_url=base_url or fake.base_url, **kw)


def raw(
    fake: GitHubFake, method: str, path: str, body: Any = None, *, token: str | None = "default"
) -> tuple[int, dict[str, str], Any]:
    """One request with urllib (no retries): status, lower-case headers, JSON."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(fake.base_url + path, data=data, method=method)
    if token is not None:
        req.add_header("Authorization", f"token {fake.token if token == 'default' else token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, headers, payload = resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as e:
        status, headers, payload = e.code, dict(e.headers.items()), e.read()
    return status, {k.lower(): v for k, v in headers.items()}, json.loads(payload) if payload else None


# ---------------------------------------------------------------------------------------
# URLs, create / get / list
# ---------------------------------------------------------------------------------------
def test_plain_base_url_sends_paths_without_prefix(fake: GitHubFake) -> None:
    g = client(fake)
    repo = g.get_repo(REPO)
    assert repo.full_name == REPO and repo.url == f"{fake.base_url}/repos/{REPO}"
    issue = repo.create_issue("first", body="hello")
    assert issue.url == f"{fake.base_url}/repos/{REPO}/issues/1"
    paths = [r.path for r in fake.requests]
    assert paths == [f"/repos/{REPO}", f"/repos/{REPO}/issues"]


def test_enterprise_base_url_keeps_api_v3_prefix(fake: GitHubFake) -> None:
    # PyGithub uses the base_url's path verbatim as prefix; the fake echoes it in its URLs.
    g = client(fake, base_url=fake.enterprise_base_url)
    repo = g.get_repo(REPO)
    issue = repo.create_issue("via GHES form")
    assert issue.url == f"{fake.base_url}/api/v3/repos/{REPO}/issues/1"
    issue.create_comment("a comment")  # follows the absolute URL returned above
    assert [r.path for r in fake.requests] == [
        f"/api/v3/repos/{REPO}",
        f"/api/v3/repos/{REPO}/issues",
        f"/api/v3/repos/{REPO}/issues/1/comments",
    ]


def test_create_get_and_issue_shape(fake: GitHubFake) -> None:
    g = client(fake)
    repo = g.get_repo(REPO)
    created = repo.create_issue("crash in Conv2D", body="details", labels=["gbft", "bug"])
    assert (created.number, created.state, created.state_reason, created.closed_at) == (1, "open", None, None)
    assert [x.name for x in created.labels] == ["gbft", "bug"]
    assert created.user.login == fake.user
    got = repo.get_issue(1)
    assert (got.title, got.body, got.comments) == ("crash in Conv2D", "details", 0)
    assert got.html_url == f"{fake.base_url}/{REPO}/issues/1"
    data = fake.issue(REPO, 1)
    for key in ("id", "node_id", "url", "html_url", "number", "title", "body", "state", "state_reason", "labels",
                "user", "comments", "created_at", "updated_at", "closed_at", "closed_by", "author_association",
                "reactions", "timeline_url", "locked", "assignees", "milestone"):
        assert key in data, key
    # The unknown label was created, as GitHub does for users with push access.
    assert "gbft" in [x["name"] for x in fake.labels(REPO)]


def test_location_header_and_201(fake: GitHubFake) -> None:
    status, headers, body = raw(fake, "POST", f"/repos/{REPO}/issues", {"title": "t"})
    assert status == 201
    assert headers["location"] == body["url"] == f"{fake.base_url}/repos/{REPO}/issues/1"
    assert headers["content-type"] == "application/json; charset=utf-8"


def test_unknown_repo_and_issue_are_404(fake: GitHubFake) -> None:
    g = client(fake)
    with pytest.raises(github.UnknownObjectException):
        g.get_repo("octo/nothing")
    with pytest.raises(github.UnknownObjectException):
        g.get_repo(REPO).get_issue(99)


# ---------------------------------------------------------------------------------------
# Pagination
# ---------------------------------------------------------------------------------------
def test_paginate_75_issues_in_three_pages(fake: GitHubFake) -> None:
    for n in range(75):
        fake.add_issue(REPO, f"issue {n + 1}", body=f"body {n + 1}", labels=["gbft"])
    g = client(fake)
    repo = g.get_repo(REPO)
    fake.clear_logs()
    issues = list(repo.get_issues(state="all"))
    assert len(issues) == 75
    assert [i.number for i in issues] == list(range(75, 0, -1))  # created desc, GitHub's default
    gets = [r for r in fake.requests if r.method == "GET"]
    assert len(gets) == 3
    assert gets[0].path == f"/repos/{REPO}/issues"
    repo_id = repo.id
    assert [r.path for r in gets[1:]] == [f"/repositories/{repo_id}/issues"] * 2  # followed Link next
    assert [r.query.get("page") for r in gets] == [None, "2", "3"]
    # totalCount asks for per_page=1 and reads the page number of rel="last".
    assert repo.get_issues(state="all").totalCount == 75


def test_link_header_format_is_githubs(fake: GitHubFake) -> None:
    for n in range(75):
        fake.add_issue(REPO, f"issue {n + 1}")
    repo_id = client(fake).get_repo(REPO).id
    base = f"{fake.base_url}/repositories/{repo_id}/issues"

    _, headers, body = raw(fake, "GET", f"/repos/{REPO}/issues?state=all")
    assert len(body) == 30
    assert headers["link"] == (
        f'<{base}?state=all&page=2>; rel="next", <{base}?state=all&page=3>; rel="last"'
    )
    _, headers, body = raw(fake, "GET", f"/repositories/{repo_id}/issues?state=all&page=2")
    assert len(body) == 30
    assert headers["link"] == (
        f'<{base}?state=all&page=1>; rel="prev", <{base}?state=all&page=3>; rel="next", '
        f'<{base}?state=all&page=3>; rel="last", <{base}?state=all&page=1>; rel="first"'
    )
    _, headers, body = raw(fake, "GET", f"/repos/{REPO}/issues?per_page=30&page=3")
    assert len(body) == 15
    assert headers["link"] == f'<{base}?per_page=30&page=2>; rel="prev", <{base}?per_page=30&page=1>; rel="first"'
    # One page holds everything: no Link at all, as on GitHub.
    _, headers, body = raw(fake, "GET", f"/repos/{REPO}/issues?per_page=100")
    assert len(body) == 75 and "link" not in headers


def test_per_page_default_knob_and_pygithub_per_page(fake: GitHubFake) -> None:
    for n in range(12):
        fake.add_issue(REPO, f"issue {n + 1}")
    fake.per_page_default = 5
    _, headers, body = raw(fake, "GET", f"/repos/{REPO}/issues")
    assert len(body) == 5 and 'rel="last"' in headers["link"] and "page=3" in headers["link"]
    fake.clear_logs()
    issues = list(client(fake, per_page=100).get_repo(REPO).get_issues())
    assert len(issues) == 12
    assert fake.requests[-1].query == {"per_page": "100"}


# ---------------------------------------------------------------------------------------
# Filters, edit, comments, labels
# ---------------------------------------------------------------------------------------
def test_labels_and_state_filters(fake: GitHubFake) -> None:
    fake.add_issue(REPO, "a", labels=["gbft", "bug"])
    fake.add_issue(REPO, "b", labels=["gbft"], state="closed")
    fake.add_issue(REPO, "c", labels=["other"])
    repo = client(fake).get_repo(REPO)
    assert [i.title for i in repo.get_issues(labels=["gbft"])] == ["a"]
    assert sorted(i.title for i in repo.get_issues(state="all", labels=["gbft"])) == ["a", "b"]
    assert [i.title for i in repo.get_issues(state="all", labels=["gbft", "bug"])] == ["a"]
    assert [i.title for i in repo.get_issues(state="closed")] == ["b"]
    assert [i.title for i in repo.get_issues(state="all", labels=["GBFT"])] == ["b", "a"]  # case-insensitive
    assert list(repo.get_issues(labels=["nope"])) == []
    # Someone closes "a" on github.com behind the bot's back.
    fake.set_issue_state(REPO, 1, "closed", "not_planned")
    got = repo.get_issue(1)
    assert (got.state, got.state_reason) == ("closed", "not_planned") and got.closed_at is not None
    assert list(repo.get_issues(labels=["gbft"])) == []


def test_edit_state_with_state_reason(fake: GitHubFake) -> None:
    repo = client(fake).get_repo(REPO)
    issue = repo.create_issue("to close")
    issue.edit(state="closed", state_reason="not_planned")
    assert (issue.state, issue.state_reason) == ("closed", "not_planned")
    assert issue.closed_at is not None and issue.closed_by.login == fake.user
    issue.edit(state="open", state_reason="reopened")
    assert (issue.state, issue.state_reason, issue.closed_at) == ("open", "reopened", None)
    issue.edit(state="closed")  # no reason given: GitHub records "completed"
    assert issue.state_reason == "completed"
    issue.edit(body="new body", title="new title", labels=["x", "y"])
    got = repo.get_issue(issue.number)
    assert (got.title, got.body, got.state) == ("new title", "new body", "closed")
    assert [x.name for x in got.labels] == ["x", "y"]
    assert json.loads(fake.raw_log[-2].body) == {"body": "new body", "title": "new title", "labels": ["x", "y"]}


def test_invalid_state_reason_is_a_violation(fake: GitHubFake) -> None:
    client(fake).get_repo(REPO).create_issue("x")
    status, _, _ = raw(fake, "PATCH", f"/repos/{REPO}/issues/1", {"state": "closed", "state_reason": "wontfix"})
    assert status == 500
    assert any("state_reason" in v for v in fake.violations)
    fake.violations.clear()


def test_comments_create_list_edit(fake: GitHubFake) -> None:
    repo = client(fake).get_repo(REPO)
    issue = repo.create_issue("with comments")
    first = issue.create_comment("first")
    issue.create_comment("second")
    assert [c.body for c in issue.get_comments()] == ["first", "second"]
    first.edit("first, edited")
    assert [c["body"] for c in fake.comments(REPO, issue.number)] == ["first, edited", "second"]
    assert repo.get_issue(issue.number).comments == 2
    assert first.url == f"{fake.base_url}/repos/{REPO}/issues/comments/{first.id}"
    assert fake.requests[-2].method == "PATCH" and fake.requests[-2].path.endswith(f"/issues/comments/{first.id}")


def test_labels_endpoints(fake: GitHubFake) -> None:
    repo = client(fake).get_repo(REPO)
    label = repo.create_label("gbft", "d73a4a", "Filed by gbft-action")
    assert (label.name, label.color, label.description) == ("gbft", "d73a4a", "Filed by gbft-action")
    assert repo.get_label("gbft").id == label.id  # GET /labels/{name}: outside the trimmed description
    with pytest.raises(github.UnknownObjectException):
        repo.get_label("missing label")
    with pytest.raises(GithubException) as e:
        repo.create_label("GBFT", "d73a4a")
    assert e.value.status == 422 and e.value.data["errors"][0]["code"] == "already_exists"
    with pytest.raises(GithubException) as e:
        repo.create_label("colour", "not-a-colour")
    assert e.value.status == 422 and e.value.data["errors"][0]["field"] == "color"
    names = [x.name for x in repo.get_labels()]
    assert "gbft" in names and "good first issue" in names  # GitHub's default labels exist
    issue = repo.create_issue("labelled later")
    issue.add_to_labels("gbft", "needs triage")
    assert [x.name for x in repo.get_issue(issue.number).labels] == ["gbft", "needs triage"]


# ---------------------------------------------------------------------------------------
# Search
# ---------------------------------------------------------------------------------------
def test_search_honours_the_index_lag(fake: GitHubFake) -> None:
    fake.search_lag = 0.6
    g = client(fake)
    repo = g.get_repo(REPO)
    repo.create_issue("crash", body="gbft-fingerprint: 9f3a1c\n\nmore", labels=["gbft"])

    def search() -> list[int]:
        return [i.number for i in g.search_issues('"gbft-fingerprint: 9f3a1c" in:body', repo=REPO,
                                                  **{"is": "issue", "label": "gbft"})]

    assert search() == []  # just created: not in the index yet
    time.sleep(0.7)
    assert search() == [1]
    # Edits lag too: a closed issue is still "open" in the index for a while.
    repo.get_issue(1).edit(state="closed")
    assert [i.state for i in g.search_issues("9f3a1c", repo=REPO)] == ["open"]
    fake.flush_search_index()
    assert [i.state for i in g.search_issues("9f3a1c", repo=REPO)] == ["closed"]


def test_search_query_features(fake: GitHubFake) -> None:
    fake.add_issue(REPO, "MNN crash in Conv2D", body="fp: aa11 bb22", labels=["gbft", "bug"])
    fake.add_issue(REPO, "TFLite mismatch", body="fp: cc33", labels=["gbft"], state="closed")
    fake.add_issue(REPO, "unrelated", body="nothing")
    n = fake.add_issue(REPO, "with a comment", body="")
    fake.add_comment(REPO, n, "mentions aa11 too")
    g = client(fake)

    def numbers(q: str) -> list[int]:
        return sorted(i.number for i in g.search_issues(q))

    assert numbers(f"repo:{REPO} is:issue label:gbft") == [1, 2]
    assert numbers(f"repo:{REPO} is:issue label:gbft is:open") == [1]
    assert numbers(f"repo:{REPO} is:closed") == [2]
    assert numbers(f'repo:{REPO} "fp: aa11"') == [1]  # punctuation ignored, like GitHub's tokenizer
    assert numbers(f"repo:{REPO} aa11") == [1, 4]  # comments are searched by default
    assert numbers(f"repo:{REPO} aa11 in:body") == [1]
    assert numbers(f"repo:{REPO} aa1") == []  # whole words, not substrings
    assert numbers(f"repo:{REPO} -label:gbft") == [3, 4]
    assert numbers(f"repo:{REPO} is:pr") == []
    assert numbers(f'repo:{REPO} label:"bug","gbft" mnn') == [1]
    result = g.search_issues(f"repo:{REPO} label:gbft")
    assert result.totalCount == 2


def test_search_paginates_like_github(fake: GitHubFake) -> None:
    for n in range(35):
        fake.add_issue(REPO, f"match {n}", body="needle")
    g = client(fake)
    result = g.search_issues(f"repo:{REPO} needle")
    assert result.totalCount == 35
    assert len(list(g.search_issues(f"repo:{REPO} needle"))) == 35
    q = urllib.request.quote(f"repo:{REPO} needle")
    _, headers, body = raw(fake, "GET", f"/search/issues?q={q}")
    assert body["total_count"] == 35 and len(body["items"]) == 30 and body["incomplete_results"] is False
    plus = urllib.parse.quote_plus(f"repo:{REPO} needle")
    link = f"{fake.base_url}/search/issues?q={plus}"
    assert headers["link"] == f'<{link}&page=2>; rel="next", <{link}&page=2>; rel="last"'
    status, _, body = raw(fake, "GET", f"/search/issues?q={q}&per_page=100&page=11")
    assert status == 422 and "first 1000" in body["errors"][0]["message"]


def test_search_errors(fake: GitHubFake) -> None:
    status, _, body = raw(fake, "GET", "/search/issues?q=" + urllib.request.quote("x" * 257 + f" repo:{REPO}"))
    assert status == 422 and body["errors"][0]["message"] == "The search is longer than 256 characters."
    status, _, body = raw(fake, "GET", "/search/issues?q=" + urllib.request.quote("bug repo:octo/missing"))
    assert status == 422 and "cannot be searched" in body["errors"][0]["message"]
    # A qualifier GitHub has but the fake does not implement: loud, not silently wrong.
    status, _, _ = raw(fake, "GET", "/search/issues?q=" + urllib.request.quote(f"repo:{REPO} created:>2024-01-01"))
    assert status == 500 and any("created:" in v for v in fake.violations)
    fake.violations.clear()
    # q is required by the description.
    status, _, _ = raw(fake, "GET", "/search/issues")
    assert status == 500 and any("'q' is required" in v for v in fake.violations)
    fake.violations.clear()


def test_search_rate_limit_30_a_minute(fake: GitHubFake) -> None:
    for _ in range(30):
        status, headers, _ = raw(fake, "GET", "/search/issues?q=" + urllib.request.quote(f"repo:{REPO} x"))
        assert status == 200
    assert headers["x-ratelimit-resource"] == "search" and headers["x-ratelimit-remaining"] == "0"
    status, headers, body = raw(fake, "GET", "/search/issues?q=" + urllib.request.quote(f"repo:{REPO} x"))
    assert status == 403 and body["message"].startswith("API rate limit exceeded")
    assert int(headers["x-ratelimit-reset"]) > time.time()


# ---------------------------------------------------------------------------------------
# Authentication and GitHub's limits
# ---------------------------------------------------------------------------------------
def test_401_without_or_with_a_wrong_token(fake: GitHubFake) -> None:
    status, headers, body = raw(fake, "GET", f"/repos/{REPO}", token=None)
    assert status == 401 and body["message"] == "Requires authentication"
    assert headers["x-ratelimit-limit"] == "60"
    status, _, body = raw(fake, "GET", f"/repos/{REPO}", token="ghp_wrong")
    assert status == 401 and body["message"] == "Bad credentials"
    with pytest.raises(github.BadCredentialsException):
        Github(auth=Auth.Token("ghp_wrong"), base_url=fake.base_url, retry=None).get_repo(REPO)
    # Bearer works as well as token.
    req = urllib.request.Request(f"{fake.base_url}/repos/{REPO}", headers={"Authorization": f"Bearer {fake.token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


def test_422_on_a_body_over_65536_characters(fake: GitHubFake) -> None:
    repo = client(fake).get_repo(REPO)
    with pytest.raises(GithubException) as e:
        repo.create_issue("too long", body="x" * 70_000)
    assert e.value.status == 422
    assert e.value.data["message"] == "Validation Failed"
    assert e.value.data["errors"] == [
        {
            "resource": "Issue",
            "code": "custom",
            "field": "body",
            "message": "body is too long (maximum is 65536 characters)",
        }
    ]
    assert fake.issues(REPO) == []
    issue = repo.create_issue("exactly at the limit", body="x" * 65_536)
    with pytest.raises(GithubException) as e:
        issue.create_comment("y" * 65_537)
    assert e.value.status == 422 and e.value.data["errors"][0]["resource"] == "IssueComment"
    with pytest.raises(GithubException) as e:
        issue.edit(body="z" * 70_000)
    assert e.value.status == 422
    with pytest.raises(GithubException) as e:
        repo.create_issue("t" * 257)
    assert e.value.data["errors"][0]["message"] == "title is too long (maximum is 256 characters)"
    assert len(fake.issues(REPO)) == 1


# ---------------------------------------------------------------------------------------
# Rate limits: what GitHub says (raw), and what PyGithub makes of it
# ---------------------------------------------------------------------------------------
def test_secondary_rate_limit_answers(fake: GitHubFake) -> None:
    fake.rate_limit_next(1, retry_after=2, status=403)
    status, _, _ = raw(fake, "GET", f"/repos/{REPO}")  # reads are not affected
    assert status == 200
    status, headers, body = raw(fake, "POST", f"/repos/{REPO}/issues", {"title": "t"})
    assert status == 403
    assert headers["retry-after"] == "2"
    assert body["message"].startswith("You have exceeded a secondary rate limit.")
    assert body["documentation_url"].endswith("#about-secondary-rate-limits")
    assert int(headers["x-ratelimit-remaining"]) > 0
    assert fake.issues(REPO) == []  # nothing happened
    status, _, _ = raw(fake, "POST", f"/repos/{REPO}/issues", {"title": "t"})
    assert status == 201

    fake.rate_limit_next(1, retry_after=1, status=429)
    status, headers, _ = raw(fake, "POST", f"/repos/{REPO}/issues/1/comments", {"body": "c"})
    assert status == 429 and headers["retry-after"] == "1"

    fake.rate_limit_reset_next(1, reset_in=30)
    status, headers, body = raw(fake, "PATCH", f"/repos/{REPO}/issues/1", {"state": "closed"})
    assert status == 403 and "retry-after" not in headers
    assert headers["x-ratelimit-remaining"] == "0"
    assert 25 <= int(headers["x-ratelimit-reset"]) - time.time() <= 31
    assert body["message"].startswith("You have exceeded a secondary rate limit.")

    fake.rate_limit_reset_next(1, reset_in=5, primary=True)
    status, headers, body = raw(fake, "POST", f"/repos/{REPO}/labels", {"name": "n"})
    assert status == 403 and body["message"].startswith("API rate limit exceeded")
    assert fake.issue(REPO, 1)["state"] == "open"


def test_pygithub_without_retry_raises_rate_limit_exceptions(fake: GitHubFake) -> None:
    repo = client(fake, retry=None).get_repo(REPO)
    fake.rate_limit_next(1, retry_after=7, status=403)
    with pytest.raises(github.RateLimitExceededException) as e:
        repo.create_issue("t")
    assert e.value.status == 403 and e.value.headers["retry-after"] == "7"
    fake.rate_limit_next(1, retry_after=7, status=429)
    with pytest.raises(GithubException) as e:
        repo.create_issue("t")
    assert e.value.status == 429 and not isinstance(e.value, github.RateLimitExceededException)
    assert fake.issues(REPO) == []


def test_pygithub_default_retry_waits_retry_after_and_resends_post(fake: GitHubFake) -> None:
    repo = client(fake, retry=Github.default_retry).get_repo(REPO)
    fake.rate_limit_next(1, retry_after=1, status=403)
    started = time.monotonic()
    repo.create_issue("after a secondary limit")
    assert time.monotonic() - started >= 1.0
    posts = [r for r in fake.writes() if r.method == "POST"]
    assert len(posts) == 2 and posts[1].time - posts[0].time >= 1.0
    assert len(fake.issues(REPO)) == 1


def test_pygithub_default_retry_gives_up_with_requests_retry_error(fake: GitHubFake) -> None:
    repo = client(fake, retry=Github.default_retry).get_repo(REPO)
    fake.rate_limit_next(20, retry_after=0, status=403)
    with pytest.raises(requests.exceptions.RetryError):
        repo.create_issue("never")
    assert len(fake.writes()) == 11  # 1 + total=10 retries


def test_pygithub_default_retry_resends_post_on_429_with_retry_after(fake: GitHubFake) -> None:
    # 429 is not in GithubRetry's status_forcelist, but urllib3 retries 413/429/503 carrying Retry-After.
    repo = client(fake, retry=Github.default_retry).get_repo(REPO)
    fake.rate_limit_next(1, retry_after=0, status=429)
    repo.create_issue("after a 429")
    assert [r.method for r in fake.writes()] == ["POST", "POST"]
    assert len(fake.issues(REPO)) == 1


def test_pygithub_secondary_limit_without_retry_after_ignores_reset(fake: GitHubFake) -> None:
    # GithubRetry waits secondary_rate_wait (default 60 s) for a secondary limit, whatever x-ratelimit-reset says.
    repo = client(fake, retry=github.GithubRetry(secondary_rate_wait=0.3)).get_repo(REPO)
    fake.rate_limit_reset_next(1, reset_in=30)
    started = time.monotonic()
    repo.create_issue("after 0.3 s, not 30 s")
    assert 0.3 <= time.monotonic() - started < 5
    assert len(fake.issues(REPO)) == 1


def test_pygithub_primary_limit_beyond_max_wait_raises(fake: GitHubFake) -> None:
    repo = client(fake, retry=github.GithubRetry(max_rate_limit_wait=2)).get_repo(REPO)
    fake.rate_limit_reset_next(1, reset_in=600, primary=True)
    with pytest.raises(github.GithubException) as e:
        repo.create_issue("would wait 10 minutes")
    assert type(e.value).__name__ == "RateLimitExceededExceedsMaxWait"
    assert fake.issues(REPO) == []


def test_pygithub_does_not_retry_patch(fake: GitHubFake) -> None:
    repo = client(fake, retry=Github.default_retry).get_repo(REPO)
    issue = repo.create_issue("t")
    fake.rate_limit_next(1, retry_after=0, status=403)
    with pytest.raises(github.RateLimitExceededException):
        issue.edit(state="closed")  # PATCH is not in GithubRetry's allowed_methods
    assert [r.method for r in fake.writes()] == ["POST", "PATCH"]


# ---------------------------------------------------------------------------------------
# 502 after store
# ---------------------------------------------------------------------------------------
def test_502_after_store_leaves_exactly_one_issue_without_retry(fake: GitHubFake) -> None:
    repo = client(fake, retry=None).get_repo(REPO)
    fake.fail_next_create_with_502()
    with pytest.raises(GithubException) as e:
        repo.create_issue("stored anyway", body="fp: 1234", labels=["gbft"])
    assert e.value.status == 502
    assert [i["title"] for i in fake.issues(REPO)] == ["stored anyway"]
    # A careful client looks before filing again, and finds it.
    assert [i.title for i in repo.get_issues(state="all", labels=["gbft"])] == ["stored anyway"]


def test_502_after_store_with_pygithub_default_retry_duplicates(fake: GitHubFake) -> None:
    # Documents the hazard: GithubRetry resends a POST on 5xx, so GitHub files it twice.
    repo = client(fake, retry=Github.default_retry).get_repo(REPO)
    fake.fail_next_create_with_502()
    issue = repo.create_issue("filed twice")
    assert issue.number == 2
    assert [i["title"] for i in fake.issues(REPO)] == ["filed twice", "filed twice"]


# ---------------------------------------------------------------------------------------
# Contract checking
# ---------------------------------------------------------------------------------------
def test_a_response_violating_the_schema_is_detected(fake: GitHubFake, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = client(fake).get_repo(REPO)
    repo.create_issue("fine")
    original = GitHubFake._issue_json

    def broken(self: GitHubFake, *args: Any, **kwargs: Any) -> dict[str, Any]:
        data = original(self, *args, **kwargs)
        del data["number"]  # required by the issue schema
        return data

    monkeypatch.setattr(GitHubFake, "_issue_json", broken)
    with pytest.raises(GithubException) as e:
        repo.get_issue(1)
    assert e.value.status == 500
    assert any("'number' is a required property" in v for v in fake.violations)
    with pytest.raises(AssertionError, match="number"):
        fake.assert_no_violations()
    fake.violations.clear()


def test_a_request_violating_the_schema_is_detected(fake: GitHubFake) -> None:
    status, _, body = raw(fake, "POST", f"/repos/{REPO}/issues", {"body": "no title"})
    assert status == 500 and "'title' is a required property" in body["message"]
    status, _, _ = raw(fake, "POST", f"/repos/{REPO}/labels", {"name": 5})
    assert status == 500
    status, _, _ = raw(fake, "GET", f"/repos/{REPO}/issues?state=opened")
    assert status == 500
    status, _, _ = raw(fake, "GET", f"/repos/{REPO}/issues/1/events")  # not implemented: loud
    assert status == 500
    assert len(fake.violations) >= 4 and fake.issues(REPO) == []
    fake.violations.clear()


def test_all_answers_validate_against_the_description(fake: GitHubFake) -> None:
    # A tour of every operation; the fixture's assert_no_violations does the checking.
    g = client(fake)
    g.get_rate_limit()
    repo = g.get_repo(REPO)
    repo.create_label("gbft", "d73a4a", "desc")
    issue = repo.create_issue("t", labels=["gbft"])  # body omitted: null in the answer
    issue.add_to_labels("bug")
    issue.create_comment("c").edit("c2")
    list(issue.get_comments())
    issue.edit(state="closed", state_reason="not_planned")
    list(repo.get_issues(state="all"))
    list(repo.get_labels())
    fake.flush_search_index()
    list(g.search_issues(f"repo:{REPO} label:gbft"))
    assert not fake.violations


# ---------------------------------------------------------------------------------------
# Logs, headers, throttling, the token
# ---------------------------------------------------------------------------------------
def test_request_log_write_spacing_and_no_token(fake: GitHubFake) -> None:
    g = client(fake, seconds_between_writes=1.0)  # PyGithub's own default throttle
    repo = g.get_repo(REPO)
    repo.create_issue("one")
    repo.create_issue("two")
    writes = fake.writes()
    assert [w.method for w in writes] == ["POST", "POST"]
    assert writes[1].time - writes[0].time >= 0.95
    for r in fake.requests:
        assert "authorization" not in r.headers
        assert fake.token not in repr(r)
    # The server did see the token (in the header only).
    assert any(fake.token in v for x in fake.raw_log for k, v in x.headers if k.lower() == "authorization")


def test_token_leak_is_detected(fake: GitHubFake) -> None:
    repo = client(fake).get_repo(REPO)
    repo.create_issue("oops", body=f"env: GITHUB_TOKEN={fake.token}")
    assert fake.token_leaks and "request body" in fake.token_leaks[0]
    assert all(fake.token not in json.dumps(r.query) for r in fake.requests)
    with pytest.raises(AssertionError, match="token"):
        fake.assert_token_not_leaked()
    fake.token_leaks.clear()
    repo.get_issue(1).edit(body="redacted")  # so that the fixture's final check passes


def test_rate_limit_endpoint_and_headers(fake: GitHubFake) -> None:
    g = client(fake)
    overview = g.get_rate_limit()
    assert overview.resources.core.limit == 5000
    assert overview.resources.search.limit == 30
    _, h1, _ = raw(fake, "GET", f"/repos/{REPO}")
    _, h2, _ = raw(fake, "GET", f"/repos/{REPO}")
    assert h1["x-ratelimit-resource"] == "core" and h1["x-ratelimit-limit"] == "5000"
    assert int(h2["x-ratelimit-used"]) == int(h1["x-ratelimit-used"]) + 1
    assert int(h2["x-ratelimit-remaining"]) == 5000 - int(h2["x-ratelimit-used"])
    assert int(h1["x-ratelimit-reset"]) > time.time()
    assert h1["server"] == "GitHub.com" and "x-github-request-id" in h1


def test_listed_issues_complete_lazily_with_one_get_each(fake: GitHubFake) -> None:
    # PyGithub fetches an issue again when code reads an attribute the list did not carry.
    for n in range(3):
        fake.add_issue(REPO, f"i{n}", labels=["gbft"])
    repo = client(fake).get_repo(REPO)
    fake.clear_logs()
    plain = [i for i in repo.get_issues(state="all", labels=["gbft"]) if i.pull_request is None]
    assert len(plain) == 3
    assert sorted(r.path for r in fake.requests) == sorted(
        [f"/repos/{REPO}/issues"] + [f"/repos/{REPO}/issues/{n}" for n in (1, 2, 3)]
    )


def test_knobs_are_safe_from_other_threads(fake: GitHubFake) -> None:
    import threading

    g = client(fake)
    repo = g.get_repo(REPO)
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for j in range(5):
                repo.create_issue(f"t{k}-{j}")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for _ in range(20):
        fake.search_lag = 0.1
        fake.per_page_default = 30
    for t in threads:
        t.join()
    assert not errors
    numbers = sorted(i["number"] for i in fake.issues(REPO))
    assert numbers == list(range(1, 21))
