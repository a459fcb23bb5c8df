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

LEDGER = re.compile(r"<!-- gbft-ledger: ([A-Za-z0-9+/=]{1,60000}) -->")  # a run's comment; several in a move
BASELINE = re.compile(r"<!-- gbft-baseline: ([A-Za-z0-9+/=]{1,60000}) -->")  # the body's, never changed
FOLDED = re.compile(r"<!-- gbft-folded: ([0-9a-f]{16}) -->")  # the runs the body was rebuilt from
RUN = re.compile(r"<!-- gbft-run: ([^ >]{1,64}) -->")  # a run's comment, before the ledger too
LAST_RUN = re.compile(r"<!-- gbft-last-run: ([^ >]{1,64}) -->")
DUPLICATE_OF = re.compile(r"<!-- gbft-duplicate-of: (\d{1,9}) -->")
MAX_JSON = 1 << 20  # bytes a marker may inflate to: a marker is untrusted, never a zip bomb


@dataclass(frozen=True)
class Comment:
    id: int
    body: str


@dataclass(frozen=True)
class Contribution:
    """What one run added to one issue: a root cause's occurrences, or a tracking issue's rows."""

    run: str
    state: IssueState | None = None
    rows: tuple[TrackedRow, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "state": self.state.to_json() if self.state else None,
                "rows": [r.to_json() for r in self.rows]}

    @staticmethod
    def from_json(d: Any) -> Contribution | None:
        if not (isinstance(d, dict) and isinstance(d.get("run"), str) and len(d["run"]) <= 64
                and isinstance(d.get("rows"), list)):
            return None
        state = IssueState.from_json(d["state"]) if d.get("state") is not None else None
        if d.get("state") is not None and state is None:
            return None
        rows = tuple(r for r in map(TrackedRow.from_json, d["rows"]) if r is not None)
        return Contribution(d["run"], state, rows)

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
    """The valid ledger markers of a comment, in order."""
    return [c for c in map(_decode, LEDGER.findall(text or "")) if c is not None]


def baseline_of(body: str) -> Contribution:
    """The body's baseline; an issue written before the ledger: the totals its body holds now,
    under the run that last wrote it (so reporting that run's output again changes nothing)."""
    m = BASELINE.search(body or "")
    found = _decode(m.group(1)) if m else None
    if found is not None:
        return found
    last = LAST_RUN.search(body or "")
    return Contribution(last.group(1) if last else "", IssueState.decode(body) or legacy_state(body),
                        tuple(TrackedRow.decode(body)))


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
    def read(body: str, comments: Iterable[Comment]) -> Ledger:
        led = Ledger(baseline_of(body))
        for c in sorted(comments, key=lambda c: c.id):
            runs = set(RUN.findall(c.body or ""))
            if runs and runs <= led.commented:
                led.repeats.append(c.id)
            led.commented |= runs
            for x in contributions(c.body):
                if x.run and x.run != led.baseline.run:
                    led.entries.setdefault(x.run, x)
        return led

    def all(self) -> list[Contribution]:
        """The baseline and each run's contribution, in a fixed order (the fold is order-free)."""
        return [self.baseline, *(self.entries[k] for k in sorted(self.entries))]

    def runs(self) -> set[str]:
        return {x.run for x in self.all() if x.run}

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
        m = FOLDED.search(body or "")
        return (m.group(1) if m else Ledger(baseline_of(body)).digest()) == self.digest()

    def fold_state(self) -> IssueState | None:
        return fold_states([x.state for x in self.all() if x.state is not None])

    def fold_rows(self) -> list[TrackedRow]:
        return fold_rows([r for x in self.all() for r in x.rows])

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
