"""A lowered GraphDef run node by node in TensorFlow's eager runtime, not in a session.

Why: a session's first run builds an executor and a kernel for every node of the
graph, and the fuzz loop runs each model once; that was 3 of the reference's 5 ms a
model, against 0.6 ms for the computing itself.  Eager execution runs the same
kernels, and keeps them cached across models (by op type and attributes), so a model
costs the Python call per node and the arithmetic.  The values are the session's bit
for bit (``tests/test_graphdef.py``, every node of random graphs of the whole corpus)
but for one thing: graph mode and eager mode pick different oneDNN paths for some
Conv2D geometries (mostly one input channel), which sum in another order (12 of 600
random graphs first differed at such a Conv2D on an AVX-512 host, a third of them on an
AVX2-only host, within 1e-5 of the tensor's largest value).  Both must run one
thread per op: ``single_threaded`` sets that before TensorFlow's eager context starts,
and says whether it holds (an in-process caller may have started the context with
other settings; the worker then uses a session).

Only what a fetch needs is run, in the GraphDef's order (which is topological: the
Builder writes a node after its inputs), as a session prunes its graph; what one
fetch computed is kept for the next (localisation asks for every node of the model
just run).  A model TensorFlow rejects fails in the kernel that rejects it, as
``InvalidArgumentError``; a session would have rejected it at import (shape inference)
as ValueError: the caller maps both to "invalid".

Runs only inside the reference worker process.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2, graph_pb2
from tensorflow.python.eager import context, execute
from tensorflow.python.framework import op_def_registry, ops

_LIST_FIELDS = ("i", "f", "s", "b", "type")


def single_threaded() -> bool:
    """One intra- and one inter-op thread for eager ops, as the session config asks (Eigen
    splits a reduction by its threads: another count may change the last bits).  False when
    the eager context already runs with other settings."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # the context is initialised: it keeps what it has
        pass
    return (tf.config.threading.get_intra_op_parallelism_threads(),
            tf.config.threading.get_inter_op_parallelism_threads()) == (1, 1)


class Evaluator:
    """One model's values on one set of inputs, computed as fetches ask for them.

    ``consts`` holds each Const node's array (the Builder's, so no TensorProto is decoded);
    ``feeds`` each Placeholder's value.
    """

    def __init__(self, gd: graph_pb2.GraphDef, consts: dict[str, np.ndarray],
                 feeds: dict[str, np.ndarray]) -> None:
        self.nodes = list(gd.node)
        self.by_name = {nd.name: nd for nd in self.nodes}
        self.consts, self.feeds = consts, feeds
        self.vals: dict[str, list[Any]] = {}

    def values(self, names: list[str]) -> list[np.ndarray]:
        """Output 0 of each named node.  Raises TensorFlow's OpError as a kernel raises it."""
        need = self._needed(names)
        ctx = context.context()
        ctx.ensure_initialized()
        for nd in self.nodes:
            if nd.name in need and nd.name not in self.vals:
                self.vals[nd.name] = self._run(nd, ctx)
        return [self.vals[n][0].numpy() for n in names]

    def _needed(self, names: list[str]) -> set[str]:
        need: set[str] = set()
        todo = [n for n in names if n not in self.vals]
        while todo:
            n = todo.pop()
            if n in need or n in self.vals:
                continue
            need.add(n)
            todo.extend(_source(i) for i in self.by_name[n].input)
        return need

    def _run(self, nd: Any, ctx: Any) -> list[Any]:
        if nd.op == "Placeholder":
            return [ops.EagerTensor(self.feeds[nd.name], ctx.device_name)]
        if nd.op == "Const":
            return [ops.EagerTensor(self.consts[nd.name], ctx.device_name)]
        ins = []
        for i in nd.input:
            if i.startswith("^"):  # a control input: ordered before, passes no value
                continue
            src, _, k = i.partition(":")
            ins.append(self.vals[src][int(k) if k else 0])
        attrs: list[Any] = []
        for k, v in nd.attr.items():
            attrs += [k, _attr(v)]
        return execute.quick_execute(nd.op, _outputs(nd), ins, tuple(attrs), ctx)


def _source(inp: str) -> str:
    return inp.lstrip("^").partition(":")[0]


def _attr(a: attr_value_pb2.AttrValue) -> Any:
    """An AttrValue as the eager executor takes it: types as their enum, shapes as dim lists."""
    kind = a.WhichOneof("value")
    if kind == "list":
        for f in _LIST_FIELDS:
            v = getattr(a.list, f)
            if len(v):
                return list(v)
        return []
    if kind == "shape":
        return None if a.shape.unknown_rank else [d.size for d in a.shape.dim]
    return getattr(a, kind)


_NOUT: dict[str, tuple[tuple[str, str], ...]] = {}


def _outputs(nd: Any) -> int:
    """How many outputs the node has: one per output arg, or an attribute's count of them."""
    spec = _NOUT.get(nd.op)
    if spec is None:
        spec = tuple((o.number_attr, o.type_list_attr) for o in op_def_registry.get(nd.op).output_arg)
        _NOUT[nd.op] = spec
    n = 0
    for number, type_list in spec:
        n += nd.attr[number].i if number else len(nd.attr[type_list].list.type) if type_list else 1
    return n
