"""The records of learned guidance (issue 38): the training data set and the learned files.

A data set (``gbft learn collect``) is a folder: ``dataset.json`` (``DatasetMeta``: its
version, the engine build it was taken on, the features' version) and ``rows.jsonl``, one
``DatasetRow`` a model (its features and the engine's blocks it ran, per module).  A collection
that stops (a crash, a cancelled job) keeps every row written; the next one skips their keys.

A learned guide (``gbft learn train``) is a folder: ``learned.json`` (``LearnedMeta``), the
predictor and each front end's policy as ONNX files, which ONNX Runtime runs in the fuzz loop
(the pull-request job needs no training framework).  Its version is checked on load.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .io import Fields, RecordError, read_record, write_record

DATASET_VERSION = 1
LEARNED_VERSION = 1
DATASET_FILE, ROWS_FILE, LEARNED_FILE = "dataset.json", "rows.jsonl", "learned.json"


@dataclass(frozen=True)
class DatasetMeta:
    engine: str  # the engine's name and version as its worker said them ("mnn 3.6.1")
    features_version: int
    version: int = DATASET_VERSION

    def to_json(self) -> dict[str, object]:
        return {"version": self.version, "engine": self.engine, "features_version": self.features_version}

    @staticmethod
    def read(folder: Path) -> DatasetMeta | None:
        path = folder / DATASET_FILE
        if not path.exists():
            return None
        f = Fields(read_record(path, "data set"), str(path))
        meta = DatasetMeta(f.str("engine"), f.int("features_version", 0, 0), f.int("version", 0, 0))
        if meta.version != DATASET_VERSION:
            raise RecordError(f"{path}: data set version {meta.version}; this gbft reads version {DATASET_VERSION}")
        return meta

    def write(self, folder: Path) -> None:
        write_record(folder / DATASET_FILE, self.to_json())


@dataclass(frozen=True)
class DatasetRow:
    key: str  # what the model is: "generated:onnx:7:123" (front end, seed, index) or "node:test_abs"
    frontend: str
    status: str  # the engine's outcome (records.Status's value; DCP for a package model that ran)
    features: dict[str, object]  # search.features.FeatureGraph.to_json()
    modules: dict[str, int] = field(default_factory=dict)  # the engine's blocks it ran, per module
    # Every engine call returned: a crash or a timeout loses the blocks of the call it ended (a
    # partial count: the predictor does not train on it).
    complete: bool = True

    def line(self) -> str:
        return json.dumps({"key": self.key, "frontend": self.frontend, "status": self.status,
                           "features": self.features, "modules": self.modules,
                           **({} if self.complete else {"complete": False})}, sort_keys=True) + "\n"

    @staticmethod
    def from_json(d: Any, where: str) -> DatasetRow:
        f = Fields(d, where)
        feats, mods = f.d.get("features"), f.d.get("modules")
        if not isinstance(feats, dict) or not isinstance(feats.get("nodes"), list):
            raise RecordError(f"{where}: features: expected {{nodes, edges}}")
        if not isinstance(mods, dict) or not all(isinstance(k, str) and type(v) is int for k, v in mods.items()):
            raise RecordError(f"{where}: modules: expected module -> blocks")
        return DatasetRow(f.str("key"), f.str("frontend"), f.str("status"), feats, dict(mods),
                          f.d.get("complete", True) is not False)

    # -- the one reader and the one writer -------------------------------------------
    @staticmethod
    def read_all(folder: Path) -> Iterator[DatasetRow]:
        """Every whole row (a line cut short by a crash is skipped: its model is collected again)."""
        path = folder / ROWS_FILE
        if not path.exists():
            return
        with path.open() as fh:
            for n, text in enumerate(fh, 1):
                if not text.endswith("\n"):
                    return
                try:
                    yield DatasetRow.from_json(json.loads(text), f"{path}: line {n}")
                except json.JSONDecodeError:
                    continue

    @staticmethod
    def mend(folder: Path) -> None:
        """Cut a line a crash left half-written (before appending: glued to it, the next row
        would be lost too)."""
        path = folder / ROWS_FILE
        if path.exists():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):
                with path.open("r+b") as fh:
                    fh.truncate(data.rfind(b"\n") + 1)

    def append(self, folder: Path) -> None:
        with (folder / ROWS_FILE).open("a") as fh:
            fh.write(self.line())
            fh.flush()


@dataclass(frozen=True)
class PolicyFile:
    file: str  # the ONNX file, in the guide's folder
    blocks: tuple[str, ...]  # the corpus's blocks, in the order of the policy's actions
    ops: tuple[str, ...]  # the corpus's operators, in the order of its observation
    steps: int  # the training steps it took

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "blocks": list(self.blocks), "ops": list(self.ops), "steps": self.steps}


@dataclass(frozen=True)
class LearnedMeta:
    engine: str  # the build the data set was taken on
    features_version: int
    vocab: tuple[str, ...]  # the predictor's operator tokens (search.features.Encoder)
    modules: tuple[str, ...]  # the predictor's outputs, in order
    scale: tuple[float, ...]  # each module's target is log1p(blocks) / scale
    bug_share: dict[str, float]  # each module's share of the known defects (the test value's weights)
    predictor: str = "predictor.onnx"
    policies: dict[str, PolicyFile] = field(default_factory=dict)  # per front end
    quality: dict[str, object] = field(default_factory=dict)  # the predictor on held-out models
    version: int = LEARNED_VERSION

    def to_json(self) -> dict[str, object]:
        return {"version": self.version, "engine": self.engine, "features_version": self.features_version,
                "vocab": list(self.vocab), "modules": list(self.modules), "scale": list(self.scale),
                "bug_share": dict(self.bug_share), "predictor": self.predictor,
                "policies": {k: p.to_json() for k, p in sorted(self.policies.items())}, "quality": self.quality}

    @staticmethod
    def from_json(d: Any, where: str) -> LearnedMeta:
        f = Fields(d, where)
        version = f.int("version", 0, 0)
        if version != LEARNED_VERSION:
            raise RecordError(f"{where}: learned guide version {version}; this gbft reads version {LEARNED_VERSION}")
        pol = f.d.get("policies", {})
        if not isinstance(pol, dict):
            raise RecordError(f"{where}: policies: expected front end -> policy")
        policies = {}
        for fe, p in pol.items():
            pf = Fields(p, f"{where}: policies: {fe}")
            policies[str(fe)] = PolicyFile(pf.str("file"), tuple(str(b) for b in pf.list("blocks")),
                                           tuple(str(o) for o in pf.list("ops")), pf.int("steps", 0, 0))
        def strs(k: str) -> tuple[str, ...]:
            return tuple(str(x) for x in f.list(k))
        scale, share, quality = f.list("scale"), f.d.get("bug_share", {}), f.d.get("quality", {})
        if not all(isinstance(x, (int, float)) for x in scale):
            raise RecordError(f"{where}: scale: expected numbers")
        if not isinstance(share, dict) or not all(isinstance(v, (int, float)) for v in share.values()):
            raise RecordError(f"{where}: bug_share: expected module -> share")
        if not isinstance(quality, dict):
            raise RecordError(f"{where}: quality: expected an object")
        meta = LearnedMeta(f.str("engine"), f.int("features_version", 0, 0), strs("vocab"), strs("modules"),
                           tuple(float(x) for x in scale), {str(k): float(v) for k, v in share.items()},
                           f.str("predictor", "predictor.onnx"), policies, dict(quality), version)
        if len(meta.scale) != len(meta.modules):
            raise RecordError(f"{where}: scale: one per module expected")
        return meta

    # -- the one reader and the one writer -------------------------------------------
    @staticmethod
    def read(folder: Path) -> LearnedMeta:
        path = folder / LEARNED_FILE
        if not path.exists():
            raise RecordError(f"{folder}: no {LEARNED_FILE} (not a learned guide: see gbft learn train)")
        return LearnedMeta.from_json(read_record(path, "learned guide"), str(path))

    def write(self, folder: Path) -> None:
        write_record(folder / LEARNED_FILE, self.to_json())
