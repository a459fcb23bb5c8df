"""The test-case IR: one canonical, JSON-serialisable description of a model.

A test case is a DAG of nodes. Each node applies one operator (``op``) to an
ordered list of input tensors named by graph-input name or node id; each node
produces exactly one tensor whose shape and dtype the solver has computed.
Edges are not stored separately: they are the node input lists, so the two can
never disagree.  ``to_json`` is canonical (sorted keys, fixed separators), so the
same graph always serialises to the same bytes and the same hash.
"""

from __future__ import annotations

from collections.abc import Mapping
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterator

# A node's parameters (its operator's attributes): ints, floats, strings, lists and arrays by
# operator, typed per operator by its spec (ops.specs) and checked where each is emitted.
Params = dict[str, Any]

IR_VERSION = 1
# What the inputs hold: "normal" U[-1, 1] with guards keeping every tensor finite, or
# "special" (NaN, +-Inf, +-0 on purpose, no guards; see reference.inputs).
VALUES = ("normal", "special")

Shape = tuple[int, ...]


@dataclass(frozen=True)
class TensorType:
    shape: Shape
    dtype: str = "float32"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def to_json(self) -> dict[str, object]:
        return {"shape": list(self.shape), "dtype": self.dtype}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> TensorType:
        return TensorType(tuple(int(x) for x in d["shape"]), str(d["dtype"]))


@dataclass
class Node:
    """One operator application.

    ``block`` names the corpus block the node came from (an operator name, or a
    subgraph name with ``#k`` for its k-th inner operator); adapter nodes that
    the shape solver inserted have ``block == ""`` and ``role == "adapter"``.
    """

    id: str
    op: str
    inputs: list[str]
    params: Params
    out: TensorType
    block: str = ""
    role: str = "block"  # "block" | "adapter"
    gnode: int = -1  # index of the random-graph node it realises (-1: adapter)

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "op": self.op,
            "inputs": list(self.inputs),
            "params": self.params,
            "out": self.out.to_json(),
            "block": self.block,
            "role": self.role,
            "gnode": self.gnode,
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Node:
        return Node(
            id=d["id"],
            op=d["op"],
            inputs=list(d["inputs"]),
            params=dict(d["params"]),
            out=TensorType.from_json(d["out"]),
            block=d.get("block", ""),
            role=d.get("role", "block"),
            gnode=int(d.get("gnode", -1)),
        )


@dataclass
class Graph:
    inputs: dict[str, TensorType]
    nodes: list[Node]
    outputs: list[str]
    seed: int = 0  # seeds the weights and the input data of this case
    meta: dict[str, Any] = field(default_factory=dict)
    values: str = "normal"  # one of VALUES: part of the model's meaning, so of its hash

    # -- queries ---------------------------------------------------------
    def node(self, nid: str) -> Node:
        for n in self.nodes:
            if n.id == nid:
                return n
        raise KeyError(nid)

    def tensor_type(self, name: str) -> TensorType:
        if name in self.inputs:
            return self.inputs[name]
        return self.node(name).out

    def edges(self) -> Iterator[tuple[str, str]]:
        for n in self.nodes:
            for src in n.inputs:
                yield (src, n.id)

    def consumers(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {n: [] for n in self.inputs}
        out.update({n.id: [] for n in self.nodes})
        for src, dst in self.edges():
            out[src].append(dst)
        return out

    def block_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "block"]

    def element_types(self) -> set[str]:
        """The element types of the graph's tensors: its inputs' and every node's output."""
        return {t.dtype for t in self.inputs.values()} | {n.out.dtype for n in self.nodes}

    def check(self) -> None:
        """Raise ValueError unless nodes are topologically ordered and closed and ``values`` is known."""
        seen = set(self.inputs)
        for n in self.nodes:
            for src in n.inputs:
                if src not in seen:
                    raise ValueError(f"node {n.id} reads {src} before it is defined")
            if n.id in seen:
                raise ValueError(f"duplicate tensor name {n.id}")
            seen.add(n.id)
        for o in self.outputs:
            if o not in seen:
                raise ValueError(f"output {o} is not a tensor of the graph")
        if self.values not in VALUES:
            raise ValueError(f"values must be one of {', '.join(VALUES)}, got {self.values!r}")

    # -- serialisation -----------------------------------------------------
    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {
            "ir_version": IR_VERSION,
            "seed": self.seed,
            "inputs": {k: v.to_json() for k, v in self.inputs.items()},
            "nodes": [n.to_json() for n in self.nodes],
            "outputs": list(self.outputs),
            "meta": self.meta,
        }
        if self.values != "normal":  # absent when normal: older graphs keep their bytes and hashes
            d["values"] = self.values
        return d

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    def structure_hash(self) -> str:
        """Hash of everything that defines the model (excludes ``meta``)."""
        d = self.to_dict()
        d.pop("meta")
        return hashlib.sha256(canonical_json(d).encode()).hexdigest()[:16]

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Graph:
        if d.get("ir_version") != IR_VERSION:
            raise ValueError(f"unsupported ir_version {d.get('ir_version')!r}")
        g = Graph(
            inputs={k: TensorType.from_json(v) for k, v in d["inputs"].items()},
            nodes=[Node.from_json(n) for n in d["nodes"]],
            outputs=list(d["outputs"]),
            seed=int(d.get("seed", 0)),
            meta=dict(d.get("meta", {})),
            values=str(d.get("values", "normal")),
        )
        g.check()
        return g

    @staticmethod
    def from_json(text: str) -> Graph:
        return Graph.from_dict(json.loads(text))


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
