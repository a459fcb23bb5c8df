"""Direct TensorFlow GraphDef: IR graph -> ``GraphDef`` proto, without TensorFlow's Python op layer.

Building a model through ``tf.*`` calls (``tf_emit``) costs most of the reference's
time: every call converts its arguments, opens name scopes and runs shape
inference, one Python object at a time.  Here each IR node becomes its NodeDefs
straight from a table (``LOWERINGS``: IR operator -> TensorFlow op type, its
arguments and its attributes), with the very names, attributes and constant bytes
``tf_emit`` gives, so ``model.pb`` means the same to an engine's converter and
the session computes the same values (``tests/test_graphdef.py`` checks both, on
random graphs of the whole corpus).  Attributes the table does not give are
filled as the op layer fills them: type attributes from the inputs' dtypes, the
rest from the op's registered defaults.  What differs from ``tf_emit``: the bytes of
model.pb (the order attribute maps are serialised in; the protos are equal) and the
text of TensorFlow's errors (no Python stack of each op's creation to quote).

A graph with an operator (or parameters) the table does not cover is not lowered
here: ``lower`` returns None and the caller builds it with ``tf_emit``.  Today the
table covers every operator of ``ops.specs`` (the 50 of corpora/tensorflow-mnn.yaml
and the adapters); the one exclusion is Softmax on a negative axis other than -1,
which the generator never makes (``tf.nn.softmax`` would add the axis in the graph).

``load`` puts a GraphDef into a fresh tf.Graph for a session.  Importing makes a
Python ``Operation`` for every node, which costs as much as building the GraphDef;
the session runs the C graph and needs Python objects only for what it feeds and
fetches, so ``load`` goes through TensorFlow's C import (private API of the pinned
TensorFlow; the public ``import_graph_def`` if that API is missing) and wraps only those.

Runs only inside the reference worker process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import (
    attr_value_pb2,
    graph_pb2,
    tensor_pb2,
    tensor_shape_pb2,
    types_pb2,
)
from tensorflow.python.framework import op_def_registry

try:  # TensorFlow's C import, as importer.import_graph_def calls it
    from tensorflow.python.client import pywrap_tf_session as c_api
    from tensorflow.python.framework import c_api_util
    C_IMPORT = hasattr(c_api, "TF_ImportGraphDefOptionsAddReturnOperation")
except ImportError:  # pragma: no cover - another TensorFlow: the public import
    C_IMPORT = False

from ..graph.ir import Graph, Node, Params, TensorType
from .weights import divisor, uniform, weights_rng

DT = {"float32": types_pb2.DT_FLOAT, "int32": types_pb2.DT_INT32, "int64": types_pb2.DT_INT64,
      "bool": types_pb2.DT_BOOL}
NP_DT = {np.dtype(k): v for k, v in DT.items()}  # by numpy dtype: str(dtype) is slow
# How make_tensor_proto stores a one-element tensor of each dtype (more go to tensor_content).
SCALAR_FIELD = {types_pb2.DT_FLOAT: "float_val", types_pb2.DT_INT32: "int_val", types_pb2.DT_INT64: "int64_val",
                types_pb2.DT_BOOL: "bool_val"}
# The op layer's GraphDef carries the producer version of this TensorFlow.
VERSIONS = tf.Graph().as_graph_def().versions


# --------------------------------------------------------------------------- arguments of a lowering


@dataclass(frozen=True)
class X:
    """The node's i-th IR input."""
    i: int = 0


@dataclass(frozen=True)
class XS:
    """All IR inputs, as one list argument (ConcatV2's values)."""


@dataclass(frozen=True)
class W:
    """A weight: tf.constant(value) before the op, a graph-level ``Const``, ``Const_1``, ..."""
    value: np.ndarray


@dataclass(frozen=True)
class C:
    """A constant the op layer converts inside the op's name scope: ``<id>/<arg>``."""
    arg: str
    value: np.ndarray


@dataclass(frozen=True)
class N:
    """A constant named ``<id><suffix>``, made before the op (Fill's ``tf.shape``, folded)."""
    suffix: str
    value: np.ndarray


Arg = X | XS | W | C | N
ArgsFn = Callable[[Params, list[TensorType], Node, np.random.Generator], list[Arg]]
AttrsFn = Callable[[Params, list[TensorType], Node], dict[str, object]]


@dataclass(frozen=True)
class Lowering:
    tf_op: str | Callable[[Params, list[TensorType]], str]
    args: ArgsFn
    attrs: AttrsFn = lambda p, ins, node: {}
    # The parameters it lowers exactly; others make the graph fall back to tf_emit.
    covers: Callable[[Params, list[TensorType]], bool] = lambda p, ins: True
    # The few Python functions that make more than their op (tf.nn.softmax on an inner
    # axis, tf.shape folded to a constant): their NodeDefs written out by a function.
    expand: Callable[[Builder, Node, list[TensorType]], bool] | None = None


def i32(v: Any) -> np.ndarray:
    return np.array(v, np.int32)


def f32(v: Any) -> np.ndarray:
    return np.array(v, np.float32)


def only_x(p: Params, ins: list[TensorType], node: Node, rng: np.random.Generator) -> list[Arg]:
    return [X()]


def nhwc(v: int) -> list[int]:
    return [1, v, v, 1]


# --------------------------------------------------------------------------- the table


UNARY = ("Ceil", "Exp", "Relu", "Relu6", "Rsqrt", "Selu", "Sigmoid", "Sqrt", "Square", "Tanh")
BINARY = {"Add": "AddV2", "Sub": "Sub", "Mul": "Mul", "Realdiv": "RealDiv", "Maximum": "Maximum",
          "Minimum": "Minimum", "Greater": "Greater"}
REDUCE = {"Reducemax": "Max", "Reducemean": "Mean", "Reduceprod": "Prod", "Reducesum": "Sum"}
RESIZE = {"bilinear": "ResizeBilinear", "nearest": "ResizeNearestNeighbor", "bicubic": "ResizeBicubic",
          "area": "ResizeArea"}


def _binary_args(p: Params, ins: list[TensorType], node: Node, rng: np.random.Generator) -> list[Arg]:
    if len(ins) == 2:
        return [X(0), X(1)]
    shape = {"same": list(ins[0].shape), "scalar": [], "channel": list(ins[0].shape[-1:])}[p["operand"]]
    return [X(), W(divisor(rng, shape) if node.op == "Realdiv" else uniform(rng, shape))]


def _explicit(p: Params) -> list[int]:
    """tf.nn.conv2d's flattening of [[0, 0], [a, b], [c, d], [0, 0]]."""
    a, b, c, d = p["pads"]
    return [0, 0, a, b, c, d, 0, 0]


def _conv_attrs(p: Params, ins: list[TensorType], node: Node) -> dict[str, object]:
    explicit = p["padding"] == "EXPLICIT"
    return {"strides": nhwc(p["stride"]), "padding": p["padding"], "dilations": nhwc(p["dilation"]),
            "explicit_paddings": _explicit(p) if explicit else []}


def _resize_args(p: Params, ins: list[TensorType], node: Node, rng: np.random.Generator) -> list[Arg]:
    return [X(), C("size", i32([p["h"], p["w"]]))]


def _crop_boxes(p: Params, ins: list[TensorType], node: Node, rng: np.random.Generator) -> list[Arg]:
    y0, x0 = rng.uniform(0.0, 0.5, size=(2, p["boxes"]))
    y1, x1 = rng.uniform(0.5, 1.0, size=(2, p["boxes"]))
    boxes = np.stack([y0, x0, y1, x1], axis=1).astype(np.float32)
    return [X(), C("boxes", boxes), C("box_ind", np.zeros([p["boxes"]], np.int32)),
            C("crop_size", i32([p["crop_h"], p["crop_w"]]))]


def _fused_bn_args(p: Params, ins: list[TensorType], node: Node, rng: np.random.Generator) -> list[Arg]:
    c = ins[0].shape[-1]
    scale, offset, mean = (uniform(rng, [c]) for _ in range(3))
    return [X(), W(scale), W(offset), W(mean), W(uniform(rng, [c], 0.1, 1.0))]  # a variance is positive


def _table() -> dict[str, Lowering]:
    t: dict[str, Lowering] = {op: Lowering(op, only_x) for op in UNARY}
    t.update({op: Lowering(tf_op, _binary_args) for op, tf_op in BINARY.items()})
    t.update({op: Lowering(tf_op, lambda p, ins, n, r: [X(), C("reduction_indices", i32(p["axes"]))],
                           lambda p, ins, n: {"keep_dims": bool(p["keepdims"])})
              for op, tf_op in REDUCE.items()})
    t.update({
        "Biasadd": Lowering("BiasAdd", lambda p, ins, n, r: [X(), W(uniform(r, [ins[0].shape[-1]]))]),
        "Cast": Lowering("Cast", only_x, lambda p, ins, n: {"DstT": DT[p["to"]]}),
        "Fill": Lowering("Fill", lambda p, ins, n, r: [N("_shape", i32(ins[0].shape)), C("value", f32(p["value"]))]),
        "Conv2d": Lowering("Conv2D", lambda p, ins, n, r: [
            X(), W(uniform(r, [p["kh"], p["kw"], ins[0].shape[-1], p["out_ch"]]))], _conv_attrs),
        "Depthwise": Lowering("DepthwiseConv2dNative", lambda p, ins, n, r: [
            X(), W(uniform(r, [p["kh"], p["kw"], ins[0].shape[-1], p["multiplier"]]))], _conv_attrs),
        "Deconv2d": Lowering("Conv2DBackpropInput", lambda p, ins, n, r: [
            C("input_sizes", i32(n.out.shape)), W(uniform(r, [p["kh"], p["kw"], p["out_ch"], ins[0].shape[-1]])),
            X()], lambda p, ins, n: {"strides": nhwc(p["stride"]), "padding": p["padding"]}),
        "Avgpooling": Lowering("AvgPool", only_x, lambda p, ins, n: {
            "ksize": [1, p["kh"], p["kw"], 1], "strides": nhwc(p["stride"]), "padding": p["padding"]}),
        "Maxpooling": Lowering("MaxPool", only_x, lambda p, ins, n: {
            "ksize": [1, p["kh"], p["kw"], 1], "strides": nhwc(p["stride"]), "padding": p["padding"]}),
        "Fusedbatchnorm": Lowering("FusedBatchNormV3", _fused_bn_args, lambda p, ins, n: {
            "epsilon": max(p["epsilon"], 1.001e-5), "is_training": False}),
        "Lrn": Lowering("LRN", only_x, lambda p, ins, n: {
            k: p[k] for k in ("depth_radius", "bias", "alpha", "beta")}),
        # One input: tf_emit's tf.identity (tf.concat of one tensor names its op "n3/n3").
        "Concat": Lowering(lambda p, ins: "ConcatV2" if len(ins) > 1 else "Identity",
                           lambda p, ins, n, r: [XS(), C("axis", i32(p["axis"]))] if len(ins) > 1 else [X()]),
        "Reshape": Lowering("Reshape", lambda p, ins, n, r: [X(), C("shape", i32(p["shape"]))]),
        "Slice": Lowering("Slice", lambda p, ins, n, r: [X(), C("begin", i32(p["begin"])), C("size", i32(p["size"]))]),
        "Pad": Lowering("Pad", lambda p, ins, n, r: [X(), C("paddings", i32(p["pads"]))]),
        "Stridedslice": Lowering("StridedSlice", lambda p, ins, n, r: [
            X(), C("begin", i32(p["begin"])), C("end", i32(p["end"])), C("strides", i32(p["strides"]))],
            lambda p, ins, n: {"begin_mask": p["begin_mask"], "end_mask": p["end_mask"]}),
        "Expanddims": Lowering("ExpandDims", lambda p, ins, n, r: [X(), C("dim", i32(p["axis"]))]),
        "Squeeze": Lowering("Squeeze", only_x, lambda p, ins, n: {"squeeze_dims": list(p["axes"])}),
        "Transpose": Lowering("Transpose", lambda p, ins, n, r: [X(), C("perm", i32(p["perm"]))]),
        "Tile": Lowering("Tile", lambda p, ins, n, r: [X(), C("multiples", i32(p["multiples"]))]),
        "GatherV2": Lowering("GatherV2", lambda p, ins, n, r: [
            X(), C("indices", i32(p["indices"])), C("axis", i32(p["axis"]))]),
        "Spacetobatchnd": Lowering("SpaceToBatchND", lambda p, ins, n, r: [
            X(), C("block_shape", i32([p["bh"], p["bw"]])), C("paddings", i32(p["pads"]))]),
        "Batchtospacend": Lowering("BatchToSpaceND", lambda p, ins, n, r: [
            X(), C("block_shape", i32([p["bh"], p["bw"]])), C("crops", i32(p["crops"]))]),
        "Argmax": Lowering("ArgMax", lambda p, ins, n, r: [X(), C("dimension", i32(p["axis"]))],
                           lambda p, ins, n: {"output_type": DT[p["output_type"]]}),
        # A negative axis but -1 (never generated: specs repair it) adds the Rank tensor in the graph.
        "Softmax": Lowering("Softmax", only_x, covers=lambda p, ins: p["axis"] >= -1, expand=_softmax),
        "Shape": Lowering("Shape", only_x, expand=_shape),
        "TopKV2": Lowering("TopKV2", lambda p, ins, n, r: [X(), C("k", i32(p["k"]))],
                           lambda p, ins, n: {"sorted": True}),
        "Resizebilinear": Lowering("ResizeBilinear", _resize_args, lambda p, ins, n: {
            k: p[k] for k in ("align_corners", "half_pixel_centers")}),
        "Resizenearestneighbor": Lowering("ResizeNearestNeighbor", _resize_args, lambda p, ins, n: {
            k: p[k] for k in ("align_corners", "half_pixel_centers")}),
        # What tf.image.resize (TF2) lowers to for each method, half-pixel centres on.
        "Resize": Lowering(lambda p, ins: RESIZE[p["method"]], _resize_args,
                           lambda p, ins, n: {} if p["method"] == "area" else {"half_pixel_centers": True}),
        "Cropandresize": Lowering("CropAndResize", _crop_boxes, lambda p, ins, n: {"method": p["method"]}),
    })
    return t


def _shape(b: Builder, n: Node, ins: list[TensorType]) -> bool:
    """tf.shape of a fully known shape: the op layer folds it into a Const named by the node."""
    b.const(n.id, i32(ins[0].shape))
    return True


def _softmax(b: Builder, n: Node, ins: list[TensorType]) -> bool:
    """tf.nn.softmax on an inner axis: Softmax on the last axis between two transposes that
    swap the two axes, their permutations computed in the graph as nn_ops._wrap_2d_function does."""
    rank, axis = ins[0].rank, n.params["axis"] % ins[0].rank
    if axis == rank - 1:
        return False  # the plain op
    b.const(b.unique("Rank"), i32(rank))  # ndims: made, unused
    input_rank = b.const(b.unique("Rank"), i32(rank))
    x = n.inputs[0]
    last = _sub_one(b, input_rank)
    x = b.node("Transpose", b.unique("transpose"), [[x], [_swap_perm(b, axis, last)]], {})
    b.dtype[x] = DT["float32"]
    y = b.node("Softmax", b.unique("Softmax"), [[x]], {})
    b.dtype[y] = DT["float32"]
    last = _sub_one(b, input_rank)
    b.node("Transpose", n.id, [[y], [_swap_perm(b, axis, last)]], {})
    return True


def _sub_one(b: Builder, x: str) -> str:
    """math_ops.subtract(x, 1)."""
    name = b.unique("Sub")
    b.node("Sub", name, [[x], [b.const(f"{name}/y", i32(1))]], {})
    b.dtype[name] = DT["int32"]
    return name


def _range(b: Builder, start: int, limit: int | str) -> str:
    """math_ops.range(start, limit): int32 constants made in the order start, limit, delta
    (a limit that is a tensor makes none)."""
    name = b.unique("range")
    first = b.const(f"{name}/start", i32(start))
    lim = b.const(f"{name}/limit", i32(limit)) if isinstance(limit, int) else limit
    b.node("Range", name, [[first], [lim], [b.const(f"{name}/delta", i32(1))]], {})
    b.dtype[name] = DT["int32"]
    return name


def _swap_perm(b: Builder, axis: int, last: str) -> str:
    """array_ops.concat([range(axis), [last], range(axis + 1, last), [axis]], 0)."""
    lo = _range(b, 0, axis)
    hi = _range(b, axis + 1, last)
    name = b.unique("concat")
    packed = b.node("Pack", f"{name}/values_1", [[last]], {"axis": 0})
    b.dtype[packed] = DT["int32"]
    tail = b.const(f"{name}/values_3", i32([axis]))
    ax = b.const(f"{name}/axis", i32(0))
    b.node("ConcatV2", name, [[lo, packed, hi, tail], [ax]], {})
    b.dtype[name] = DT["int32"]
    return name


LOWERINGS: dict[str, Lowering] = _table()


# --------------------------------------------------------------------------- protos


def tensor_proto(a: np.ndarray) -> tensor_pb2.TensorProto:
    """What tf.make_tensor_proto(a) gives for our dtypes: raw bytes, or a value list for one element."""
    dt = NP_DT[a.dtype]
    t = tensor_pb2.TensorProto(dtype=dt, tensor_shape=shape_proto(a.shape))
    if a.size > 1:
        t.tensor_content = a.tobytes()
    else:
        getattr(t, SCALAR_FIELD[dt]).extend(a.ravel().tolist())
    return t


def shape_proto(shape: Any) -> tensor_shape_pb2.TensorShapeProto:
    return tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(d))
                                                  for d in shape])


def attr_value(v: Any) -> attr_value_pb2.AttrValue:
    if isinstance(v, bool):
        return attr_value_pb2.AttrValue(b=v)
    if isinstance(v, int):
        return attr_value_pb2.AttrValue(i=v)
    if isinstance(v, float):
        return attr_value_pb2.AttrValue(f=v)
    if isinstance(v, str):
        return attr_value_pb2.AttrValue(s=v.encode())
    if isinstance(v, list):
        av = attr_value_pb2.AttrValue()
        av.list.SetInParent()  # an empty list is still a list (the op layer sets it so)
        av.list.i.extend(v)
        return av
    raise TypeError(f"no attribute value for {v!r}")


@dataclass(frozen=True)
class OpInfo:
    """What filling a NodeDef of one op type needs from its OpDef (looked up once)."""
    inputs: tuple[tuple[str, str, str], ...]  # (arg name, type attr, number attr)
    attrs: tuple[tuple[str, str, Any], ...]  # (attr name, attr type, default AttrValue or None)


_OPS: dict[str, OpInfo] = {}


def op_info(op: str) -> OpInfo:
    info = _OPS.get(op)
    if info is None:
        d = op_def_registry.get(op)
        info = OpInfo(tuple((a.name, a.type_attr, a.number_attr) for a in d.input_arg),
                      tuple((a.name, a.type, a.default_value if a.HasField("default_value") else None)
                            for a in d.attr))
        _OPS[op] = info
    return info


# --------------------------------------------------------------------------- building


class Builder:
    """One GraphDef under construction, with TensorFlow's naming of graph-level constants."""

    def __init__(self) -> None:
        self.gd = graph_pb2.GraphDef()
        self.gd.versions.CopyFrom(VERSIONS)
        self.dtype: dict[str, int] = {}
        self.used: dict[str, int] = {}  # tf.Graph.unique_name's book of automatic names
        self.consts: dict[str, np.ndarray] = {}  # each Const's array (eager runs it without decoding)

    def node(self, op: str, name: str, args: list[list[str]], attrs: dict[str, object]) -> str:
        info = op_info(op)
        nd = self.gd.node.add(op=op, name=name)
        types: dict[str, int] = {}
        numbers: dict[str, int] = {}
        for (_, type_attr, number_attr), names in zip(info.inputs, args):
            nd.input.extend(names)
            if type_attr and names:
                types.setdefault(type_attr, self.dtype[names[0]])
            if number_attr:
                numbers[number_attr] = len(names)
        for a, kind, default in info.attrs:
            if a in attrs:
                v = attrs[a]
                nd.attr[a].CopyFrom(v if isinstance(v, attr_value_pb2.AttrValue)
                                    else attr_value_pb2.AttrValue(type=v) if kind == "type" else attr_value(v))
            elif a in types:
                nd.attr[a].type = types[a]
            elif a in numbers:
                nd.attr[a].i = numbers[a]
            elif default is not None:
                nd.attr[a].CopyFrom(default)
            else:
                raise KeyError(f"{op}: no value for attribute {a}")
        return name

    def const(self, name: str, value: np.ndarray) -> str:
        t = tensor_proto(value)
        self.consts[name] = value
        self.dtype[name] = t.dtype
        return self.node("Const", name, [], {"value": attr_value_pb2.AttrValue(tensor=t), "dtype": t.dtype})

    def weight(self, value: np.ndarray) -> str:
        return self.const(self.unique("Const"), value)

    def unique(self, name: str) -> str:
        """tf.Graph.unique_name: Const, Const_1, ... (case-blind, skipping names taken).

        Only automatic names go through it: node ids and the names scoped under them
        never meet these (they are n<k>, a<k>, in<k>).
        """
        key = name.lower()
        i = self.used.get(key, 0)
        self.used[key] = i + 1
        if i == 0:
            return name
        base = key
        while key in self.used:
            key = f"{base}_{i}"
            i += 1
        self.used[key] = 1
        return f"{name}_{i - 1}"


def covered(g: Graph) -> bool:
    """Whether every node of g has an exact lowering here (else the whole graph falls back)."""
    types = {**g.inputs, **{n.id: n.out for n in g.nodes}}
    for n in g.nodes:
        low = LOWERINGS.get(n.op)
        if low is None or not low.covers(n.params, [types[i] for i in n.inputs]):
            return False
    return True


def lower(g: Graph) -> graph_pb2.GraphDef | None:
    """g's GraphDef as tf_emit would make it, or None when some node has no exact lowering."""
    b = lowered(g)
    return None if b is None else b.gd


def lowered(g: Graph) -> Builder | None:
    """The Builder holding g's GraphDef (``.gd``) and its constants' arrays (``.consts``), or
    None when some node has no exact lowering."""
    if not covered(g):
        return None
    b = Builder()
    types = dict(g.inputs)
    for name, t in g.inputs.items():
        b.dtype[name] = DT[t.dtype]
        b.node("Placeholder", name, [], {"dtype": attr_value_pb2.AttrValue(type=DT[t.dtype]),
                                         "shape": attr_value_pb2.AttrValue(shape=shape_proto(t.shape))})
    for n in g.nodes:
        ins = [types[i] for i in n.inputs]
        _lower_node(b, g, n, ins)
        types[n.id] = n.out
        b.dtype[n.id] = DT[n.out.dtype]
    return b


def _lower_node(b: Builder, g: Graph, n: Node, ins: list[TensorType]) -> None:
    low = LOWERINGS[n.op]
    if low.expand is not None and low.expand(b, n, ins):
        return
    args = low.args(n.params, ins, n, weights_rng(g.seed, n.id))
    # The op layer makes weights (and Fill's folded shape) before the call, then the
    # op-scoped constants in argument order, then the op.
    pre = {id(a): _pre(b, n, a) for a in args if isinstance(a, (W, N))}
    names: list[list[str]] = []
    for a in args:
        if isinstance(a, X):
            names.append([n.inputs[a.i]])
        elif isinstance(a, XS):
            names.append(list(n.inputs))
        elif isinstance(a, C):
            names.append([b.const(f"{n.id}/{a.arg}", a.value)])
        else:
            names.append([pre[id(a)]])
    tf_op = low.tf_op if isinstance(low.tf_op, str) else low.tf_op(n.params, ins)
    b.node(tf_op, n.id, names, low.attrs(n.params, ins, n))


def _pre(b: Builder, n: Node, a: W | N) -> str:
    return b.weight(a.value) if isinstance(a, W) else b.const(n.id + a.suffix, a.value)


# --------------------------------------------------------------------------- loading


def load(gd: graph_pb2.GraphDef, names: list[str] | None = None) -> Any:
    """A fresh tf.Graph holding gd, with Python operations for ``names`` only (the ops a
    session feeds and fetches; all of them when None).  ValueError when TensorFlow rejects
    the graph (shape inference), as import_graph_def raises it."""
    tg = tf.Graph()
    if names is None or not C_IMPORT:
        with tg.as_default():
            tf.compat.v1.import_graph_def(gd, name="")
        return tg
    scoped = c_api_util.ScopedTFImportGraphDefOptions()
    for n in dict.fromkeys(names):
        c_api.TF_ImportGraphDefOptionsAddReturnOperation(scoped.options, n)
    buf = c_api.TF_NewBufferFromString(gd.SerializeToString())
    try:
        with tg._c_graph.get() as c_graph:  # noqa: SLF001 - see the module docstring
            results = c_api_util.ScopedTFImportGraphDefResults(
                c_api.TF_GraphImportGraphDefWithResults(c_graph, buf, scoped.options))
        for op in c_api.TF_ImportGraphDefResultsReturnOperations(results.results):
            tg._create_op_from_tf_operation(op, compute_device=False)  # noqa: SLF001
    except tf.errors.InvalidArgumentError as e:
        raise ValueError(str(e)) from None
    finally:
        c_api.TF_DeleteBuffer(buf)
    return tg
