"""A line of ``cases.jsonl``: one judged model, as ``CaseRecord``.

A model is judged on every platform of the run (and, in a pull-request run, on the base
build): the first platform's result is the record itself, the other platforms' ride along
under ``others`` and the base build's under ``base``, each a ``PlatformRecord``.  The JSON
keeps today's form exactly: optional fields are written only when set, so a record read and
written again is the same line (``gbft merge`` rewrites the file).  The file's lines carry no
version of their own; they are read by field, and a line of an older gbft reads the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .enums import Status, Symptom, Verdict
from .io import Fields
from .keys import Fingerprint

CASES_FILE = "cases.jsonl"


@dataclass(frozen=True)
class PlatformRecord:
    """One platform's (or the base build's) result for one model."""

    index: int
    hash: str  # the model's structure hash: the same model on every platform
    seed: int
    status: Status
    stage: str = ""
    op: str = ""
    node: str = ""
    message: str = ""
    timings: Mapping[str, float] = field(default_factory=dict)
    n_nodes: int = 0
    n_blocks: int = 0
    platform: str = ""
    frontend: str = ""  # a mixed campaign's front end of the model ("" otherwise)
    notes: tuple[str, ...] = ()
    harness_error: str = ""  # the harness failed itself here (no localisation)
    symptom: Symptom | None = None
    direction: str = ""  # nan-inf: which special value went where
    crosscheck: str = ""  # the second reference's word on a wrong result
    # How the engine ended: a crash's signal or exit code, and the cases its worker ran before
    # (a crash may be damage an earlier one left).  Written together, when either is known.
    signal: int | None = None
    exit_code: int | None = None
    after: tuple[int, ...] = ()
    fingerprint: Fingerprint | None = None
    key: str = ""  # the fingerprint's id as written ("" for a pass)
    # The worst relative error against the reference (oracle.relative_error), in a run with a base
    # build (both builds' first-platform results), where the engine gave outputs and it is finite:
    # the pull request's verdict says by how much precision moved.
    error: float | None = None

    @property
    def failed(self) -> bool:
        """Whether the result has a fingerprint (a failure of the engine or the harness)."""
        return bool(self.key)

    @property
    def symptom_text(self) -> str:
        return self.symptom.value if self.symptom else ""

    @property
    def ended(self) -> bool:
        return self.signal is not None or self.exit_code is not None

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {
            "index": self.index, "hash": self.hash, "seed": self.seed, "status": self.status.value,
            "stage": self.stage, "op": self.op, "node": self.node, "message": self.message,
            "timings": dict(self.timings), "n_nodes": self.n_nodes, "n_blocks": self.n_blocks,
            "platform": self.platform}
        optional = {"frontend": self.frontend, "notes": list(self.notes), "harness_error": self.harness_error,
                    "symptom": self.symptom_text, "direction": self.direction if self.symptom else "",
                    "crosscheck": self.crosscheck}
        d.update({k: v for k, v in optional.items() if v})
        if self.ended:
            d.update(signal=self.signal, exit_code=self.exit_code, after=list(self.after))
        if self.fingerprint is not None:
            d.update(fingerprint=self.fingerprint.to_json(), key=self.key or self.fingerprint.id)
        if self.error is not None:
            d["error"] = self.error
        return d

    @classmethod
    def from_json(cls, d: Any, where: str = "case record") -> PlatformRecord:
        return cls(**_platform_fields(Fields(d, where)))


def _platform_fields(f: Fields) -> dict[str, Any]:
    fp = f.opt("fingerprint", lambda x: Fingerprint.from_json(x.d, x.where))
    return dict(
        index=f.int("index", minimum=0), hash=f.str("hash"), seed=f.int("seed"), status=f.enum("status", Status),
        stage=f.str("stage"), op=f.str("op"), node=f.str("node"), message=f.str("message"),
        timings=f.float_map("timings"), n_nodes=f.int("n_nodes"), n_blocks=f.int("n_blocks"),
        platform=f.str("platform"), frontend=f.str("frontend"), notes=f.strs("notes"),
        harness_error=f.str("harness_error"), symptom=f.enum("symptom", Symptom) if f.str("symptom") else None,
        direction=f.str("direction"), crosscheck=f.str("crosscheck"), signal=f.opt_int("signal"),
        exit_code=f.opt_int("exit_code"), after=f.ints("after"), fingerprint=fp,
        key=f.str("key") or (fp.id if fp is not None else ""), error=f.opt_float("error"))


@dataclass(frozen=True)
class CaseRecord(PlatformRecord):
    """One model: the first platform's result, the others', the base build's, its case folder."""

    others: tuple[PlatformRecord, ...] = ()
    base: PlatformRecord | None = None
    verdict: Verdict | None = None  # against the base build (None: no base build ran)
    case_dir: str = ""  # OUT-relative folder of a kept case ("" when none was kept)
    shard: str = ""  # a merged campaign: the shard it came from ("2/3") and its index there
    shard_index: int | None = None

    def per_platform(self) -> tuple[PlatformRecord, ...]:
        """The build under test's results: this record's and the other platforms' (the base
        build's is not a failure of this run)."""
        return (self, *self.others)

    def failures(self) -> Iterator[PlatformRecord]:
        return (r for r in self.per_platform() if r.failed)

    def first(self) -> PlatformRecord:
        """The first platform's result alone (without the others and the base)."""
        return PlatformRecord(**{f.name: getattr(self, f.name) for f in fields(PlatformRecord)})

    def with_index(self, index: int) -> CaseRecord:
        """The same record under another campaign index (every platform's and the base's)."""
        return replace(self, index=index, others=tuple(replace(o, index=index) for o in self.others),
                       base=replace(self.base, index=index) if self.base is not None else None)

    def to_json(self) -> dict[str, object]:
        d = super().to_json()
        if self.others:
            d["others"] = [o.to_json() for o in self.others]
        if self.base is not None:
            d.update(base=self.base.to_json(), verdict=self.verdict.value if self.verdict else "")
        if self.case_dir:
            d["case_dir"] = self.case_dir
        if self.shard:
            d.update(shard=self.shard, shard_index=self.shard_index)
        return d

    def line(self) -> str:
        """The record as its line of cases.jsonl."""
        return json.dumps(self.to_json(), sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, d: Any, where: str = "case record") -> CaseRecord:
        f = Fields(d, where)
        others = tuple(PlatformRecord.from_json(o, f"{where}: others") for o in f.list("others"))
        base = f.opt("base", lambda x: PlatformRecord.from_json(x.d, x.where))
        verdict = f.str("verdict")
        return cls(**_platform_fields(f), others=others, base=base,
                   verdict=f.enum("verdict", Verdict) if verdict else None, case_dir=f.str("case_dir"),
                   shard=f.str("shard"), shard_index=f.opt_int("shard_index"))


def read_cases(path: Path) -> tuple[list[CaseRecord], int, bool]:
    """The whole records of a ``cases.jsonl`` (without changing it): (records, the bytes they
    take, whether a torn line followed them, the trace of a run killed mid-write).  A line that
    is whole JSON but not a case record is a RecordError naming its line."""
    if not path.exists():
        return [], 0, False
    raw = path.read_bytes()
    records, good = [], 0
    for n, line in enumerate(raw.splitlines(keepends=True), 1):
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            break
        if not line.endswith(b"\n"):
            break
        records.append(CaseRecord.from_json(d, f"{path}: line {n}"))
        good += len(line)
    return records, good, good != len(raw)
