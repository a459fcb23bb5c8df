"""Shapes-and-parameters calculator (paper III-G): valid by construction.

``Builder.add_op`` places one operator: it asks the spec what inputs it wants,
reconciles the offered tensors with Cast / Reshape / Slice / Pad adapters (the
paper's aggregation rule, applied to every operator), draws and repairs the
parameters against the actual shapes (padding solved by eqs. (9)-(13) in the
conv spec), and records the inferred output type.  No backtracking is needed.
"""

from __future__ import annotations

import random
from typing import Any

from ..ops.domains import Domain
from ..ops.shapes import MAX_ELEMS, prod
from ..ops.specs import SPECS
from .ir import Graph, Node, TensorType


class GenError(RuntimeError):
    """The generator built something it should not have (a solver bug)."""


class Builder:
    def __init__(self, rng: random.Random, seed: int) -> None:
        self.rng = rng
        self.g = Graph(inputs={}, nodes=[], outputs=[], seed=seed)
        self._types: dict[str, TensorType] = {}
        self._n_block = 0
        self._n_adapter = 0

    # -- tensors ------------------------------------------------------------------
    def add_input(self, name: str, t: TensorType) -> str:
        self.g.inputs[name] = t
        self._types[name] = t
        return name

    def type_of(self, name: str) -> TensorType:
        return self._types[name]

    def _emit(self, op: str, inputs: list[str], params: dict[str, Any], out: TensorType,
              block: str = "", gnode: int = -1) -> str:
        if any(d < 1 for d in out.shape) or out.rank == 0:
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
        return nid

    # -- operators ----------------------------------------------------------------
    def add_op(self, op: str, inputs: list[str], doms: dict[str, Domain] | None = None,
               block: str = "", gnode: int = -1, fixed: dict[str, Any] | None = None) -> str:
        """Place ``op`` on ``inputs``; returns the tensor later ops should read."""
        spec = SPECS[op]
        if len(inputs) not in spec.arity:
            raise GenError(f"{op} cannot take {len(inputs)} inputs")
        ins = [self._types[i] for i in inputs]
        want = spec.want(self.rng, ins)
        names = [self.coerce(n, w) for n, w in zip(inputs, want)]
        params = spec.sample(self.rng, want, doms)
        if fixed:  # PM-mutated values: repaired against the shapes like any draw
            params = spec.repair(self.rng, want, {**params, **fixed})
        aligned = spec.align(want, params)
        names = [self.coerce(n, w) for n, w in zip(names, aligned)]
        out = spec.infer(aligned, params)
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

    # -- adapters -----------------------------------------------------------------
    def coerce(self, name: str, want: TensorType) -> str:
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
    def finish(self, meta: dict[str, Any]) -> Graph:
        consumed = {src for n in self.g.nodes for src in n.inputs}
        self.g.outputs = [n.id for n in self.g.nodes if n.id not in consumed]
        self.g.meta = meta
        self.g.check()
        return self.g
