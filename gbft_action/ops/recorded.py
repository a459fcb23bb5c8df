"""Recorded operators: ONNX operators placed from instances ONNX's own test cases give (issue 26).

``ops/data/onnx_records*.json`` (written offline by ``gbft onnx-records``,
``reference.onnx_records``; one file per opset, see ``records_file``) holds, per
default-domain operator, its schema at that opset and
the instances the validity oracle took: attributes, one input a generated tensor feeds (its
element type and shape), the other inputs as constants, and the output types; or a pattern
(``reference.onnx_patterns``: a small graph for an operator no single node can place, a
sequence or a loop), inlined whole.  NeuRI's
hybrid: an instance is inserted as it is where the solver can coerce a tensor to its fed
input (Cast / Reshape / Slice / Pad adapters), so an operator nobody wrote a spec for is
placed without backtracking.  Hand-written specs (``ops.onnx_specs``) stay where they exist:
they draw shapes and attributes, instances only replay them.

A node's parameters are ``{"instance": i}``, an index into the package's file: a bundle (a pull
request's artifact) can pick an instance, never write an attribute or a constant.

Framework-free (JSON only).
"""

from __future__ import annotations

from collections.abc import Mapping
import json
import random
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from collections.abc import Iterable
from typing import Any

from ..frontends import LEGACY_OPSET, NEWEST_OPSET, check_opset
from ..graph.ir import Params, TensorType
from .domains import Choice
from .specs import Spec

RECORDS_VERSION = 1
DATA = Path(str(files("gbft_action") / "ops" / "data"))
RECORDS_FILE = DATA / "onnx_records.json"  # opset 17's, named as before there were others
# Element types a fed input may take (the generator casts to them) and outputs may have.
# float16 last (a test case's other types come first within MAX_PER_OP): the reference may
# compute it in half precision where the engine computes in float32, so a case holding a
# float16 tensor is compared with float16's bounds (oracle.bounds_for), not float32's.
TYPES = ("float32", "int64", "int32", "bool", "uint8", "int8", "float16")
MAX_CONST_ELEMS = 1024  # constants an instance may carry (the file stays readable)


class RecordsError(ValueError):
    """The records file is missing, of another version, or malformed (names the file)."""


@dataclass(frozen=True)
class Instance:
    """One valid single-node instance: attributes, inputs (None: absent; a dict with a
    "value" for a constant, without one for the fed input) and output types."""

    attrs: dict[str, object]
    inputs: tuple[dict[str, Any] | None, ...]
    fed: int
    outputs: tuple[TensorType, ...]
    outputs_named: int
    case: str = ""  # the ONNX node test case it comes from (onnx/backend/test/case/node)
    # The shape relation inferred by running (reference.onnx_records.shape_rule): "same" when the
    # output has the fed input's shape whatever its dimensions (the constants pin none): placed
    # on any tensor of its rank, with no adapter to reshape it.  "": only at the recorded shape.
    rule: str = ""
    mutation: str = ""  # NeuRI's mutation of a recorded instance that made it ("axis=-1")
    # A pattern (reference.onnx_patterns): the graph, in ONNX's text syntax, that the emitter
    # inlines in place of one node, and every operator it holds (coverage counts them all).
    body: str = ""
    ops: tuple[str, ...] = ()

    @property
    def fed_type(self) -> TensorType:
        t = self.inputs[self.fed]
        assert t is not None
        return TensorType(tuple(t["shape"]), t["dtype"])

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Instance:
        outs = tuple(TensorType(tuple(o["shape"]), o["dtype"]) for o in d["outputs"])
        return Instance(dict(d["attrs"]), tuple(d["inputs"]), int(d["fed"]), outs, int(d["outputs_named"]),
                        str(d.get("case", "")), str(d.get("rule", "")), str(d.get("mutation", "")),
                        str(d.get("body", "")), tuple(str(o) for o in d.get("ops", ())))

    def operators(self, op: str) -> tuple[str, ...]:
        """The ONNX operators the instance puts in a model (``op`` itself for a single node)."""
        return self.ops or (op,)

    def takes(self, t: TensorType) -> bool:
        """Whether tensor ``t``'s shape can feed it as it is (its rule is "same", the rank its)."""
        return self.rule == "same" and len(t.shape) == len(self.fed_type.shape)

    def describe(self) -> str:
        """What sets the instance apart, for a root-cause title: its scalar attributes and a
        fed type other than float32, else the test case it comes from."""
        parts = self.features()
        text = ", ".join(parts)
        return text if parts and len(text) <= 60 else f"as {self.case}" if self.case else text[:60]

    def features(self) -> tuple[str, ...]:
        """Its scalar attributes ("axis=1") and a fed type other than float32 ("int32 input")."""
        parts = [f"{k}={v}" for k, v in sorted(self.attrs.items()) if isinstance(v, (int, float, str))]
        return (*parts, *([f"{self.fed_type.dtype} input"] if self.fed_type.dtype != "float32" else []))

    def fed_like(self, other: Instance) -> bool:
        """Whether ``other`` takes what this one is fed (the same fed type, or both follow any
        shape of one rank): one can stand in for the other in a model."""
        a, b = self.fed_type, other.fed_type
        return a.dtype == b.dtype and (a.shape == b.shape or (self.rule == other.rule == "same"
                                                              and len(a.shape) == len(b.shape)))


class RecordedSpec(Spec):
    """An operator known only from its instances: it takes one tensor, coerced to the chosen
    instance's fed input, and gives that instance's first output."""

    def __init__(self, name: str, instances: tuple[Instance, ...], attr_types: dict[str, str]) -> None:
        super().__init__(name, name, frozenset({1}), (1, 6), False, {"instance": Choice(tuple(range(len(instances))))})
        self.instances = instances
        self.attr_types = attr_types  # the schema's type of each attribute ("ints", "tensor"...)

    def want(self, rng: random.Random, ins: list[TensorType]) -> list[TensorType]:
        return list(ins)  # the instance, drawn next, says what it wants (align)

    def align(self, ins: list[TensorType], p: Params) -> list[TensorType]:
        inst = self.instances[p["instance"]]
        if ins and inst.takes(ins[0]):  # any shape of its rank: only the element type is coerced
            return [TensorType(ins[0].shape, inst.fed_type.dtype)]
        return [inst.fed_type]

    def neighbours(self, k: int, limit: int) -> list[int]:
        """Up to ``limit`` other instances that can stand in for instance ``k`` (Instance.fed_like),
        those differing from it in the fewest features first: which of them share its defect
        tells what the defect needs (rerun.diagnose.failing_values)."""
        own = self.instances[k]
        near = [(len(set(own.features()) ^ set(x.features())), i) for i, x in enumerate(self.instances)
                if i != k and own.fed_like(x)]
        return [i for _, i in sorted(near)[:limit]]

    def distinguishing(self, failing: list[int], right: list[int]) -> str:
        """What the ``failing`` instances share and no ``right`` one has: the fewest of their
        common features that no right instance holds all of ("select_last_index=1" for an
        ArgMin that fails with it at every axis).  The first failing one's description when
        their common features do not set them apart."""
        feats = [set(self.instances[i].features()) for i in failing]
        rights = [set(self.instances[i].features()) for i in right]
        common = [f for f in self.instances[failing[0]].features() if all(f in x for x in feats)]
        def apart(fs: list[str]) -> bool:
            return not any(set(fs) <= r for r in rights)
        if not common or not apart(common):
            return self.instances[failing[0]].describe()
        keep = list(common)
        for f in common:  # drop each feature the rest still set apart without
            fewer = [x for x in keep if x != f]
            if fewer and apart(fewer):
                keep = fewer
        return ", ".join(keep)

    def infer(self, ins: list[TensorType], p: Params) -> TensorType:
        inst = self.instances[p["instance"]]
        if ins and inst.takes(ins[0]):
            return TensorType(ins[0].shape, inst.outputs[0].dtype)
        return inst.outputs[0]


def records_file(opset: int) -> Path:
    """The records of ``opset``: the package's file of that opset (17's and the newest's ship)."""
    return RECORDS_FILE if opset == LEGACY_OPSET else DATA / f"onnx_records_{opset}.json"


def recorded_specs(path: Path = RECORDS_FILE, skip: frozenset[str] = frozenset()) -> dict[str, RecordedSpec]:
    """A spec per operator of the records file with at least one instance, but those in ``skip``
    (the hand-written ones).  RecordsError names the file when it cannot be used."""
    return {k: v for k, v in _load(str(path)).items() if k not in skip}


def specs_at(opset: int, skip: frozenset[str] = frozenset()) -> dict[str, RecordedSpec]:
    """The recorded specs at ``opset`` (one of OPSETS).  An opset with no file of its own takes
    the newest's operators whose schema there is already in force at ``opset`` (the schema at
    an opset is the newest version at or below it, so theirs is the same): a subset, with the
    newest file's instance indices.  ``gbft onnx-records --opset N`` writes N's own file."""
    try:
        check_opset(opset)
    except ValueError as e:
        raise RecordsError(str(e)) from None
    own = records_file(opset)
    if own.exists():
        return recorded_specs(own, skip)
    in_force = schemas(opset)
    return {k: v for k, v in recorded_specs(records_file(NEWEST_OPSET), skip).items() if k in in_force}


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, RecordedSpec]:
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise RecordsError(f"{path}: cannot read the operator records ({e})") from None
    if not isinstance(raw, dict) or raw.get("version") != RECORDS_VERSION:
        raise RecordsError(f"{path}: records version {raw.get('version') if isinstance(raw, dict) else '?'}, "
                           f"this gbft reads {RECORDS_VERSION} (run gbft onnx-records)")
    try:
        return {op: RecordedSpec(op, tuple(Instance.from_json(i) for i in rec["instances"]),
                                 {k: str(a["type"]) for k, a in rec["schema"]["attributes"].items()})
                for op, rec in sorted(raw["ops"].items()) if rec["instances"]}
    except (KeyError, TypeError, ValueError) as e:
        raise RecordsError(f"{path}: malformed operator record ({type(e).__name__}: {e})") from None


def schemas(opset: int = LEGACY_OPSET) -> dict[str, dict[str, object]]:
    """Every operator's schema summary at ``opset``, instances or not (the support matrix lists
    them all): that opset's file, else the newest's schemas already in force at ``opset``."""
    own = records_file(opset)
    if own.exists():
        return _schemas(str(own))
    return {op: s for op, s in _schemas(str(records_file(NEWEST_OPSET))).items() if int(s.get("since", 0)) <= opset}


@lru_cache(maxsize=2)
def _schemas(path: str) -> dict[str, dict[str, Any]]:
    raw = json.loads(Path(path).read_text())
    return {op: rec["schema"] for op, rec in raw["ops"].items()}


def by_opset(operators: set[str] | list[str], opset: int = LEGACY_OPSET) -> dict[str, int]:
    """How many of ``operators`` (ONNX operator types) are at each operator-set version: the
    version of the schema the generator writes them at, at ``opset`` ("13": ReduceMean-13 at
    opset 17...); names of no default-domain operator (another framework's) are not counted."""
    return counted_versions(versions_at(operators, opset).values())


def versions_at(operators: set[str] | list[str], opset: int) -> dict[str, str]:
    """Each of ``operators`` that is a default-domain operator at ``opset``: the version of its
    schema there ("13" for ReduceMean at opset 17, "18" at 27)."""
    known = schemas(opset)
    return {op: str(known[op].get("since", "?")) for op in operators if op in known}


def counted_versions(versions: Iterable[str]) -> dict[str, int]:
    """How many of ``versions`` are each version, in version order."""
    out: dict[str, int] = {}
    for v in versions:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0))
