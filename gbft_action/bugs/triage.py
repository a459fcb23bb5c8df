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

May import: bugs.fingerprint, oracle (and, in ``confirm``, the lane it is given);
never campaign, report or action.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterable

from .fingerprint import Fingerprint

VERDICTS_FILE = "verdicts.json"
# MNN's heap damage makes some bugs show only some of the time.  One that shows with
# chance p on both builds survives a round (PR shows it, base does not) with chance
# (1 - p) p <= 1/4, so all ROUNDS rounds with at most 1 in 4,096.  The campaign's own
# cases count as rounds too (each ran both builds, the base build never showing it), but
# at least MIN_FRESH rounds are on fresh workers, where no earlier model left damage.
ROUNDS = 6
MIN_FRESH = 3


class Verdict(str, Enum):
    NEW = "new"
    PRE_EXISTING = "pre-existing"
    FIXED = "fixed"
    CHANGED = "changed"
    FLAKY_NEW = "flaky-new"
    FLAKY_FIXED = "flaky-fixed"  # the base build's failure did not show on every replay
    UNCHECKED = "unchecked"

    def __str__(self) -> str:
        return self.value


# The verdict that fails the pull request (under fail-on: new), once confirmed.
BLAMED = (Verdict.NEW,)
# What is confirmed by replays, in this order: what decides the step first, then what a
# maintainer reads as good news, then the behaviour changes.
CONFIRMED = (Verdict.NEW, Verdict.FIXED, Verdict.CHANGED)


def case_verdict(pr: Fingerprint | None, base: Fingerprint | None) -> Verdict | None:
    """One model on both builds (fingerprints of their failures; None = passed)."""
    if pr is None:
        return None if base is None else Verdict.FIXED
    if pr.status == "XBF":  # TensorFlow cannot tell the builds apart, but they differ
        return Verdict.CHANGED
    if base is None:
        return Verdict.NEW
    return Verdict.PRE_EXISTING if pr == base else Verdict.CHANGED


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
    fingerprint: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict.value}

    @staticmethod
    def from_json(d: dict[str, Any]) -> BugVerdict:
        return BugVerdict(**{**d, "verdict": Verdict(d["verdict"])})


def aggregate(records: Iterable[dict[str, Any]]) -> dict[str, BugVerdict]:
    """Fingerprint verdicts from case records that carry a base-build result.

    A fingerprint the base build showed on any model is pre-existing, whatever its
    other cases say: the bug is there without the pull request.  Otherwise its cases
    decide, new before changed.  A fingerprint only the base build showed, on models the
    PR build passes, is fixed.
    """
    recs = [r for r in records if "base" in r]
    seen = Candidates()  # what each build showed: the campaign keeps the same as records arrive
    for r in recs:
        seen.note(r)
    base_seen, pr_seen = seen.base, seen.pr
    out: dict[str, BugVerdict] = {}
    for r in recs:
        if "key" in r:
            bv = out.setdefault(r["key"], _entry(r, r.get("case_dir", "")))
            bv.count += 1
            bv.cases[r.get("verdict", "")] = bv.cases.get(r.get("verdict", ""), 0) + 1
            bv.case_dirs.setdefault(r.get("verdict", ""), r.get("case_dir", ""))
        b = r["base"]
        # Fixed only where the PR build passed: a base failure the PR build fails otherwise
        # on is the PR's changed fingerprint, listed once, under that.
        if "key" in b and b["key"] not in pr_seen and r.get("verdict") == Verdict.FIXED.value:
            bv = out.setdefault(b["key"], _entry(b, r.get("case_dir", ""), Verdict.FIXED))
            bv.count += 1
            bv.cases["fixed"] = bv.cases.get("fixed", 0) + 1
            bv.case_dirs.setdefault("fixed", r.get("case_dir", ""))
    for key, bv in out.items():
        if bv.verdict is not Verdict.FIXED:
            bv.verdict = (Verdict.PRE_EXISTING if key in base_seen or bv.cases.get("pre-existing") else
                          Verdict.NEW if bv.cases.get("new") else Verdict.CHANGED)
    return out


@dataclass
class Candidates:
    """The fingerprints ``aggregate`` will call new, changed or fixed, kept as records arrive:
    the campaign asks after every model how much confirming will take, and aggregate reads
    every record.  The same rule: a fingerprint the other build showed anywhere is none."""

    base: set[str] = field(default_factory=set)  # shown by the base build
    pr: set[str] = field(default_factory=set)  # shown by the build under test
    new: set[str] = field(default_factory=set)  # a case called them new or changed
    fixed: set[str] = field(default_factory=set)  # a case called them fixed (the base's key)

    def note(self, rec: dict[str, Any]) -> None:
        if "base" not in rec:
            return
        pr, base, verdict = rec.get("key"), rec["base"].get("key"), rec.get("verdict")
        if pr:
            self.pr.add(pr)
            if verdict in (Verdict.NEW, Verdict.CHANGED):
                self.new.add(pr)
        if base:
            self.base.add(base)
            if verdict == Verdict.FIXED:
                self.fixed.add(base)

    def keys(self) -> set[str]:
        return (self.new - self.base) | (self.fixed - self.pr)


def _entry(rec: dict[str, Any], case_dir: str, verdict: Verdict = Verdict.UNCHECKED) -> BugVerdict:
    fp = rec.get("fingerprint") or {}
    return BugVerdict(rec["key"], verdict, fp.get("title", ""), rec.get("op", ""), case_dir=case_dir,
                      fingerprint=dict(fp))


def rounds_needed(bv: BugVerdict, rounds: int = ROUNDS) -> int:
    """Fresh replays still needed after the campaign's own ``bv.count`` cases."""
    return max(min(MIN_FRESH, rounds), rounds - bv.count)


def candidates(verdicts: dict[str, BugVerdict], kinds: tuple[Verdict, ...] = BLAMED) -> list[str]:
    """Fingerprints of the given verdicts to confirm, most frequent first."""
    todo = [bv for bv in verdicts.values() if bv.verdict in kinds]
    return [bv.key for bv in sorted(todo, key=lambda bv: (-bv.count, bv.key))]


# --------------------------------------------------------------------------- confirmation

@dataclass
class Round:
    """One replay of a model on fresh workers of both builds."""

    pr_shows: bool | None  # None: the deadline cut the replay short
    base_shows: bool = False
    outputs: dict[str, Any] = field(default_factory=dict)  # both builds' outputs, to catch nondeterminism
    base_other: bool = False  # the other build failed, but not with this fingerprint


def confirm(replay_round: Callable[[float], Round], verdict: Verdict, until: float, rounds: int = ROUNDS,
            same_outputs: Callable[[dict[str, Any], dict[str, Any]], bool] = lambda a, b: True) -> tuple[Verdict, str]:
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


def failing(summary: dict[str, Any]) -> list[str]:
    """What fails the step under fail-on: new.  With a base build: the confirmed new
    fingerprints; without one: those not seen before (the known bugs of a previous state)."""
    tri = summary.get("triage")
    return list(tri["blamed"]) if tri else list(summary.get("new_failures", []))


_PLAIN = re.compile(r"[^A-Za-z0-9 _:.,()=+/>\[\]-]")  # a title from a run's summary.json is untrusted data
MAX_TITLES = 3


def _new_titles(summary: dict[str, Any]) -> list[str]:
    """The root causes (their titles, largest first) holding a new failure: what broke."""
    new = set(summary.get("new_failures") or [])
    causes = [rc for rc in summary.get("root_causes") or [] if new & set(rc.get("fingerprints") or [])]
    causes.sort(key=lambda rc: -int(rc.get("count") or 0))
    # Brackets stay ("[onnx] Add: ..."), escaped so that no link can form.
    titles = [_PLAIN.sub("", str(rc.get("title") or ""))[:100].replace("[", "\\[").replace("]", "\\]")
              for rc in causes]
    shown = [t for t in titles if t][:MAX_TITLES]
    return shown + [f"and {len(titles) - len(shown)} more"] if len(titles) > len(shown) and shown else shown


def headline(summary: dict[str, Any]) -> str:
    """The answer, in one line, for the top of the job summary."""
    tri = summary.get("triage")
    if not tri:
        n, new = int(summary.get("unique_failures", 0)), len(summary.get("new_failures", []))
        return (f"{n} distinct failure{_s(n)}, {new} not seen before. No base build to compare with: "
                f"set `base-build` to tell what this pull request introduced.")
    c = {k: int(v) for k, v in tri["counts"].items()}  # summary.json is data from a run: numbers only here
    new, changed, pre, fixed = c["new"], c["changed"], c["pre-existing"], c["fixed"]
    if "root_causes" in summary:  # what fails the check, as the outputs and the table count it
        new = len(summary.get("new_failures") or [])
    head = f"**{new} new failure{_s(new)} introduced by this pull request**" if new else "**No new failures**"
    titles = _new_titles(summary) if new else []
    if titles:  # a red check says what broke, first
        head += ": " + "; ".join(titles)
    rest = []
    if changed:
        rest.append(f"{changed} changed behaviour{_s(changed)} (the builds differ where TensorFlow cannot tell "
                    f"which is right, or fail differently; listed, not failing this check)")
    if pre:
        rest.append(f"{pre} pre-existing (the base build fails the same way, so they do not fail this check)")
    if fixed:
        rest.append(f"{fixed} fixed")
    if c["flaky-new"]:
        rest.append(f"{c['flaky-new']} flaky (not reproducible on every replay; not blamed)")
    if c["flaky-fixed"]:
        rest.append(f"{c['flaky-fixed']} base-build failures too flaky to call fixed")
    if c["unchecked"]:
        rest.append(f"{c['unchecked']} unchecked (the budget ran out before the confirmation replays)")
    return head + ("; " + "; ".join(rest) if rest else "") + "."


def _s(n: int) -> str:
    return "" if n == 1 else "s"
