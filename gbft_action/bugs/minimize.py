"""Minimiser: the smallest model that still fails with the same fingerprint.

Built like Hypothesis's shrinker: the model is a ``Program`` (the block
operators in order, their inputs and fixed parameters, the input shape), every
candidate goes through one entry point, ``Shrinker.consider``, which accepts it
only when it is strictly smaller and the predicate (same fingerprint on the
real engine) holds; passes are small objects proposing candidates; the run
stops at a fixed point, a stall limit or a time limit.  Realising a program
re-runs the shapes-and-parameters solver, so every candidate is a valid model.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Protocol

from ..graph.ir import Graph, TensorType
from ..graph.solver import Builder, GenError
from ..ops.domains import Choice, FloatRange, IntRange
from ..frontends import LEGACY_OPSET
from ..ops.registry import Registry, registry, registry_of
from ..records.bundle import MinimizeStats

GRAPH_INPUT = -1


@dataclass(frozen=True)
class Step:
    op: str
    inputs: tuple[int, ...]  # GRAPH_INPUT or the index of an earlier step
    params: str  # canonical JSON of the fixed parameters
    block: str


@dataclass(frozen=True)
class Program:
    input_shape: tuple[int, ...]
    steps: tuple[Step, ...]
    seed: int
    salt: int = 0  # varies the solver's adapter draws (slice offsets, pad splits)
    values: str = "normal"  # Graph.values: a special model stays special (and unguarded)
    frontend: str = "tf"  # the operator registry (ops.registry) its steps name: g.meta["frontend"]
    opset: int = LEGACY_OPSET  # ... at this ONNX opset: g.meta["opset"] (ops.registry.opset_of)

    def key(self) -> tuple[int, int, int, int]:
        """Smaller is simpler: fewer operators, fewer edges, fewer input elements, shorter params."""
        n_in = 1
        for d in self.input_shape:
            n_in *= d
        return (len(self.steps), sum(len(s.inputs) for s in self.steps), n_in, sum(len(s.params) for s in self.steps))

    def realise(self) -> Graph:
        b = Builder(random.Random(f"gbft-min:{self.seed}:{self.salt}"), self.seed, self.values,
                    self.registry)
        names = {GRAPH_INPUT: b.add_input("in0", TensorType(self.input_shape))}
        for i, s in enumerate(self.steps):
            names[i] = b.add_op(s.op, [names[j] for j in s.inputs], None, block=s.block, gnode=i,
                                fixed=json.loads(s.params))
        meta: dict[str, object] = {"minimized": True, "blocks": [s.block for s in self.steps]}
        return b.finish({**meta, **self.registry.meta()})

    @property
    def registry(self) -> Registry:
        return registry(self.frontend, self.opset)

    @staticmethod
    def from_graph(g: Graph) -> Program:
        """Block nodes in order; inputs traced back through the solver's adapters."""
        index = {n.id: i for i, n in enumerate(g.block_nodes())}
        by_id = {n.id: n for n in g.nodes}

        def source(name: str) -> int:
            while name in by_id and by_id[name].role == "adapter":
                name = by_id[name].inputs[0]
            return index.get(name, GRAPH_INPUT)

        steps = tuple(Step(n.op, tuple(source(x) for x in n.inputs), json.dumps(n.params, sort_keys=True), n.block)
                      for n in g.block_nodes())
        shape = next(iter(g.inputs.values())).shape
        return Program(shape, steps, g.seed, values=g.values, frontend=str(g.meta.get("frontend", "tf")),
                       opset=registry_of(g).opset)


# --------------------------------------------------------------------------- the shrinker


Predicate = Callable[[Graph], Any]  # a truthy result (kept) when the graph fails the same way


@dataclass
class Shrinker:
    initial: Program
    predicate: Predicate
    time_limit: float = 30.0
    stall_limit: int = 200
    current: Program = field(init=False)
    result: Any = None
    calls: int = 0
    stalls: int = 0
    _seen: set[Program] = field(default_factory=set)
    _t0: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.current = self.initial

    def done(self) -> bool:
        return time.monotonic() - self._t0 > self.time_limit or self.stalls >= self.stall_limit

    def consider(self, cand: Program) -> bool:
        """The one entry point: keep ``cand`` if it is smaller and still fails the same way."""
        if self.done() or cand in self._seen or cand.key() >= self.current.key():
            return False
        self._seen.add(cand)
        try:
            g = cand.realise()
        except GenError:
            return False
        self.calls += 1
        res = self.predicate(g)
        if not res:
            self.stalls += 1
            return False
        self.current, self.result, self.stalls = cand, res, 0
        return True

    def run(self, passes: list[Pass] | None = None) -> Program:
        passes = passes or default_passes()
        changed = True
        while changed and not self.done():
            changed = False
            for p in passes:
                changed |= p.run(self)
        return self.current

    def stats(self, note: str = "") -> MinimizeStats:
        return MinimizeStats(self.calls, round(time.monotonic() - self._t0, 2),
                             time.monotonic() - self._t0 <= self.time_limit,  # False: cut by the time limit
                             tuple(self.initial.key()), tuple(self.current.key()), note)


class Pass(Protocol):
    @property
    def name(self) -> str: ...  # read-only: the passes are frozen

    def run(self, s: Shrinker) -> bool: ...


def remove_steps(p: Program, drop: set[int]) -> Program:
    """Drop steps; their consumers read the dropped step's first input instead."""
    remap: dict[int, int] = {GRAPH_INPUT: GRAPH_INPUT}
    steps: list[Step] = []
    for i, s in enumerate(p.steps):
        if i in drop:
            remap[i] = remap[s.inputs[0]] if s.inputs else GRAPH_INPUT
            continue
        remap[i] = len(steps)
        steps.append(replace(s, inputs=tuple(remap[j] for j in s.inputs)))
    return replace(p, steps=tuple(steps))


@dataclass(frozen=True)
class DeleteChunks:
    """Delta debugging over operators: chunks of halving size, then single ones."""

    name: str = "delete-chunks"

    def run(self, s: Shrinker) -> bool:
        changed = False
        size = max(1, len(s.current.steps) // 2)
        while size >= 1 and not s.done():
            i = len(s.current.steps) - size  # from the outputs back: downstream operators go first
            while i >= 0 and not s.done():
                if s.consider(remove_steps(s.current, set(range(i, i + size)))):
                    changed = True
                    i = min(i, len(s.current.steps) - size)
                else:
                    i -= size
            size //= 2
        return changed


@dataclass(frozen=True)
class DropInputs:
    """Remove data flows: one input of a multi-input operator at a time."""

    name: str = "drop-inputs"

    def run(self, s: Shrinker) -> bool:
        changed = False
        specs = s.current.registry.specs
        for i in range(len(s.current.steps)):  # this pass never removes steps
            for k in range(len(s.current.steps[i].inputs)):
                step = s.current.steps[i]
                if k >= len(step.inputs) or len(step.inputs) - 1 not in specs[step.op].arity:
                    continue
                ins = step.inputs[:k] + step.inputs[k + 1:]
                steps = s.current.steps[:i] + (replace(step, inputs=ins),) + s.current.steps[i + 1:]
                changed |= s.consider(replace(s.current, steps=steps))
        return changed


@dataclass(frozen=True)
class ShrinkInput:
    """Smaller input tensors: each dimension to 1, else halved."""

    name: str = "shrink-input"

    def run(self, s: Shrinker) -> bool:
        changed = False
        for axis in range(len(s.current.input_shape)):
            for value in _smaller(s.current.input_shape[axis]):
                shape = list(s.current.input_shape)
                shape[axis] = value
                if s.consider(replace(s.current, input_shape=tuple(shape))):
                    changed = True
                    break
        return changed


def _smaller(d: int) -> Iterator[int]:
    seen = set()
    for v in (1, d // 2, d - 1):
        if 1 <= v < d and v not in seen:
            seen.add(v)
            yield v


@dataclass(frozen=True)
class SimplifyParams:
    """Each domain parameter to its simplest value (range minimum, first choice)."""

    name: str = "simplify-params"

    def run(self, s: Shrinker) -> bool:
        changed = False
        for i in range(len(s.current.steps)):  # this pass never removes steps
            step = s.current.steps[i]
            params = json.loads(step.params)
            for name, dom in s.current.registry.specs[step.op].domains.items():
                simple = _simplest(dom)
                if name in params and params[name] != simple:
                    new = dict(json.loads(s.current.steps[i].params), **{name: simple})
                    cand = replace(step, params=json.dumps(new, sort_keys=True))
                    steps = s.current.steps[:i] + (cand,) + s.current.steps[i + 1:]
                    changed |= s.consider(replace(s.current, steps=steps))
                    step = s.current.steps[i]
        return changed


def _simplest(dom: Any) -> Any:
    if isinstance(dom, (IntRange, FloatRange)):
        return max(dom.lo, 0) if dom.lo <= 0 <= dom.hi else dom.lo
    if isinstance(dom, Choice):
        return dom.values[0]
    return None


def default_passes() -> list[Pass]:
    return [DeleteChunks(), DropInputs(), ShrinkInput(), SimplifyParams()]


@dataclass(frozen=True)
class Isolate:
    """The failing operator alone, fed from the model input: most defects live in one operator,
    and then one call replaces a whole delta-debugging run.  Tried with the operator's own input
    shape and with the model's."""

    step: int
    shape: tuple[int, ...]
    name: str = "isolate"

    def run(self, s: Shrinker) -> bool:
        if not 0 <= self.step < len(s.current.steps):
            return False
        step = s.current.steps[self.step]
        alone = (replace(step, inputs=(GRAPH_INPUT,) * len(step.inputs)),)
        return any(s.consider(replace(s.current, input_shape=shape, steps=alone))
                   for shape in dict.fromkeys((self.shape, s.current.input_shape)))


def minimize(g: Graph, predicate: Predicate, time_limit: float = 30.0,
             stall_limit: int = 200, focus: str = "") -> tuple[Graph, Any, MinimizeStats]:
    """Minimise ``g`` under ``predicate``; returns (smallest graph, its predicate result, stats).

    ``g`` itself is known to fail; its program form is only the starting point
    (re-solving re-draws the adapters, which may or may not keep the bug).  If no
    smaller candidate reproduces, ``g`` is returned unchanged.  ``focus``: the node where
    the model fails, tried alone first.
    """
    s = Shrinker(Program.from_graph(g), predicate, time_limit, stall_limit)
    first = _isolate_pass(g, focus)
    if first is not None:
        first.run(s)
    if s.result is None:
        _reproducing_start(s, salts=4)
    s.run()
    if s.result is None:
        return g, None, s.stats("no smaller model reproduces; kept the original")
    return s.current.realise(), s.result, s.stats()


def _isolate_pass(g: Graph, focus: str) -> Isolate | None:
    """The Isolate pass for block node ``focus`` (None for an adapter or an unknown node)."""
    blocks = [n.id for n in g.block_nodes()]
    if focus not in blocks:
        return None
    n = g.node(focus)
    shape = g.tensor_type(n.inputs[0]).shape if n.inputs else next(iter(g.inputs.values())).shape
    return Isolate(blocks.index(focus), tuple(shape))


def _reproducing_start(s: Shrinker, salts: int) -> None:
    """Start from a re-solved program that still fails, trying a few adapter draws.

    The re-solved model differs from the original in its adapters; when the bug
    hangs on them, another draw often keeps it, and then every pass can work.
    """
    for salt in range(salts):
        cand = replace(s.initial, salt=salt)
        if s.done() or not _realisable(cand):
            continue
        s.calls += 1
        res = s.predicate(cand.realise())
        if res:
            s.current, s.result = cand, res
            return


def _realisable(p: Program) -> bool:
    try:
        p.realise()
        return True
    except GenError:
        return False
