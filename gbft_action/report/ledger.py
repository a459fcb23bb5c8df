"""What each run added to an issue, kept where reporters running at once cannot overwrite it.

An issue's body is one value that the last writer wins, so counts and tracking rows kept only
there are lost when two reporters update it together.  Comments are append-only: each run's
comment carries what that run added (a ``Contribution``, in a ``gbft-ledger`` marker), and the
body is rebuilt from them (``Ledger.fold_state``, ``Ledger.fold_rows``): a sum of counts and a
union of rows, the same whatever order the comments came in.  The body keeps one immutable
``gbft-baseline``: what its creating run added, or, for an issue written before the ledger,
the totals its body held then.  A run is counted once however many comments carry it.

Markers are base64 of zlib-compressed JSON (rows repeat themselves and compress tenfold) and,
like every marker, are read with their exact types only: a body or comment is data anyone may
have edited.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from .markers import IssueState, TrackedRow
from .trackers import Comment

RUN_KEY = r"[A-Za-z0-9._-]{1,64}"  # what names a run (reporter.run_key_of): nothing that can end a comment
LEDGER = re.compile(r"<!-- gbft-ledger: ([A-Za-z0-9+/=]{1,65536}) -->")  # a run's comment; several in a move
BASELINE = re.compile(r"<!-- gbft-baseline: ([A-Za-z0-9+/=]{1,65536}) -->")  # the body's, never changed
FOLDED = re.compile(r"<!-- gbft-folded: ([0-9a-f]{16}) -->")  # the runs the body was rebuilt from
RUN = re.compile(rf"<!-- gbft-run: ({RUN_KEY}) -->")  # a run's comment, before the ledger too
LAST_RUN = re.compile(rf"<!-- gbft-last-run: ({RUN_KEY}) -->")
DUPLICATE_OF = re.compile(r"<!-- gbft-duplicate-of: (\d{1,9}) -->")
MAX_JSON = 1 << 18  # bytes a marker may inflate to: a marker is untrusted, never a zip bomb
MAX_MARKERS = 20  # ledger markers read from one comment (a move carries a few runs)
MAX_ROWS = 200  # rows of one contribution (a tracking issue's table keeps as many)


@dataclass(frozen=True)
class Contribution:
    """What one run added to one issue: a root cause's occurrences, or a tracking issue's rows."""

    run: str
    state: IssueState | None = None
    rows: tuple[TrackedRow, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"run": self.run, "state": self.state.to_json() if self.state else None,
                "rows": [r.to_json() for r in self.rows]}

    @staticmethod
    def from_json(d: Any) -> Contribution | None:
        if not (isinstance(d, dict) and isinstance(d.get("run"), str) and re.fullmatch(RUN_KEY, d["run"])
                and isinstance(d.get("rows"), list)):
            return None
        state = IssueState.from_json(d["state"]) if d.get("state") is not None else None
        if d.get("state") is not None and state is None:
            return None
        rows = tuple(r for r in map(TrackedRow.from_json, d["rows"][:MAX_ROWS]) if r is not None)
        return Contribution(d["run"], state, rows)

    def marks(self) -> str:
        """What a comment carries for this run: its run marker and its ledger marker."""
        return f"<!-- gbft-run: {self.run} -->\n{self.marker()}\n"

    def marker(self, name: str = "gbft-ledger") -> str:
        raw = zlib.compress(json.dumps(self.to_json(), separators=(",", ":")).encode(), 9)
        return f"<!-- {name}: {base64.b64encode(raw).decode()} -->"


def _decode(text: str) -> Contribution | None:
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(base64.b64decode(text, validate=True), MAX_JSON)
        if inflater.unconsumed_tail:
            return None
        return Contribution.from_json(json.loads(raw))
    except (ValueError, zlib.error, RecursionError):
        return None


def contributions(text: str) -> list[Contribution]:
    """The valid ledger markers of a comment, in order (the first MAX_MARKERS)."""
    return [c for c in map(_decode, LEDGER.findall(text or "")[:MAX_MARKERS]) if c is not None]


def head(body: str) -> str:
    """The hidden markers a body starts with: the bot's own.  A marker further down may be in a
    pasted engine log or an edit, and is never obeyed."""
    lines = []
    for line in (body or "").removeprefix("\ufeff").splitlines():
        if not line.startswith("<!-- gbft-"):
            break
        lines.append(line)
    return "\n".join(lines)


def duplicate_of(body: str) -> int | None:
    """The issue a bot duplicate was closed into (filing.Filing._close_duplicate), or None."""
    m = DUPLICATE_OF.search(head(body))
    return int(m.group(1)) if m else None


def baseline_of(body: str) -> Contribution | None:
    """The body's baseline (None: it has none, or one that does not decode)."""
    m = BASELINE.search(head(body))
    return _decode(m.group(1)) if m else None


def legacy_of(body: str) -> Contribution:
    """What an issue written before the ledger holds: the totals of its body, under the run that
    last wrote it (so that reporting that run's output again changes nothing)."""
    last = LAST_RUN.search(head(body))
    return Contribution(last.group(1) if last else "legacy", IssueState.decode(body) or legacy_state(body),
                        tuple(TrackedRow.decode(body))[:MAX_ROWS])


def legacy_state(body: str) -> IssueState | None:
    """The counts of an issue filed before the state marker (version 0), read from its table."""
    occ = re.search(r"\| Occurrences \| (\d+) \(first seen ([^,]*),", body or "")
    plat = re.search(r"\| Platforms \| ([^|]*) \|", body or "")
    if not occ:
        return None
    return IssueState(int(occ.group(1)), occ.group(2)[:20], "",
                      tuple(p.strip() for p in plat.group(1).split(",")) if plat else ())


@dataclass
class Ledger:
    """An issue's baseline and every run's contribution from its comments (the first comment of
    a run counts; ``repeats`` are later comments that add nothing an older one did not)."""

    baseline: Contribution
    entries: dict[str, Contribution] = field(default_factory=dict)
    commented: set[str] = field(default_factory=set)  # runs with a comment, with a ledger or from before it
    repeats: list[int] = field(default_factory=list)

    @staticmethod
    def read(body: str, comments: Iterable[Comment], author: str = "") -> Ledger:
        """The ledger of an issue filed by ``author``: only its comments count ("": any, the
        files tracker's).  Without a baseline in the body it is empty: an issue from before the
        ledger gets its old totals as a comment of their own first (Filing._carry_legacy), so a
        body whose baseline an edit removed is never counted twice."""
        led = Ledger(baseline_of(body) or Contribution(""))
        counted = {led.baseline.run}
        for c in sorted(comments, key=lambda c: c.id):
            if author and c.author != author:
                continue  # anyone may comment: only the bot's own comments are its ledger
            runs = set(RUN.findall(c.body or ""))
            # A repeat adds no run an older comment's ledger does not hold (a comment from before
            # the ledger holds none: the carried counts of its run are no repeat of it).
            if runs and runs <= counted:
                led.repeats.append(c.id)
            led.commented |= runs
            for x in contributions(c.body):
                counted.add(x.run)
                if x.run and x.run != led.baseline.run:
                    led.entries.setdefault(x.run, x)
        return led

    def every(self) -> list[Contribution]:
        """The baseline and each run's contribution, in a fixed order (the fold is order-free)."""
        return [self.baseline, *(self.entries[k] for k in sorted(self.entries))]

    def runs(self) -> set[str]:
        return {x.run for x in self.every() if x.run}

    def has(self, run: str) -> bool:
        """The run was reported here already (its comment posted, or it created the issue)."""
        return run in self.runs() or run in self.commented

    def with_(self, c: Contribution) -> Ledger:
        """This ledger with a run's contribution added (before its comment is posted)."""
        if self.has(c.run):
            return self
        return replace(self, entries={**self.entries, c.run: c})

    def digest(self) -> str:
        return hashlib.sha256("\n".join(sorted(self.runs())).encode()).hexdigest()[:16]

    def folded_in(self, body: str) -> bool:
        """The body was rebuilt from exactly these runs (a body from before the ledger: from its own run)."""
        m = FOLDED.search(head(body))
        return (m.group(1) if m else Ledger(legacy_of(body)).digest()) == self.digest()

    def fold_state(self) -> IssueState | None:
        return fold_states([x.state for x in self.every() if x.state is not None])

    def fold_rows(self) -> list[TrackedRow]:
        return fold_rows([r for x in self.every() for r in x.rows])

    def prefix(self) -> str:
        """The markers a body rebuilt from this ledger starts with."""
        return f"{self.baseline.marker('gbft-baseline')}\n<!-- gbft-folded: {self.digest()} -->\n"


def fold_states(states: list[IssueState]) -> IssueState | None:
    """Counts summed, the earliest first and the latest last seen, platforms joined."""
    if not states:
        return None
    firsts = [s.first_seen for s in states if s.first_seen]
    lasts = [s.last_seen for s in states if s.last_seen]
    platforms = sorted({p for s in states for p in s.platforms if p and p != "?"})
    return IssueState(sum(s.occurrences for s in states), min(firsts, default=""), max(lasts, default=""),
                      tuple(platforms[:8]))


def fold_rows(rows: list[TrackedRow]) -> list[TrackedRow]:
    """One row per root cause: counts summed, platforms joined, the title and operators of its
    latest sighting; most recently seen first."""
    out: dict[str, TrackedRow] = {}
    for r in sorted(rows, key=lambda r: (r.last_seen, r.title, r.ops)):
        old = out.get(r.key)
        if old is not None:
            r = replace(r, count=old.count + r.count, first_seen=min(old.first_seen, r.first_seen),
                        platforms=tuple(sorted(set(old.platforms) | set(r.platforms))[:8]))
        out[r.key] = r
    return sorted(out.values(), key=lambda r: (r.last_seen, r.count, r.key), reverse=True)
