"""A local GitHub REST API server for tests: real HTTP, GitHub's contract.

``GitHubFake`` serves the issue-bot subset of GitHub's REST API from a
``ThreadingHTTPServer`` on 127.0.0.1 (a free port, a background thread) so
that PyGithub talks to it over real HTTP, exactly as it talks to GitHub::

    with GitHubFake() as fake:
        fake.add_repo("octo/bugs")
        gh = github.Github(auth=github.Auth.Token(fake.token), base_url=fake.base_url, retry=None)
        issue = gh.get_repo("octo/bugs").create_issue("title", body="body", labels=["gbft"])
        fake.assert_no_violations()

Contract checking
-----------------
Every request (query parameters and JSON body) and every response body is
validated against the operation in GitHub's OpenAPI description (the trimmed
2022-05-23 copy in tests/data/github-openapi, or ``$GBFT_GITHUB_OPENAPI``).
OpenAPI 3.0 schemas are converted to JSON Schema draft 4 first (``nullable``
becomes a type union, ``$ref`` siblings are dropped as OpenAPI 3.0 says,
``additionalProperties: false`` is dropped because GitHub keeps adding fields)
and the newer fields the README lists are overlaid (``state_reason`` as input
and output; also a nullable ``body`` in search items, which the description
types as a plain string although an issue without a body has ``null``).
A mismatch is never silent: it is appended to ``violations`` (token
redacted) and the request is answered 500, so the client fails loudly and
``assert_no_violations()`` names the cause.  Calls to operations the fake does
not implement are violations too.  One operation that is not in the trimmed
description but that GitHub has and the bot uses, ``GET
/repos/{owner}/{repo}/labels/{name}``, is added with the ``label`` schema.

What PyGithub does (found by reading PyGithub 2.10.0, urllib3 2.8.0,
requests 2.34.2 as installed here, and checked by tests/test_github_fake.py)
---------------------------------------------------------------------------
* URL prefix.  ``Requester`` uses the *path* of ``base_url`` verbatim as the
  prefix of every request (``o.path.rstrip("/")``); it never adds
  ``/api/v3`` by itself.  ``base_url="http://127.0.0.1:PORT"`` sends
  ``/repos/...``; ``base_url="http://127.0.0.1:PORT/api/v3"`` (the GitHub
  Enterprise form) sends ``/api/v3/repos/...``.  Absolute URLs that come back
  in responses (``url`` fields, ``Link`` headers) are cut down to path+query
  and sent to the base_url's host and port.  The fake accepts both forms and
  echoes the prefix it was called with in every URL it returns.
* Retries, default.  ``Github(retry=...)`` defaults to
  ``Github.default_retry = GithubRetry()`` (the default since 2.1.0): a
  urllib3 ``Retry`` with ``total=10``, ``backoff_factor=0``,
  ``status_forcelist = 500..599 + [403]`` and ``allowed_methods`` = urllib3's
  defaults (HEAD, GET, PUT, DELETE, OPTIONS, TRACE) *plus POST*; PATCH is not
  retried.  Consequences:

  - a POST answered 5xx is re-sent at once, up to 10 times: a create that
    GitHub stored but answered 502 is filed twice (the fake's
    ``fail_next_create_with_502`` shows this);
  - a 403 is retried only when it has ``Retry-After`` (urllib3 sleeps that
    long, capped at ``Retry.DEFAULT_RETRY_AFTER_MAX`` = 6 h) or its message is
    a rate-limit message; a secondary limit without ``Retry-After`` waits
    ``secondary_rate_wait`` = 60 s regardless of ``x-ratelimit-reset``; a
    primary limit ("API rate limit exceeded") waits until
    ``X-RateLimit-Reset`` + 1 s.  ``GithubRetry(max_rate_limit_wait=...)``
    raises ``RateLimitExceededExceedsMaxWait`` instead of waiting longer;
  - a 429 is not in ``status_forcelist`` but urllib3 retries 413/429/503 that
    carry ``Retry-After`` (``Retry.RETRY_AFTER_STATUS_CODES``) for allowed
    methods, so a POST answered 429 + ``retry-after`` is re-sent too;
  - when the retries run out, the caller gets
    ``requests.exceptions.RetryError`` (urllib3 ``MaxRetryError``), not a
    ``GithubException``.
* ``retry=None`` installs requests' ``DEFAULT_RETRIES`` (0): nothing is
  retried; a 403 with a rate-limit message raises
  ``github.RateLimitExceededException`` (``.status``, ``.headers`` with
  lower-case keys such as ``retry-after``), a 429 raises a plain
  ``GithubException`` with status 429, a 5xx raises ``GithubException``.
  ``retry=<int>`` becomes ``Retry.from_int``: connection errors only, no
  status retries.  The bot (gbft_action/report/github.py) uses ``retry=None``
  and its own policy, which is the safe choice for non-idempotent POSTs.
* Throttling.  Since 2.1.0 PyGithub sleeps on its own between requests:
  ``seconds_between_requests=0.25`` and ``seconds_between_writes=1.0``
  (``None`` disables them).
* Lazy completion.  Objects built from a list or a search are not
  "completed": reading an attribute that the JSON did not carry (for a plain
  issue, ``Issue.pull_request``) sends one GET for that object's ``url``.

Limits and behaviour the fake enforces as GitHub does
-----------------------------------------------------
* 401 without ``Authorization: token|Bearer <token>`` ("Requires
  authentication") or with a wrong token ("Bad credentials").
* Issue and comment bodies longer than 65,536 characters, issue titles
  longer than 256: 422 "Validation Failed" with a ``custom`` error.
* Pagination: ``per_page`` default 30 (``per_page_default``), at most 100;
  ``Link`` headers in GitHub's format and order (prev, next, last, first),
  pointing at ``/repositories/{id}/...`` like GitHub does; no ``Link`` when
  everything fits on one page.
* Search: ``q`` qualifiers ``repo:``, ``is:issue|pr|open|closed``,
  ``type:``, ``state:``, ``label:`` (quoted, comma = or, ``-label:``),
  ``no:label``, ``in:title|body|comments``, ``author:``, quoted phrases and
  words (case-insensitive, matched on ``\\w+`` tokens, as GitHub's tokenizer
  ignores punctuation); at most 256 characters of free text; only the first
  1000 results; 30 search requests a minute (``search_requests_per_minute``);
  an index that lags ``search_lag`` seconds behind every change (creation and
  edits alike).  Search qualifiers GitHub has but the fake does not implement
  are violations rather than silently wrong answers.
* ``X-RateLimit-*`` headers on every answer (core 5000/h, search 30/min).
* State changes: closing sets ``closed_at``, ``closed_by`` and
  ``state_reason`` (default ``completed``); reopening clears them and sets
  ``state_reason`` to ``reopened``; ``state_reason`` is ignored unless
  ``state`` changes (GitHub's documented rule).  Labels named on an issue
  that the repository lacks are created, as GitHub does.
"""

from __future__ import annotations

import base64
import copy
import hmac
import http.server
import json
import math
import os
import re
import secrets
import socket
import threading
import time
import traceback
import urllib.parse
from collections import deque
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from email.message import Message
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

from jsonschema import Draft4Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

DEFAULT_OPENAPI_PATH = Path(
    os.environ.get(
        "GBFT_GITHUB_OPENAPI",
        str(Path(__file__).parent / "data" / "github-openapi" / "github_issues_bot_openapi.2022-05-23.json"),
    )
)

MAX_BODY_CHARS = 65536  # issues and comments (GitHub answers 422 beyond)
MAX_TITLE_CHARS = 256
MAX_LABEL_DESCRIPTION_CHARS = 100
MAX_SEARCH_TEXT_CHARS = 256  # free text only; qualifiers do not count
MAX_SEARCH_RESULTS = 1000
MAX_PER_PAGE = 100

CORE_LIMIT, CORE_WINDOW = 5000, 3600
SEARCH_LIMIT, SEARCH_WINDOW = 30, 60
UNAUTHENTICATED_LIMIT = 60

DOCS = "https://docs.github.com/rest"
RATE_LIMIT_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
SECONDARY_RATE_LIMIT_DOCS = (
    "https://docs.github.com/free-pro-team@latest/rest/overview/"
    "rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

_WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
_URN = "urn:gbft:github-openapi"

# GitHub creates these in every new repository (the octokit fixture shows them).
DEFAULT_LABELS: tuple[tuple[str, str, str], ...] = (
    ("bug", "d73a4a", "Something isn't working"),
    ("documentation", "0075ca", "Improvements or additions to documentation"),
    ("duplicate", "cfd3d7", "This issue or pull request already exists"),
    ("enhancement", "a2eeef", "New feature or request"),
    ("good first issue", "7057ff", "Good for newcomers"),
    ("help wanted", "008672", "Extra attention is needed"),
    ("invalid", "e4e669", "This doesn't seem right"),
    ("question", "d876e3", "Further information is requested"),
    ("wontfix", "ffffff", "This will not be worked on"),
)

# Issue-search qualifiers GitHub knows.  Those the fake does not implement are
# reported as violations: answering them as free text would be silently wrong.
_GITHUB_SEARCH_QUALIFIERS = frozenset(
    """in user org repo state is type author assignee mentions commenter involves team label
    milestone project status head base created updated closed merged comments interactions
    reactions draft review review-requested reviewed-by team-review-requested
    user-review-requested language no linked archived sort reason""".split()
)


# --------------------------------------------------------------------------------------
# Records kept for tests
# --------------------------------------------------------------------------------------
class RecordedRequest(NamedTuple):
    """One request as the client sent it, without its Authorization header.

    ``time`` is ``time.monotonic()`` at arrival, so spacing can be measured
    without wall-clock jumps.  The token is redacted ("***") wherever else it
    appears; such appearances are also listed in ``GitHubFake.token_leaks``.
    """

    method: str
    path: str
    query: dict[str, str]
    time: float
    headers: dict[str, str]


@dataclass(frozen=True)
class RawExchange:
    """Everything the server saw and said for one request (token included)."""

    time: float
    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    status: int
    response_headers: tuple[tuple[str, str], ...]
    response_body: bytes


# --------------------------------------------------------------------------------------
# OpenAPI 3.0 -> JSON Schema (draft 4)
# --------------------------------------------------------------------------------------
_OAS_ONLY_KEYWORDS = frozenset(
    {"nullable", "example", "examples", "readOnly", "writeOnly", "discriminator", "xml", "externalDocs", "deprecated"}
)
_SCHEMA_MAP_KEYWORDS = frozenset({"properties", "patternProperties", "definitions"})
_SCHEMA_KEYWORDS = frozenset({"items", "additionalProperties", "not"})
_SCHEMA_LIST_KEYWORDS = frozenset({"allOf", "anyOf", "oneOf"})


def openapi_schema_to_json_schema(node: Any) -> Any:
    """Convert one OpenAPI 3.0 Schema Object to JSON Schema draft 4."""
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        # OpenAPI 3.0 ignores siblings of $ref; draft 4 does too, but drop them to be explicit.
        return {"$ref": node["$ref"]}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _OAS_ONLY_KEYWORDS:
            continue
        if key in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            out[key] = {name: openapi_schema_to_json_schema(s) for name, s in value.items()}
        elif key in _SCHEMA_KEYWORDS:
            if isinstance(value, list):
                out[key] = [openapi_schema_to_json_schema(s) for s in value]
            else:
                out[key] = openapi_schema_to_json_schema(value)
        elif key in _SCHEMA_LIST_KEYWORDS:
            out[key] = [openapi_schema_to_json_schema(s) for s in value]
        else:
            out[key] = value  # enum, required, type, format, default...: plain data
    if out.get("additionalProperties") is False:
        # GitHub adds response fields over time (the README lists some); they must pass.
        del out["additionalProperties"]
    if node.get("nullable") is True:
        if "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = [*types, "null"] if "null" not in types else types
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _convert_document(node: Any) -> Any:
    """Convert every Schema Object of an OpenAPI document, leaving the rest alone."""
    if isinstance(node, list):
        return [_convert_document(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "schema":
            out[key] = openapi_schema_to_json_schema(value)
        elif key == "schemas" and isinstance(value, dict):
            out[key] = {name: openapi_schema_to_json_schema(s) for name, s in value.items()}
        elif key in ("example", "examples"):
            out[key] = value  # data, not description: never rewrite
        else:
            out[key] = _convert_document(value)
    return out


def _pointer_escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


_STATE_REASON_SCHEMA = {
    "type": ["string", "null"],
    "enum": ["completed", "reopened", "not_planned", "duplicate", None],
}


def _apply_overlays(doc: dict[str, Any]) -> None:
    """Teach the 2022 description what GitHub has since added (see its README)."""
    schemas = doc["components"]["schemas"]
    for name in ("issue", "issue-search-result-item"):
        schemas[name]["properties"]["state_reason"] = copy.deepcopy(_STATE_REASON_SCHEMA)
    # The description types a search item's body as a plain string, but an issue without a
    # body has "body": null (the issue schema says so, and search returns the same issue).
    # Sending null is also the stricter test of a client: one that copes with null copes with "".
    schemas["issue-search-result-item"]["properties"]["body"] = {"type": ["string", "null"]}
    patch = doc["paths"]["/repos/{owner}/{repo}/issues/{issue_number}"]["patch"]
    body_schema = patch["requestBody"]["content"]["application/json"]["schema"]
    body_schema["properties"]["state_reason"] = copy.deepcopy(_STATE_REASON_SCHEMA)
    # GitHub's "Get a label": not in the trimmed description, used by PyGithub's Repository.get_label.
    doc["paths"].setdefault("/repos/{owner}/{repo}/labels/{name}", {})["get"] = {
        "operationId": "issues/get-label",
        "x-gbft-fake": "added: not in the trimmed 2022-05-23 description",
        "externalDocs": {"url": "https://docs.github.com/rest/issues/labels#get-a-label"},
        "parameters": [
            {"$ref": "#/components/parameters/owner"},
            {"$ref": "#/components/parameters/repo"},
            {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
        ],
        "responses": {
            "200": {
                "description": "Response",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/label"}}},
            },
            "404": {"$ref": "#/components/responses/not_found"},
        },
    }
    # GitHub's "Delete an issue comment": not in the trimmed description; PyGithub's
    # IssueComment.delete.  204 with no body; 404 for a comment that is gone.
    doc["paths"]["/repos/{owner}/{repo}/issues/comments/{comment_id}"]["delete"] = {
        "operationId": "issues/delete-comment",
        "x-gbft-fake": "added: not in the trimmed 2022-05-23 description",
        "externalDocs": {"url": "https://docs.github.com/rest/issues/comments#delete-an-issue-comment"},
        "parameters": [
            {"$ref": "#/components/parameters/owner"},
            {"$ref": "#/components/parameters/repo"},
            {"$ref": "#/components/parameters/comment-id"},
        ],
        "responses": {"204": {"description": "Response"}},
    }


def _format_checker() -> FormatChecker:
    """Check the two formats GitHub's objects lean on; jsonschema skips them without extras."""
    checker = FormatChecker(formats=())

    @checker.checks("date-time", raises=ValueError)
    def _date_time(value: object) -> bool:
        if not isinstance(value, str):
            return True
        if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", value):
            return False
        datetime.fromisoformat(value.replace("Z", "+00:00"))
        return True

    @checker.checks("uri")
    def _uri(value: object) -> bool:
        if not isinstance(value, str):
            return True
        parts = urllib.parse.urlsplit(value)
        return bool(parts.scheme) and bool(parts.netloc or parts.path)

    return checker


class _Contract:
    """The OpenAPI description, converted, with validators for its operations."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.doc: dict[str, Any] = _convert_document(json.loads(path.read_text(encoding="utf-8")))
        _apply_overlays(self.doc)
        resource = Resource.from_contents(self.doc, default_specification=DRAFT4)
        self._registry = Registry().with_resource(_URN, resource)
        self._format_checker = _format_checker()
        self._validators: dict[str, Draft4Validator] = {}

    # -- lookup ----------------------------------------------------------------------
    def operation(self, method: str, template: str) -> dict[str, Any] | None:
        item = self.doc["paths"].get(template)
        return None if item is None else item.get(method.lower())

    def docs_url(self, method: str, template: str) -> str:
        op = self.operation(method, template) or {}
        return str(op.get("externalDocs", {}).get("url", DOCS))

    def _get(self, pointer: str) -> Any:
        node: Any = self.doc
        for raw in pointer.lstrip("/").split("/"):
            token = raw.replace("~1", "/").replace("~0", "~")
            node = node[int(token)] if isinstance(node, list) else node[token]
        return node

    def _follow(self, pointer: str) -> tuple[str, Any]:
        node = self._get(pointer)
        while isinstance(node, dict) and "$ref" in node:
            pointer = node["$ref"].lstrip("#")
            node = self._get(pointer)
        return pointer, node

    def _validator(self, pointer: str) -> Draft4Validator:
        validator = self._validators.get(pointer)
        if validator is None:
            ref = f"{_URN}#{urllib.parse.quote(pointer, safe='/~')}"
            validator = Draft4Validator({"$ref": ref}, registry=self._registry, format_checker=self._format_checker)
            self._validators[pointer] = validator
        return validator

    def _errors(self, pointer: str, instance: Any, what: str) -> list[str]:
        errors = sorted(self._validator(pointer).iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
        out = []
        for error in errors[:5]:
            where = "/".join(map(str, error.absolute_path)) or "<root>"
            out.append(f"{what}: {where}: {error.message[:300]}")
        if len(errors) > 5:
            out.append(f"{what}: ... and {len(errors) - 5} more")
        return out

    def _op_pointer(self, method: str, template: str) -> str:
        return f"/paths/{_pointer_escape(template)}/{method.lower()}"

    # -- checks ----------------------------------------------------------------------
    def check_query(self, method: str, template: str, query: dict[str, str]) -> list[str]:
        op_ptr = self._op_pointer(method, template)
        op = self._get(op_ptr)
        params: list[tuple[str, Any]] = []
        for source, entries in (
            (f"/paths/{_pointer_escape(template)}/parameters", self.doc["paths"][template].get("parameters", [])),
            (f"{op_ptr}/parameters", op.get("parameters", [])),
        ):
            for index in range(len(entries)):
                params.append(self._follow(f"{source}/{index}"))
        problems: list[str] = []
        for pointer, param in params:
            if param.get("in") != "query":
                continue
            name = param["name"]
            if name not in query:
                if param.get("required"):
                    problems.append(f"query parameter {name!r} is required")
                continue
            schema = param.get("schema", {})
            types = schema.get("type")
            types = types if isinstance(types, list) else [types]
            raw = query[name]
            value: Any = raw
            if "integer" in types:
                if not re.fullmatch(r"-?\d+", raw):
                    problems.append(f"query parameter {name}={raw!r} is not an integer")
                    continue
                value = int(raw)
            elif "boolean" in types:
                if raw not in ("true", "false"):
                    problems.append(f"query parameter {name}={raw!r} is not a boolean")
                    continue
                value = raw == "true"
            problems += self._errors(f"{pointer}/schema", value, f"query parameter {name}")
        return problems

    def check_request_body(self, method: str, template: str, has_body: bool, body: Any) -> list[str]:
        op_ptr = self._op_pointer(method, template)
        op = self._get(op_ptr)
        if "requestBody" not in op:
            return ["the operation takes no request body but one was sent"] if has_body else []
        pointer, request_body = self._follow(f"{op_ptr}/requestBody")
        if not has_body:
            return ["the request body is required but none was sent"] if request_body.get("required") else []
        if "application/json" not in request_body.get("content", {}):
            return []
        return self._errors(f"{pointer}/content/application~1json/schema", body, "request body")

    def check_response(self, method: str | None, template: str | None, status: int, body: Any) -> list[str]:
        response: Any = None
        pointer = ""
        if method and template:
            responses = self._get(self._op_pointer(method, template)).get("responses", {})
            if str(status) in responses:
                pointer, response = self._follow(f"{self._op_pointer(method, template)}/responses/{status}")
        if response is None:
            if status < 400:
                return [f"status {status} is not a documented response of the operation"]
            # Errors GitHub may give on any operation (401, 403, 429, 5xx...) use its error shapes.
            name = "validation-error" if status == 422 else "basic-error"
            return self._errors(f"/components/schemas/{name}", body, f"{status} response body")
        content = response.get("content", {})
        if "application/json" not in content:
            return [] if body is None else [f"status {status} documents no body but one was sent"]
        if body is None:
            return [f"status {status} documents a JSON body but none was sent"]
        return self._errors(f"{pointer}/content/application~1json/schema", body, f"{status} response body")


# --------------------------------------------------------------------------------------
# In-memory model
# --------------------------------------------------------------------------------------
@dataclass
class _Label:
    id: int
    name: str
    color: str
    description: str | None
    default: bool = False


@dataclass
class _Comment:
    id: int
    issue_number: int
    body: str
    user: str
    created: float
    updated: float


@dataclass
class _Issue:
    id: int
    number: int
    title: str
    body: str | None
    user: str
    labels: list[str]  # canonical label names
    state: str = "open"
    state_reason: str | None = None
    created: float = 0.0
    updated: float = 0.0
    closed: float | None = None
    closed_by: str | None = None
    comments: int = 0
    locked: bool = False
    deleted: bool = False  # GitHub answers 410 Gone for a deleted issue


@dataclass
class _Snapshot:
    """What the search index knows about an issue from ``visible_from`` on."""

    visible_from: float  # time.monotonic(); -inf for pre-populated issues
    issue: _Issue
    comment_bodies: tuple[str, ...]


@dataclass
class _Repo:
    id: int
    owner: str
    name: str
    owner_type: str
    private: bool
    description: str | None
    created: float
    labels: dict[str, _Label] = field(default_factory=dict)  # key: lower-case name
    issues: dict[int, _Issue] = field(default_factory=dict)
    comments: dict[int, _Comment] = field(default_factory=dict)
    index: dict[int, list[_Snapshot]] = field(default_factory=dict)
    next_number: int = 1

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


class _Base(NamedTuple):
    api: str  # e.g. http://127.0.0.1:PORT or http://127.0.0.1:PORT/api/v3
    html: str  # e.g. http://127.0.0.1:PORT


@dataclass
class _Resp:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Ctx:
    method: str
    template: str
    params: dict[str, str]
    query: dict[str, str]
    query_pairs: list[tuple[str, str]]
    body: Any
    base: _Base
    repo: _Repo | None


@dataclass
class _Fault:
    status: int
    retry_after: float | None = None
    reset_in: float | None = None
    primary: bool = False


@dataclass
class _Bucket:
    limit: int
    window: int
    used: int = 0
    reset_at: int = 0

    def roll(self, now: float) -> None:
        if now >= self.reset_at:
            self.used = 0
            self.reset_at = int(now) + self.window

    def take(self, now: float) -> bool:
        """Count one request; False when it exceeds the limit."""
        self.roll(now)
        self.used += 1
        return self.used <= self.limit

    def json(self, now: float) -> dict[str, int]:
        self.roll(now)
        return {
            "limit": self.limit,
            "remaining": max(0, self.limit - self.used),
            "reset": self.reset_at,
            "used": self.used,
        }


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(int(t), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node_id(kind: str, ident: int) -> str:
    # GitHub's legacy global ids: base64("0<len>:<Type><id>"), e.g. MDU6SXNzdWUx for Issue 1.
    return base64.b64encode(f"0{len(kind)}:{kind}{ident}".encode()).decode()


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _contains_sequence(haystack: list[str], needle: list[str]) -> bool:
    if not needle:
        return True
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


# --------------------------------------------------------------------------------------
# Search query
# --------------------------------------------------------------------------------------
_SEARCH_TOKEN = re.compile(
    r'(-?)(?:([A-Za-z][\w-]*):((?:"[^"]*"|[^\s"]+)(?:,(?:"[^"]*"|[^\s"]+))*)|"([^"]*)"|(\S+))'
)


class _SearchQuery:
    """A parsed ``q``; ``problems`` are fake limitations (reported as violations)."""

    def __init__(self, q: str) -> None:
        self.repos: list[str] = []
        self.want_issues = True
        self.states: set[str] = set()
        self.labels: list[list[str]] = []  # all groups must match; any label within a group
        self.not_labels: list[str] = []
        self.no_label = False
        self.fields: set[str] = set()
        self.authors: list[str] = []
        self.terms: list[tuple[bool, list[str]]] = []  # (negated, words)
        self.free_text: list[str] = []
        self.problems: list[str] = []
        for m in _SEARCH_TOKEN.finditer(q):
            negated, key, value, phrase = m.group(1) == "-", m.group(2), m.group(3), m.group(4)
            if key is not None and key.lower() in _GITHUB_SEARCH_QUALIFIERS:
                self._qualifier(negated, key.lower(), value)
            elif phrase is not None:
                self.free_text.append(m.group(0))
                self.terms.append((negated, _words(phrase)))
            else:
                text = m.group(0)[1:] if negated else m.group(0)
                if text in ("AND",):
                    continue
                if text in ("OR", "NOT"):
                    self.problems.append(f"the fake does not implement the {text} operator")
                    continue
                self.free_text.append(m.group(0))
                self.terms.append((negated, _words(text)))

    def _qualifier(self, negated: bool, key: str, raw: str) -> None:
        # A value may be quoted, and a comma means "any of" (label:"a b",c).
        values = [q if q else u for q, u in re.findall(r'"([^"]*)"|([^,"]+)', raw)]
        value = ",".join(values)
        lowered = value.lower()
        if key == "repo" and not negated:
            self.repos.append(lowered)
        elif key in ("is", "type") and lowered in ("issue", "pr", "pull-request") and not negated:
            self.want_issues = self.want_issues and lowered == "issue"
        elif key in ("is", "state") and lowered in ("open", "closed") and not negated:
            self.states.add(lowered)
        elif key == "label":
            names = [v.strip().lower() for v in values if v.strip()]
            if negated:
                self.not_labels += names
            else:
                self.labels.append(names)
        elif key == "no" and lowered == "label" and not negated:
            self.no_label = True
        elif key == "in" and not negated and all(f in ("title", "body", "comments") for f in lowered.split(",")):
            self.fields.update(lowered.split(","))
        elif key == "author" and not negated:
            self.authors.append(lowered)
        else:
            sign = "-" if negated else ""
            self.problems.append(f"the fake does not implement the search qualifier {sign}{key}:{value}")

    def matches(self, snapshot: _Snapshot) -> bool:
        issue = snapshot.issue
        if not self.want_issues:
            return False  # the fake holds no pull requests
        if self.states and issue.state not in self.states:
            return False
        names = {n.lower() for n in issue.labels}
        if any(not names.intersection(group) for group in self.labels):
            return False
        if names.intersection(self.not_labels):
            return False
        if self.no_label and names:
            return False
        if self.authors and issue.user.lower() not in self.authors:
            return False
        fields = self.fields or {"title", "body", "comments"}
        texts: list[list[str]] = []
        if "title" in fields:
            texts.append(_words(issue.title))
        if "body" in fields:
            texts.append(_words(issue.body or ""))
        if "comments" in fields:
            texts += [_words(b) for b in snapshot.comment_bodies]
        for negated, words in self.terms:
            found = any(_contains_sequence(t, words) for t in texts)
            if found == negated:
                return False
        return True


# --------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------
class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True  # a keep-alive connection must not keep the test process alive
    fake: GitHubFake


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as requests' connection pool expects
    server: _Server

    def version_string(self) -> str:
        return "GitHub.com"

    def setup(self) -> None:
        super().setup()
        self.server.fake._connection_opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._connection_closed(self.connection)

    def _serve(self) -> None:
        self.server.fake._serve(self)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # the fake keeps its own logs; stderr noise would only hide test output


_Route = tuple[str, "re.Pattern[str]", str, str]  # method, regex, OpenAPI template, handler name
_OR = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
_ROUTES: list[_Route] = [
    (m, re.compile(rx + r"/?"), t, h)
    for m, rx, t, h in [
        ("GET", r"/rate_limit", "/rate_limit", "_op_rate_limit"),
        ("GET", r"/search/issues", "/search/issues", "_op_search_issues"),
        ("GET", _OR, "/repos/{owner}/{repo}", "_op_get_repo"),
        ("GET", _OR + r"/issues", "/repos/{owner}/{repo}/issues", "_op_list_issues"),
        ("POST", _OR + r"/issues", "/repos/{owner}/{repo}/issues", "_op_create_issue"),
        ("GET", _OR + r"/issues/(?P<issue_number>\d+)", "/repos/{owner}/{repo}/issues/{issue_number}", "_op_get_issue"),
        (
            "PATCH",
            _OR + r"/issues/(?P<issue_number>\d+)",
            "/repos/{owner}/{repo}/issues/{issue_number}",
            "_op_update_issue",
        ),
        (
            "GET",
            _OR + r"/issues/(?P<issue_number>\d+)/comments",
            "/repos/{owner}/{repo}/issues/{issue_number}/comments",
            "_op_list_comments",
        ),
        (
            "POST",
            _OR + r"/issues/(?P<issue_number>\d+)/comments",
            "/repos/{owner}/{repo}/issues/{issue_number}/comments",
            "_op_create_comment",
        ),
        (
            "PATCH",
            _OR + r"/issues/comments/(?P<comment_id>\d+)",
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            "_op_update_comment",
        ),
        (
            "DELETE",
            _OR + r"/issues/comments/(?P<comment_id>\d+)",
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            "_op_delete_comment",
        ),
        (
            "POST",
            _OR + r"/issues/(?P<issue_number>\d+)/labels",
            "/repos/{owner}/{repo}/issues/{issue_number}/labels",
            "_op_add_labels",
        ),
        ("GET", _OR + r"/labels", "/repos/{owner}/{repo}/labels", "_op_list_labels"),
        ("POST", _OR + r"/labels", "/repos/{owner}/{repo}/labels", "_op_create_label"),
        ("GET", _OR + r"/labels/(?P<name>[^/]+)", "/repos/{owner}/{repo}/labels/{name}", "_op_get_label"),
    ]
]


# --------------------------------------------------------------------------------------
# The fake
# --------------------------------------------------------------------------------------
class GitHubFake:
    """GitHub's REST API for the issue bot, in memory, over real HTTP on 127.0.0.1."""

    def __init__(
        self,
        token: str | None = None,
        *,
        user: str = "gbft-bot",
        search_lag: float = 0.0,
        per_page_default: int = 30,
        search_requests_per_minute: int | None = SEARCH_LIMIT,
        openapi_path: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        # A fresh random token by default, so that a leak is unmistakable in any output.
        self._token = token if token is not None else "ghp_test" + secrets.token_hex(16)
        if not self._token:
            raise ValueError("the token must not be empty")
        self._user = user
        self._host, self._port = host, port
        self._contract = _Contract(Path(openapi_path) if openapi_path else DEFAULT_OPENAPI_PATH)
        self._lock = threading.RLock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

        self._repos: dict[str, _Repo] = {}  # key: lower-case full name (GitHub ignores case)
        self._user_ids: dict[str, int] = {}
        self._next_id = {"repo": 100000001, "issue": 1000000001, "comment": 2000000001, "label": 3000000001}
        self._request_counter = 0

        self._search_lag = float(search_lag)
        self._per_page_default = int(per_page_default)
        self._core = _Bucket(CORE_LIMIT, CORE_WINDOW)
        self._search = _Bucket(search_requests_per_minute or SEARCH_LIMIT, SEARCH_WINDOW)
        self._search_enforced = search_requests_per_minute is not None
        self._faults: deque[_Fault] = deque()
        self._fail_creates_with_502 = 0
        self._fail_comments_with_502 = 0

        self.requests: list[RecordedRequest] = []
        self.raw_log: list[RawExchange] = []
        self.violations: list[str] = []
        self.token_leaks: list[str] = []

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> GitHubFake:
        with self._lock:
            if self._server is not None:
                return self
            server = _Server((self._host, self._port), _Handler)
            server.fake = self
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="GitHubFake", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
            connections = list(self._connections)
        if server is None:
            return
        server.shutdown()
        server.server_close()
        for conn in connections:  # idle keep-alive connections would otherwise linger
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> GitHubFake:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _connection_opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _connection_closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    @property
    def token(self) -> str:
        return self._token

    @property
    def user(self) -> str:
        return self._user

    @property
    def base_url(self) -> str:
        """The ``base_url`` for PyGithub: ``http://127.0.0.1:PORT`` (no /api/v3 needed)."""
        if self._server is None:
            raise RuntimeError("GitHubFake is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def enterprise_base_url(self) -> str:
        """The GitHub Enterprise form, ``http://127.0.0.1:PORT/api/v3``; served as well."""
        return self.base_url + "/api/v3"

    @property
    def openapi_path(self) -> Path:
        return self._contract.path

    # -- knobs (thread-safe) -----------------------------------------------------------
    @property
    def search_lag(self) -> float:
        with self._lock:
            return self._search_lag

    @search_lag.setter
    def search_lag(self, seconds: float) -> None:
        with self._lock:
            self._search_lag = float(seconds)

    @property
    def per_page_default(self) -> int:
        with self._lock:
            return self._per_page_default

    @per_page_default.setter
    def per_page_default(self, n: int) -> None:
        with self._lock:
            self._per_page_default = int(n)

    @property
    def search_requests_per_minute(self) -> int | None:
        with self._lock:
            return self._search.limit if self._search_enforced else None

    @search_requests_per_minute.setter
    def search_requests_per_minute(self, n: int | None) -> None:
        with self._lock:
            self._search_enforced = n is not None
            self._search.limit = n if n is not None else SEARCH_LIMIT

    def rate_limit_next(self, n: int = 1, retry_after: float = 1, status: int = 403) -> None:
        """Answer the next ``n`` writes with a secondary rate limit and ``retry-after``."""
        if status not in (403, 429):
            raise ValueError("GitHub answers rate limits with 403 or 429")
        with self._lock:
            self._faults.extend(_Fault(status=status, retry_after=retry_after) for _ in range(n))

    def rate_limit_reset_next(
        self, n: int = 1, reset_in: float = 1, status: int = 403, *, primary: bool = False
    ) -> None:
        """Like ``rate_limit_next`` but with ``x-ratelimit-remaining: 0`` and an
        ``x-ratelimit-reset`` epoch instead of ``retry-after``; ``primary=True``
        uses the primary-limit message ("API rate limit exceeded ...")."""
        if status not in (403, 429):
            raise ValueError("GitHub answers rate limits with 403 or 429")
        with self._lock:
            self._faults.extend(_Fault(status=status, reset_in=reset_in, primary=primary) for _ in range(n))

    def fail_next_create_with_502(self, n: int = 1) -> None:
        """Store the next ``n`` created issues, then answer 502 (a retry would duplicate)."""
        with self._lock:
            self._fail_creates_with_502 += n

    def fail_next_comment_with_502(self, n: int = 1) -> None:
        """Store the next ``n`` comments, then answer 502 (a rerun that does not look first posts twice)."""
        with self._lock:
            self._fail_comments_with_502 += n

    def lock_issue(self, repo: str, number: int) -> None:
        """Lock an issue's conversation (as a maintainer would): comments answer 403."""
        with self._lock:
            self._repo(repo).issues[number].locked = True

    def delete_issue(self, repo: str, number: int) -> None:
        """Delete an issue (as an admin would): it answers 410 Gone, but still lists until reindexed."""
        with self._lock:
            self._repo(repo).issues[number].deleted = True

    def flush_search_index(self) -> None:
        """Let the search index catch up now, whatever ``search_lag`` says."""
        with self._lock:
            for repo in self._repos.values():
                for snapshots in repo.index.values():
                    for snapshot in snapshots:
                        snapshot.visible_from = -math.inf

    # -- logs and assertions -----------------------------------------------------------
    def writes(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.method in _WRITE_METHODS]

    def assert_no_violations(self) -> None:
        with self._lock:
            found = list(self.violations)
        if found:
            raise AssertionError("GitHub contract violations:\n" + "\n".join(f"- {v}" for v in found))

    def assert_token_not_leaked(self) -> None:
        """The token went nowhere but the Authorization header: not in URLs, other
        headers, bodies, nor anything stored (issues, comments, labels)."""
        with self._lock:
            leaks = list(self.token_leaks)
            for repo in self._repos.values():
                for issue in repo.issues.values():
                    if self._token in issue.title or self._token in (issue.body or ""):
                        leaks.append(f"{repo.full_name}#{issue.number} contains the token")
                for comment in repo.comments.values():
                    if self._token in comment.body:
                        leaks.append(f"{repo.full_name} comment {comment.id} contains the token")
                for label in repo.labels.values():
                    if self._token in label.name or self._token in (label.description or ""):
                        leaks.append(f"{repo.full_name} label {label.id} contains the token")
        if leaks:
            raise AssertionError("the token leaked:\n" + "\n".join(f"- {x}" for x in leaks))

    def clear_logs(self) -> None:
        with self._lock:
            self.requests.clear()
            self.raw_log.clear()
            self.violations.clear()
            self.token_leaks.clear()

    # -- set-up and inspection ---------------------------------------------------------
    def add_repo(
        self,
        full_name: str,
        *,
        private: bool = False,
        description: str | None = None,
        owner_type: str = "User",
        default_labels: bool = True,
    ) -> None:
        owner, _, name = full_name.partition("/")
        if not owner or not name or "/" in name:
            raise ValueError(f"not an OWNER/NAME: {full_name!r}")
        with self._lock:
            if full_name.lower() in self._repos:
                raise ValueError(f"repository exists: {full_name}")
            repo = _Repo(
                id=self._new_id("repo"),
                owner=owner,
                name=name,
                owner_type=owner_type,
                private=private,
                description=description,
                created=time.time(),
            )
            if default_labels:
                for label_name, color, label_description in DEFAULT_LABELS:
                    repo.labels[label_name] = _Label(self._new_id("label"), label_name, color, label_description, True)
            self._repos[full_name.lower()] = repo

    def add_label(self, repo: str, name: str, color: str = "ededed", description: str | None = None) -> dict[str, Any]:
        with self._lock:
            r = self._repo(repo)
            label = self._ensure_label(r, name, color=color, description=description)
            return self._label_json(r, label, self._inspect_base())

    def add_issue(
        self,
        repo: str,
        title: str,
        body: str | None = None,
        labels: Iterable[str] = (),
        state: str = "open",
        *,
        state_reason: str | None = None,
        user: str | None = None,
        created_at: float | datetime | None = None,
        indexed: bool = True,
    ) -> int:
        """Pre-populate an issue (no HTTP, no checks); returns its number.  With
        ``indexed`` (the default) search finds it at once, as an old issue."""
        if state not in ("open", "closed"):
            raise ValueError(state)
        with self._lock:
            r = self._repo(repo)
            t = created_at.timestamp() if isinstance(created_at, datetime) else created_at
            now = time.time() if t is None else t
            issue = self._new_issue(r, str(title), body, labels, user or self._user, now)
            if state == "closed":
                issue.state, issue.closed, issue.closed_by = "closed", now, user or self._user
                issue.state_reason = state_reason or "completed"
            self._index(r, issue, visible_now=indexed)
            return issue.number

    def add_comment(self, repo: str, number: int, body: str, *, user: str | None = None, indexed: bool = True) -> int:
        with self._lock:
            r = self._repo(repo)
            issue = r.issues[number]
            comment = self._new_comment(r, issue, body, user or self._user)
            self._index(r, issue, visible_now=indexed)
            return comment.id

    def set_issue_state(self, repo: str, number: int, state: str, state_reason: str | None = None) -> None:
        """Change an issue's state behind the client's back (as a person on github.com)."""
        if state not in ("open", "closed"):
            raise ValueError(state)
        with self._lock:
            r = self._repo(repo)
            issue = r.issues[number]
            self._change_state(issue, state, state_reason, self._user, time.time())
            self._index(r, issue)

    def issues(self, repo: str) -> list[dict[str, Any]]:
        """All issues of ``repo`` as GitHub's JSON, by number."""
        with self._lock:
            r = self._repo(repo)
            base = self._inspect_base()
            return [self._issue_json(r, r.issues[n], base) for n in sorted(r.issues)]

    def issue(self, repo: str, number: int) -> dict[str, Any]:
        with self._lock:
            r = self._repo(repo)
            return self._issue_json(r, r.issues[number], self._inspect_base())

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        with self._lock:
            r = self._repo(repo)
            base = self._inspect_base()
            return [
                self._comment_json(r, c, base)
                for c in sorted(r.comments.values(), key=lambda c: c.id)
                if c.issue_number == number
            ]

    def labels(self, repo: str) -> list[dict[str, Any]]:
        with self._lock:
            r = self._repo(repo)
            base = self._inspect_base()
            return [self._label_json(r, lab, base) for lab in sorted(r.labels.values(), key=lambda x: x.name.lower())]

    # -- model helpers (call with the lock held) ----------------------------------------
    def _new_id(self, kind: str) -> int:
        ident = self._next_id[kind]
        self._next_id[kind] += 1
        return ident

    def _user_id(self, login: str) -> int:
        return self._user_ids.setdefault(login.lower(), 1000 + len(self._user_ids) + 1)

    def _repo(self, full_name: str) -> _Repo:
        try:
            return self._repos[full_name.lower()]
        except KeyError:
            raise KeyError(f"no repository {full_name!r}; add_repo() it first") from None

    def _inspect_base(self) -> _Base:
        origin = self.base_url if self._server is not None else "http://127.0.0.1"
        return _Base(origin, origin)

    def _ensure_label(
        self, repo: _Repo, name: str, color: str = "ededed", description: str | None = None
    ) -> _Label:
        label = repo.labels.get(name.lower())
        if label is None:
            label = _Label(self._new_id("label"), name, color, description)
            repo.labels[name.lower()] = label
        return label

    def _new_issue(
        self, repo: _Repo, title: str, body: str | None, labels: Iterable[str], user: str, now: float
    ) -> _Issue:
        names: list[str] = []
        for name in labels:
            canonical = self._ensure_label(repo, name).name  # GitHub creates unknown labels
            if canonical not in names:
                names.append(canonical)
        issue = _Issue(
            id=self._new_id("issue"),
            number=repo.next_number,
            title=title,
            body=body,
            user=user,
            labels=names,
            created=now,
            updated=now,
        )
        repo.next_number += 1
        repo.issues[issue.number] = issue
        return issue

    def _new_comment(self, repo: _Repo, issue: _Issue, body: str, user: str) -> _Comment:
        now = time.time()
        comment = _Comment(self._new_id("comment"), issue.number, body, user, now, now)
        repo.comments[comment.id] = comment
        issue.comments += 1
        issue.updated = now
        return comment

    @staticmethod
    def _change_state(issue: _Issue, state: str, reason: str | None, user: str, now: float) -> None:
        # GitHub: "state_reason ... Ignored unless state is changed."
        if state == issue.state:
            return
        if state == "closed":
            issue.state, issue.closed, issue.closed_by = "closed", now, user
            issue.state_reason = reason if reason in ("completed", "not_planned", "duplicate") else "completed"
        else:
            issue.state, issue.closed, issue.closed_by = "open", None, None
            issue.state_reason = "reopened"
        issue.updated = now

    def _index(self, repo: _Repo, issue: _Issue, *, visible_now: bool = False) -> None:
        """Record what search will know about ``issue`` once the lag has passed."""
        comments = sorted(repo.comments.values(), key=lambda c: c.id)
        bodies = tuple(c.body for c in comments if c.issue_number == issue.number)
        snapshot = _Snapshot(
            visible_from=-math.inf if visible_now else time.monotonic(),
            issue=replace(issue, labels=list(issue.labels)),
            comment_bodies=bodies,
        )
        repo.index.setdefault(issue.number, []).append(snapshot)

    def _indexed(self, repo: _Repo, number: int, now: float) -> _Snapshot | None:
        visible = [s for s in repo.index.get(number, []) if now - s.visible_from >= self._search_lag]
        return visible[-1] if visible else None

    # -- serializers (GitHub's JSON shapes; see the octokit fixtures) ---------------------
    def _user_json(self, login: str, base: _Base, kind: str = "User") -> dict[str, Any]:
        uid = self._user_id(login)
        u = f"{base.api}/users/{login}"
        return {
            "login": login,
            "id": uid,
            "node_id": _node_id(kind, uid),
            "avatar_url": f"{base.html}/avatars/u/{uid}?v=4",
            "gravatar_id": "",
            "url": u,
            "html_url": f"{base.html}/{login}",
            "followers_url": f"{u}/followers",
            "following_url": f"{u}/following{{/other_user}}",
            "gists_url": f"{u}/gists{{/gist_id}}",
            "starred_url": f"{u}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{u}/subscriptions",
            "organizations_url": f"{u}/orgs",
            "repos_url": f"{u}/repos",
            "events_url": f"{u}/events{{/privacy}}",
            "received_events_url": f"{u}/received_events",
            "type": kind,
            "user_view_type": "public",
            "site_admin": False,
        }

    def _label_json(self, repo: _Repo, label: _Label, base: _Base) -> dict[str, Any]:
        return {
            "id": label.id,
            "node_id": _node_id("Label", label.id),
            "url": f"{base.api}/repos/{repo.full_name}/labels/{urllib.parse.quote(label.name, safe='')}",
            "name": label.name,
            "color": label.color,
            "default": label.default,
            "description": label.description,
        }

    def _reactions_json(self, url: str) -> dict[str, Any]:
        counts = dict.fromkeys(("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket", "eyes"), 0)
        return {"url": f"{url}/reactions", "total_count": 0, **counts}

    def _association(self, repo: _Repo, login: str) -> str:
        return "OWNER" if login.lower() == repo.owner.lower() else ("MEMBER" if login == self._user else "NONE")

    def _issue_json(self, repo: _Repo, issue: _Issue, base: _Base, *, full: bool = True) -> dict[str, Any]:
        repo_url = f"{base.api}/repos/{repo.full_name}"
        url = f"{repo_url}/issues/{issue.number}"
        labels = [repo.labels[n.lower()] for n in issue.labels if n.lower() in repo.labels]
        out: dict[str, Any] = {
            "url": url,
            "repository_url": repo_url,
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": f"{base.html}/{repo.full_name}/issues/{issue.number}",
            "id": issue.id,
            "node_id": _node_id("Issue", issue.id),
            "number": issue.number,
            "title": issue.title,
            "user": self._user_json(issue.user, base),
            "labels": [self._label_json(repo, label, base) for label in labels],
            "state": issue.state,
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": issue.comments,
            "created_at": _iso(issue.created),
            "updated_at": _iso(issue.updated),
            "closed_at": _iso(issue.closed),
            "author_association": self._association(repo, issue.user),
            "type": None,
            "active_lock_reason": None,
            "sub_issues_summary": {"total": 0, "completed": 0, "percent_completed": 0},
            "issue_dependencies_summary": {"blocked_by": 0, "total_blocked_by": 0, "blocking": 0, "total_blocking": 0},
            "body": issue.body,
            "reactions": self._reactions_json(url),
            "timeline_url": f"{url}/timeline",
            "performed_via_github_app": None,
            "state_reason": issue.state_reason,
        }
        if full:  # GitHub sends closed_by on single-issue answers only
            out["closed_by"] = self._user_json(issue.closed_by, base) if issue.closed_by else None
        return out

    def _comment_json(self, repo: _Repo, comment: _Comment, base: _Base) -> dict[str, Any]:
        repo_url = f"{base.api}/repos/{repo.full_name}"
        url = f"{repo_url}/issues/comments/{comment.id}"
        return {
            "url": url,
            "html_url": f"{base.html}/{repo.full_name}/issues/{comment.issue_number}#issuecomment-{comment.id}",
            "issue_url": f"{repo_url}/issues/{comment.issue_number}",
            "id": comment.id,
            "node_id": _node_id("IssueComment", comment.id),
            "user": self._user_json(comment.user, base),
            "created_at": _iso(comment.created),
            "updated_at": _iso(comment.updated),
            "author_association": self._association(repo, comment.user),
            "body": comment.body,
            "reactions": self._reactions_json(url),
            "performed_via_github_app": None,
        }

    def _repo_json(self, repo: _Repo, base: _Base) -> dict[str, Any]:
        api = f"{base.api}/repos/{repo.full_name}"
        html = f"{base.html}/{repo.full_name}"
        host = urllib.parse.urlsplit(base.html).netloc
        open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
        owner = self._user_json(repo.owner, base, repo.owner_type)
        out: dict[str, Any] = {
            "id": repo.id,
            "node_id": _node_id("Repository", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "private": repo.private,
            "owner": owner,
            "html_url": html,
            "description": repo.description,
            "fork": False,
            "url": api,
            "forks_url": f"{api}/forks",
            "keys_url": f"{api}/keys{{/key_id}}",
            "collaborators_url": f"{api}/collaborators{{/collaborator}}",
            "teams_url": f"{api}/teams",
            "hooks_url": f"{api}/hooks",
            "issue_events_url": f"{api}/issues/events{{/number}}",
            "events_url": f"{api}/events",
            "assignees_url": f"{api}/assignees{{/user}}",
            "branches_url": f"{api}/branches{{/branch}}",
            "tags_url": f"{api}/tags",
            "blobs_url": f"{api}/git/blobs{{/sha}}",
            "git_tags_url": f"{api}/git/tags{{/sha}}",
            "git_refs_url": f"{api}/git/refs{{/sha}}",
            "trees_url": f"{api}/git/trees{{/sha}}",
            "statuses_url": f"{api}/statuses/{{sha}}",
            "languages_url": f"{api}/languages",
            "stargazers_url": f"{api}/stargazers",
            "contributors_url": f"{api}/contributors",
            "subscribers_url": f"{api}/subscribers",
            "subscription_url": f"{api}/subscription",
            "commits_url": f"{api}/commits{{/sha}}",
            "git_commits_url": f"{api}/git/commits{{/sha}}",
            "comments_url": f"{api}/comments{{/number}}",
            "issue_comment_url": f"{api}/issues/comments{{/number}}",
            "contents_url": f"{api}/contents/{{+path}}",
            "compare_url": f"{api}/compare/{{base}}...{{head}}",
            "merges_url": f"{api}/merges",
            "archive_url": f"{api}/{{archive_format}}{{/ref}}",
            "downloads_url": f"{api}/downloads",
            "issues_url": f"{api}/issues{{/number}}",
            "pulls_url": f"{api}/pulls{{/number}}",
            "milestones_url": f"{api}/milestones{{/number}}",
            "notifications_url": f"{api}/notifications{{?since,all,participating}}",
            "labels_url": f"{api}/labels{{/name}}",
            "releases_url": f"{api}/releases{{/id}}",
            "deployments_url": f"{api}/deployments",
            "created_at": _iso(repo.created),
            "updated_at": _iso(repo.created),
            "pushed_at": _iso(repo.created),
            "git_url": f"git://{host}/{repo.full_name}.git",
            "ssh_url": f"git@{host.split(':')[0]}:{repo.full_name}.git",
            "clone_url": f"{html}.git",
            "svn_url": html,
            "homepage": None,
            "size": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "language": None,
            "has_issues": True,
            "has_projects": True,
            "has_downloads": True,
            "has_wiki": True,
            "has_pages": False,
            "has_discussions": False,
            "forks_count": 0,
            "mirror_url": None,
            "archived": False,
            "disabled": False,
            "open_issues_count": open_issues,
            "license": None,
            "allow_forking": True,
            "is_template": False,
            "web_commit_signoff_required": False,
            "topics": [],
            "visibility": "private" if repo.private else "public",
            "forks": 0,
            "open_issues": open_issues,
            "watchers": 0,
            "default_branch": "main",
            "permissions": {"admin": True, "maintain": True, "push": True, "triage": True, "pull": True},
            "custom_properties": {},
            "network_count": 0,
            "subscribers_count": 0,
        }
        if repo.owner_type == "Organization":
            out["organization"] = owner
        return out

    # -- HTTP entry point ---------------------------------------------------------------
    def _serve(self, h: _Handler) -> None:
        arrived = time.monotonic()
        raw = self._read_body(h)
        try:
            with self._lock:
                self._record(h.command, h.path, h.headers, raw, arrived)
                try:
                    resp = self._process(h.command, h.path, h.headers, raw)
                except Exception:  # a crash of the fake must fail the test, not hang it
                    self._violate(f"{h.command} {h.path}: the fake crashed:\n{traceback.format_exc()}")
                    resp = _Resp(500, {"message": "GitHubFake crashed; see fake.violations"})
                payload = b"" if resp.body is None else json.dumps(resp.body, ensure_ascii=False).encode("utf-8")
                headers = dict(resp.headers)
                if resp.body is not None:
                    headers["content-type"] = "application/json; charset=utf-8"
                headers["content-length"] = str(len(payload))
                self.raw_log.append(
                    RawExchange(
                        time=arrived,
                        method=h.command,
                        target=h.path,
                        headers=tuple(h.headers.items()),
                        body=raw,
                        status=resp.status,
                        response_headers=tuple(headers.items()),
                        response_body=payload,
                    )
                )
            h.send_response(resp.status)
            for key, value in headers.items():
                h.send_header(key, value)
            h.end_headers()
            h.wfile.write(payload)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True

    @staticmethod
    def _read_body(h: _Handler) -> bytes:
        if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    h.rfile.readline()
                    return b"".join(chunks)
                chunks.append(h.rfile.read(size))
                h.rfile.readline()
        length = int(h.headers.get("Content-Length") or 0)
        return h.rfile.read(length) if length > 0 else b""

    def _record(self, method: str, target: str, headers: Message, raw: bytes, arrived: float) -> None:
        token = self._token
        parts = urllib.parse.urlsplit(target)
        if token in urllib.parse.unquote_plus(target) or token in target:
            self.token_leaks.append(f"{method} {parts.path}: the token is in the request URL")
        kept: dict[str, str] = {}
        for key, value in headers.items():
            if key.lower() == "authorization":
                continue  # the one place the token belongs; never stored in `requests`
            if token in value:
                self.token_leaks.append(f"{method} {parts.path}: the token is in header {key}")
            kept[key.lower()] = value.replace(token, "***")
        if token.encode() in raw:
            self.token_leaks.append(f"{method} {parts.path}: the token is in the request body")
        query = {k: v.replace(token, "***") for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)}
        self.requests.append(RecordedRequest(method, parts.path.replace(token, "***"), query, arrived, kept))

    # -- request processing (lock held) --------------------------------------------------
    def _process(self, method: str, target: str, headers: Message, raw: bytes) -> _Resp:
        parts = urllib.parse.urlsplit(target)
        path = parts.path
        query_pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        query = dict(query_pairs)
        prefix = ""
        if path == "/api/v3" or path.startswith("/api/v3/"):
            prefix, path = "/api/v3", path[len("/api/v3") :] or "/"
        origin = self.base_url
        base = _Base(origin + prefix, origin)
        now = time.time()

        # Authentication first, as GitHub does.
        auth = headers.get("Authorization")
        if not auth:
            return self._finish(None, None, self._unauthenticated("Requires authentication"))
        m = re.fullmatch(r"(?i)(token|bearer)\s+(\S+)", auth.strip())
        if m is None or not hmac.compare_digest(m.group(2).encode(), self._token.encode()):
            return self._finish(None, None, self._unauthenticated("Bad credentials"))

        # GitHub's Link headers point at /repositories/{id}/...; serve them like /repos/{o}/{r}/...
        m = re.fullmatch(r"/repositories/(\d+)(/.*)?", path)
        if m is not None:
            by_id = next((r for r in self._repos.values() if r.id == int(m.group(1))), None)
            if by_id is None:
                return self._finish(None, None, self._error(404, "Not Found", DOCS, resource="core"))
            path = f"/repos/{by_id.owner}/{by_id.name}{m.group(2) or ''}"

        route = next(((t, hn, mm) for rm, rx, t, hn in _ROUTES if rm == method and (mm := rx.fullmatch(path))), None)
        if route is None:
            self._violate(f"{method} {parts.path}: no such operation in the fake (or in its description)")
            return self._finish(None, None, _Resp(500, {"message": f"GitHubFake does not implement {method} {path}"}))
        template, handler_name, match = route
        params = {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()}
        resource = "search" if template.startswith("/search/") else "core"

        # Rate-limit accounting (GET /rate_limit is free, as on GitHub).
        if template != "/rate_limit":
            bucket = self._search if resource == "search" else self._core
            within = bucket.take(now)
            if not within and (resource == "core" or self._search_enforced):
                resp = self._error(
                    403,
                    f"API rate limit exceeded for user ID {self._user_id(self._user)}. If you reach out to GitHub "
                    f"Support for help, please include the request ID {self._request_id()}.",
                    RATE_LIMIT_DOCS,
                    resource=resource,
                )
                return self._finish(method, template, resp)

        # The request against the contract: a violation is the client's bug and must fail loudly.
        body: Any = None
        problems: list[str] = []
        if raw:
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                problems.append(f"the request body is not JSON: {e}")
        if not problems:
            problems += self._contract.check_query(method, template, query)
            problems += self._contract.check_request_body(method, template, bool(raw), body)
        if problems:
            return self._finish(method, template, self._violation(method, template, problems, resource))

        # Injected secondary (or primary) rate limits for writes.
        if method in _WRITE_METHODS and self._faults:
            return self._finish(method, template, self._rate_limited(self._faults.popleft(), resource))

        repo = None
        if "owner" in params:
            repo = self._repos.get(f"{params['owner']}/{params['repo']}".lower())
            if repo is None:
                resp = self._error(404, "Not Found", self._contract.docs_url(method, template), resource=resource)
                return self._finish(method, template, resp)
        ctx = _Ctx(method, template, params, query, query_pairs, body, base, repo)
        resp = getattr(self, handler_name)(ctx)
        resp.headers = {**self._rate_headers(resource), **resp.headers}
        return self._finish(method, template, resp)

    def _finish(self, method: str | None, template: str | None, resp: _Resp) -> _Resp:
        """Check the answer against the contract; a wrong answer becomes a 500."""
        problems = self._contract.check_response(method, template, resp.status, resp.body)
        if problems:
            label = f"{method} {template}" if method else "response"
            for problem in problems:
                self._violate(f"{label}: {problem}")
            return _Resp(
                500,
                {"message": "GitHubFake: the response violates the contract; see fake.violations"},
                self._common_headers(),
            )
        resp.headers = {**self._common_headers(), **resp.headers}
        return resp

    def _violate(self, message: str) -> None:
        # Violations end up in assertion messages and CI logs: never with the token in them.
        self.violations.append(message.replace(self._token, "***"))

    def _violation(self, method: str, template: str, problems: list[str], resource: str) -> _Resp:
        for problem in problems:
            self._violate(f"{method} {template}: {problem}")
        message = "GitHubFake: the request violates the contract: " + "; ".join(problems)[:1000]
        return _Resp(
            500,
            {"message": message.replace(self._token, "***")},
            self._rate_headers(resource),
        )

    # -- answers ----------------------------------------------------------------------
    def _request_id(self) -> str:
        self._request_counter += 1
        n = self._request_counter
        return f"{n:04X}:{n:05X}:{n:07X}:{n:07X}:{int(time.time()):08X}"

    def _common_headers(self) -> dict[str, str]:
        return {
            "x-github-media-type": "github.v3; format=json",
            "x-github-api-version-selected": "2022-11-28",
            "x-github-request-id": self._request_id(),
            "x-oauth-scopes": "repo",
            "x-accepted-oauth-scopes": "",
            "access-control-expose-headers": (
                "ETag, Link, Location, Retry-After, X-GitHub-OTP, X-RateLimit-Limit, X-RateLimit-Remaining, "
                "X-RateLimit-Used, X-RateLimit-Resource, X-RateLimit-Reset, X-OAuth-Scopes, "
                "X-Accepted-OAuth-Scopes, X-Poll-Interval, X-GitHub-Media-Type, X-GitHub-SSO, "
                "X-GitHub-Request-Id, Deprecation, Sunset"
            ),
            "access-control-allow-origin": "*",
            "x-content-type-options": "nosniff",
        }

    def _rate_headers(self, resource: str) -> dict[str, str]:
        state = (self._search if resource == "search" else self._core).json(time.time())
        return {
            "x-ratelimit-limit": str(state["limit"]),
            "x-ratelimit-remaining": str(state["remaining"]),
            "x-ratelimit-reset": str(state["reset"]),
            "x-ratelimit-used": str(state["used"]),
            "x-ratelimit-resource": resource,
        }

    def _unauthenticated(self, message: str) -> _Resp:
        reset = int(time.time()) + CORE_WINDOW
        return _Resp(
            401,
            {"message": message, "documentation_url": DOCS, "status": "401"},
            {
                "x-ratelimit-limit": str(UNAUTHENTICATED_LIMIT),
                "x-ratelimit-remaining": str(UNAUTHENTICATED_LIMIT - 1),
                "x-ratelimit-reset": str(reset),
                "x-ratelimit-used": "1",
                "x-ratelimit-resource": "core",
            },
        )

    def _error(self, status: int, message: str, docs: str, *, resource: str) -> _Resp:
        headers = self._rate_headers(resource)
        if message.startswith("API rate limit exceeded"):
            headers["x-ratelimit-remaining"] = "0"
        return _Resp(status, {"message": message, "documentation_url": docs, "status": str(status)}, headers)

    def _invalid(self, ctx: _Ctx, *errors: dict[str, str]) -> _Resp:
        body = {
            "message": "Validation Failed",
            "errors": list(errors),
            "documentation_url": self._contract.docs_url(ctx.method, ctx.template),
            "status": "422",
        }
        return _Resp(422, body)

    def _rate_limited(self, fault: _Fault, resource: str) -> _Resp:
        headers = self._rate_headers(resource)
        if fault.primary:
            message = (
                f"API rate limit exceeded for user ID {self._user_id(self._user)}. If you reach out to GitHub "
                f"Support for help, please include the request ID {self._request_id()}."
            )
            docs = RATE_LIMIT_DOCS
        else:
            message = (
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
                f"If you reach out to GitHub Support for help, please include the request ID {self._request_id()}."
            )
            docs = SECONDARY_RATE_LIMIT_DOCS
        if fault.retry_after is not None:
            headers["retry-after"] = str(max(0, math.ceil(fault.retry_after)))
        if fault.reset_in is not None:
            headers["x-ratelimit-remaining"] = "0"
            headers["x-ratelimit-reset"] = str(math.ceil(time.time() + fault.reset_in))
        return _Resp(fault.status, {"message": message, "documentation_url": docs}, headers)

    def _gone(self, ctx: _Ctx) -> _Resp:
        return self._error(410, "This issue was deleted", self._contract.docs_url(ctx.method, ctx.template),
                           resource="core")

    def _not_found(self, ctx: _Ctx) -> _Resp:
        return self._error(404, "Not Found", self._contract.docs_url(ctx.method, ctx.template), resource="core")

    def _paginate(
        self, ctx: _Ctx, items: list[Any], link_path: str, *, cap: int | None = None
    ) -> tuple[list[Any], int, str | None]:
        """Slice one page; return (page items, page number, Link header or None)."""
        per_page, page = self._page_params(ctx)
        total = len(items) if cap is None else min(cap, len(items))
        last = max(1, math.ceil(total / per_page))
        start = (page - 1) * per_page
        chunk = items[start : min(start + per_page, total)] if start < total else []
        return chunk, page, self._link(ctx, link_path, page, last)

    def _page_params(self, ctx: _Ctx) -> tuple[int, int]:
        """per_page (default ``per_page_default``, at most 100) and page (from 1); both were
        checked to be integers against the description before we get here."""
        per_page = int(ctx.query.get("per_page", self._per_page_default))
        per_page = min(MAX_PER_PAGE, per_page if per_page > 0 else self._per_page_default)
        return per_page, max(1, int(ctx.query.get("page", "1")))

    @staticmethod
    def _link(ctx: _Ctx, link_path: str, page: int, last: int) -> str | None:
        if last <= 1 and page <= 1:
            return None  # GitHub sends no Link when one page holds everything

        def url(n: int) -> str:
            # GitHub keeps the caller's parameters in order and puts page last.
            pairs = [(k, v) for k, v in ctx.query_pairs if k != "page"] + [("page", str(n))]
            return f"{ctx.base.api}{link_path}?{urllib.parse.urlencode(pairs)}"

        rels: list[tuple[str, int]] = []
        if page > 1:
            rels.append(("prev", page - 1))
        if page < last:
            rels += [("next", page + 1), ("last", last)]
        if page > 1:
            rels.append(("first", 1))
        return ", ".join(f'<{url(n)}>; rel="{rel}"' for rel, n in rels)

    @staticmethod
    def _with_link(resp: _Resp, link: str | None) -> _Resp:
        if link:
            resp.headers["link"] = link
        return resp

    @staticmethod
    def _label_names(value: Any) -> list[str]:
        """Label names from any accepted input form (strings, {"name": ...}, {"labels": [...]})."""
        if isinstance(value, dict):
            value = value.get("labels", [])
        if isinstance(value, str):
            value = [value]
        names = []
        for item in value or []:
            name = item.get("name") if isinstance(item, dict) else item
            if isinstance(name, str) and name.strip():
                names.append(name.strip())
        return names

    def _check_text(self, ctx: _Ctx, resource: str, name: str, value: Any, limit: int) -> dict[str, str] | None:
        if isinstance(value, str) and len(value) > limit:
            return {
                "resource": resource,
                "code": "custom",
                "field": name,
                "message": f"{name} is too long (maximum is {limit} characters)",
            }
        return None

    # -- operations --------------------------------------------------------------------
    def _op_rate_limit(self, ctx: _Ctx) -> _Resp:
        now = time.time()
        core = self._core.json(now)
        hour = {"limit": CORE_LIMIT, "remaining": CORE_LIMIT, "reset": int(now) + CORE_WINDOW, "used": 0}
        resources = {
            "core": core,
            "search": self._search.json(now),
            "graphql": dict(hour),
            "integration_manifest": dict(hour),
            "source_import": {**hour, "limit": 100, "remaining": 100},
            "code_scanning_upload": {**hour, "limit": 1000, "remaining": 1000},
            "actions_runner_registration": {**hour, "limit": 10000, "remaining": 10000},
            "scim": {**hour, "limit": 15000, "remaining": 15000},
        }
        return _Resp(200, {"resources": resources, "rate": dict(core)})

    def _op_get_repo(self, ctx: _Ctx) -> _Resp:
        assert ctx.repo is not None
        return _Resp(200, self._repo_json(ctx.repo, ctx.base))

    def _op_list_issues(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        q = ctx.query
        state = q.get("state", "open")
        items = [i for i in repo.issues.values() if state == "all" or i.state == state]
        wanted = [n.strip().lower() for n in q.get("labels", "").split(",") if n.strip()]
        if wanted:
            items = [i for i in items if set(wanted) <= {n.lower() for n in i.labels}]
        if q.get("creator"):
            items = [i for i in items if i.user.lower() == q["creator"].lower()]
        if q.get("assignee") not in (None, "*", "none"):
            items = []  # the fake assigns nobody
        if q.get("since"):
            since = datetime.fromisoformat(q["since"].replace("Z", "+00:00")).timestamp()
            items = [i for i in items if i.updated >= since]
        sort = q.get("sort", "created")
        keys: dict[str, Callable[[_Issue], tuple[float, int]]] = {
            "created": lambda i: (i.created, i.number),
            "updated": lambda i: (i.updated, i.number),
            "comments": lambda i: (i.comments, i.number),
        }
        items.sort(key=keys.get(sort, keys["created"]), reverse=q.get("direction", "desc") == "desc")
        chunk, _, link = self._paginate(ctx, items, f"/repositories/{repo.id}/issues")
        return self._with_link(_Resp(200, [self._issue_json(repo, i, ctx.base, full=False) for i in chunk]), link)

    def _op_create_issue(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        b = ctx.body
        title = "" if b.get("title") is None else str(b["title"])
        errors = []
        if not title.strip():
            errors.append({"resource": "Issue", "code": "missing_field", "field": "title"})
        for problem in (
            self._check_text(ctx, "Issue", "title", title, MAX_TITLE_CHARS),
            self._check_text(ctx, "Issue", "body", b.get("body"), MAX_BODY_CHARS),
        ):
            if problem:
                errors.append(problem)
        if errors:
            return self._invalid(ctx, *errors)
        issue = self._new_issue(repo, title, b.get("body"), self._label_names(b.get("labels")), self._user, time.time())
        self._index(repo, issue)
        if self._fail_creates_with_502 > 0:
            # Stored, but the client hears a gateway error: only a careful client avoids a duplicate.
            self._fail_creates_with_502 -= 1
            return _Resp(502, {"message": "Server Error"})
        data = self._issue_json(repo, issue, ctx.base)
        return _Resp(201, data, {"location": data["url"]})

    def _op_get_issue(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        issue = repo.issues.get(int(ctx.params["issue_number"]))
        if issue is None:
            return self._not_found(ctx)
        if issue.deleted:
            return self._gone(ctx)
        return _Resp(200, self._issue_json(repo, issue, ctx.base))

    def _op_update_issue(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        issue = repo.issues.get(int(ctx.params["issue_number"]))
        if issue is None:
            return self._not_found(ctx)
        if issue.deleted:
            return self._gone(ctx)
        b = ctx.body or {}
        errors = []
        if "title" in b and b["title"] is not None:
            if not str(b["title"]).strip():
                errors.append({"resource": "Issue", "code": "missing_field", "field": "title"})
            problem = self._check_text(ctx, "Issue", "title", str(b["title"]), MAX_TITLE_CHARS)
            if problem:
                errors.append(problem)
        problem = self._check_text(ctx, "Issue", "body", b.get("body"), MAX_BODY_CHARS)
        if problem:
            errors.append(problem)
        if errors:
            return self._invalid(ctx, *errors)
        now = time.time()
        if "title" in b and b["title"] is not None:
            issue.title = str(b["title"])
        if "body" in b:
            issue.body = b["body"]
        if "labels" in b:
            names: list[str] = []
            for name in self._label_names(b["labels"]):
                canonical = self._ensure_label(repo, name).name
                if canonical not in names:
                    names.append(canonical)
            issue.labels = names
        if "state" in b:
            self._change_state(issue, b["state"], b.get("state_reason"), self._user, now)
        if b:
            issue.updated = now
        self._index(repo, issue)
        return _Resp(200, self._issue_json(repo, issue, ctx.base))

    def _op_list_comments(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        number = int(ctx.params["issue_number"])
        if number not in repo.issues:
            return self._not_found(ctx)
        items = sorted((c for c in repo.comments.values() if c.issue_number == number), key=lambda c: c.id)
        if ctx.query.get("since"):
            since = datetime.fromisoformat(ctx.query["since"].replace("Z", "+00:00")).timestamp()
            items = [c for c in items if c.updated >= since]
        chunk, _, link = self._paginate(ctx, items, f"/repositories/{repo.id}/issues/{number}/comments")
        return self._with_link(_Resp(200, [self._comment_json(repo, c, ctx.base) for c in chunk]), link)

    def _op_create_comment(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        issue = repo.issues.get(int(ctx.params["issue_number"]))
        if issue is None:
            return self._not_found(ctx)
        if issue.deleted:
            return self._gone(ctx)
        if issue.locked:
            return self._error(403, "Unable to create comment because issue is locked.",
                               self._contract.docs_url(ctx.method, ctx.template), resource="core")
        body = ctx.body["body"]
        bad = self._bad_comment_body(ctx, body)
        if bad is not None:
            return bad
        comment = self._new_comment(repo, issue, body, self._user)
        self._index(repo, issue)
        if self._fail_comments_with_502 > 0:
            self._fail_comments_with_502 -= 1
            return _Resp(502, {"message": "Server Error"})
        data = self._comment_json(repo, comment, ctx.base)
        return _Resp(201, data, {"location": data["url"]})

    def _bad_comment_body(self, ctx: _Ctx, body: str) -> _Resp | None:
        """GitHub's 422 for an empty or too long comment body, else None."""
        if not body.strip():
            return self._invalid(ctx, {"resource": "IssueComment", "code": "missing_field", "field": "body"})
        problem = self._check_text(ctx, "IssueComment", "body", body, MAX_BODY_CHARS)
        return self._invalid(ctx, problem) if problem else None

    def _op_update_comment(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        comment = repo.comments.get(int(ctx.params["comment_id"]))
        if comment is None:
            return self._not_found(ctx)
        body = ctx.body["body"]
        bad = self._bad_comment_body(ctx, body)
        if bad is not None:
            return bad
        comment.body, comment.updated = body, time.time()
        self._index(repo, repo.issues[comment.issue_number])
        return _Resp(200, self._comment_json(repo, comment, ctx.base))

    def _op_delete_comment(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        comment = repo.comments.pop(int(ctx.params["comment_id"]), None)
        if comment is None:
            return self._not_found(ctx)
        issue = repo.issues[comment.issue_number]
        issue.comments -= 1
        self._index(repo, issue)
        return _Resp(204, None)

    def _op_add_labels(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        issue = repo.issues.get(int(ctx.params["issue_number"]))
        if issue is None:
            return self._not_found(ctx)
        for name in self._label_names(ctx.body):
            canonical = self._ensure_label(repo, name).name
            if canonical not in issue.labels:
                issue.labels.append(canonical)
        issue.updated = time.time()
        self._index(repo, issue)
        labels = [repo.labels[n.lower()] for n in issue.labels]
        return _Resp(200, [self._label_json(repo, label, ctx.base) for label in labels])

    def _op_list_labels(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        items = sorted(repo.labels.values(), key=lambda x: x.name.lower())
        chunk, _, link = self._paginate(ctx, items, f"/repositories/{repo.id}/labels")
        return self._with_link(_Resp(200, [self._label_json(repo, x, ctx.base) for x in chunk]), link)

    def _op_create_label(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        b = ctx.body
        name = b["name"].strip()
        color = str(b.get("color", "ededed")).lstrip("#")
        errors = []
        if not name:
            errors.append({"resource": "Label", "code": "missing_field", "field": "name"})
        elif name.lower() in repo.labels:
            errors.append({"resource": "Label", "code": "already_exists", "field": "name"})
        if not re.fullmatch(r"[0-9a-fA-F]{6}", color):
            errors.append({"resource": "Label", "code": "invalid", "field": "color"})
        description = b.get("description")
        if isinstance(description, str) and len(description) > MAX_LABEL_DESCRIPTION_CHARS:
            errors.append(
                {
                    "resource": "Label",
                    "code": "custom",
                    "field": "description",
                    "message": f"description is too long (maximum is {MAX_LABEL_DESCRIPTION_CHARS} characters)",
                }
            )
        if errors:
            return self._invalid(ctx, *errors)
        label = self._ensure_label(repo, name, color=color, description=description)
        data = self._label_json(repo, label, ctx.base)
        return _Resp(201, data, {"location": data["url"]})

    def _op_get_label(self, ctx: _Ctx) -> _Resp:
        repo = ctx.repo
        assert repo is not None
        label = repo.labels.get(ctx.params["name"].lower())
        if label is None:
            return self._not_found(ctx)
        return _Resp(200, self._label_json(repo, label, ctx.base))

    def _op_search_issues(self, ctx: _Ctx) -> _Resp:
        q = ctx.query["q"]
        parsed = _SearchQuery(q)
        if parsed.problems:
            return self._violation(ctx.method, ctx.template, [f"q={q!r}: {p}" for p in parsed.problems], "search")
        free_text = " ".join(parsed.free_text)
        if len(free_text) > MAX_SEARCH_TEXT_CHARS:
            return self._invalid(
                ctx,
                {
                    "message": f"The search is longer than {MAX_SEARCH_TEXT_CHARS} characters.",
                    "resource": "Search",
                    "field": "q",
                    "code": "invalid",
                },
            )
        repos = list(self._repos.values())
        if parsed.repos:
            missing = [r for r in parsed.repos if r not in self._repos]
            if missing:
                return self._invalid(
                    ctx,
                    {
                        "message": "The listed users and repositories cannot be searched either because the "
                        "resources do not exist or you do not have permission to view them.",
                        "resource": "Search",
                        "field": "q",
                        "code": "invalid",
                    },
                )
            repos = [self._repos[r] for r in parsed.repos]
        now = time.monotonic()
        found: list[tuple[_Repo, _Snapshot]] = []
        for repo in repos:
            for number in sorted(repo.index):
                snapshot = self._indexed(repo, number, now)
                if snapshot is not None and parsed.matches(snapshot):
                    found.append((repo, snapshot))
        sort = ctx.query.get("sort")
        keys: dict[str, Callable[[tuple[_Repo, _Snapshot]], tuple[float, int]]] = {
            "created": lambda rs: (rs[1].issue.created, rs[1].issue.id),
            "updated": lambda rs: (rs[1].issue.updated, rs[1].issue.id),
            "comments": lambda rs: (rs[1].issue.comments, rs[1].issue.id),
        }
        # "Best match" has no meaning here; newest first keeps answers deterministic.
        found.sort(key=keys.get(sort or "created", keys["created"]), reverse=ctx.query.get("order", "desc") == "desc")
        per_page, page = self._page_params(ctx)
        if (page - 1) * per_page >= MAX_SEARCH_RESULTS:
            return self._invalid(
                ctx,
                {
                    "message": f"Only the first {MAX_SEARCH_RESULTS} search results are available",
                    "resource": "Search",
                    "field": "q",
                    "code": "invalid",
                },
            )
        chunk, _, link = self._paginate(ctx, found, "/search/issues", cap=MAX_SEARCH_RESULTS)
        items = [{**self._issue_json(r, s.issue, ctx.base, full=False), "score": 1.0} for r, s in chunk]
        body = {"total_count": len(found), "incomplete_results": False, "items": items}
        return self._with_link(_Resp(200, body), link)
