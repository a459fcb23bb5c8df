"""Filing one bug's issue, safely among other reporters running at once.

``Filing`` is one reporting run's writer: the quota, the issues it touched, its run's marker.
Every issue is read fresh before it is written; a create is preceded by a re-read and followed
by a convergence (the oldest issue of a key wins; a newer one is closed as its duplicate, what it
held moved over first); counts and rows live in a ledger of comments (ledger.py) from which the
body is rebuilt, and checked after each write.  docs/reporting.md says which of GitHub's
guarantees this relies on.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..records import BundleMeta, RootCauseRow, Summary
from ..records.report import ReportEntry
from .ledger import RUN_KEY, Contribution, Ledger, baseline_of, duplicate_of, legacy_of
from .markers import IssueState, TrackedRow
from .render import Renderer, RunContext
from .sanitize import BODY_LIMIT, truncate_body
from .trackers import TRACKING_KEY, Issue, IssueTracker, TrackerError, index_issues, marker_ids

UNSETTLED = "not filed: diagnosis cut short"
TRACKED_ROWS = 200  # root causes kept in the tracking issue's table, most recently seen first
CLOCK_SLACK_S = 300.0  # a runner's clock against GitHub's: a re-read reaches this much further back
DUPLICATE_NOTE = "<!-- gbft-duplicate-note -->"  # the comment that closes a duplicate, posted once
BODY_TRIES = 5  # rebuilds of a body while other reporters keep commenting
MOVED_PER_COMMENT = 10  # runs one comment moves from a duplicate (a run's marker is a few KB at most)


@dataclass
class ReportConfig:
    out: Path
    max_new_issues: int = 5
    check_fixes: bool = False
    close_fixed: bool = True
    corpus: Path | None = None  # bundles of known bugs for --check-fixes (default OUT/bugs)
    template_dir: Path | None = None


@dataclass
class ReportResult:
    filed: list[ReportEntry] = field(default_factory=list)
    commented: list[ReportEntry] = field(default_factory=list)
    reopened: list[ReportEntry] = field(default_factory=list)
    closed: list[ReportEntry] = field(default_factory=list)
    still_failing: list[ReportEntry] = field(default_factory=list)
    skipped: list[ReportEntry] = field(default_factory=list)
    failed: list[ReportEntry] = field(default_factory=list)  # GitHub refused a write: with the reason

    @property
    def bugs_filed(self) -> int:
        """New issues for root causes: what ``max_new_issues`` caps (the tracking issue is not one)."""
        return sum(not re.fullmatch(TRACKING_KEY, x.root_cause) for x in self.filed)

    @property
    def partial(self) -> bool:
        """Some writes failed: the run finished, but not everything was filed."""
        return bool(self.failed)

    def to_json(self) -> dict[str, object]:
        return {k: [x.to_json() for x in v] for k, v in self.__dict__.items()}

    def lines(self) -> list[str]:
        kinds = ("filed", "commented", "reopened", "closed", "still_failing", "skipped", "failed")
        return [x.line(kind) for kind in kinds for x in getattr(self, kind)]


@dataclass
class Bug:
    """What one issue is about: a fingerprint (an older output), a root cause, or the tracking
    issue (``tracked`` set: its rows for this run, no bundle)."""

    key: str  # the tracker key
    lookup: list[str]  # ids an existing issue may answer to, the key first
    entry: ReportEntry  # for report.json
    meta: BundleMeta | None = None  # of the bundle shown, with the bug's occurrences
    bundle: Path = Path()
    run_count: int = 1  # cases in this run
    rc: RootCauseRow | None = None
    merged: list[dict[str, object]] = field(default_factory=list)  # a root cause's fingerprints, for its issue
    tracked: list[TrackedRow] | None = None
    tracks: str = ""  # the symptom class of a tracking issue


class Filing:
    """One reporting run: the quota, the issues touched, the run's marker.

    Other reporters may run at once on the same repository (docs/reporting.md, "Reporters
    running at once"): every issue is read fresh before it is written, a create is preceded by
    a re-read and followed by a convergence (the oldest issue of a key wins, the newer is closed
    as its duplicate with what it held moved over), and counts and rows live in a ledger of
    comments (ledger.py) from which the body is rebuilt, checked after each write."""

    def __init__(self, cfg: ReportConfig, tracker: IssueTracker, ctx: RunContext, render: Renderer,
                 index: dict[str, Issue], res: ReportResult, live: set[str]) -> None:
        self.cfg, self.tracker, self.ctx, self.render, self.index, self.res = cfg, tracker, ctx, render, index, res
        self.run_key = run_key_of(cfg.out)
        self.new_filed = 0
        self.touched: set[int] = set()  # at most one comment per issue per run, even through aliases
        # An issue whose own key is another root cause of this run is that one's, whatever it merges.
        self.live = live
        self.started = time.time()
        self.known: dict[int, Issue] = {}
        self._see(tracker.issues())

    # -- what the repository holds ------------------------------------------------------
    def _see(self, issues: list[Issue]) -> None:
        self.known.update((i.number, i) for i in issues)
        self.index.update(index_issues(list(self.known.values())))

    def _refresh(self) -> None:
        """Re-read what changed since this run began (other reporters' creates among it)."""
        self._see(self.tracker.issues(since=self.started - CLOCK_SLACK_S))

    def converge(self) -> None:
        """Close every newer issue of a key an older one holds: a race that a killed reporter left
        unconverged ends here.  A refusal is recorded and the rest goes on."""
        for dup, winner in self._duplicates(""):
            try:
                self._close_duplicate(dup, winner)
            except TrackerError as e:
                self.res.failed.append(ReportEntry("", "", _own(dup), dup.number, reason=f"closing as a duplicate: {e}"))

    def _converge(self, key: str) -> Issue | None:
        """Close the newer issues of ``key``; the oldest.  It also ends a race whose create was
        stored but answered with an error (its number never known to its reporter)."""
        for dup, winner in self._duplicates(key):
            self._close_duplicate(dup, winner)
        return next((i for i in sorted(self.known.values(), key=lambda i: i.number) if _own(i) == key), None)

    def _duplicates(self, key: str) -> list[tuple[Issue, Issue]]:
        """(newer issue, the oldest) for each key two issues hold (only ``key``'s, when given)."""
        oldest: dict[str, Issue] = {}
        pairs = []
        for issue in sorted(self.known.values(), key=lambda i: i.number):
            own = _own(issue)
            if not own or (key and own != key):
                continue  # a bot duplicate's markers are neutralised: it has no key
            if own in oldest:
                pairs.append((issue, oldest[own]))
            else:
                oldest[own] = issue
        return pairs

    def _close_duplicate(self, dup: Issue, winner: Issue) -> None:
        """Move what ``dup`` holds that ``winner`` lacks into a comment on ``winner``, then close
        ``dup`` as its duplicate, its markers neutralised (out of the bot's view, in one write)."""
        dup = self.tracker.get(dup.number)
        if not _own(dup):
            return  # closed by another reporter meanwhile
        self._move(dup, winner)
        self._note_duplicate(dup, winner)
        body = f"<!-- gbft-duplicate-of: {winner.number} -->\n" + dup.body.replace("<!-- gbft-", "<!-- gbft-was-")
        self.tracker.close(dup.number, "duplicate", body=truncate_body(body))
        self.known[dup.number] = Issue(dup.number, "closed", body, dup.url, "duplicate", dup.author)
        own = _own(dup)
        rc = own if own.startswith("rc-") else ""
        self.res.closed.append(ReportEntry("" if rc else own, "", rc, dup.number, reason=f"duplicate of #{winner.number}"))

    def _move(self, dup: Issue, winner: Issue) -> None:
        """Post on ``winner`` the runs ``dup`` counted that it does not (a few per comment)."""
        held = self._ledger(dup)
        there = self._ledger(self.tracker.get(winner.number))
        moved = [c for c in held.every() if c.run and not there.has(c.run)]
        for i in range(0, len(moved), MOVED_PER_COMMENT):
            part = moved[i:i + MOVED_PER_COMMENT]
            marks = "".join(c.marks() for c in part)
            self.tracker.comment(winner.number, f"{self.render.moved(dup.number, len(part))}\n{marks}")
        if moved:
            self._drop_repeats(winner.number, self._ledger(self.tracker.get(winner.number)))

    def _note_duplicate(self, dup: Issue, winner: Issue) -> None:
        """The comment that says where the bug is tracked, once whoever closes it (two at once:
        the later poster sees both, as comment ids follow posting order)."""
        def mine() -> list[int]:
            return [c.id for c in self.tracker.comments(dup.number)
                    if DUPLICATE_NOTE in c.body and c.author in ("", dup.author)]
        if mine():
            return
        self.tracker.comment(dup.number, f"{self.render.duplicate(winner.number)}\n{DUPLICATE_NOTE}\n")
        for comment_id in mine()[1:]:
            with contextlib.suppress(TrackerError):
                self.tracker.delete_comment(dup.number, comment_id)

    def _ledger(self, issue: Issue) -> Ledger:
        """The issue's ledger: its baseline and its author's comments."""
        return Ledger.read(issue.body, self.tracker.comments(issue.number), issue.author)

    # -- one bug ------------------------------------------------------------------------
    def one(self, bug: Bug) -> None:
        existing = self._existing(bug)
        if existing is not None:
            self.index.setdefault(bug.key, existing)  # found by an alias: the summary links it by key
            self._update(bug, existing)
        else:
            self._file(bug)

    def _existing(self, bug: Bug) -> Issue | None:
        """The issue filed for this bug under its key, else under any of its fingerprints (an issue
        filed before root causes, or under another root cause key that is gone)."""
        for i, x in enumerate(bug.lookup):
            issue = self.index.get(x)
            own = _own(issue) if issue else ""
            if issue and (i == 0 or not own or own == bug.key or own not in self.live):
                return issue
        return None

    def _file(self, bug: Bug) -> None:
        # Unsettled: its title names an operator nobody confirmed; listed until a run settles it
        # (an issue already filed for it is still updated: the bug was seen again).
        if bug.rc is not None and not bug.rc.settled:
            self.res.skipped.append(replace(bug.entry, reason=UNSETTLED))
            return
        # The quota counts bugs (root causes); the one tracking issue is not one.
        if bug.tracked is None and self.new_filed >= self.cfg.max_new_issues:
            self.res.skipped.append(replace(bug.entry, reason="not filed: quota"))
            return
        self._refresh()  # another reporter may have filed it since this run read the issues
        existing = self._existing(bug)
        if existing is not None:
            self._update(bug, existing)
            return
        t, body = self._body(bug, Ledger(self._contribution(bug)), "")
        issue = self.tracker.create(bug.key, t, body)
        self.known[issue.number] = issue
        self._refresh()
        winner = self._converge(bug.key) or issue
        adopted = (baseline_of(winner.body) or Contribution("")).run != self.run_key
        if winner.number != issue.number or adopted:  # another reporter's (a create answered 5xx finds it)
            self._update(bug, winner)
            return
        self._settle(bug, issue)
        for x in bug.lookup:
            self.index.setdefault(x, issue)
        self.index[bug.key] = issue
        self.new_filed += bug.tracked is None
        self.res.filed.append(replace(bug.entry, issue=issue.number, url=issue.url))

    def _update(self, bug: Bug, existing: Issue) -> None:
        """Comment once (the comment carries the run's marker and what it adds, so a rerun after a
        lost answer does not post it again), reopen if it regressed, then rebuild the body."""
        issue = self._fresh(existing.number)
        n, skip = issue.number, self._skip_reason(issue)
        led = self._carry_legacy(issue) if not skip else Ledger(Contribution(""))
        regressed = issue.state == "closed"
        if not skip and led.has(self.run_key) and not regressed and led.folded_in(issue.body):
            skip = "already reported from this run"
        if skip:
            self.res.skipped.append(replace(bug.entry, issue=n, reason=skip))
            return
        self.touched.add(n)
        mine = self._contribution(bug)
        # The comment before the reopening: a run killed between the two leaves the issue
        # closed, so its rerun still reopens it and still calls it regressed (the comment, with
        # its marker, is not posted twice).  The other order lost the "Regressed" notice.
        if not led.has(self.run_key):
            marks = mine.marks()
            text = truncate_body(self._comment(bug, led.with_(mine), regressed).rstrip(), BODY_LIMIT - len(marks) - 1)
            self.tracker.comment(n, f"{text}\n{marks}")
        if regressed:
            self.tracker.reopen(n)
        body = self._rebuild(bug, issue)
        self.index[bug.key] = self.known[n] = Issue(n, "open", body, issue.url, "reopened" if regressed else "",
                                                    issue.author)
        (self.res.reopened if regressed else self.res.commented).append(replace(bug.entry, issue=n))

    def _carry_legacy(self, issue: Issue) -> Ledger:
        """The issue's ledger; one from before the ledger first gets what its body counted as a
        comment of its own (the same from whoever carries it: one counts), so that the body can
        be rebuilt.  The output that last wrote such a body is reported already."""
        led = self._ledger(issue)
        if baseline_of(issue.body) is not None or led.entries:
            return led
        old = legacy_of(issue.body)
        if old.run == self.run_key:
            return Ledger(old)  # this output wrote that body: nothing to add
        if old.state is None and not old.rows:
            return led  # it counted nothing
        self.tracker.comment(issue.number, f"{self.render.carried()}\n{old.marks()}")
        return self._ledger(issue)

    def _settle(self, bug: Bug, issue: Issue) -> None:
        """Rebuild the body of an issue just filed when a duplicate's runs were moved into it."""
        now = self.tracker.get(issue.number)
        if not self._ledger(now).folded_in(now.body):
            self._rebuild(bug, now)

    def _fresh(self, number: int) -> Issue:
        """The issue as it is now; one closed as a duplicate by another reporter: its winner
        (only a bot issue this run listed: a marker can be typed into any body)."""
        issue = self.tracker.get(number)
        winner = duplicate_of(issue.body)
        return self.tracker.get(winner) if winner in self.known and _own(self.known[winner]) else issue

    def _skip_reason(self, issue: Issue) -> str:
        if not _own(issue):
            return "closed as a duplicate of an issue this run did not list"
        if issue.state == "closed" and issue.state_reason in ("not_planned", "duplicate"):
            return f"closed by maintainers ({issue.state_reason.replace('_', ' ')})"
        if issue.number in self.touched:
            return "already updated in this run"
        return ""

    def _comment(self, bug: Bug, led: Ledger, regressed: bool) -> str:
        """This run's comment; "(N in all)": the issue's total, this run's added."""
        if bug.tracked is not None:
            return self.render.tracking_comment(bug.tracked, self.ctx, regressed, bug.tracks)
        return self.render.comment(_with_state(bug, led), self.ctx, bug.run_count, regressed)

    def _rebuild(self, bug: Bug, issue: Issue) -> str:
        """Write the body from the ledger; read the comments again after, and write again while a
        run it left out has commented meanwhile (the last writer then holds every run)."""
        n, base = issue.number, issue.body
        for _ in range(BODY_TRIES):
            led = self._ledger(issue)
            self._drop_repeats(n, led)
            _, body = self._body(bug, led, base)
            self.tracker.update_body(n, body)
            if Ledger.read(body, self.tracker.comments(n), issue.author).runs() <= led.runs():
                break
        return body

    def _drop_repeats(self, n: int, led: Ledger) -> None:
        """One comment per run, whoever posted it twice: the later copies go (of two posted at
        once, the later poster sees both, as comment ids follow posting order)."""
        for comment_id in led.repeats:
            with contextlib.suppress(TrackerError):  # refused: the next reader deletes it
                self.tracker.delete_comment(n, comment_id)

    def _contribution(self, bug: Bug) -> Contribution:
        if bug.tracked is not None:
            return Contribution(self.run_key, rows=tuple(bug.tracked))
        assert bug.meta is not None  # an issue of its own shows a bundle
        return Contribution(self.run_key, state=IssueState.of(bug.meta))

    def _body(self, bug: Bug, led: Ledger, base: str) -> tuple[str, str]:
        """(title, body) of the bug's issue, rebuilt from its ledger; ``base``: its body now."""
        if bug.tracked is not None:
            rows = led.fold_rows()[:TRACKED_ROWS]
            t, body = self.render.tracking(bug.key, rows, self.ctx, self.run_key, TrackedRow.encode(rows), bug.tracks)
        else:
            t, body = self.render.issue(bug.bundle, _with_state(bug, led), self.ctx,
                                        aliases=_aliases(base, bug), run_key=self.run_key, rc=bug.rc,
                                        merged=bug.merged)
        prefix = led.prefix()
        return t, prefix + truncate_body(body, BODY_LIMIT - len(prefix))


def _own(issue: Issue) -> str:
    """The key an issue is filed under ("": none, such as a bot duplicate's, whose markers are neutralised)."""
    ids = marker_ids(issue.body)
    return ids[0] if ids else ""


def _with_state(bug: Bug, led: Ledger) -> BundleMeta:
    """The bug's shown bundle with the issue's totals (occurrences, first seen, platforms)."""
    assert bug.meta is not None
    total = led.fold_state()
    if total is None:
        return bug.meta
    return bug.meta.with_(occurrences=total.occurrences, first_seen=total.first_seen or bug.meta.first_seen,
                          platforms=total.platforms or bug.meta.platforms)


def run_key_of(out: Path) -> str:
    """Identifies one fuzz output, so that reporting it twice changes nothing."""
    raw = (out / "summary.json").read_bytes()
    run_id = Summary.read(out).run_id[:32]
    # An artifact's run id lands in hidden markers: one that could end a comment is not used.
    return run_id if re.fullmatch(RUN_KEY, run_id) else hashlib.sha256(raw).hexdigest()[:16]


def _aliases(body: str, bug: Bug) -> list[str]:
    """Every id the issue answers to besides its key: the bug's fingerprints (canonical first),
    then whatever the existing issue carried before (an older fingerprint or root-cause key)."""
    ids = dict.fromkeys([*bug.lookup[1:], *marker_ids(body)])
    return [x for x in ids if x != bug.key and not re.fullmatch(TRACKING_KEY, x)]
