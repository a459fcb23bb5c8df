"""The reporter: one issue per fingerprint, kept current, within a quota.

Reads a fuzz output directory as data (summary.json, bugs/*/meta.json, the
rendered repro scripts) and never executes anything from it, so it can run in
a job that holds a write token.  ``check_fixes`` is the exception: it replays
bug models on this build, so run it only where the engine build is trusted
(the scheduled default-branch job).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from .render import Renderer, RunContext
from .trackers import Issue, IssueTracker, TrackerError, marker_ids


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
    filed: list[dict[str, Any]] = field(default_factory=list)
    commented: list[dict[str, Any]] = field(default_factory=list)
    reopened: list[dict[str, Any]] = field(default_factory=list)
    closed: list[dict[str, Any]] = field(default_factory=list)
    still_failing: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)  # GitHub refused a write: with the reason

    @property
    def partial(self) -> bool:
        """Some writes failed: the run finished, but not everything was filed."""
        return bool(self.failed)

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) for k, v in self.__dict__.items()}

    def lines(self) -> list[str]:
        out = []
        for kind in ("filed", "commented", "reopened", "closed", "still_failing", "skipped", "failed"):
            for x in getattr(self, kind):
                where = f" #{x['issue']}" if x.get("issue") else ""
                why = f" ({x['reason']})" if x.get("reason") else ""
                out.append(f"{kind:13s} {x['fingerprint']}{where}{why}  {x.get('title', '')}")
        return out


class ReportInputError(ValueError):
    """A fuzz output that cannot be reported: one line naming the file."""


def load_run(out: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """summary.json and the meta.json of each failure's bundle, checked: a file that is missing,
    truncated or not what it should be is named in a ReportInputError."""
    summary = _json(out / "summary.json", dict)
    failures = summary.get("failures")
    if not isinstance(failures, list) or not all(isinstance(f, dict) and isinstance(f.get("key"), str)
                                                 for f in failures):
        raise ReportInputError(f"{out / 'summary.json'}: 'failures' is not a list of failures with keys")
    metas = {}
    for f in failures:
        bundle = out / "bugs" / f["key"]
        if not (bundle / "meta.json").exists():
            continue  # a failure without a bundle (fixed, or not bundled): nothing to file
        for name in ("graph.json", "minimized.json"):
            if not (bundle / name).exists():
                raise ReportInputError(f"{bundle / name}: missing from the bug bundle")
        meta = _json(bundle / "meta.json", dict)
        if not isinstance(meta.get("fingerprint"), dict) or not isinstance(meta.get("engine"), dict):
            raise ReportInputError(f"{bundle / 'meta.json'}: no fingerprint or engine in it")
        metas[f["key"]] = meta
    return summary, metas


def _json(path: Path, kind: type) -> Any:
    if not path.exists():
        raise ReportInputError(f"{path}: no such file (run gbft fuzz first?)")
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise ReportInputError(f"{path}: not valid JSON (truncated?): {e}") from None
    if not isinstance(data, kind):
        raise ReportInputError(f"{path}: expected a JSON {kind.__name__}")
    return data


def report(cfg: ReportConfig, tracker: IssueTracker, ctx: RunContext, lane_factory: Any = None) -> ReportResult:
    """File or update one issue per bug.  Each write is its own unit: one that GitHub refuses
    (a locked or deleted issue, a 5xx after retries) is recorded with its reason in
    report.json and the run goes on.  report.json and summary.md are always written."""
    summary, metas = load_run(cfg.out)
    render = Renderer(cfg.template_dir)
    res = ReportResult()
    index: dict[str, Issue] = {}
    try:
        index = tracker.index()
        run = _Run(cfg, tracker, ctx, render, index, res, summary)
        for fid, meta in metas.items():
            entry = {"fingerprint": fid, "title": meta["fingerprint"]["title"]}
            try:
                run.one(fid, meta, entry)
            except TrackerError as e:
                res.failed.append({**entry, "issue": e.number, "reason": str(e)})
        if cfg.check_fixes:
            _check_fixes(cfg, tracker, ctx, render, index, set(metas), res, lane_factory)
    finally:
        (cfg.out / "report.json").write_text(json.dumps(res.to_json(), indent=2, sort_keys=True) + "\n")
        (cfg.out / "summary.md").write_text(job_summary(render, summary, metas, index, res))
    return res


class _Run:
    """One reporting run: the quota, the issues touched, the run's marker."""

    def __init__(self, cfg: ReportConfig, tracker: IssueTracker, ctx: RunContext, render: Renderer,
                 index: dict[str, Issue], res: ReportResult, summary: dict[str, Any]) -> None:
        self.cfg, self.tracker, self.ctx, self.render, self.index, self.res = cfg, tracker, ctx, render, index, res
        self.counts = {f["key"]: f["count"] for f in summary.get("failures", [])}
        self.run_key = run_key_of(cfg.out)
        self.new_filed = 0
        self.touched: set[int] = set()  # at most one comment per issue per run, even through aliases

    def one(self, fid: str, meta: dict[str, Any], entry: dict[str, Any]) -> None:
        existing = self.index.get(fid)
        bundle = self.cfg.out / "bugs" / fid
        if existing is None:
            self._file(fid, meta, entry, bundle)
        elif existing.state == "closed" and existing.state_reason == "not_planned":
            self.res.skipped.append({**entry, "issue": existing.number, "reason": "closed by maintainers (not planned)"})
        elif f"gbft-last-run: {self.run_key} " in existing.body:  # this output was reported already
            self.res.skipped.append({**entry, "issue": existing.number, "reason": "already reported from this run"})
        elif existing.number in self.touched:
            self.res.skipped.append({**entry, "issue": existing.number, "reason": "already updated in this run"})
        else:
            self.touched.add(existing.number)
            self._update(fid, meta, entry, bundle, existing)

    def _file(self, fid: str, meta: dict[str, Any], entry: dict[str, Any], bundle: Path) -> None:
        if self.new_filed >= self.cfg.max_new_issues:
            self.res.skipped.append({**entry, "reason": "not filed: quota"})
            return
        t, body = self.render.issue(bundle, meta, self.ctx, run_key=self.run_key)
        issue = self.tracker.create(fid, t, body)
        self.index[fid] = issue
        self.new_filed += 1
        self.res.filed.append({**entry, "issue": issue.number, "url": issue.url})

    def _update(self, fid: str, meta: dict[str, Any], entry: dict[str, Any], bundle: Path, existing: Issue) -> None:
        """Reopen if it regressed, comment once (the comment carries the run's marker, so a rerun
        after a lost answer does not post it again), then the body (which carries it too)."""
        n = existing.number
        regressed = existing.state == "closed"
        if regressed:
            self.tracker.reopen(n)
        marker = f"<!-- gbft-run: {self.run_key} -->"
        if not self.tracker.has_comment(n, marker):
            text = self.render.comment(meta, self.ctx, self.counts.get(fid, 1), regressed)
            self.tracker.comment(n, f"{text.rstrip()}\n{marker}\n")
        _, body = self.render.issue(bundle, _merged(meta, existing), self.ctx, aliases=_aliases(existing, fid),
                                    run_key=self.run_key)
        self.tracker.update_body(n, body)
        existing.state = "open"
        (self.res.reopened if regressed else self.res.commented).append({**entry, "issue": n})


# The job summary's sections, in the order a maintainer reads them: what fails the PR first.
SECTIONS = (
    ("new", "New failures introduced by this pull request",
     "Fail on this pull request's build, pass on the base build; confirmed by replays on fresh workers of both builds."),
    ("changed", "Changed behaviour (not failing)", "Both builds fail differently, or their results differ where "
     "TensorFlow cannot tell which is right; confirmed by replays. Worth a look: a fix as often as a regression."),
    ("flaky-new", "Flaky (not blamed)", "Seen on this build only, but not on every replay: not pinned on the PR."),
    ("unchecked", "Not confirmed (not blamed)", "The budget ran out before the confirmation replays."),
    ("pre-existing", "Pre-existing", "The base build fails the same way: not introduced by this pull request."),
    ("fixed", "Fixed by this pull request", "The base build fails, this build passes; confirmed by replays."),
    ("flaky-fixed", "Base-build failures not reproducible", "Seen once on the base build, not on every replay."),
    ("", "Failures", ""),  # no base build: one table
)


def job_summary(render: Renderer, summary: dict[str, Any], metas: dict[str, dict[str, Any]],
                index: dict[str, Issue], res: ReportResult) -> str:
    """The Markdown job summary: the answer first, a table per verdict, ids in a collapsed block."""
    from ..bugs.triage import headline

    rows: dict[str, list[dict[str, Any]]] = {}
    ids = []
    fixed = (summary.get("triage") or {}).get("fixed", [])
    for f in [*summary.get("failures", []), *fixed]:
        meta = metas.get(f["key"], {})
        issue = index.get(f["key"])
        link = (f"[#{issue.number}]({issue.url})" if issue.url.startswith("http") else f"#{issue.number}") \
            if issue and issue.number else ""
        verdict = f.get("verdict", "")
        # Raw values: the template makes each a sanitised cell (sanitize.finalize).
        rows.setdefault(verdict, []).append({
            "title": str(f.get("title") or f.get("message", ""))[:120], "op": str(f.get("op") or "")[:40],
            "count": f["count"], "size": meta.get("minimized_size", ""), "issue": Markup(link)})
        bundle = f"bugs/{f['key']}/" if meta else f.get("case_dir", "")
        ids.append({"key": str(f["key"])[:20], "verdict": verdict or ("new" if f["key"] in
                                                                      summary.get("new_failures", []) else "known"),
                    "platforms": ", ".join(map(str, f.get("platforms") or meta.get("platforms") or []))[:80],
                    "bundle": str(bundle)[:120]})
    sections = [{"title": title, "why": why, "rows": rows[v]} for v, title, why in SECTIONS if rows.get(v)]
    not_filed = [x["fingerprint"] for x in res.skipped if x.get("reason") == "not filed: quota"]
    declined = [x for x in res.skipped if str(x.get("reason", "")).startswith("closed by maintainers")]
    return render.summary(summary, headline(summary), sections, ids, not_filed, res.failed, declined)


def run_key_of(out: Path) -> str:
    """Identifies one fuzz output, so that reporting it twice changes nothing."""
    import hashlib

    raw = (out / "summary.json").read_bytes()
    run_id = json.loads(raw).get("run_id", "")
    return str(run_id)[:32] if run_id else hashlib.sha256(raw).hexdigest()[:16]


def _aliases(issue: Issue, fid: str) -> list[str]:
    return [x for x in marker_ids(issue.body) if x != fid]


def _merged(meta: dict[str, Any], issue: Issue) -> dict[str, Any]:
    """Occurrences and platforms of this run added to what the issue body says already."""
    m = dict(meta)
    prev = re.search(r"\| Occurrences \| (\d+) \(first seen ([^,]*),", issue.body)
    if prev:
        m["occurrences"] = int(prev.group(1)) + int(meta.get("occurrences", 1))
        m["first_seen"] = prev.group(2)
    plat = re.search(r"\| Platforms \| ([^|]*) \|", issue.body)
    if plat:
        old = [p.strip() for p in plat.group(1).split(",") if p.strip() and p.strip() != "?"]
        m["platforms"] = sorted(set(old) | set(meta.get("platforms") or []))
    return m


def _check_fixes(cfg: ReportConfig, tracker: IssueTracker, ctx: RunContext, render: Renderer,
                 index: dict[str, Issue], failing_now: set[str], res: ReportResult, lane_factory: Any) -> None:
    """Replay the bundle of every open bot issue; comment and close the fixed ones."""
    from ..bugs.fingerprint import Fingerprint
    from ..bugs.replay import load_bundle, replay

    corpus = cfg.corpus or cfg.out / "bugs"
    seen: set[int] = set()
    lane = None
    try:
        for fid, issue in sorted(index.items()):
            if issue.state != "open" or issue.number in seen or fid in failing_now:
                continue
            seen.add(issue.number)
            bundle = corpus / fid
            entry = {"fingerprint": fid, "issue": issue.number}
            if not (bundle / "meta.json").exists():
                res.skipped.append({**entry, "reason": "no bundle in the regression corpus"})
                continue
            meta, g, small = load_bundle(bundle)
            lane = lane or lane_factory(meta)
            v = replay(lane, small or g, Fingerprint.from_json(meta["fingerprint"]))
            entry["title"] = meta["title"]
            if v.outcome == "passes":
                tracker.comment(issue.number, render.fixed(lane.eng.hello, ctx, [lane.eng.hello.get("machine", "")],
                                                           cfg.close_fixed))
                if cfg.close_fixed:
                    tracker.close(issue.number)
                res.closed.append({**entry, "reason": "fixed" if cfg.close_fixed else "fixed, left open"})
            else:
                res.still_failing.append({**entry, "reason": v.outcome})
    finally:
        if lane is not None:
            lane.stop()
