"""Make engine text safe to paste into a GitHub issue.

Engine logs and messages are untrusted: they must not ping people (``@name``),
close or link issues (``fixes #12``), inject HTML, or break out of the code
block they are shown in.  Bodies are cut to GitHub's 65,536 characters with a
note that says so.
"""

from __future__ import annotations

import re

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


def code_block(text: str, lang: str = "") -> str:
    """A fenced block no content can close: the fence is longer than any backtick run inside.

    Inside a code block Markdown and HTML are not rendered (so HTML stays
    readable), but mentions and issue references are still broken up: they do
    not act there, but text copied out of the block would.
    """
    body = _MENTION.sub("@" + ZWSP, text)
    body = _CLOSING.sub(lambda m: m.group(1) + ZWSP + m.group(3), body)
    body = _ISSUE_REF.sub("#" + ZWSP, body)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body.rstrip()}\n{fence}"


def inline(text: str, limit: int = 300) -> str:
    """One line of untrusted text for a table cell or a sentence."""
    t = neutralise(" ".join(text.split()))[:limit]
    return t.replace("|", "\\|").replace("`", "'")


def truncate_body(body: str, limit: int = BODY_LIMIT) -> str:
    """Cut a body to GitHub's limit, closing any open fence and saying so."""
    if len(body) <= limit:
        return body
    note = (f"\n\n> **Note:** this text was cut to GitHub's limit of {limit:,} characters; "
            "the full text is in the run's artifacts.\n")
    cut = body[: limit - len(note) - 16]
    fences = re.findall(r"^(`{3,})", cut, re.M)
    if len(fences) % 2:  # inside a code block: close it
        cut += "\n" + fences[-1]
    return cut + note
