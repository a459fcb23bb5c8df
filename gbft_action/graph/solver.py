"""Shapes-and-parameters calculator (paper III-G): valid by construction.

``Builder.add_op`` places one operator: it asks the spec what inputs it wants,
reconciles the offered tensors with Cast / Reshape / Slice / Pad adapters (the
paper's aggregation rule, applied to every operator), draws and repairs the
parameters against the actual shapes (padding solved by eqs. (9)-(13) in the
conv spec), and records the inferred output type.  No backtracking is needed.

It also tracks each tensor's value interval (``ops.ranges``) and, in a "normal"
graph, guards the operator: Tanh / Sigmoid adapters keep inputs in the
operator's domain and outputs far from overflow, so the reference computes no
NaN or Inf by accident.  A "special" graph gets no guards: its inputs carry
special values on purpose.
"""

from __future__ import annotations

import json
import random
from typing import Callable

from ..ops import ranges
from ..ops.domains import Domain
from ..ops.shapes import MAX_ELEMS, prod
from ..ops.registry import TF, Registry
from ..ops.specs import F32, FLOATS
from .ir import Graph, Node, TensorType

TIES_SCALE = 4.0  # a hinge Floor's scale: Floor(x * 4) / 4 (ops.onnx_specs.HINGES)

# An operator's parameter domains, narrowed for one node (rng: the generator's own stream).
Narrow = Callable[[str, dict[str, Domain], random.Random], dict[str, Domain]]


class GenError(RuntimeError):
    """The generator built something it should not have (a solver bug)."""


class Builder:
    def __init__(self, rng: random.Random, seed: int, values: str = "normal", reg: Registry = TF,
                 narrow: Narrow | None = None, hinges: bool = True) -> None:
        self.rng = rng
        self.hinges = hinges  # False: no hinge adapter (a probe runs its instance as recorded)
        # Steering (search.known.KnownFailures.narrow): an operator's domains without the
        # parameter values known to fail, drawn per node; None: the domains as they are.
        self.narrow = narrow
        self.reg = reg  # the corpus's operator registry: specs, range rules (adapter names are shared)
        self.g = Graph(inputs={}, nodes=[], outputs=[], seed=seed, values=values)
        self.g.check()  # an unknown ``values`` fails here, not in a later stage
        self._types: dict[str, TensorType] = {}
        self._ranges: dict[str, ranges.Interval] = {}
        self._n_block = 0
        self._n_adapter = 0

    # -- tensors ------------------------------------------------------------------
    def add_input(self, name: str, t: TensorType) -> str:
        self.g.inputs[name] = t
        self._types[name] = t
        self._ranges[name] = ranges.INPUT_RANGE if self.g.values == "normal" else ranges.UNKNOWN
        return name

    def type_of(self, name: str) -> TensorType:
        return self._types[name]

    def range_of(self, name: str) -> ranges.Interval:
        """The interval every element of the tensor lies in (conservative)."""
        return self._ranges[name]

    def _emit(self, op: str, inputs: list[str], params: dict[str, object], out: TensorType,
              block: str = "", gnode: int = -1) -> str:
        # Rank 0 flows in ONNX models (a Det, a loss's mean, Size), not in TensorFlow's: its
        # emitters and specs assume a dimension.
        if any(d < 1 for d in out.shape) or (out.rank == 0 and self.reg.frontend == "tf"):
            raise GenError(f"{op} would produce shape {out.shape} from {[self._types[i].shape for i in inputs]}")
        if block:
            nid = f"n{self._n_block}"
            self._n_block += 1
        else:
            nid = f"a{self._n_adapter}"
            self._n_adapter += 1
        role = "block" if block else "adapter"
        self.g.nodes.append(Node(nid, op, list(inputs), params, out, block, role, gnode))
        self._types[nid] = out
        self._ranges[nid] = self._out_range(op, inputs, params, out)
        return nid

    def _out_range(self, op: str, inputs: list[str], params: dict[str, object], out: TensorType) -> ranges.Interval:
        return ranges.out_range(op, [self._ranges[i] for i in inputs], [self._types[i] for i in inputs], params, out,
                                self.reg.rules)

    # -- operators ----------------------------------------------------------------
    def add_op(self, op: str, inputs: list[str], doms: dict[str, Domain] | None = None,
               block: str = "", gnode: int = -1, fixed: dict[str, object] | None = None) -> str:
        """Place ``op`` on ``inputs``; returns the tensor later ops should read."""
        spec = self.reg.specs[op]
        if len(inputs) not in spec.arity:
            raise GenError(f"{op} cannot take {len(inputs)} inputs")
        ins = [self._types[i] for i in inputs]
        want = spec.want(self.rng, ins)
        names = [self.coerce(n, w) for n, w in zip(inputs, want)]
        if self.narrow is not None:
            doms = self.narrow(op, {**spec.domains, **(doms or {})}, self.rng)
        params = spec.sample(self.rng, want, doms)
        if fixed:  # PM-mutated values: repaired against the shapes like any draw
            params = spec.repair(self.rng, want, {**params, **fixed})
        aligned = spec.align(want, params)
        names = [self.coerce(n, w) for n, w in zip(names, aligned)]
        out = spec.infer(aligned, params)
        if self.g.values == "normal":
            names = self._guard(op, names, params, out)
        names = self._hinged(op, names, block or op, params)
        nid = self._emit(op, names, params, out, block or op, gnode)
        return self._cap(nid)

    def _cap(self, name: str) -> str:
        """Slice a tensor that grew beyond MAX_ELEMS back under it."""
        t = self._types[name]
        if t.size <= MAX_ELEMS:
            return name
        size = list(t.shape)
        while prod(size) > MAX_ELEMS:
            i = max(range(len(size)), key=lambda j: size[j])
            size[i] = (size[i] + 1) // 2
        return self._slice(name, [0] * len(size), size)

    # -- guards -------------------------------------------------------------------
    def _guard(self, op: str, names: list[str], params: dict[str, object], out: TensorType) -> list[str]:
        """Inputs in ``op``'s domain and an output far from overflow (``ops.ranges``).

        Guards come after the shape adapters: a Pad's zeros must not reach a divisor.
        Each round squashes the widest float input with Tanh; that may move a
        divisor toward zero, so domains are checked again.  Ends: every round
        narrows one input to [-1, 1], Sigmoid outputs are never squashed, nor is the
        Exp that puts an Acosh's input within 1 to e (its domain starts at 1).
        """
        while True:
            doms = [ranges.domain(op, i, out) for i in range(len(names))]
            names = [self._into_domain(n, d) for n, d in zip(names, doms)]
            if ranges.magnitude(self._out_range(op, names, params, out)) <= ranges.limit(out.dtype):
                return names
            wide = [n for n, d in zip(names, doms) if self._types[n].dtype in FLOATS
                    and ranges.magnitude(self._ranges[n]) > (3.0 if d == "at-least-one" else 1.0)]
            if not wide:
                return names  # an operator without a rule: nothing left to squash
            worst = max(wide, key=lambda n: ranges.magnitude(self._ranges[n]))
            squashed = self._emit("Tanh", [worst], {}, self._types[worst])
            names = [squashed if n == worst else n for n in names]

    def _into_domain(self, name: str, dom: str) -> str:
        """``name`` itself when it satisfies ``dom``, else a Tanh and / or Sigmoid of it (and an
        Exp of that for a domain from 1)."""
        if self._types[name].dtype not in FLOATS or ranges.satisfies(self._ranges[name], dom):
            return name
        # Tanh first for an open interval too: a Sigmoid of 17 rounds to 1.0, and Atanh(1) is Inf.
        if dom in ("int32", "unit", "open-unit") or not ranges.sigmoid_is_enough(self._ranges[name]):
            name = self._emit("Tanh", [name], {}, self._types[name])
        if dom in ("int32", "unit"):
            return name
        name = self._emit("Sigmoid", [name], {}, self._types[name])  # in (0.27, 0.73) after a Tanh
        if dom == "at-least-one":  # an Acosh: e^(0..1) is 1 to e
            name = self._emit("Exp", [name], {}, self._types[name])
        return name

    # -- hinge values ---------------------------------------------------------------
    def _hinged(self, op: str, names: list[str], block: str, params: dict[str, object]) -> list[str]:
        """``names`` with, half the time, a hinge adapter before the first (ops.onnx_specs.HINGES):
        ties for an ArgMax, NaN and Inf for an IsNaN, integer edges for a comparison.  After the
        guards: the values are meant, and they reach only this operator.  Drawn from the graph
        seed, the block and its parameters, not the solver's stream: the minimiser, re-solving
        a smaller model, keeps the hinge of every block it keeps."""
        kind = self.reg.hinge(op, self._types[names[0]].dtype) if names and self.hinges else None
        if kind is None:
            return names
        key = f"gbft-hinge:{self.g.seed}:{block}:{json.dumps(params, sort_keys=True, default=str)}"
        if random.Random(key).random() < 0.5:
            return names
        t = self._types[names[0]]
        hinged = (self._emit("Floor", [names[0]], {"scale": TIES_SCALE}, t) if kind == "ties"
                  else self._emit("Where", [names[0]], {"values": kind}, t))
        return [hinged, *names[1:]]

    # -- adapters -----------------------------------------------------------------
    def coerce(self, name: str, want: TensorType) -> str:
        have = self._types[name]
        if want.dtype == "bool" and have.dtype.startswith("float"):
            # Through an integer: a float-to-bool cast of a fraction is where readers disagree
            # (MNN truncates 0.5 to False, ONNX says True), and a defect in an adapter would
            # fail every model feeding a bool input (the Cast operator itself still tests it).
            name = self._emit("Cast", [name], {"to": "int64"}, TensorType(have.shape, "int64"))
            have = self._types[name]
        if want.dtype == "float16" and have.dtype != want.dtype and self.g.values == "normal" \
                and ranges.magnitude(self._ranges[name]) > ranges.HALF_LIMIT:
            # Squashed in float32 first: cast as it is, an int32 edge or a float32 in the
            # millions is Inf in float16, a NaN or Inf the guards promised away.
            if have.dtype != F32:
                name = self._emit("Cast", [name], {"to": F32}, TensorType(have.shape, F32))
            name = self._emit("Tanh", [name], {}, TensorType(have.shape, F32))
            have = self._types[name]
        if have.dtype != want.dtype:
            name = self._emit("Cast", [name], {"to": want.dtype}, TensorType(have.shape, want.dtype))
            have = self._types[name]
        if have.shape == want.shape:
            return name
        if have.rank == want.rank:
            return self._fit_dims(name, want.shape)
        if have.size == want.size:
            return self._reshape(name, want.shape)
        flat = self._reshape(name, (have.size,))
        flat = self._fit_dims(flat, (want.size,))
        return self._reshape(flat, want.shape)

    def _fit_dims(self, name: str, shape: tuple[int, ...]) -> str:
        have = self._types[name].shape
        if any(h > w for h, w in zip(have, shape)):
            begin = [self.rng.randint(0, h - w) if h > w else 0 for h, w in zip(have, shape)]
            name = self._slice(name, begin, [min(h, w) for h, w in zip(have, shape)])
            have = self._types[name].shape
        if any(h < w for h, w in zip(have, shape)):
            pads = []
            for h, w in zip(have, shape):
                lo = self.rng.randint(0, w - h) if w > h else 0
                pads.append([lo, w - h - lo])
            out = TensorType(tuple(shape), self._types[name].dtype)
            name = self._emit("Pad", [name], {"pads": pads}, out)
        return name

    def _slice(self, name: str, begin: list[int], size: list[int]) -> str:
        out = TensorType(tuple(size), self._types[name].dtype)
        return self._emit("Slice", [name], {"begin": list(begin), "size": list(size)}, out)

    def _reshape(self, name: str, shape: tuple[int, ...]) -> str:
        out = TensorType(tuple(shape), self._types[name].dtype)
        return self._emit("Reshape", [name], {"shape": list(shape), "rank": len(shape)}, out)

    # -- finish -------------------------------------------------------------------
    def finish(self, meta: dict[str, object]) -> Graph:
        consumed = {src for n in self.g.nodes for src in n.inputs}
        self.g.outputs = [n.id for n in self.g.nodes if n.id not in consumed]
        self.g.meta = meta
        self.g.check()
        return self.g
