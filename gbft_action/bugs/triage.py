"""The pull request's verdict: every failure judged against the base build.

ClusterFuzzLite's rule (a crash the base build also has is not the pull request's),
made to hold for an engine with a hundred pre-existing failures: the base build
runs beside the build under test on every model of the campaign (pipeline), so
each case gets a verdict at once, and a fingerprint's verdict aggregates its
cases.  Only ``new`` fingerprints fail the pull request, and only after ``confirm``
has replayed them on fresh workers of both builds.  ``changed`` ones are listed
(confirmed the same way) but do not fail it: a difference between the builds where
TensorFlow cannot judge, or a failure that became another, is as often a fix as a
regression, and two releases differ that way in both directions.

  case verdicts      new           fails on the PR build, passes on the base build
                     pre-existing  fails on both with the same fingerprint
                     fixed         fails on the base build, passes on the PR build
                     changed       fails on both but differently, or (XBF) the two
                                   builds' outputs differ where TensorFlow cannot tell
  after confirming   flaky-new     the PR build did not show it on every replay, or
                                   its outputs changed from one replay to the next
                     flaky-fixed   the same, for a fixed one on the base build
                     unchecked     the deadline cut the confirmation short
"""

from __future__ import annotations

from collections.abc import Mapping
import json
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from ..records.case import CaseRecord, PlatformRecord
from ..records.enums import Policy, Symptom, Verdict
from ..records.summary import RootCauseRow, Summary, VerdictRow
from ..policy import CONFIRM_ROUNDS
from ..records import Fingerprint

VERDICTS_FILE = "verdicts.json"
# MNN's heap damage makes some bugs show only some of the time.  One that shows with
# chance p on both builds survives a round (PR shows it, base does not) with chance
# (1 - p) p <= 1/4, so all ROUNDS rounds with at most 1 in 4,096.  The campaign's own
# cases count as rounds too (each ran both builds, the base build never showing it), but
# at least MIN_FRESH rounds are on fresh workers, where no earlier model left damage.
ROUNDS = CONFIRM_ROUNDS
MIN_FRESH = 3


# The verdict that fails the pull request (under fail-on: new), once confirmed.
BLAMED = (Verdict.NEW,)
# What is confirmed by replays, in this order: what decides the step first, then what a
# maintainer reads as good news, then the behaviour changes.
CONFIRMED = (Verdict.NEW, Verdict.FIXED, Verdict.CHANGED)


def case_verdict(pr: Fingerprint | None, base: Fingerprint | None, outputs_agree: bool = False) -> Verdict | None:
    """One model on both builds (fingerprints of their failures; None = passed).  The model
    decides, not the localisation: the two builds' outputs agreeing within the tolerance
    (``outputs_agree``) make one pre-existing failure, wherever each build's localisation stopped
    (an LRN on one build, a GatherElements on the other, over the same wrong values).  So too
    when the base build passed: its outputs are this build's, on the bound's edge (0.09% and
    0.11% off the reference is no regression; 0.02% and 0.4% is)."""
    if pr is None:
        return None if base is None else Verdict.FIXED
    if pr.status == "XBF":  # TensorFlow cannot tell the builds apart, but they differ
        return Verdict.CHANGED
    if outputs_agree:
        return Verdict.PRE_EXISTING
    if base is None:
        return Verdict.NEW
    return Verdict.PRE_EXISTING if pr.same_failure(base) else Verdict.CHANGED


def fingerprint_verdict(cases: dict[str, int], seen_on_base: bool) -> Verdict:
    """A fingerprint's verdict from its cases' (case verdict -> models).  New cases count wherever
    they sit: a model the base build passes and this build fails is a regression even when
    other models of the same fingerprint fail on both builds (one old case outvoted seven new
    ones of a LayerNormalization broken on every axis but the last).  Without a new case, a
    fingerprint the base build showed anywhere is pre-existing."""
    if cases.get(Verdict.NEW.value):
        return Verdict.NEW
    if cases.get(Verdict.PRE_EXISTING.value) or seen_on_base:
        return Verdict.PRE_EXISTING
    return Verdict.CHANGED


@dataclass
class BugVerdict:
    """One fingerprint's verdict, and what it rests on."""

    key: str
    verdict: Verdict
    title: str = ""
    op: str = ""
    count: int = 0  # cases of this fingerprint (on the build it was seen on)
    cases: dict[str, int] = field(default_factory=dict)  # case verdict -> cases
    case_dir: str = ""  # a case showing it (fixed: the base build's failure)
    case_dirs: dict[str, str] = field(default_factory=dict)  # case verdict -> its first case (what to replay)
    confirmation: str = ""  # how the replays went, for a new, changed or fixed one
    fingerprint: dict[str, object] = field(default_factory=dict)
    # The worst new case's error against the reference on (the base build, this build): how much
    # a precision regression lost.  None where a build gave no outputs to measure.
    errors: tuple[float | None, float | None] | None = None

    def to_json(self) -> dict[str, object]:
        d = {**asdict(self), "verdict": self.verdict.value}
        if self.errors is None:  # written only for a new one (older files do without)
            del d["errors"]
        return d

    def to_row(self) -> VerdictRow:
        """The summary's row of it (records.summary)."""
        return VerdictRow(self.key, self.verdict, self.title, self.op, self.count, dict(self.cases), self.case_dir,
                          dict(self.case_dirs), self.confirmation,
                          Fingerprint.from_json(self.fingerprint) if self.fingerprint else None)

    @property
    def new_models(self) -> int:
        """Models the base build passes and this build fails with it."""
        return self.cases.get(Verdict.NEW.value, 0)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> BugVerdict:
        errors = d.get("errors")
        return BugVerdict(**{**d, "verdict": Verdict(d["verdict"]),
                             "errors": (errors[0], errors[1]) if isinstance(errors, list) and len(errors) == 2 else None})


def aggregate(records: Iterable[CaseRecord]) -> dict[str, BugVerdict]:
    """Fingerprint verdicts from case records that carry a base-build result: each model's own
    verdict (pipeline: the two builds on the same model) counted per fingerprint, then
    ``fingerprint_verdict``.  A fingerprint only the base build showed, on models the PR build
    passes, is fixed.
    """
    recs = [r for r in records if r.base is not None]
    seen = Candidates()  # what each build showed: the campaign keeps the same as records arrive
    for r in recs:
        seen.note(r)
    out: dict[str, BugVerdict] = {}
    for r in recs:
        said = r.verdict.value if r.verdict else ""
        if r.failed:
            bv = out.setdefault(r.key, _entry(r, r.case_dir))
            bv.count += 1
            bv.cases[said] = bv.cases.get(said, 0) + 1
            bv.case_dirs.setdefault(said, r.case_dir)
            if r.verdict is Verdict.NEW:
                bv.errors = worse_errors(bv.errors, (r.base.error if r.base else None, r.error))
        b = r.base
        assert b is not None
        # Fixed only where the PR build passed: a base failure the PR build fails otherwise
        # on is the PR's changed fingerprint, listed once, under that.
        if b.failed and b.key not in seen.pr and r.verdict is Verdict.FIXED:
            bv = out.setdefault(b.key, _entry(b, r.case_dir, Verdict.FIXED))
            bv.count += 1
            bv.cases["fixed"] = bv.cases.get("fixed", 0) + 1
            bv.case_dirs.setdefault("fixed", r.case_dir)
    for key, bv in out.items():
        if bv.verdict is not Verdict.FIXED:
            bv.verdict = fingerprint_verdict(bv.cases, key in seen.base)
    return out


def worse_errors(a: tuple[float | None, float | None] | None,
                  b: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    """The pair whose PR-build error is larger (a precision regression is told by its worst case)."""
    if a is None or (b[1] is not None and (a[1] is None or b[1] > a[1])):
        return b
    return a


@dataclass
class Candidates:
    """The fingerprints ``aggregate`` will call new, changed or fixed, kept as records arrive:
    the campaign asks after every model how much confirming will take, and aggregate reads
    every record.  The same rules (``fingerprint_verdict``)."""

    base: set[str] = field(default_factory=set)  # shown by the base build
    pr: set[str] = field(default_factory=set)  # shown by the build under test
    cases: dict[str, Counter[str]] = field(default_factory=dict)  # PR fingerprint -> case verdicts
    fixed: set[str] = field(default_factory=set)  # a case called them fixed (the base's key)

    def note(self, rec: CaseRecord) -> None:
        if rec.base is None:
            return
        pr, base, verdict = rec.key, rec.base.key, rec.verdict
        if pr:
            self.pr.add(pr)
            self.cases.setdefault(pr, Counter())[verdict.value if verdict else ""] += 1
        if base:
            self.base.add(base)
            if verdict == Verdict.FIXED:
                self.fixed.add(base)

    def keys(self) -> set[str]:
        judged = {k: fingerprint_verdict(dict(c), k in self.base) for k, c in self.cases.items()}
        return {k for k, v in judged.items() if v in (Verdict.NEW, Verdict.CHANGED)} | (self.fixed - self.pr)


def _entry(rec: PlatformRecord, case_dir: str, verdict: Verdict = Verdict.UNCHECKED) -> BugVerdict:
    fp = rec.fingerprint.to_json() if rec.fingerprint is not None else {}
    return BugVerdict(rec.key, verdict, fp.get("title", ""), rec.op, case_dir=case_dir, fingerprint=fp)


def rounds_needed(bv: BugVerdict, rounds: int = ROUNDS) -> int:
    """Fresh replays still needed after the campaign's own cases of its verdict (a new one's
    cases where the base build passed; not its cases that fail on both builds)."""
    return max(min(MIN_FRESH, rounds), rounds - bv.cases.get(bv.verdict.value, 0))


def candidates(verdicts: dict[str, BugVerdict], kinds: tuple[Verdict, ...] = BLAMED) -> list[str]:
    """Fingerprints of the given verdicts to confirm, most frequent first."""
    todo = [bv for bv in verdicts.values() if bv.verdict in kinds]
    return [bv.key for bv in sorted(todo, key=lambda bv: (-bv.count, bv.key))]


# --------------------------------------------------------------------------- confirmation

# Each build's ("pr", "base") outputs of one replay, by output name.
BuildOutputs = dict[str, dict[str, np.ndarray]]


@dataclass
class Round:
    """One replay of a model on fresh workers of both builds."""

    pr_shows: bool | None  # None: the deadline cut the replay short
    base_shows: bool = False
    outputs: BuildOutputs = field(default_factory=dict)  # both builds' outputs, to catch nondeterminism
    base_other: bool = False  # the other build failed, but not with this fingerprint


def round_of(target: Fingerprint, pr: Fingerprint | None, base: Fingerprint | None, fixed: bool,
             outputs: BuildOutputs | None = None, alike: bool = False) -> Round:
    """One replay's round from each build's failure (None: passed).  For a fixed fingerprint the
    base build is the one that must show it.  A memory error shows as any memory error.
    ``alike``: both builds failed the model with outputs that agree (case_verdict said
    pre-existing), so the other build shows it too, whatever its fingerprint."""
    own, other = (base, pr) if fixed else (pr, base)
    shows = target.same_failure(own)
    other_shows = target.same_failure(other) or (alike and shows)
    return Round(shows, other_shows, outputs or {}, other is not None and not other_shows)


def confirm(replay_round: Callable[[float], Round], verdict: Verdict, until: float, rounds: int = ROUNDS,
            same_outputs: Callable[[BuildOutputs, BuildOutputs], bool] = lambda a, b: True) -> tuple[Verdict, str]:
    """Replay a new, changed or fixed fingerprint; (final verdict, what the replays showed).

    Pre-existing as soon as the other build shows it too; flaky as soon as its own
    build misses it or a build's outputs change between replays (uninitialised
    memory); confirmed only after ``rounds`` rounds; unchecked when the deadline
    cuts a replay short, which is never read as a pass.  For a fixed one the roles
    are swapped: ``Round.pr_shows`` then says whether the base build showed it.
    """
    first: dict[str, Any] | None = None
    for k in range(1, rounds + 1):
        left = until - time.monotonic()
        if left <= 0:
            return Verdict.UNCHECKED, f"time ran out after {k - 1} of {rounds} replays"
        r = replay_round(left)
        if r.pr_shows is None:
            return Verdict.UNCHECKED, f"time ran out in replay {k} of {rounds}"
        if r.base_shows:
            return Verdict.PRE_EXISTING, f"the base build showed it in replay {k}"
        if verdict is Verdict.NEW and r.base_other:  # new means the base build passes
            return Verdict.CHANGED, f"the base build failed otherwise in replay {k}"
        flaky = Verdict.FLAKY_FIXED if verdict is Verdict.FIXED else Verdict.FLAKY_NEW
        if not r.pr_shows:
            return flaky, f"the {'base' if verdict is Verdict.FIXED else 'PR'} build did not show it in replay {k}"
        first = r.outputs if first is None else first
        if not same_outputs(first, r.outputs):
            return flaky, f"outputs changed between replays (replay {k}): nondeterministic"
    return verdict, f"confirmed in {rounds} of {rounds} replays on fresh workers"


# --------------------------------------------------------------------------- the record on disk

def write_verdicts(out: Path, verdicts: dict[str, BugVerdict]) -> None:
    data = [bv.to_json() for bv in sorted(verdicts.values(), key=lambda bv: (bv.verdict.value, -bv.count, bv.key))]
    tmp = out / f".{VERDICTS_FILE}.tmp"
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(out / VERDICTS_FILE)


def read_verdicts(out: Path) -> dict[str, BugVerdict]:
    path = out / VERDICTS_FILE
    if not path.exists():
        return {}
    return {d["key"]: BugVerdict.from_json(d) for d in json.loads(path.read_text())}


def counts(verdicts: dict[str, BugVerdict]) -> dict[str, int]:
    c = Counter(bv.verdict.value for bv in verdicts.values())
    return {v.value: c.get(v.value, 0) for v in Verdict}


def blamed(verdicts: dict[str, BugVerdict]) -> list[str]:
    """The fingerprints that fail the pull request: the confirmed new ones."""
    return sorted(k for k, bv in verdicts.items() if bv.verdict in BLAMED)


@dataclass(frozen=True)
class Tally:
    """A campaign's answer in one unit, read by the headline, the job summary's tables and the
    step's outputs alike: root causes, with fingerprints as detail (an output written before
    root causes counts fingerprints).  "8 new failures" over a table of 4 and an output of 3
    was three units for one answer."""

    failures: int  # distinct failures (root causes the symptom policy does not ignore)
    fingerprints: int
    new: int  # what fails the check (fail-on: new)
    new_fingerprints: int
    new_keys: tuple[str, ...]  # the root causes (fingerprints) failing the check, largest first
    by_verdict: dict[str, int] = field(default_factory=dict)  # with a base build


def tally(summary: Summary) -> Tally:
    """The counts of a summary."""
    blamed = set(summary.blamed)
    fps = summary.unique_failures
    tri = summary.triage
    counts = dict(tri.counts) if tri else {}
    rcs = summary.root_causes
    if rcs is None:
        return Tally(fps, fps, len(blamed), len(blamed), tuple(sorted(blamed)), counts)
    # A root cause fails the check through its fingerprints: those the campaign kept in
    # new_failures only (policy report: a reference disagreement or a precision class never).
    new = sorted((rc for rc in rcs if blamed & set(rc.fingerprints)), key=lambda rc: (-rc.count, rc.key))
    by_verdict: dict[str, int] = {}
    if tri:  # the blamed ones are "new" whatever else their fingerprints were; the rest by their verdict
        # The tables' rows: an ignored root cause (a tie) is counted in a line of its own, not here
        # ("118 pre-existing" over a table of 117 was one tie).
        by_verdict = {v.value: 0 for v in Verdict} | dict(Counter(rc.verdict.value for rc in rcs
                                                                  if rc.verdict and rc.policy is not Policy.IGNORE))
        by_verdict["new"] = len(new)
        # New on this build, of a class listed rather than failing (policy.fails_check).
        failing = {rc.key for rc in new}
        by_verdict["new-listed"] = sum(rc.verdict is Verdict.NEW and rc.policy is not Policy.IGNORE
                                       and rc.key not in failing for rc in rcs)
        # The base build's own failures have no root causes (nothing of this build to minimise).
        by_verdict["fixed"], by_verdict["flaky-fixed"] = counts.get("fixed", 0), counts.get("flaky-fixed", 0)
    # The tables list every root cause but the ignored ones (ties: counted in a line of their own).
    listed = sum(rc.policy is not Policy.IGNORE for rc in rcs)
    return Tally(listed, fps, len(new), len(blamed), tuple(rc.key for rc in new), by_verdict)


_PLAIN = re.compile(r"[^A-Za-z0-9 _:.,()=+/>%\[\]-]")  # a title from a run's summary.json is untrusted data
MAX_TITLES = 3


def _new_titles(summary: Summary, keys: tuple[str, ...]) -> list[str]:
    """What broke, largest first, as plain text: each root cause's title, and for a known one
    (it also holds models failing on both builds) how many models that passed now fail under
    it; for precision, the two builds' errors."""
    by_key = {rc.key: rc for rc in summary.root_causes or ()}
    titles = [_regression_text(by_key[k]) for k in keys if k in by_key]
    shown = [t for t in titles if t][:MAX_TITLES]
    return shown + [f"and {len(titles) - len(shown)} more"] if len(titles) > len(shown) and shown else shown


def _regression_text(rc: RootCauseRow) -> str:
    # Brackets stay ("[onnx] Add: ..."), escaped so that no link can form.
    title = _PLAIN.sub("", rc.title)[:100].replace("[", "\\[").replace("]", "\\]")
    if not title:
        return ""
    if rc.known and rc.new_models:
        n = rc.new_models
        title = (f"{n} model{_s(n)} that pass{'es' if n == 1 else ''} on the base build now fail{'s' if n == 1 else ''}, "
                 f"under the known root cause {title}")
    if rc.errors is not None and rc.symptom == Symptom.PRECISION:
        base, pr = rc.errors
        title += f" (error against the reference: base build {_pct(base)}, this build {_pct(pr)})"
    return title


def _pct(x: float | None) -> str:
    """A relative error as a percentage a reader can compare at a glance."""
    return "not measured" if x is None else f"{100 * x:.3g}%"


def headline(summary: Summary) -> str:
    """The answer, in one line, for the top of the job summary."""
    t = tally(summary)
    by_root_cause = summary.root_causes is not None
    unit = "root cause" if by_root_cause else "distinct failure"
    detail = f" ({t.fingerprints} fingerprint{_s(t.fingerprints)})" if by_root_cause else ""
    if summary.triage is None:
        return (f"{t.failures} {unit}{_s(t.failures)}{detail}, {t.new} not seen before. No base build to compare "
                f"with: set `base-build` to tell what this pull request introduced.")
    c = t.by_verdict
    head = f"**{t.new} new failure{_s(t.new)} introduced by this pull request**" if t.new else "**No new failures**"
    titles = _new_titles(summary, t.new_keys) if t.new else []
    if titles:  # a red check says what broke, first
        head += ": " + "; ".join(titles)
    rest = []
    if c.get("new-listed"):
        rest.append(f"{c['new-listed']} new of a class listed, not failing ({', '.join(summary.list_only)}; "
                    f"see below)")
    if c.get("changed"):
        rest.append(f"{c['changed']} changed behaviour{_s(c['changed'])} (the builds differ where TensorFlow cannot "
                    f"tell which is right, or fail differently; listed, not failing this check)")
    if c.get("pre-existing"):
        rest.append(f"{c['pre-existing']} pre-existing (the base build fails the same way, so they do not fail this "
                    f"check)")
    if c.get("fixed"):
        rest.append(f"{c['fixed']} fixed")
    if c.get("flaky-new"):
        rest.append(f"{c['flaky-new']} flaky (not reproducible on every replay; not blamed)")
    if c.get("flaky-fixed"):
        rest.append(f"{c['flaky-fixed']} base-build failures too flaky to call fixed")
    if c.get("unchecked"):
        rest.append(f"{c['unchecked']} unchecked (the budget ran out before the confirmation replays)")
    return head + ("; " + "; ".join(rest) if rest else "") + "."


def _s(n: int) -> str:
    return "" if n == 1 else "s"
