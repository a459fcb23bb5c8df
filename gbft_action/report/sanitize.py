"""Make untrusted text safe to paste into a GitHub issue, one function per context.

Engine logs and messages are untrusted, and so is every field of a bundle (it may
come from a pull request's artifact): nothing may ping people (``@name``), close
or link issues (``fixes #12``), inject HTML, or break out of its place.

  ``cell``        a table cell or a phrase in a sentence (one line, neutralised)
  ``prose``       a paragraph (neutralised, line breaks kept)
  ``code_block``  a fenced block; the content is never altered (GitHub does not
                  act on mentions or references in code), the fence is longer
                  than any backtick run inside
  ``title``       an issue title: plain text (no HTML entities: titles are not
                  HTML), no mentions, one line

``finalize`` makes ``cell`` the default for every ``{{ value }}`` of a template,
so a field cannot reach a body raw by being forgotten; text the renderer built
itself (code blocks, tables of sanitised cells) is marked ``Markup``.  Bodies
are cut to GitHub's 65,536 characters, outside any open code block, with a note
that says so.
"""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup

BODY_LIMIT = 65536
ZWSP = "\u200b"  # zero-width space: breaks the token GitHub would act on, invisible when read
_MENTION = re.compile(r"@(?=[A-Za-z0-9-])")
_CLOSING = re.compile(r"\b(close[sd]?|fix(e[sd])?|resolve[sd]?)(\s*:?\s*)(?=[\w.-]*#\d)", re.I)
_ISSUE_REF = re.compile(r"#(?=\d)")
_COMMANDS = re.compile(r"^(\s*)::", re.M)  # GitHub Actions workflow commands


def neutralise(text: str) -> str:
    """Untrusted text as inert plain text: no pings, no issue links, no HTML."""
    t = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    t = _MENTION.sub("@" + ZWSP, t)
    t = _CLOSING.sub(lambda m: m.group(1) + ZWSP + m.group(3), t)
    t = _ISSUE_REF.sub("#" + ZWSP, t)
    return _COMMANDS.sub(lambda m: m.group(1) + ":" + ZWSP + ":", t)


def code_block(text: str, lang: str = "") -> Markup:
    """A fenced block no content can close: the fence is longer than any backtick run inside.
    The content is not altered (a repro in it must run as pasted)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return Markup(f"{fence}{lang}\n{text.rstrip()}\n{fence}")


def inline(text: Any, limit: int = 300) -> str:
    """One line of untrusted text for a table cell or a sentence."""
    t = neutralise(" ".join(str(text).split())[:limit])
    return t.replace("|", "\\|").replace("`", "'")


cell = inline


def prose(text: Any, limit: int = 5000) -> str:
    """A paragraph of untrusted text: neutralised, its line breaks kept."""
    return neutralise(str(text)[:limit])


def title(text: Any, limit: int = 200) -> str:
    """An issue title: plain text, one line, no mentions (GitHub shows titles as text: no entities)."""
    t = " ".join(str(text).split())[:limit]
    return _MENTION.sub("@" + ZWSP, t)


def finalize(value: Any) -> Any:
    """Every ``{{ value }}`` of a template is a cell unless the renderer marked it Markup."""
    if isinstance(value, Markup) or value is None:
        return value if value is not None else ""
    return Markup(cell(value, 2000))


def truncate_body(body: str, limit: int = BODY_LIMIT) -> str:
    """Cut a body to GitHub's limit, closing any open fence and saying so."""
    if len(body) <= limit:
        return body
    note = (f"\n\n> **Note:** this text was cut to GitHub's limit of {limit:,} characters; "
            "the full text is in the run's artifacts.\n")
    cut = body[: limit - len(note) - 64]
    fence = open_fence(cut)
    if fence:  # inside a code block: close it
        cut += "\n" + fence
    return cut + note


def open_fence(text: str) -> str:
    """The fence of the code block ``text`` ends inside, or "" (CommonMark: a block closes
    only at a line of the same character at least as long, so a shorter run inside is text)."""
    fence = ""
    for line in text.splitlines():
        m = re.match(r" {0,3}(`{3,}|~{3,})(.*)$", line)
        if not m:
            continue
        run, rest = m.group(1), m.group(2)
        if not fence:
            fence = run
        elif run[0] == fence[0] and len(run) >= len(fence) and not rest.strip():
            fence = ""
    return fence
