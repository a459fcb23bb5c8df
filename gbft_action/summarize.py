"""A campaign's summary, from its records: summary.json's counts, failures and root causes, and
with a base build the pull request's verdict (verdicts.json).  ``summarize_all`` is pure: it
returns what the campaign (and ``merge``, for shards joined into one output) writes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import __version__
from .bugs import triage
from .bugs.bundle import BugBook
from .bugs.rootcause import Diagnosed, RootCause, Sighting, assemble, local_key
from .policy import SYMPTOMS, fails_check, policy_for
from .records import Fingerprint, RootKey, Status
from .records.bundle import EngineInfo
from .records.campaign import Session
from .records.case import CaseRecord, PlatformRecord
from .records.config import Config
from .records.enums import Verdict
from .records.summary import (Diagnosis, FailureRow, HarnessErrors, Outcomes, RootCauseRow, Summary,
                              TriageSummary)


@dataclass(frozen=True)
class TriageInputs:
    """What the verdict against the base build is made of: the output folder (verdicts.json
    goes there), the confirmation replays' outcome per fingerprint (the rest unchecked), and
    the base build's description."""

    out: Path
    confirmed: dict[str, tuple[Verdict, str]]
    base: EngineInfo


@dataclass(frozen=True)
class SummaryInputs:
    """Everything summary.json is made of, from a campaign (Campaign._finish) or from the shards
    gbft merge joins."""

    records: list[CaseRecord]
    sessions: list[Session]
    cfg: Config
    engine: EngineInfo
    platform_info: dict[str, EngineInfo]
    book: BugBook
    new_ids: list[str]  # fingerprints not seen before (--state), not flaky
    run_id: str
    minimized: dict[str, Diagnosis]
    bugs_dir: str
    triage: TriageInputs | None = None
    coverage: dict[str, object] | None = None
    frontends: dict[str, Any] | None = None
    models_per_s: float | None = None  # merge: over every shard's sessions (default: the last session's)
    shards: dict[str, Any] | None = None


@dataclass(frozen=True)
class Summarized:
    """What summarising a campaign makes: summary.json, verdicts.json (with a base build), and
    each minimised root cause's key for its canonical bundle.  Built without writing anything
    (``summarize_all``); ``write`` puts it on disk."""

    summary: Summary
    verdicts: dict[str, triage.BugVerdict] | None = None
    canonical: tuple[tuple[str, RootKey], ...] = ()  # (bundle, the root cause it shows)

    def write(self, out: Path, book: BugBook) -> None:
        if self.verdicts is not None:
            triage.write_verdicts(out, self.verdicts)
        for bundle, key in self.canonical:  # the reporter shows the bundle under its root cause's title
            book.set_root_cause(bundle, key)
        self.summary.write(out)


def summarize(inp: SummaryInputs) -> Summary:
    """summary.json's record (``summarize_all``'s, without the rest)."""
    return summarize_all(inp).summary


def summarize_all(inp: SummaryInputs) -> Summarized:
    """summary.json, built once: the counts, each failure with its verdict, symptom and root
    cause, the root causes, and what fails the step (new_failures, triage.blamed: only root
    causes the policy reports, and none holding a variant seen before or on the base build);
    with the verdicts and the canonical bundles' root causes to write beside it.  Pure: the
    same inputs give the same result, and nothing is written."""
    new, tri, verdicts = list(inp.new_ids), None, None
    if inp.triage is not None:
        verdicts = _verdicts(inp.records, inp.triage)
        new = sorted(k for k, bv in verdicts.items() if bv.verdict is Verdict.NEW)
    firsts = first_records(inp.records)
    failures = [replace(f, symptom=firsts[f.key].symptom_text if f.key in firsts else "",
                        verdict=_verdict_of(verdicts, f.key) if verdicts is not None else None)
                for f in fingerprint_rows(inp.records)]
    causes = root_causes(failures, firsts, inp.book, inp.cfg.symptom_policy)
    of = {fid: rc.key.id for rc in causes for fid in rc.fingerprints}
    blamable = {fid for rc in causes if fails_check(rc.key.symptom, _is_new(rc, verdicts, inp.book.before),
                                                    inp.cfg.list_only, verdicts is not None, rc.policy)
                for fid in rc.fingerprints}
    if verdicts is not None and inp.triage is not None:
        seen = {f.key for f in failures}
        tri = TriageSummary(inp.triage.base, triage.counts(verdicts),
                            tuple(f for f in triage.blamed(verdicts) if f in blamable),
                            # Seen on the base build only: fixed, flaky-fixed, or unchecked.
                            tuple(bv.to_row() for k, bv in sorted(verdicts.items()) if k not in seen))
    rows = tuple(replace(f, root_cause=of[f.key]) for f in failures)
    # Diagnoses the harness failed on count with the results it failed on (_diagnosed_or_error).
    failed = [m.error for m in inp.minimized.values() if m.error]
    counts = _counts(inp.records, inp.sessions, replace(inp.engine, engine=inp.engine.engine or inp.cfg.engine),
                     inp.platform_info)
    harness = counts.harness_errors
    summary = replace(
        counts, seed=inp.cfg.seed, blocks=tuple(inp.cfg.blocks),
        harness_errors=HarnessErrors(harness.count + len(failed), harness.first or (failed[:1] or [""])[0]),
        models_per_s=counts.models_per_s if inp.models_per_s is None else inp.models_per_s,
        failures=rows, new_failures=tuple(f for f in new if f in blamable),
        root_causes=tuple(_with_regression(rc.to_row(), verdicts) for rc in causes),
        symptom_policy={s: policy_for(s, inp.cfg.symptom_policy) for s in SYMPTOMS},
        list_only=tuple(inp.cfg.list_only),
        run_id=inp.run_id, minimized=dict(inp.minimized), bugs_dir=inp.bugs_dir, triage=tri,
        coverage=inp.coverage, frontends=inp.frontends, shards=inp.shards)
    canonical = tuple((rc.canonical, rc.key) for rc in causes if rc.minimized)  # undiagnosed: no guessed key
    return Summarized(summary, verdicts, canonical)


def _is_new(rc: RootCause, verdicts: dict[str, triage.BugVerdict] | None, before: set[str]) -> bool:
    """Whether a root cause is new to this run.  With a base build: one of its fingerprints is a
    confirmed regression (models the base build passes fail now), whatever its other
    fingerprints or cases (failing on both builds) say.  Without one: none of its variants
    was seen before (--state), and none is flaky."""
    if verdicts is not None:
        return any(f in verdicts and verdicts[f].verdict is Verdict.NEW for f in rc.fingerprints)
    return rc.verdict in (None, Verdict.NEW) and not set(rc.fingerprints) & before


def _with_regression(row: RootCauseRow, verdicts: dict[str, triage.BugVerdict] | None) -> RootCauseRow:
    """A root cause's row with what the headline says of a regression: the models the base
    build passes that now fail (in its confirmed new fingerprints), whether it also holds
    models failing on both builds (a known defect), and the worst new case's errors."""
    if verdicts is None:
        return row
    mine = [verdicts[f] for f in row.fingerprints if f in verdicts]
    new = [bv for bv in mine if bv.verdict is Verdict.NEW]
    if not new:
        return row
    known = any(bv.verdict is Verdict.PRE_EXISTING or bv.cases.get(Verdict.PRE_EXISTING.value)
                or bv.cases.get(Verdict.CHANGED.value) for bv in mine)
    errors = None
    for bv in new:
        if bv.errors is not None:
            errors = triage.worse_errors(errors, bv.errors)
    return replace(row, new_models=sum(bv.new_models for bv in new), known=known, errors=errors)


def _verdict_of(verdicts: dict[str, triage.BugVerdict], key: str) -> Verdict:
    """A fingerprint's verdict against the base build (unchecked when it has none yet)."""
    return verdicts[key].verdict if key in verdicts else Verdict.UNCHECKED


def _verdicts(records: list[CaseRecord], inp: TriageInputs) -> dict[str, triage.BugVerdict]:
    """Each fingerprint's verdict against the base build, the confirmed ones as their replays
    said (the rest unchecked): verdicts.json's."""
    verdicts = triage.aggregate(records)
    for fid, bv in verdicts.items():
        if bv.verdict in triage.CONFIRMED:
            bv.verdict, bv.confirmation = inp.confirmed.get(fid, (Verdict.UNCHECKED,
                                                                  "no time was left to confirm it"))
    return verdicts


def root_causes(failures: list[FailureRow], firsts: dict[str, PlatformRecord], book: BugBook,
                overrides: dict[str, str]) -> list[RootCause]:
    """The failures merged into root causes (bugs.rootcause.assemble).  ``firsts``: each
    fingerprint's first record; ``book``: the bundles' diagnoses (read only)."""
    rows, diagnosed = [], {}
    for f in failures:
        fp = fp_of(firsts[f.key])
        rows.append(Sighting(f, local_of(firsts[f.key]), fp))
        meta = book.meta(f.key)
        if meta is not None and meta.root_cause is not None:
            diagnosed[f.key] = Diagnosed(meta.root_cause, meta.minimized_size, meta.settled)
    return assemble(rows, diagnosed, lambda s: policy_for(s, overrides))


def first_records(records: list[CaseRecord]) -> dict[str, PlatformRecord]:
    """Each fingerprint's first (platform) record."""
    firsts: dict[str, PlatformRecord] = {}
    for rec in records:
        for r in rec.failures():
            firsts.setdefault(r.key, r)
    return firsts


def fp_of(r: PlatformRecord) -> Fingerprint:
    assert r.fingerprint is not None, "a failure's record has its fingerprint"
    return r.fingerprint


def local_of(r: PlatformRecord) -> tuple[str, str, str]:
    return local_key(r.symptom_text, fp_of(r), r.direction)


def _counts(records: list[CaseRecord], sessions: list[Session], engine: EngineInfo,
            platform_info: dict[str, EngineInfo]) -> Summary:
    """summary.json's counts: models, statuses, distinct failures, platforms, sessions."""
    by = Counter(r.status.value for r in records)
    flat = [r for rec in records for r in rec.per_platform()]
    last = sessions[-1] if sessions else Session(0.0, 0, None)
    return Summary(
        tool_version=__version__, models=len(records), elapsed_s=round(sum(s.elapsed_s for s in sessions), 3),
        models_per_s=round(last.models / last.elapsed_s, 3) if last.elapsed_s else 0.0,
        by_status={s.value: by.get(s.value, 0) for s in Status},
        unique_failures=len({r.key for r in flat if r.failed}),
        engine=EngineInfo(engine.engine, engine.version, engine.machine, engine.settings),
        platforms=platform_counts(flat, platform_info),
        platform_order=tuple(platform_info),  # summary.json's keys are sorted
        stop_reason=sessions[-1].stop_reason if sessions else None, sessions=len(sessions),
        harness_errors=harness_errors(flat))


def fingerprint_rows(records: list[CaseRecord]) -> list[FailureRow]:
    """One row per fingerprint, most cases first: its first record's words, its case folder, and
    the platforms it was seen on."""
    keys: Counter[str] = Counter()
    first: dict[str, PlatformRecord] = {}
    case: dict[str, str] = {}
    where: dict[str, set[str]] = {}
    for rec in records:
        for r in rec.failures():
            keys[r.key] += 1
            first.setdefault(r.key, r)
            case.setdefault(r.key, rec.case_dir)
            where.setdefault(r.key, set()).add(r.platform)
    return [FailureRow(key, n, fp_of(first[key]).title, first[key].status.value, first[key].op,
                       first[key].index, case[key], first[key].message[:300], tuple(sorted(where[key] - {""})))
            for key, n in keys.most_common()]


def harness_errors(flat: list[PlatformRecord]) -> HarnessErrors:
    """Results the harness failed itself on (their localisation is missing): how many, and the
    first one's words, so that a broken reference shows on the job summary."""
    hit = [r.harness_error for r in flat if r.harness_error]
    return HarnessErrors(len(hit), hit[0] if hit else "")


def frontend_counts(records: list[CaseRecord], names: list[str],
                    coverage: Mapping[str, Any]) -> dict[str, Outcomes]:
    """Per front end of a mixed campaign: models judged, outcomes, distinct failures, coverage."""
    out: dict[str, Outcomes] = {}
    for name in names:
        mine = [rec for rec in records if rec.frontend == name]
        by = Counter(rec.status.value for rec in mine)
        keys = {r.key for rec in mine for r in rec.failures()}
        out[name] = Outcomes(len(mine), {s.value: by.get(s.value, 0) for s in Status}, len(keys),
                             coverage=coverage.get(name, {}))
    return out


def platform_counts(flat: list[PlatformRecord], info: dict[str, EngineInfo]) -> dict[str, Outcomes]:
    """Per platform: models judged there, outcomes, distinct failures, what its worker ran on."""
    out: dict[str, Outcomes] = {}
    for name in dict.fromkeys([*info, *(r.platform for r in flat)]):
        mine = [r for r in flat if r.platform == name]
        by = Counter(r.status.value for r in mine)
        out[name or "?"] = Outcomes(len(mine), {s.value: by.get(s.value, 0) for s in Status},
                                    len({r.key for r in mine if r.failed}), info[name].machine if name in info else "")
    return out
