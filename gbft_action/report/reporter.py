"""The reporter: one issue per root cause (or per fingerprint), kept current, within a quota.

An output whose summary.json has ``root_causes`` gets one issue per root cause
whose symptom policy is ``report`` (showing its canonical fingerprint's bundle),
one tracking issue for the ``precision`` ones under ``summary``, and nothing filed
for the rest; an older output (no ``root_causes``) gets one issue per fingerprint.
Reads a fuzz output directory as data (summary.json, bugs/*/meta.json, the
rendered repro scripts) and never executes anything from it, so it can run in
a job that holds a write token.  ``check_fixes`` is the exception: it replays
bug models on this build, so run it only where the engine build is trusted
(the scheduled default-branch job).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ..bugs.policy import listed_line
from ..bugs.rootcause import same_class
from ..records import BundleMeta, EngineInfo, FailureRow, Policy, RecordError, RootCauseRow, Summary
from ..records.report import ReportEntry
from .ledger import DUPLICATE_OF, Contribution, Ledger
from .local import write_file
from .markers import IssueState, TrackedRow
from .render import TRACKING_TITLES, Renderer, RunContext, stage_text
from .sanitize import BODY_LIMIT, truncate_body
from .trackers import (ROOT_CAUSE_KEY, TRACKING_KEY, Issue, IssueTracker, TrackerError, duplicate, index_issues,
                       marker_ids)

PRECISION_TRACKING = "gbft-precision-tracking"  # the tracker key of the one precision tracking issue


UNISOLATED = "unisolated"  # the tracking class of wrong results no operator was shown to give alone


def tracking_key(symptom: str) -> str:
    """The tracker key of a class's one tracking issue (render.TRACKING_TITLES)."""
    return f"gbft-{symptom}-tracking"


def tracking_class(rc: RootCauseRow) -> str:
    """The tracking issue a root cause is listed in instead of an issue of its own ("": none).

    A class the symptom policy summarises (precision, NaN/Inf); or a wrong result whose settled
    diagnosis showed no operator, and no chain of two or three, wrong alone.  Such a key names
    where the difference surfaced, not what is wrong (on ONNX most of them named a control
    operator), and a maintainer closes it as "not a bug": it is listed, never filed one by one.
    It still fails a pull request that introduces it (the verdict is bugs.policy.fails_check, not this)."""
    if rc.policy is Policy.SUMMARY and rc.symptom in TRACKING_TITLES:
        return rc.symptom
    # Garbage read from uninitialised memory is the same class (rootcause.same_class): a guess
    # at the operator that read it is no more a finding than a guess at a wrong value's.
    if rc.policy is Policy.REPORT and same_class(rc.symptom) == "wrong-result" and not rc.isolated and rc.settled:
        return UNISOLATED
    return ""


def tracked(rc: RootCauseRow) -> bool:
    """A root cause listed in its class's tracking issue instead of an issue of its own."""
    return bool(tracking_class(rc))
# Failures of the base build only: the build under test passes, so there is nothing to file.
FIXED_VERDICTS = ("fixed", "flaky-fixed")
MERGED_ROWS = 100  # fingerprints listed in a root cause's issue (all of them are in its markers)
UNSETTLED = "not filed: diagnosis cut short"
TRACKED_ROWS = 200  # root causes kept in the tracking issue's table, most recently seen first
CLOCK_SLACK_S = 300.0  # a runner's clock against GitHub's: a re-read reaches this much further back
DUPLICATE_NOTE = "<!-- gbft-duplicate-note -->"  # the comment that closes a duplicate, posted once
BODY_TRIES = 5  # rebuilds of a body while other reporters keep commenting


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

    def to_json(self) -> dict[str, Any]:
        return {k: [x.to_json() for x in v] for k, v in self.__dict__.items()}

    def lines(self) -> list[str]:
        kinds = ("filed", "commented", "reopened", "closed", "still_failing", "skipped", "failed")
        return [x.line(kind) for kind in kinds for x in getattr(self, kind)]


class ReportInputError(ValueError):
    """A fuzz output that cannot be reported: one line naming the file."""


def load_run(out: Path) -> tuple[Summary, dict[str, BundleMeta]]:
    """summary.json and the meta.json of each failure's bundle, checked: a file that is missing,
    truncated or not what it should be is named in a ReportInputError."""
    try:
        summary = Summary.read(out)
    except RecordError as e:
        raise ReportInputError(str(e) if "no such file" not in str(e) else f"{e} (run gbft fuzz first?)") from None
    metas = {}
    for key in [f.key for f in summary.failures] + [rc.canonical for rc in summary.root_causes or ()]:
        meta = _bundle_meta(out / "bugs" / key) if key not in metas else None
        if meta is not None:  # a failure without a bundle (fixed, or not bundled): nothing to file
            metas[key] = meta  # a root cause's canonical bundle holds its model, failing here or not
    return summary, metas


def _bundle_meta(bundle: Path) -> BundleMeta | None:
    """A bundle's meta.json, checked (None: no bundle there)."""
    if not (bundle / "meta.json").exists():
        return None
    for name in ("graph.json", "minimized.json"):
        if not (bundle / name).exists():
            raise ReportInputError(f"{bundle / name}: missing from the bug bundle")
    try:
        return BundleMeta.read(bundle)
    except RecordError as e:
        raise ReportInputError(str(e)) from None


def report(cfg: ReportConfig, tracker: IssueTracker, ctx: RunContext, lane_factory: Any = None) -> ReportResult:
    """File or update one issue per bug.  Each write is its own unit: one that GitHub refuses
    (a locked or deleted issue, a 5xx after retries) is recorded with its reason in
    report.json and the run goes on.  report.json and summary.md are always written."""
    summary, metas = load_run(cfg.out)
    rcs = summary.root_causes
    render = Renderer(cfg.template_dir)
    res = ReportResult()
    index: dict[str, Issue] = {}
    try:
        run = _Run(cfg, tracker, ctx, render, index, res, {rc.key for rc in rcs or ()})
        bugs = _fingerprint_bugs(cfg.out, summary, metas) if rcs is None else _root_cause_bugs(cfg.out, summary,
                                                                                               metas, rcs)
        for bug in bugs:
            try:
                run.one(bug)
            except TrackerError as e:
                res.failed.append(replace(bug.entry, issue=e.number, reason=str(e)))
        if cfg.check_fixes:
            failing_now = set(metas) | {i for rc in rcs or () if rc.verdict not in FIXED_VERDICTS
                                        for i in (rc.key, *rc.fingerprints)}
            _check_fixes(cfg, tracker, ctx, render, index, failing_now, res, lane_factory)
    finally:
        write_file(cfg.out / "report.json", json.dumps(res.to_json(), indent=2, sort_keys=True) + "\n")
        write_file(cfg.out / "summary.md", job_summary(render, summary, metas, index, res))
    return res


@dataclass
class _Bug:
    """What one issue is about: a fingerprint (an older output), a root cause, or the tracking
    issue (``tracked`` set: its rows for this run, no bundle)."""

    key: str  # the tracker key
    lookup: list[str]  # ids an existing issue may answer to, the key first
    entry: ReportEntry  # for report.json
    meta: BundleMeta | None = None  # of the bundle shown, with the bug's occurrences
    bundle: Path = Path()
    run_count: int = 1  # cases in this run
    rc: RootCauseRow | None = None
    merged: list[dict[str, Any]] = field(default_factory=list)  # a root cause's fingerprints, for its issue
    tracked: list[TrackedRow] | None = None
    tracks: str = ""  # the symptom class of a tracking issue


def _fingerprint_bugs(out: Path, summary: Summary, metas: dict[str, BundleMeta]) -> list[_Bug]:
    """An output without root causes: one issue per fingerprint, as before them."""
    counts = {f.key: f.count for f in summary.failures}
    return [_Bug(fid, [fid], ReportEntry(fid, meta.fingerprint.title), meta, out / "bugs" / fid,
                 counts.get(fid, 1)) for fid, meta in metas.items()]


def _root_cause_bugs(out: Path, summary: Summary, metas: dict[str, BundleMeta],
                     rcs: tuple[RootCauseRow, ...]) -> list[_Bug]:
    """One issue per root cause to report, then a tracking issue per class with root causes to
    list (precision, NaN/Inf, unisolated wrong results: render.TRACKING_TITLES)."""
    failures = {f.key: f for f in summary.failures}
    bugs: list[_Bug] = []
    rows: dict[str, list[TrackedRow]] = {}
    for rc in rcs:
        if rc.verdict in FIXED_VERDICTS:
            continue
        if tracked(rc):
            rows.setdefault(tracking_class(rc), []).append(_tracked_row(rc))
        fid = _shown(rc, metas)
        if rc.policy is not Policy.REPORT or fid is None or tracked(rc):
            continue  # no bundle: nothing to show (a root cause seen only on the base build)
        # The issue counts the root cause's cases, on all its platforms, not the shown bundle's.
        meta = metas[fid].with_(occurrences=rc.count, platforms=rc.platforms or metas[fid].platforms)
        entry = ReportEntry(fid, rc.title or meta.fingerprint.title, rc.key)
        bugs.append(_Bug(rc.key, [rc.key, *rc.ids], entry, meta, out / "bugs" / fid, rc.count, rc,
                         [_merged_row(x, failures.get(x), metas.get(x)) for x in rc.ids[:MERGED_ROWS]]))
    for symptom in TRACKING_TITLES:  # a fixed order: the same run files them in the same order
        if symptom in rows:
            key = tracking_key(symptom)
            bugs.append(_Bug(key, [key], ReportEntry("", TRACKING_TITLES[symptom], key),
                             tracked=rows[symptom], tracks=symptom))
    return bugs


def _merged_row(fid: str, failure: FailureRow | None, meta: BundleMeta | None) -> dict[str, Any]:
    """One fingerprint of a root cause, for its issue's collapsed list (raw: the template sanitises)."""
    return {"id": fid, "title": (failure.title if failure else "") or (meta.title if meta else ""),
            "count": failure.count if failure else "",
            "platforms": list((failure.platforms if failure else ()) or (meta.platforms if meta else ()))}


def _shown(rc: RootCauseRow, metas: dict[str, BundleMeta]) -> str | None:
    """The fingerprint whose bundle shows the root cause: the canonical one, else any with a bundle."""
    return next((x for x in rc.ids if x in metas), None)


class _Run:
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
        self._converge()

    # -- what the repository holds ------------------------------------------------------
    def _see(self, issues: list[Issue]) -> None:
        self.known.update((i.number, i) for i in issues)
        self.index.update(index_issues(list(self.known.values())))

    def _refresh(self) -> None:
        """Re-read what changed since this run began (other reporters' creates among it)."""
        self._see(self.tracker.issues(since=self.started - CLOCK_SLACK_S))

    def _converge(self, key: str = "") -> Issue | None:
        """Close every newer issue of a key some older issue holds (only ``key``'s, when given);
        the oldest of ``key``.  A race that a killed reporter left unconverged ends here, and so
        does one whose create was stored but answered with an error (its number never known)."""
        oldest: dict[str, Issue] = {}
        for issue in sorted(self.known.values(), key=lambda i: i.number):
            own = marker_ids(issue.body)[:1]
            if duplicate(issue) or not own or (key and own[0] != key):
                continue
            if own[0] in oldest:
                self._close_duplicate(issue, oldest[own[0]])
            else:
                oldest[own[0]] = issue
        return oldest.get(key)

    def _close_duplicate(self, dup: Issue, winner: Issue) -> None:
        """Move what ``dup`` holds that ``winner`` lacks into a comment on ``winner``, then close
        ``dup`` as its duplicate, its markers neutralised (out of the bot's view, in one write)."""
        dup = self.tracker.get(dup.number)
        if duplicate(dup):
            return
        held = Ledger.read(dup.body, self.tracker.comments(dup.number))
        there = Ledger.read(self.tracker.get(winner.number).body, self.tracker.comments(winner.number))
        moved = [c for c in held.all() if c.run and not there.has(c.run)]
        if moved:
            marks = "".join(f"<!-- gbft-run: {c.run} -->\n{c.marker()}\n" for c in moved)
            self.tracker.comment(winner.number, f"{self.render.moved(dup.number, len(moved))}\n{marks}")
            self._drop_repeats(winner.number, Ledger.read("", self.tracker.comments(winner.number)))
        if not any(DUPLICATE_NOTE in c.body for c in self.tracker.comments(dup.number)):
            self.tracker.comment(dup.number, f"{self.render.duplicate(winner.number)}\n{DUPLICATE_NOTE}\n")
            notes = [c.id for c in self.tracker.comments(dup.number) if DUPLICATE_NOTE in c.body]
            for comment_id in notes[1:]:  # two closers at once: the later poster sees both
                with contextlib.suppress(TrackerError):
                    self.tracker.delete_comment(dup.number, comment_id)
        body = f"<!-- gbft-duplicate-of: {winner.number} -->\n" + dup.body.replace("<!-- gbft-", "<!-- gbft-was-")
        self.tracker.close(dup.number, "duplicate", body=truncate_body(body))
        self.known[dup.number] = Issue(dup.number, "closed", body, dup.url, "duplicate")
        own = marker_ids(dup.body)[0]
        self.res.closed.append(ReportEntry("" if own.startswith("rc-") else own, "", own if own.startswith("rc-") else "",
                                           dup.number, reason=f"duplicate of #{winner.number}"))

    # -- one bug ------------------------------------------------------------------------
    def one(self, bug: _Bug) -> None:
        existing = self._existing(bug)
        if existing is not None:
            self.index.setdefault(bug.key, existing)  # found by an alias: the summary links it by key
            self._update(bug, existing)
        else:
            self._file(bug)

    def _existing(self, bug: _Bug) -> Issue | None:
        """The issue filed for this bug under its key, else under any of its fingerprints (an issue
        filed before root causes, or under another root cause key that is gone)."""
        for i, x in enumerate(bug.lookup):
            issue = self.index.get(x)
            own = marker_ids(issue.body)[:1] if issue else []
            if issue and (i == 0 or not own or own[0] == bug.key or own[0] not in self.live):
                return issue
        return None

    def _file(self, bug: _Bug) -> None:
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
        if winner.number != issue.number:  # another reporter's, filed first
            self._update(bug, winner)
            return
        self._settle(bug, issue)
        for x in bug.lookup:
            self.index.setdefault(x, issue)
        self.index[bug.key] = issue
        self.new_filed += bug.tracked is None
        self.res.filed.append(replace(bug.entry, issue=issue.number, url=issue.url))

    def _update(self, bug: _Bug, existing: Issue) -> None:
        """Comment once (the comment carries the run's marker and what it adds, so a rerun after a
        lost answer does not post it again), reopen if it regressed, then rebuild the body."""
        issue = self._fresh(existing.number)
        n, skip = issue.number, self._skip_reason(issue)
        if skip:
            self.res.skipped.append(replace(bug.entry, issue=n, reason=skip))
            return
        led = Ledger.read(issue.body, self.tracker.comments(n))
        regressed = issue.state == "closed"
        if led.has(self.run_key) and not regressed and led.folded_in(issue.body):
            self.res.skipped.append(replace(bug.entry, issue=n, reason="already reported from this run"))
            return
        self.touched.add(n)
        mine = self._contribution(bug)
        # The comment before the reopening: a run killed between the two leaves the issue
        # closed, so its rerun still reopens it and still calls it regressed (the comment, with
        # its marker, is not posted twice).  The other order lost the "Regressed" notice.
        if not led.has(self.run_key):
            marks = f"<!-- gbft-run: {self.run_key} -->\n{mine.marker()}\n"
            text = truncate_body(self._comment(bug, led.with_(mine), regressed).rstrip(), BODY_LIMIT - len(marks) - 1)
            self.tracker.comment(n, f"{text}\n{marks}")
        if regressed:
            self.tracker.reopen(n)
        body = self._rebuild(bug, n, issue.body)
        self.index[bug.key] = self.known[n] = Issue(n, "open", body, issue.url, "reopened" if regressed else "")
        (self.res.reopened if regressed else self.res.commented).append(replace(bug.entry, issue=n))

    def _settle(self, bug: _Bug, issue: Issue) -> None:
        """Rebuild the body of an issue just filed when a duplicate's runs were moved into it."""
        now = self.tracker.get(issue.number)
        if not Ledger.read(now.body, self.tracker.comments(issue.number)).folded_in(now.body):
            self._rebuild(bug, issue.number, now.body)

    def _fresh(self, number: int) -> Issue:
        """The issue as it is now; one closed as a duplicate by another reporter: its winner."""
        issue = self.tracker.get(number)
        m = DUPLICATE_OF.search(issue.body)
        return self.tracker.get(int(m.group(1))) if m else issue

    def _skip_reason(self, issue: Issue) -> str:
        if issue.state == "closed" and issue.state_reason in ("not_planned", "duplicate"):
            return f"closed by maintainers ({issue.state_reason.replace('_', ' ')})"
        if issue.number in self.touched:
            return "already updated in this run"
        return ""

    def _comment(self, bug: _Bug, led: Ledger, regressed: bool) -> str:
        """This run's comment; "(N in all)": the issue's total, this run's added."""
        if bug.tracked is not None:
            return self.render.tracking_comment(bug.tracked, self.ctx, regressed, bug.tracks)
        return self.render.comment(_with_state(bug, led), self.ctx, bug.run_count, regressed)

    def _rebuild(self, bug: _Bug, n: int, base: str) -> str:
        """Write the body from the ledger; read the comments again after, and write again while a
        run it left out has commented meanwhile (the last writer then holds every run)."""
        for _ in range(BODY_TRIES):
            led = Ledger.read(base, self.tracker.comments(n))
            self._drop_repeats(n, led)
            _, body = self._body(bug, led, base)
            self.tracker.update_body(n, body)
            if Ledger.read(body, self.tracker.comments(n)).runs() <= led.runs():
                break
        return body

    def _drop_repeats(self, n: int, led: Ledger) -> None:
        """One comment per run, whoever posted it twice: the later copies go (of two posted at
        once, the later poster sees both, as comment ids follow posting order)."""
        for comment_id in led.repeats:
            with contextlib.suppress(TrackerError):  # refused: the next reader deletes it
                self.tracker.delete_comment(n, comment_id)

    def _contribution(self, bug: _Bug) -> Contribution:
        if bug.tracked is not None:
            return Contribution(self.run_key, rows=tuple(bug.tracked))
        assert bug.meta is not None  # an issue of its own shows a bundle
        return Contribution(self.run_key, state=IssueState.of(bug.meta))

    def _body(self, bug: _Bug, led: Ledger, base: str) -> tuple[str, str]:
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


def _with_state(bug: _Bug, led: Ledger) -> BundleMeta:
    """The bug's shown bundle with the issue's totals (occurrences, first seen, platforms)."""
    assert bug.meta is not None
    total = led.fold_state()
    if total is None:
        return bug.meta
    return bug.meta.with_(occurrences=total.occurrences, first_seen=total.first_seen or bug.meta.first_seen,
                          platforms=total.platforms or bug.meta.platforms)


# The job summary's sections, in the order a maintainer reads them: what fails the PR first.
SECTIONS = (
    ("new", "New failures introduced by this pull request",
     "Fail on this pull request's build, pass on the base build; confirmed by replays on fresh workers of both builds."),
    ("new-listed", "New, listed only (not failing)", "Fail on this pull request's build, pass on the base build, "
     "of a class this workflow lists rather than fails (input list-only)."),
    ("changed", "Changed behaviour (not failing)", "Both builds fail differently, or their results differ where "
     "TensorFlow cannot tell which is right; confirmed by replays. Worth a look: a fix as often as a regression."),
    ("flaky-new", "Flaky (not blamed)", "Seen on this build only, but not on every replay: not pinned on the PR."),
    ("unchecked", "Not confirmed (not blamed)", "The budget ran out before the confirmation replays."),
    ("pre-existing", "Pre-existing", "The base build fails the same way: not introduced by this pull request."),
    ("fixed", "Fixed by this pull request", "The base build fails, this build passes; confirmed by replays."),
    ("flaky-fixed", "Base-build failures not reproducible", "Seen once on the base build, not on every replay."),
    ("", "Failures", ""),  # no base build: one table
)


def job_summary(render: Renderer, summary: Summary, metas: dict[str, BundleMeta],
                index: dict[str, Issue], res: ReportResult) -> str:
    """The Markdown job summary: the answer first, a table per verdict, ids in a collapsed block."""
    from ..bugs.triage import headline, tally

    blamed = set(tally(summary).new_keys)  # the "new" table holds what fails the check, nothing else
    rows: dict[str, list[dict[str, Any]]] = {}
    ids: list[dict[str, Any]] = []
    rcs = summary.root_causes
    ignored: Counter[str] = Counter()
    covered: set[str] = set()  # fingerprints shown through their root cause
    for rc in rcs or ():
        covered.update(rc.fingerprints)
        if rc.policy is Policy.IGNORE:
            ignored[rc.symptom] += 1
        else:
            _root_cause_row(rc, summary, metas, index, rows, ids, blamed)
    fixed = [FailureRow(v.key, v.count, v.title, op=v.op, case_dir=v.case_dir, verdict=v.verdict)
             for v in (summary.triage.fixed if summary.triage else ())]
    for f in [*summary.failures, *fixed]:
        if f.key not in covered:  # every fingerprint of an older output; any a root cause misses
            _fingerprint_row(f, summary, metas, index, rows, ids)
    sections = [{"title": title, "why": why, "rows": rows[v]} for v, title, why in SECTIONS if rows.get(v)]
    not_filed = [x.key for x in res.skipped if x.reason == "not filed: quota"]
    declined = [x for x in res.skipped if x.reason.startswith("closed by maintainers")]
    return render.summary(summary, headline(summary), sections, ids, not_filed, res.failed, declined,
                          by_root_cause=rcs is not None, ignored=_ignored_line(ignored),
                          listed=listed_line(summary.list_only) if summary.triage is not None else "")


def _link(issue: Issue | None) -> Markup:
    if not issue or not issue.number:
        return Markup("")
    return Markup(f"[#{issue.number}]({issue.url})" if issue.url.startswith("http") else f"#{issue.number}")


def _fingerprint_row(f: FailureRow, summary: Summary, metas: dict[str, BundleMeta],
                     index: dict[str, Issue], rows: dict[str, list[dict[str, Any]]], ids: list[dict[str, Any]]) -> None:
    meta = metas.get(f.key)
    verdict = f.verdict.value if f.verdict is not None else ""
    # Raw values: the template makes each a sanitised cell (sanitize.finalize).
    rows.setdefault(verdict, []).append({
        "title": (f.title or f.message)[:120], "op": f.op[:40], "symptom": f.symptom[:40], "fingerprints": 1,
        "count": f.count, "size": meta.minimized_size if meta else "", "issue": _link(index.get(f.key))})
    bundle = f"bugs/{f.key}/" if meta else f.case_dir
    ids.append({"key": f.key[:20], "fingerprints": f.key[:20],
                "verdict": verdict or ("new" if f.key in summary.new_failures else "known"),
                "platforms": ", ".join(f.platforms or (meta.platforms if meta else ()))[:80],
                "bundle": bundle[:120]})


def _root_cause_row(rc: RootCauseRow, summary: Summary, metas: dict[str, BundleMeta],
                    index: dict[str, Issue], rows: dict[str, list[dict[str, Any]]], ids: list[dict[str, Any]],
                    blamed: set[str]) -> None:
    fid = _shown(rc, metas)
    meta = metas.get(fid) if fid else None
    issue = _link(index.get(tracking_key(tracking_class(rc)) if tracked(rc) else rc.key))
    if rc.policy is Policy.SUMMARY and not issue:
        issue = Markup("summary only")  # by the symptom policy: never filed one by one
    elif not rc.settled and not issue:
        issue = Markup(UNSETTLED)
    verdict = rc.verdict.value if rc.verdict else ""
    section = "new-listed" if verdict == "new" and rc.key not in blamed else verdict
    rows.setdefault(section, []).append({
        "title": (rc.title or (meta.title if meta else "") or rc.key)[:120], "op": ", ".join(rc.ops)[:40],
        "symptom": stage_text(rc.symptom, meta.fingerprint.status if meta else ""),
        "fingerprints": len(rc.fingerprints), "count": rc.count,
        "size": meta.minimized_size if meta else "", "issue": issue})
    new = set(summary.new_failures)
    ids.append({"key": rc.key[:64], "fingerprints": _id_list(rc.ids),
                "verdict": verdict or ("new" if new & set(rc.fingerprints) else "known"),
                "platforms": ", ".join(rc.platforms or (meta.platforms if meta else ()))[:80],
                "bundle": f"bugs/{fid}/" if fid else ""})


ID_ROWS = 100  # fingerprint ids listed per root cause in the job summary (its bundles hold them all)


def _id_list(ids: list[str]) -> str:
    """A root cause's fingerprint ids, every one up to ID_ROWS (a cut at a character count
    dropped ids of a 30-fingerprint root cause), then how many more."""
    more = f", and {len(ids) - ID_ROWS} more" if len(ids) > ID_ROWS else ""
    return ", ".join(str(x)[:20] for x in ids[:ID_ROWS]) + more


def _ignored_line(ignored: Counter[str]) -> str:
    """"3 ignored: tie", or "4 ignored: tie (3), nondeterministic (1)"."""
    if not ignored:
        return ""
    parts = [k if len(ignored) == 1 else f"{k} ({n})" for k, n in ignored.most_common()]
    return f"{sum(ignored.values())} ignored: {', '.join(parts)}"


def run_key_of(out: Path) -> str:
    """Identifies one fuzz output, so that reporting it twice changes nothing."""
    import hashlib

    raw = (out / "summary.json").read_bytes()
    run_id = Summary.read(out).run_id
    return run_id[:32] if run_id else hashlib.sha256(raw).hexdigest()[:16]


def _aliases(body: str, bug: _Bug) -> list[str]:
    """Every id the issue answers to besides its key: the bug's fingerprints (canonical first),
    then whatever the existing issue carried before (an older fingerprint or root-cause key)."""
    ids = dict.fromkeys([*bug.lookup[1:], *marker_ids(body)])
    return [x for x in ids if x != bug.key and not re.fullmatch(TRACKING_KEY, x)]


def _tracked_row(rc: RootCauseRow) -> TrackedRow:
    """One root cause, as its class's tracking issue keeps it (short: its data lives in the body)."""
    today = time.strftime("%Y-%m-%d", time.gmtime())
    return TrackedRow(rc.key, rc.title[:100], rc.count, tuple(x[:40] for x in rc.ops[:5]),
                      tuple(sorted(x[:40] for x in rc.platforms[:8])), today, today)


def _check_fixes(cfg: ReportConfig, tracker: IssueTracker, ctx: RunContext, render: Renderer,
                 index: dict[str, Issue], failing_now: set[str], res: ReportResult, lane_factory: Any) -> None:
    """Replay the bundle of every open bot issue; comment and close the fixed ones.  A root
    cause's issue replays the first of its fingerprints with a bundle (the canonical one first);
    an issue any of whose ids failed in this run is not fixed; the tracking issue is no bug."""
    from ..bugs.replay import bundle_key, load_bundle, replay

    corpus = cfg.corpus or cfg.out / "bugs"
    seen: set[int] = set()
    lanes: dict[str, Any] = {}  # one per front end and engine settings: a bundle replays as it was found
    try:
        for fid, issue in sorted(index.items()):
            ids = marker_ids(issue.body) or [fid]
            if issue.state != "open" or issue.number in seen or failing_now.intersection(ids) or \
                    any(re.fullmatch(TRACKING_KEY, x) for x in ids):
                continue
            seen.add(issue.number)
            fid = next((x for x in ids if (corpus / x / "meta.json").exists()), fid)
            bundle = corpus / fid
            entry = ReportEntry(fid, root_cause=ids[0] if re.fullmatch(ROOT_CAUSE_KEY, ids[0]) else "",
                                issue=issue.number)
            if not (bundle / "meta.json").exists():
                res.skipped.append(replace(entry, reason="no bundle in the regression corpus"))
                continue
            meta, g, small = load_bundle(bundle)
            setup = json.dumps([meta.fingerprint.frontend, meta.engine.engine, meta.engine.settings, meta.needs_threads],
                               sort_keys=True)  # a thread-count bug replays only on a lane running the oracle
            lane = lanes[setup] = lanes.get(setup) or lane_factory(meta)
            v = replay(lane, small or g, meta.fingerprint, key=bundle_key(meta) if small is not None else None)
            entry = replace(entry, title=meta.title)
            if v.outcome == "passes":
                engine = EngineInfo.of_hello(lane.eng.hello)
                tracker.comment(issue.number, render.fixed(engine, ctx, [engine.machine],
                                                           cfg.close_fixed))
                if cfg.close_fixed:
                    tracker.close(issue.number)
                res.closed.append(replace(entry, reason="fixed" if cfg.close_fixed else "fixed, left open"))
            else:
                res.still_failing.append(replace(entry, reason=v.outcome))
    finally:
        for lane in lanes.values():
            lane.stop()
