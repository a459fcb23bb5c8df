"""Operator-level coverage (GBFT paper III-B) and Isra's graph-level metrics.

``Coverage`` keeps, per operator type of the block corpus, the sets of things
the test set has exercised so far; every metric is a ratio computed from them:

  OTC_op  1 if the operator occurs at all
  IDC_op  distinct in-degrees seen (within the corpus' allowed set) / |allowed|
  ODC_op  distinct out-degrees seen (within the allowed set) / |allowed|
  SEC_op  distinct successor operator types X on edges op -> X / n_t
  DEC_op  distinct (X, Y) with op -> X -> Y (Isra's "double edge") / n_t^2
  SPC_op  min(1, distinct shape & parameter vectors / n_maxspc)
  ATC_op  distinct attribute values seen / the values its choice parameters may take (each
          enum and boolean value, each recorded instance of an operator known from ONNX's
          test cases; 1 once seen for an operator with none), issue 26
  OLC_op  weighted mean of the per-operator metrics above

A test-set metric is the sum of the per-operator metric over all n_t operator
types divided by n_t; the test-set OLC is the weighted mean of the test-set
metrics.  DEC and ATC have weight 0 by default, so OLC is the paper's five-metric mean
unless the caller asks for them; a new ATC item still rewards the MCTS path that found it,
like any new item.

Which nodes count: every IR node whose ``op`` is a corpus operator type,
adapters included (they run in the engine like any other operator).  The
in-degree of a node is ``len(node.inputs)`` (graph inputs are data flows too);
its out-degree is the number of data flows reading its tensor (a node that
reads it twice counts twice, mirroring the in-degree), 0 for a pure output.
"""

from __future__ import annotations

from collections.abc import Mapping
import hashlib
import json
from collections import Counter
from typing import Any, Collection, Iterable, Iterator

from ..corpus import Corpus
from ..ops.domains import Choice
from ..ops.onnx_exported import EXPORTED_FORMS, WRITERS
from ..graph.ir import Graph, Node, canonical_json

COVERAGE_VERSION = 2  # 2: ATC (a version-1 file reads with no attribute values allowed)

# The per-operator sets; OTC's set holds the single item 1 once the op is seen.
KINDS = ("OTC", "IDC", "ODC", "SEC", "DEC", "SPC", "ATC")
METRICS = (*KINDS, "OLC")
DEFAULT_WEIGHTS: dict[str, float] = {"OTC": 1.0, "IDC": 1.0, "ODC": 1.0, "SEC": 1.0, "SPC": 1.0, "DEC": 0.0,
                                     "ATC": 0.0}
# Out-degree range the paper's generator uses (IV-B) for operators with no own block.
DEFAULT_OUT = frozenset(range(6))

Item = tuple[str, str, Any]  # (kind, operator type, item)


class Coverage:
    """Incrementally updatable operator-level coverage of a test set."""

    def __init__(self, op_types: list[str], allowed_in: dict[str, set[int]],
                 allowed_out: dict[str, set[int]], n_maxspc: int = 200,
                 weights: dict[str, float] | None = None, allowed_attr: dict[str, set[str]] | None = None) -> None:
        if not op_types:
            raise ValueError("coverage needs at least one operator type")
        if n_maxspc < 1:
            raise ValueError(f"n_maxspc must be positive, got {n_maxspc}")
        self.op_types = sorted(set(op_types))
        self.allowed_in = {op: frozenset(allowed_in.get(op, ())) for op in self.op_types}
        self.allowed_out = {op: frozenset(allowed_out.get(op, ())) for op in self.op_types}
        self.allowed_attr = {op: frozenset((allowed_attr or {}).get(op, ())) for op in self.op_types}
        self.n_maxspc = n_maxspc
        self.weights = _check_weights(weights)
        self._ops = frozenset(self.op_types)
        self._seen: dict[str, dict[str, set[Any]]] = {
            k: {op: set() for op in self.op_types} for k in KINDS}
        # OLC per operator, until its sets grow (MCTS asks it of every operator at every step).
        self._olc_of: dict[str, float] = {}
        # The framework's operators the models held, adapters and a pattern's inner ones
        # included (issue 26: "distinct default-domain operators in its models"); no metric.
        self.operators: set[str] = set()
        # The element types of the tensors they held (issue 26: "at least 5 element types").
        self.element_types: set[str] = set()

    @classmethod
    def from_corpus(cls, corpus: Corpus, n_maxspc: int | None = None,
                    weights: dict[str, float] | None = None) -> Coverage:
        allowed_in, allowed_out = corpus_degrees(corpus)
        return cls(corpus.op_types, allowed_in, allowed_out,
                   corpus.n_maxspc if n_maxspc is None else n_maxspc, weights, corpus_attributes(corpus))

    @property
    def n_t(self) -> int:
        return len(self.op_types)

    # -- updating ------------------------------------------------------------
    def gain(self, graph: Graph) -> int:
        """How many new coverage items ``graph`` would bring (no mutation)."""
        return len(self._new_items(graph))

    def seen(self, kind: str, op: str, item: Any) -> bool:
        """Whether the test set has already exercised ``item`` of ``kind`` for ``op``."""
        return op not in self._ops or item in self._seen[kind][op]

    def size(self, kind: str, op: str) -> int:
        """How many distinct items of ``kind`` ``op`` has so far."""
        return len(self._seen[kind][op]) if op in self._ops else 0

    def would_add(self, graph: Graph) -> bool:
        return self.gain(graph) > 0

    def add(self, graph: Graph) -> bool:
        """Record ``graph``; True when it brought any new coverage item."""
        return self.add_items(self._new_items(graph))

    def add_items(self, new: set[Item]) -> bool:
        """Record items ``new_items`` gave (for a graph, before any other update); True when any."""
        for kind, op, item in new:
            self._seen[kind][op].add(item)
            self._olc_of.pop(op, None)
        return bool(new)

    def new_items(self, graph: Graph) -> set[Item]:
        """The coverage items ``graph`` would add (no mutation)."""
        return self._new_items(graph)

    def _new_items(self, graph: Graph) -> set[Item]:
        return {it for it in graph_items(graph, self._ops)
                if self._counts(it) and it[2] not in self._seen[it[0]][it[1]]}

    def _counts(self, it: Item) -> bool:
        # Degrees the corpus does not allow are not coverage of the corpus.
        kind, op, item = it
        if kind == "IDC":
            return item in self.allowed_in[op]
        if kind == "ODC":
            return item in self.allowed_out[op]
        if kind == "SPC":  # past n_maxspc a new vector no longer raises SPC
            return len(self._seen["SPC"][op]) < self.n_maxspc
        if kind == "ATC":
            return item in self.allowed_attr[op]
        return True

    # -- metrics -------------------------------------------------------------
    def per_op(self) -> dict[str, dict[str, float]]:
        return {op: self._op_metrics(op) for op in self.op_types}

    def olc(self, op: str) -> float:
        """One operator's OLC (``per_op()[op]["OLC"]``, without the others')."""
        v = self._olc_of.get(op)
        if v is None:
            v = self._olc_of[op] = self._op_metrics(op)["OLC"]
        return v

    def _op_metrics(self, op: str) -> dict[str, float]:
        s = {k: len(self._seen[k][op]) for k in KINDS}
        m = {
            "OTC": float(s["OTC"] > 0),
            "IDC": _ratio(s["IDC"], len(self.allowed_in[op])),
            "ODC": _ratio(s["ODC"], len(self.allowed_out[op])),
            "SEC": s["SEC"] / self.n_t,
            "DEC": s["DEC"] / self.n_t ** 2,
            "SPC": min(1.0, s["SPC"] / self.n_maxspc),
            "ATC": _ratio(s["ATC"], len(self.allowed_attr[op])) if self.allowed_attr[op] else float(s["OTC"] > 0),
        }
        m["OLC"] = self._olc(m)
        return m

    def metrics(self) -> dict[str, float]:
        """Test-set metrics: each per-operator metric summed over ops / n_t."""
        per = self.per_op()
        m = {k: sum(per[op][k] for op in self.op_types) / self.n_t for k in KINDS}
        m["OLC"] = self._olc(m)
        return m

    def _olc(self, m: dict[str, float]) -> float:
        total = sum(self.weights.values())
        return sum(w * m[k] for k, w in self.weights.items()) / total

    def counts(self) -> dict[str, dict[str, int]]:
        """Raw sizes of the per-operator sets (for reports and debugging)."""
        return {op: {k: len(self._seen[k][op]) for k in KINDS} for op in self.op_types}

    # -- persistence -----------------------------------------------------------
    def union(self, other: Coverage) -> Coverage:
        """This coverage and ``other``'s together (shards merged): every item either has seen."""
        if (self.op_types, self.n_maxspc) != (other.op_types, other.n_maxspc):
            raise ValueError("coverage of another corpus or n_maxspc: cannot be merged")
        out = Coverage.from_json(self.to_json())
        for kind, by_op in other._seen.items():
            for op, items in by_op.items():
                out._seen[kind][op].update(items)
        out._olc_of.clear()
        out.operators |= other.operators
        out.element_types |= other.element_types
        return out

    def to_json(self) -> dict[str, object]:
        """A JSON-serialisable dict of configuration and state (sorted, stable)."""
        return {
            "version": COVERAGE_VERSION,
            "op_types": list(self.op_types),
            "allowed_in": {op: sorted(s) for op, s in self.allowed_in.items()},
            "allowed_out": {op: sorted(s) for op, s in self.allowed_out.items()},
            "allowed_attr": {op: sorted(s) for op, s in self.allowed_attr.items() if s},
            "n_maxspc": self.n_maxspc,
            "weights": dict(self.weights),
            "seen": {k: {op: sorted(_to_json_item(x) for x in items)
                         for op, items in by_op.items() if items}
                     for k, by_op in self._seen.items()},
            "operators": sorted(self.operators),
            "element_types": sorted(self.element_types),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> Coverage:
        d = json.loads(data) if isinstance(data, str) else data
        if d.get("version") not in (1, COVERAGE_VERSION):
            raise ValueError(f"unsupported coverage version {d.get('version')!r}")
        cov = cls(d["op_types"], {k: set(v) for k, v in d["allowed_in"].items()},
                  {k: set(v) for k, v in d["allowed_out"].items()}, int(d["n_maxspc"]),
                  {**DEFAULT_WEIGHTS, **d["weights"]}, {k: set(v) for k, v in d.get("allowed_attr", {}).items()})
        for kind, by_op in d["seen"].items():
            for op, items in by_op.items():
                cov._seen[kind][op].update(_from_json_item(x) for x in items)
        cov.operators = set(d.get("operators", ()))
        cov.element_types = set(d.get("element_types", ()))
        return cov

    def summary(self) -> dict[str, object]:
        """What a summary shows: the metrics, the operators and element types the models held,
        and the exported forms (ops.onnx_exported) among the blocks they reached."""
        forms = sorted(op for op in self.op_types if op in EXPORTED_FORMS and self._seen["OTC"][op])
        # a form another writer wrote too (ONNX Runtime's quantiser: QDQPattern) is a form of its own
        forms += [f"{op} ({w})" for op in forms for w in WRITERS if attr_item("quantiser", w) in self._seen["ATC"][op]]
        return {**self.metrics(), "operators": sorted(self.operators), "element_types": sorted(self.element_types),
                **({"forms": forms} if forms else {})}


# --------------------------------------------------------------------------- helpers


def _check_weights(weights: dict[str, float] | None) -> dict[str, float]:
    w = {**DEFAULT_WEIGHTS, **(weights or {})}
    unknown = sorted(set(w) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown coverage weights {unknown} (known: {', '.join(KINDS)})")
    if any(v < 0 for v in w.values()) or sum(w.values()) <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {w}")
    return {k: float(w[k]) for k in KINDS}


def _ratio(n: int, d: int) -> float:
    return n / d if d else 0.0


def _to_json_item(x: Any) -> Any:
    return list(x) if isinstance(x, tuple) else x


def _from_json_item(x: Any) -> Any:
    return tuple(x) if isinstance(x, list) else x


def corpus_degrees(corpus: Corpus) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    """Allowed in/out-degree sets per operator type of ``corpus``.

    An operator's own (single-operator) blocks define them.  An operator that
    only occurs inside subgraphs has no such declaration: it gets the in-degrees
    it has inside those subgraphs (1 for an entry, else its inner predecessors,
    so the Add of Add(Mul, Mul) gets 2 and can be covered) and out-degrees 0..5.
    """
    ins: dict[str, set[int]] = {}
    outs: dict[str, set[int]] = {}
    for b in corpus.blocks:
        if not b.is_subgraph:
            ins.setdefault(b.ops[0], set()).update(b.in_degree)
            outs.setdefault(b.ops[0], set()).update(b.out_degree)
    inner_in: dict[str, set[int]] = {}
    for b in corpus.blocks:
        if b.is_subgraph:
            for i, op in enumerate(b.ops):
                inner_in.setdefault(op, set()).add(len(b.inner_preds(i)) or 1)
    for op in corpus.op_types:
        if op not in ins:
            ins[op] = inner_in.get(op, {1})
            outs[op] = set(DEFAULT_OUT)
    return ins, outs


def attr_item(k: str, v: Any) -> str | None:
    """An attribute value as an ATC item ("mode=edge", "instance=3"); None for a value that is
    not one (a list, a float drawn from a range)."""
    if isinstance(v, (str, bool)) or (isinstance(v, int) and not isinstance(v, bool)):
        return f"{k}={json.dumps(v)}"
    return None


def corpus_attributes(corpus: Corpus) -> dict[str, set[str]]:
    """Per operator type of ``corpus``, every value of its choice parameters (as narrowed by its
    blocks, or its spec's domain): ATC's denominator."""
    out: dict[str, set[str]] = {op: set() for op in corpus.op_types}
    for b in corpus.blocks:
        for op, narrowed in zip(b.ops, b.params):
            doms = {**corpus.specs[op].domains, **narrowed}
            out[op].update(x for k, d in doms.items() if isinstance(d, Choice)
                           for v in d.values if (x := attr_item(k, v)) is not None)
    return out


def spc_vector(graph: Graph, node: Node) -> str:
    """Canonical JSON of a node's input shapes, output shape and parameters."""
    return canonical_json({
        "in": [list(graph.tensor_type(i).shape) for i in node.inputs],
        "out": list(node.out.shape),
        "params": node.params,
    })


def _digest(text: str) -> str:
    # 64 bits keep the saved state small; a collision among a campaign's vectors is negligible.
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _consumers(graph: Graph) -> dict[str, list[Node]]:
    """Consumer nodes per node id, one entry per data flow."""
    cons: dict[str, list[Node]] = {n.id: [] for n in graph.nodes}
    for n in graph.nodes:
        for src in n.inputs:
            if src in cons:
                cons[src].append(n)
    return cons


def _block_consumers(graph: Graph) -> dict[str, list[Node]]:
    """Per node id, the block nodes its tensor reaches through adapter chains.

    The solver's Cast/Reshape/Slice/Pad adapters realise one data flow of the
    digraph G; they are not vertices of G, so edges (SEC, DEC) see through them.
    """
    direct = _consumers(graph)
    memo: dict[str, list[Node]] = {}

    def reach(nid: str) -> list[Node]:
        if nid not in memo:
            out: list[Node] = []
            for c in direct.get(nid, []):
                out.extend([c] if c.role == "block" else reach(c.id))
            memo[nid] = out
        return memo[nid]

    return {n.id: reach(n.id) for n in graph.nodes}


def graph_items(graph: Graph, ops: Collection[str]) -> Iterator[Item]:
    """Every coverage item ``graph`` exercises for operator types in ``ops``.

    Only block nodes (vertices of the generated digraph) count; adapter nodes
    inserted by the shapes-and-parameters calculator are part of an edge.
    """
    cons = _block_consumers(graph)
    uses = Counter(src for n in graph.nodes for src in n.inputs)
    blocks = [n for n in graph.nodes if n.role == "block" and n.op in ops]
    for n in blocks:
        yield ("OTC", n.op, 1)
        yield ("IDC", n.op, len(n.inputs))
        yield ("ODC", n.op, uses[n.id])
        yield ("SPC", n.op, _digest(spc_vector(graph, n)))
        yield from (("ATC", n.op, x) for k, v in sorted(n.params.items()) if (x := attr_item(k, v)) is not None)
        succ = [c for c in cons[n.id] if c.op in ops]
        for c in succ:
            yield ("SEC", n.op, c.op)
            # DEC: n -> c -> d, credited to the first operator n.
            yield from (("DEC", n.op, (c.op, d.op)) for d in cons[c.id] if d.op in ops)


# --------------------------------------------------------------------------- graph level


def graph_level(graph: Graph, op_types: Collection[str] | None = None) -> dict[str, int]:
    """Isra's graph-level metrics (IV-C1) of one graph.

    NOO  Number of Operations: the operator nodes of the graph.
    NOT  Number of Operation Types: distinct ``op`` among them.
    NOP  Number of Operation Pairs: distinct edges connecting two operations,
         taken as distinct (producer type, consumer type) pairs; edges from a
         graph input do not connect two operations.  ("Different edges" is read
         at type level, as SEC is its test-set counterpart, and Isra's Table I
         has Muffin's connected 10.4-op models at NOP 6.4 < NOO - 1.)
    NTR  Number of Operation Triples: distinct pairs of adjacent edges
         a -> b -> c, as distinct (type a, type b, type c) triples (DEC's
         per-graph counterpart).
    NSA  Number of Shapes and Attributes: distinct (operator type, input
         shapes, attributes) vectors, the in-degree excluded as Isra says (it is
         implied by the number of input shapes anyway); SAC/SPC's per-graph
         counterpart, summed over the operator types of the graph.

    ``op_types`` restricts every count to those operator types (default: all).
    """
    nodes = [n for n in graph.nodes if op_types is None or n.op in op_types]
    keep = {n.id for n in nodes}
    by_id = {n.id: n for n in nodes}
    cons = {k: [c for c in v if c.id in keep] for k, v in _consumers(graph).items() if k in keep}
    pairs = {(by_id[s].op, n.op) for n in nodes for s in n.inputs if s in keep}
    triples = {(by_id[s].op, n.op, c.op) for n in nodes for s in n.inputs if s in keep for c in cons[n.id]}
    nsa = {canonical_json([n.op, [list(graph.tensor_type(i).shape) for i in n.inputs], n.params])
           for n in nodes}
    return {"NOO": len(nodes), "NOT": len({n.op for n in nodes}), "NOP": len(pairs),
            "NTR": len(triples), "NSA": len(nsa)}


GRAPH_METRICS = ("NOO", "NOT", "NOP", "NTR", "NSA")


def graph_metrics(graphs: Iterable[Graph], op_types: Collection[str] | None = None) -> dict[str, float]:
    """Isra's test-set graph-level metrics: each per-graph metric averaged over graphs.

    An empty test set gives 0 for every metric.
    """
    total = dict.fromkeys(GRAPH_METRICS, 0)
    n = 0
    for g in graphs:
        for k, v in graph_level(g, op_types).items():
            total[k] += v
        n += 1
    return {k: (v / n if n else 0.0) for k, v in total.items()}
