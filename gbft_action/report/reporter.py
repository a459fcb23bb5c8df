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

import json
import re
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ..policy import listed_line
from ..records import BundleMeta, EngineInfo, FailureRow, Policy, RecordError, RootCauseRow, Summary
from ..records.report import ReportEntry
from .filing import UNSETTLED, Bug, Filing, ReportConfig, ReportResult
from .local import write_file
from .markers import TrackedRow
from .render import TRACKING_TITLES, Renderer, RunContext, stage_text
from .trackers import ROOT_CAUSE_KEY, TRACKING_KEY, Issue, IssueTracker, TrackerError, marker_ids
from ..records import same_class

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
    It still fails a pull request that introduces it (the verdict is policy.fails_check, not this)."""
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
        run = Filing(cfg, tracker, ctx, render, index, res, {rc.key for rc in rcs or ()})
        run.converge()  # what a killed reporter's race left: before any bug is filed
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


def _fingerprint_bugs(out: Path, summary: Summary, metas: dict[str, BundleMeta]) -> list[Bug]:
    """An output without root causes: one issue per fingerprint, as before them."""
    counts = {f.key: f.count for f in summary.failures}
    return [Bug(fid, [fid], ReportEntry(fid, meta.fingerprint.title), meta, out / "bugs" / fid,
                 counts.get(fid, 1)) for fid, meta in metas.items()]


def _root_cause_bugs(out: Path, summary: Summary, metas: dict[str, BundleMeta],
                     rcs: tuple[RootCauseRow, ...]) -> list[Bug]:
    """One issue per root cause to report, then a tracking issue per class with root causes to
    list (precision, NaN/Inf, unisolated wrong results: render.TRACKING_TITLES)."""
    failures = {f.key: f for f in summary.failures}
    bugs: list[Bug] = []
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
        bugs.append(Bug(rc.key, [rc.key, *rc.ids], entry, meta, out / "bugs" / fid, rc.count, rc,
                         [_merged_row(x, failures.get(x), metas.get(x)) for x in rc.ids[:MERGED_ROWS]]))
    for symptom in TRACKING_TITLES:  # a fixed order: the same run files them in the same order
        if symptom in rows:
            key = tracking_key(symptom)
            bugs.append(Bug(key, [key], ReportEntry("", TRACKING_TITLES[symptom], key),
                             tracked=rows[symptom], tracks=symptom))
    return bugs


def _merged_row(fid: str, failure: FailureRow | None, meta: BundleMeta | None) -> dict[str, object]:
    """One fingerprint of a root cause, for its issue's collapsed list (raw: the template sanitises)."""
    return {"id": fid, "title": (failure.title if failure else "") or (meta.title if meta else ""),
            "count": failure.count if failure else "",
            "platforms": list((failure.platforms if failure else ()) or (meta.platforms if meta else ()))}


def _shown(rc: RootCauseRow, metas: dict[str, BundleMeta]) -> str | None:
    """The fingerprint whose bundle shows the root cause: the canonical one, else any with a bundle."""
    return next((x for x in rc.ids if x in metas), None)


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
    rows: dict[str, list[dict[str, object]]] = {}
    ids: list[dict[str, object]] = []
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
                     index: dict[str, Issue], rows: dict[str, list[dict[str, object]]], ids: list[dict[str, object]]) -> None:
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
                    index: dict[str, Issue], rows: dict[str, list[dict[str, object]]], ids: list[dict[str, object]],
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
    from ..rerun.replay import bundle_key, load_bundle, replay

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
