"""A campaign's summary (``summary.json``): the counts, each fingerprint and root cause with its
verdict, and what fails the step.  ``summarize.summarize_all`` is its one writer (a campaign's and a
merge's alike); the reporter, the action, the CLI and the triage tally read it through
``Summary.read``.  Nothing patches it after it is built.

summary.json is also a pull request's artifact: ``from_json`` takes each field with its exact
type, and the keys and ids that become markers and paths with their exact form."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bundle import EngineInfo, MinimizeStats
from .enums import Policy, Stop, Verdict
from .io import Fields, RecordError, read_record, write_record
from .keys import Fingerprint

SUMMARY_VERSION = 1  # 0: written before records (no "version" key), read the same way
FINGERPRINT_ID = r"[0-9a-f]{6,64}"
ROOT_CAUSE_KEY = r"rc-[0-9a-z][0-9a-z-]{3,60}"


def _engine_json(e: EngineInfo) -> dict[str, object]:
    """summary.json's ``engine``: the engine under test as its worker named it (its "name")."""
    d: dict[str, object] = {"name": e.engine, "version": e.version, "machine": e.machine}
    return {**d, "settings": dict(e.settings)} if e.settings else d


def _engine_of(f: Fields) -> EngineInfo:
    return EngineInfo(f.str("name"), f.str("version"), f.str("machine"), f.str_map("settings"))


@dataclass(frozen=True)
class HarnessErrors:
    """Results the harness failed itself on: how many, and the first one's words."""

    count: int = 0
    first: str = ""

    def to_json(self) -> dict[str, object]:
        return {"count": self.count, "first": self.first}

    @staticmethod
    def from_json(f: Fields) -> HarnessErrors:
        return HarnessErrors(f.int("count", 0, 0), f.str("first"))


@dataclass(frozen=True)
class Outcomes:
    """The models one part of a campaign judged (a platform, or a mixed campaign's front end),
    their statuses and distinct failures; a platform's worker machine, a front end's coverage."""

    models: int = 0
    by_status: Mapping[str, int] = field(default_factory=dict)
    unique_failures: int = 0
    machine: str | None = None  # a platform's
    coverage: dict[str, object] | None = None  # a front end's (search.coverage's metrics)

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {"models": self.models, "by_status": dict(self.by_status),
                             "unique_failures": self.unique_failures}
        return {**d, **{k: v for k, v in (("machine", self.machine), ("coverage", self.coverage)) if v is not None}}

    @staticmethod
    def from_json(f: Fields) -> Outcomes:
        return Outcomes(f.int("models", 0, 0), f.int_map("by_status"), f.int("unique_failures", 0, 0),
                        f.str("machine") if "machine" in f.d else None,
                        (f.mapping("coverage") or {}) if "coverage" in f.d else None)


@dataclass(frozen=True)
class Diagnosis:
    """What one fingerprint's diagnosis did (summary.json's "minimized"): the minimiser's stats,
    whether its model's replays disagreed, the root-cause key it gave, the symptom before it and
    its wall time; or the error the harness raised on it (counted, never fatal)."""

    stats: MinimizeStats = MinimizeStats()
    flaky: bool | None = None  # None: not checked
    root_cause: str = ""
    symptom_was: str = ""
    wall: float | None = None  # None: the minimiser alone ran (gbft minimize)
    error: str = ""
    trace: str = ""

    @property
    def complete(self) -> bool:
        """Not cut short by its time (a harness error is done with too)."""
        return True if self.error else self.stats.complete

    @property
    def seconds(self) -> float:
        return self.wall if self.wall is not None else self.stats.seconds

    def to_json(self) -> dict[str, object]:
        if self.error:
            return {"complete": True, "error": self.error, "trace": self.trace}
        d = self.stats.to_json()
        if self.flaky is not None:
            d["flaky"] = self.flaky
        if self.wall is not None:
            d.update(root_cause=self.root_cause, symptom_was=self.symptom_was, wall=self.wall)
        return d

    @staticmethod
    def from_json(f: Fields) -> Diagnosis:
        if f.str("error"):
            return Diagnosis(error=f.str("error"), trace=f.str("trace"))
        return Diagnosis(MinimizeStats.from_json(f), f.opt_bool("flaky"), f.str("root_cause"), f.str("symptom_was"),
                         f.float("wall") if f.d.get("wall") is not None else None)


@dataclass(frozen=True)
class ShardRun:
    """One shard of a merged campaign: its models, and whether it finished (a summary of its own)."""

    models: int = 0
    complete: bool = True

    def to_json(self) -> dict[str, object]:
        return {"models": self.models, "complete": self.complete}

    @staticmethod
    def from_json(f: Fields) -> ShardRun:
        return ShardRun(f.int("models", 0, 0), f.bool("complete", True))


@dataclass(frozen=True)
class FailureRow:
    """One fingerprint: its first record's words, its case folder, where it was seen, and once
    judged, its verdict, symptom class and root cause."""

    key: str
    count: int = 1
    title: str = ""
    status: str = ""
    op: str = ""
    first_index: int = 0
    case_dir: str = ""
    message: str = ""
    platforms: tuple[str, ...] = ()
    verdict: Verdict | None = None  # None: no base build (not written)
    symptom: str = ""
    root_cause: str = ""

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {"key": self.key, "fingerprint": self.key, "title": self.title, "count": self.count,
                             "status": self.status, "op": self.op, "first_index": self.first_index,
                             "case_dir": self.case_dir, "message": self.message, "platforms": list(self.platforms),
                             "symptom": self.symptom, "root_cause": self.root_cause}
        return {**d, "verdict": self.verdict.value} if self.verdict is not None else d

    @staticmethod
    def from_json(d: Any, where: str) -> FailureRow:
        f = Fields(d, where)
        key = f.str("key")
        if not re.fullmatch(FINGERPRINT_ID, key):
            raise RecordError(f"{where}: 'key' must be a fingerprint id, got {key[:40]!r}")
        return FailureRow(key, f.int("count", 1, 0), f.str("title"), f.str("status"), f.str("op"), f.int("first_index"),
                          f.str("case_dir"), f.str("message"), f.strs("platforms"),
                          f.enum("verdict", Verdict) if f.d.get("verdict") else None, f.str("symptom"),
                          f.str("root_cause"))


@dataclass(frozen=True)
class VerdictRow:
    """One fingerprint's verdict against the base build, and what it rests on (verdicts.json,
    and the base build's own failures in summary.json's triage)."""

    key: str
    verdict: Verdict
    title: str = ""
    op: str = ""
    count: int = 0
    cases: dict[str, int] = field(default_factory=dict)  # case verdict -> cases
    case_dir: str = ""
    case_dirs: dict[str, str] = field(default_factory=dict)
    confirmation: str = ""
    fingerprint: Fingerprint | None = None

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "verdict": self.verdict.value, "title": self.title, "op": self.op,
                "count": self.count, "cases": dict(self.cases), "case_dir": self.case_dir,
                "case_dirs": dict(self.case_dirs), "confirmation": self.confirmation,
                "fingerprint": self.fingerprint.to_json() if self.fingerprint else {}}

    @staticmethod
    def from_json(d: Any, where: str) -> VerdictRow:
        f = Fields(d, where)
        fp = f.d.get("fingerprint") or None
        return VerdictRow(f.str("key"), f.enum("verdict", Verdict), f.str("title"), f.str("op"), f.int("count", 0, 0),
                          f.int_map("cases"), f.str("case_dir"), f.str_map("case_dirs"),
                          f.str("confirmation"), Fingerprint.from_json(fp, f"{where}: fingerprint") if fp else None)


@dataclass(frozen=True)
class TriageSummary:
    """The verdict against the base build: the base build, counts per verdict, the fingerprints
    that fail the step, and the base build's failures this build passes."""

    base: EngineInfo  # the base build: its source, engine, version, machine
    counts: dict[str, int]
    blamed: tuple[str, ...]
    fixed: tuple[VerdictRow, ...] = ()

    def to_json(self) -> dict[str, object]:
        base = {"source": self.base.source, "engine": self.base.engine, "version": self.base.version,
                "machine": self.base.machine}
        return {"base": base, "counts": dict(self.counts), "blamed": list(self.blamed),
                "fixed": [v.to_json() for v in self.fixed]}

    @staticmethod
    def from_json(f: Fields) -> TriageSummary:
        b = f.obj("base")
        base = EngineInfo(b.str("engine"), b.str("version"), b.str("machine"), source=b.str("source"))
        return TriageSummary(base, f.int_map("counts"), f.strs("blamed"),
                             tuple(VerdictRow.from_json(x, f"{f.where}: fixed[{i}]") for i, x in enumerate(f.list("fixed"))))


@dataclass(frozen=True)
class RootCauseRow:
    """One root cause: its key and title, its fingerprints (the canonical one's bundle shows
    it), how often, where, its policy and verdict, and whether its diagnosis settled."""

    key: str
    symptom: str
    fingerprints: tuple[str, ...]
    canonical: str
    policy: Policy
    count: int = 0
    title: str = ""
    ops: tuple[str, ...] = ()
    detail: str = ""
    platforms: tuple[str, ...] = ()
    verdict: Verdict | None = None  # None: no base build
    minimized: bool = False
    isolated: bool = False
    settled: bool = True
    # A confirmed regression (verdict new): the models the base build passes and this build now
    # fails; whether the root cause also holds models failing on both builds (a known defect
    # with new cases); the worst new case's relative error on (the base build, this build).
    new_models: int = 0
    known: bool = False
    errors: tuple[float | None, float | None] | None = None

    @property
    def ids(self) -> list[str]:
        """Its fingerprints, the canonical one first."""
        return [self.canonical, *(x for x in dict.fromkeys(self.fingerprints) if x != self.canonical)]

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "symptom": self.symptom, "policy": self.policy.value, "title": self.title,
                "ops": list(self.ops), "detail": self.detail, "fingerprints": list(self.fingerprints),
                "canonical": self.canonical, "count": self.count, "platforms": list(self.platforms),
                "verdict": self.verdict.value if self.verdict else "", "minimized": self.minimized, "isolated": self.isolated,
                "settled": self.settled, **self._regression()}

    def _regression(self) -> dict[str, object]:
        """Written only for a regression (older readers and outputs do without)."""
        if not self.new_models:
            return {}
        return {"new_models": self.new_models, "known": self.known,
                **({"errors": list(self.errors)} if self.errors is not None else {})}

    @staticmethod
    def from_json(d: Any, where: str, default_policy: Policy) -> RootCauseRow:
        """A stored row; its keys and ids become issue markers and bundle paths, so they must have
        their exact form (the text fields are sanitised where shown)."""
        f = Fields(d, where)
        key = f.str("key")
        if not re.fullmatch(ROOT_CAUSE_KEY, key):
            raise RecordError(f"{where}: 'key' must be rc- and 4 to 61 lower-case letters, digits or '-', "
                              f"got {key[:40]!r}")
        fps = f.strs("fingerprints")
        if not fps or not all(re.fullmatch(FINGERPRINT_ID, x) for x in fps):
            raise RecordError(f"{where}: {key}: 'fingerprints' must be a non-empty list of fingerprint ids")
        if f.str("canonical") not in fps:
            raise RecordError(f"{where}: {key}: 'canonical' must be one of its fingerprints")
        # "" is a failure the campaign could not classify (an old record): reported as such.
        if not re.fullmatch(r"[a-z-]{0,40}", f.str("symptom")):
            raise RecordError(f"{where}: {key}: 'symptom' must be a symptom class such as wrong-result")
        policy = f.enum("policy", Policy) if f.d.get("policy") else default_policy
        return RootCauseRow(key, f.str("symptom"), fps, f.str("canonical"), policy, f.int("count", 0, 0),
                            f.str("title"), f.strs("ops"), f.str("detail"), f.strs("platforms"),
                            f.enum("verdict", Verdict) if f.str("verdict") else None,
                            f.bool("minimized"), f.bool("isolated"), f.bool("settled", True),
                            f.int("new_models", 0, 0), f.bool("known"), _errors(f, where))


def _errors(f: Fields, where: str) -> tuple[float | None, float | None] | None:
    """A regression's (base build, this build) errors: two numbers or nulls."""
    v = f.d.get("errors")
    if v is None:
        return None
    if not (isinstance(v, list) and len(v) == 2 and all(x is None or type(x) in (int, float) for x in v)):
        raise RecordError(f"{where}: 'errors' must be two numbers (or null), the base build's and this build's")
    return (None if v[0] is None else float(v[0]), None if v[1] is None else float(v[1]))


@dataclass(frozen=True)
class Summary:
    models: int
    elapsed_s: float = 0.0
    models_per_s: float = 0.0
    by_status: dict[str, int] = field(default_factory=dict)
    unique_failures: int = 0
    seed: int | None = None
    blocks: tuple[int, ...] = ()
    engine: EngineInfo = EngineInfo()
    platforms: Mapping[str, Outcomes] = field(default_factory=dict)  # per platform, with its worker's machine
    platform_order: tuple[str, ...] = ()
    stop_reason: Stop | None = None  # None: it did not stop (a summary made before it ran)
    sessions: int = 0
    harness_errors: HarnessErrors = HarnessErrors()
    failures: tuple[FailureRow, ...] = ()
    new_failures: tuple[str, ...] = ()  # fingerprints not seen before that the policy blames
    root_causes: tuple[RootCauseRow, ...] | None = None  # None: an output from before root causes
    symptom_policy: dict[str, Policy] = field(default_factory=dict)
    # Symptom classes whose new failures are listed, not failing the check (policy.fails_check).
    list_only: tuple[str, ...] = ()
    run_id: str = ""
    minimized: Mapping[str, Diagnosis] = field(default_factory=dict)  # per fingerprint: what its diagnosis did
    bugs_dir: str = ""
    tool_version: str = ""
    triage: TriageSummary | None = None  # with a base build
    # Shown as they are (the job summary's coverage and front ends): JSON objects.
    coverage: dict[str, Any] | None = None
    frontends: Mapping[str, Outcomes] | None = None  # a mixed campaign: per front end, with its coverage
    shards: Mapping[str, ShardRun] | None = None  # a merged campaign's shards ("2/3") and how far each got
    version: int = SUMMARY_VERSION

    # -- the one reader and the one writer -------------------------------------------
    @staticmethod
    def read(out: Path) -> Summary:
        path = out / "summary.json"
        return Summary.from_json(read_record(path, "campaign summary"), str(path))

    def write(self, out: Path) -> None:
        write_record(out / "summary.json", self.to_json())

    @property
    def blamed(self) -> tuple[str, ...]:
        """What fails the step under fail-on: new.  With a base build: the confirmed new
        fingerprints; without one: those not seen before (the known bugs of a previous state)."""
        return self.triage.blamed if self.triage is not None else self.new_failures

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {
            "version": self.version, "tool_version": self.tool_version, "models": self.models,
            "elapsed_s": self.elapsed_s, "models_per_s": self.models_per_s, "by_status": dict(self.by_status),
            "unique_failures": self.unique_failures, "seed": self.seed, "blocks": list(self.blocks),
            "engine": _engine_json(self.engine), "platforms": {k: v.to_json() for k, v in self.platforms.items()},
            "platform_order": list(self.platform_order), "stop_reason": str(self.stop_reason or ""), "sessions": self.sessions,
            "harness_errors": self.harness_errors.to_json(), "failures": [f.to_json() for f in self.failures],
            "new_failures": list(self.new_failures),
            "symptom_policy": {k: v.value for k, v in self.symptom_policy.items()}, "list_only": list(self.list_only),
            "run_id": self.run_id,
            "minimized": {k: v.to_json() for k, v in self.minimized.items()}, "bugs_dir": self.bugs_dir}
        if self.root_causes is not None:
            d["root_causes"] = [rc.to_json() for rc in self.root_causes]
        if self.triage is not None:
            d["triage"] = self.triage.to_json()
        shards = {k: v.to_json() for k, v in self.shards.items()} if self.shards is not None else None
        frontends = {k: v.to_json() for k, v in self.frontends.items()} if self.frontends is not None else None
        optional = {"coverage": self.coverage, "frontends": frontends, "shards": shards}
        return {**d, **{k: v for k, v in optional.items() if v is not None}}

    @staticmethod
    def from_json(d: Any, where: str = "summary.json") -> Summary:
        f = Fields(d, where)
        f.version(SUMMARY_VERSION)
        policy = _policies(f)
        return Summary(
            models=f.int("models", 0, 0), elapsed_s=f.float("elapsed_s"), models_per_s=f.float("models_per_s"),
            by_status=f.int_map("by_status"), unique_failures=f.int("unique_failures", 0, 0),
            seed=f.opt_int("seed"), blocks=f.ints("blocks"), engine=_engine_of(f.obj("engine")),
            platforms=_outcomes(f, "platforms") or {}, platform_order=f.strs("platform_order"),
            stop_reason=Stop.of_text(f.str("stop_reason")), sessions=f.int("sessions", 0, 0),
            harness_errors=HarnessErrors.from_json(f.obj("harness_errors")),
            failures=tuple(FailureRow.from_json(x, f"{where}: failures[{i}]") for i, x in enumerate(f.list("failures"))),
            new_failures=f.strs("new_failures"), root_causes=_root_causes(f, policy), symptom_policy=policy,
            list_only=_classes(f, "list_only"),
            run_id=f.str("run_id"), minimized=_diagnoses(f), bugs_dir=f.str("bugs_dir"),
            tool_version=f.str("tool_version"), triage=f.opt("triage", TriageSummary.from_json),
            coverage=f.mapping("coverage"), frontends=_outcomes(f, "frontends"), shards=_shards(f))


def _classes(f: Fields, key: str) -> tuple[str, ...]:
    """Symptom class names (shown in the job summary: their exact form, nothing else)."""
    v = f.strs(key)
    if not all(re.fullmatch(r"[a-z][a-z-]{0,39}", x) for x in v):
        raise RecordError(f"{f.where}: {key!r} must list symptom classes such as precision")
    return v


def _outcomes(f: Fields, key: str) -> dict[str, Outcomes] | None:
    parts = f.mapping(key)
    return None if parts is None else {str(k): Outcomes.from_json(Fields(v, f"{f.where}: {key}: {k}"))
                                       for k, v in parts.items()}


def _diagnoses(f: Fields) -> dict[str, Diagnosis]:
    return {str(k): Diagnosis.from_json(Fields(v, f"{f.where}: minimized: {k}"))
            for k, v in (f.mapping("minimized") or {}).items()}


def _shards(f: Fields) -> dict[str, ShardRun] | None:
    runs = f.mapping("shards")
    return None if runs is None else {str(k): ShardRun.from_json(Fields(v, f"{f.where}: shards: {k}"))
                                      for k, v in runs.items()}


def _policies(f: Fields) -> dict[str, Policy]:
    v = f.mapping("symptom_policy") or {}
    if not all(x in {p.value for p in Policy} for x in v.values()):
        raise RecordError(f"{f.where}: 'symptom_policy' must map symptom classes to "
                          f"{', '.join(p.value for p in Policy)}")
    return {str(k): Policy(x) for k, x in v.items()}


def _root_causes(f: Fields, policy: dict[str, Policy]) -> tuple[RootCauseRow, ...] | None:
    """The root causes, each with its policy (a row without one takes the summary's for its
    class, else report); None for an output from before root causes."""
    if f.d.get("root_causes") is None:
        return None
    rows, keys = [], set()
    for i, x in enumerate(f.list("root_causes")):
        where = f"{f.where}: root_causes[{i}]"
        sym = x.get("symptom") if isinstance(x, dict) else ""
        row = RootCauseRow.from_json(x, where, policy.get(str(sym), _default_policy(str(sym))))
        if row.key in keys:
            raise RecordError(f"{where}: {row.key} appears twice")
        keys.add(row.key)
        rows.append(row)
    return tuple(rows)


def _default_policy(symptom: str) -> Policy:
    # Here, not at the top: policy imports records.enums, and so the records package, this module
    # among them (records sit below policy; only a summary from before policies were written asks).
    from ..policy import policy_for

    return policy_for(symptom)
