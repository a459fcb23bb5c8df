"""A model's features for the coverage predictor (issue 38; the patent's step 2).

The patent reads a model as a directed graph with two kinds of features: each node's (its
operator and attributes) and each edge's (the attributes of the node it leaves and the node it
enters).  ``FeatureGraph`` is that graph, built alike from the generator's IR (``of_graph``, any
front end, before the model exists) and from an ONNX file (``of_onnx``: models shipped in
packages, such as ONNX's node tests).  Each node is an operator token (``onnx:Conv``,
``tf:Conv2D``; graph inputs and constants are nodes too), its attributes hashed into a fixed
number of buckets, its output's element type and rank.  Each edge carries the input slot it
feeds: the relation the predictor's graph network keeps apart (data, weights, the rest), plus
the reverse of every edge.  An edge's features are its two ends' (message passing reads both).

``encode`` turns one into the arrays the predictor takes: node features [N, F] and one
[2, E_r] index array per relation.  The vocabulary of operator tokens is the predictor's own
(kept in its file); a token it never saw is ``<other>``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from ..graph.ir import Graph

FEATURES_VERSION = 1
ATTR_BUCKETS = 64
MAX_RANK = 6
DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "uint16", "int32", "int64",
          "bool", "other")
INPUT, CONST, OTHER = "<input>", "<const>", "<other>"
# The relations: the slot an edge feeds (0: data, 1: weights or a second operand, 2: the rest)
# and the reverse of every edge (a node learns what reads it).
RELATIONS = ("in0", "in1", "in2", "rev")


@dataclass(frozen=True)
class FeatureNode:
    op: str  # front end's prefix and operator ("onnx:Conv"), or INPUT / CONST
    dtype: str
    rank: int
    attrs: tuple[int, ...] = ()  # hashed (operator, name, value) buckets

    def to_json(self) -> list[Any]:
        return [self.op, self.dtype, self.rank, list(self.attrs)]

    @staticmethod
    def from_json(d: Any) -> FeatureNode:
        op, dtype, rank, attrs = d
        return FeatureNode(str(op), str(dtype), int(rank), tuple(int(a) for a in attrs))


@dataclass(frozen=True)
class FeatureGraph:
    nodes: tuple[FeatureNode, ...]
    edges: tuple[tuple[int, int, int], ...] = field(default=())  # (producer, consumer, slot)

    def to_json(self) -> dict[str, object]:
        return {"nodes": [n.to_json() for n in self.nodes], "edges": [list(e) for e in self.edges]}

    @staticmethod
    def from_json(d: Any) -> FeatureGraph:
        return FeatureGraph(tuple(FeatureNode.from_json(n) for n in d["nodes"]),
                            tuple((int(a), int(b), int(s)) for a, b, s in d["edges"]))

    @property
    def operators(self) -> set[str]:
        return {n.op for n in self.nodes}


def _dtype(name: str) -> str:
    return name if name in DTYPES else "other"


def attr_buckets(op: str, params: dict[str, object]) -> tuple[int, ...]:
    """Each attribute as a bucket of a stable hash of (operator, name, value): the same
    attribute value of the same operator always lands in the same bucket."""
    return tuple(_bucket(op, name, repr(params[name]), params[name]) for name in sorted(params))


_BUCKETS: dict[tuple[str, str, str], int] = {}


def _bucket(op: str, name: str, key: str, value: Any) -> int:
    """One attribute's bucket, kept by its repr (the fuzz loop asks the same ones over and over;
    equal reprs are equal JSON for the values models hold)."""
    b = _BUCKETS.get((op, name, key))
    if b is None:
        text = f"{op}|{name}|{json.dumps(value, sort_keys=True, default=str)}"
        b = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "little") % ATTR_BUCKETS
        if len(_BUCKETS) < 200_000:
            _BUCKETS[op, name, key] = b
    return b


def of_graph(g: Graph, frontend: str) -> FeatureGraph:
    """The generator's model as features (before any framework writes it)."""
    index: dict[str, int] = {}
    nodes: list[FeatureNode] = []
    for name, t in g.inputs.items():
        index[name] = len(nodes)
        nodes.append(FeatureNode(INPUT, _dtype(t.dtype), min(t.rank, MAX_RANK)))
    edges: list[tuple[int, int, int]] = []
    for n in g.nodes:
        op = f"{frontend}:{n.op}"
        index[n.id] = len(nodes)
        nodes.append(FeatureNode(op, _dtype(n.out.dtype), min(n.out.rank, MAX_RANK), attr_buckets(op, n.params)))
        edges.extend((index[src], index[n.id], min(slot, 2)) for slot, src in enumerate(n.inputs) if src in index)
    return FeatureGraph(tuple(nodes), tuple(edges))


_ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
                10: "float16", 11: "float64", 16: "bfloat16"}


def of_onnx(model: Any) -> FeatureGraph:
    """An ONNX ModelProto as features: its inputs, initializers and nodes (a subgraph's nodes
    count as the node that holds them: its attributes say they are there)."""
    import onnx

    gp = model.graph
    types: dict[str, tuple[str, int]] = {}
    for vi in [*gp.input, *gp.value_info, *gp.output]:
        tt = vi.type.tensor_type
        types[vi.name] = (_ONNX_DTYPES.get(tt.elem_type, "other"), len(tt.shape.dim) if tt.HasField("shape") else 0)
    index: dict[str, int] = {}
    nodes: list[FeatureNode] = []
    for t in gp.initializer:
        index[t.name] = len(nodes)
        nodes.append(FeatureNode(CONST, _ONNX_DTYPES.get(t.data_type, "other"), min(len(t.dims), MAX_RANK)))
    for vi in gp.input:
        if vi.name not in index:
            index[vi.name] = len(nodes)
            dt, rank = types[vi.name]
            nodes.append(FeatureNode(INPUT, dt, min(rank, MAX_RANK)))
    edges: list[tuple[int, int, int]] = []
    for node in gp.node:
        op = f"onnx:{node.op_type}"
        params = {a.name: _attr_value(onnx.helper.get_attribute_value(a)) for a in node.attribute}
        dt, rank = types.get(node.output[0], ("other", 0)) if node.output else ("other", 0)
        me = len(nodes)
        nodes.append(FeatureNode(op, dt, min(rank, MAX_RANK), attr_buckets(op, params)))
        edges.extend((index[src], me, min(slot, 2)) for slot, src in enumerate(node.input) if src in index)
        for out in node.output:
            index[out] = me
    return FeatureGraph(tuple(nodes), tuple(edges))


def _attr_value(v: Any) -> Any:
    """An attribute's value as something JSON writes alike every time (a subgraph or a tensor
    by its size: its bytes are not what the engine's code paths depend on)."""
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    if isinstance(v, (list, tuple)):
        return [_attr_value(x) for x in v]
    if isinstance(v, (int, float, str)):
        return v
    return type(v).__name__


@dataclass(frozen=True)
class Encoder:
    """A FeatureGraph as the predictor's arrays, by a fixed vocabulary of operator tokens."""

    vocab: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_at", {op: i for i, op in enumerate(self.vocab)})

    @staticmethod
    def of(graphs: Iterable[FeatureGraph], min_count: int = 1) -> Encoder:
        ops = sorted(op for op, c in op_counts(list(graphs)).items() if c >= min_count and op != OTHER)
        return Encoder((OTHER, *ops))

    @property
    def width(self) -> int:
        return len(self.vocab) + len(DTYPES) + MAX_RANK + 1 + ATTR_BUCKETS

    def nodes(self, g: FeatureGraph) -> np.ndarray:
        at: dict[str, int] = self._at  # type: ignore[attr-defined]
        v, d, r = len(self.vocab), len(DTYPES), MAX_RANK + 1
        x = np.zeros((max(1, len(g.nodes)), self.width), np.float32)
        for i, n in enumerate(g.nodes):
            x[i, at.get(n.op, 0)] = 1.0
            x[i, v + DTYPES.index(n.dtype if n.dtype in DTYPES else "other")] = 1.0
            x[i, v + d + min(n.rank, MAX_RANK)] = 1.0
            for a in n.attrs:
                x[i, v + d + r + a] += 1.0
        return x

    def relations(self, g: FeatureGraph) -> list[np.ndarray]:
        """One [2, E] int64 array per relation of RELATIONS (source row, target row)."""
        out: list[list[tuple[int, int]]] = [[] for _ in RELATIONS]
        for a, b, slot in g.edges:
            out[slot].append((a, b))
            out[RELATIONS.index("rev")].append((b, a))
        return [np.array(e, np.int64).reshape(-1, 2).T.copy() for e in out]


def op_counts(graphs: Sequence[FeatureGraph]) -> dict[str, int]:
    """How many of ``graphs`` hold each operator token."""
    counts: dict[str, int] = {}
    for g in graphs:
        for op in g.operators:
            counts[op] = counts.get(op, 0) + 1
    return counts
