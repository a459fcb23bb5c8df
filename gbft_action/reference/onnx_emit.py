"""ONNX materialiser: IR graph (``frontend: onnx``) -> ``onnx.ModelProto`` at the graph's opset
(``ops.registry.opset_of``: 17 to 27), NCHW.  Where an operator's form changed between opsets
(Reduce*'s axes became an input at 18, GridSample's modes were renamed at 20, Split took
``num_outputs`` at 18) its emitter writes the form of the graph's opset.

Every node becomes ONNX nodes whose *last* output is named by the node id, so
the node's tensor is ``<id>`` in the model and engines that keep names can
expose it; helper tensors are ``<id>_<suffix>``.  Constants (weights, indices,
grids) are initializers drawn from ``weights_rng(graph seed, node id)``: the
same IR always yields the same model bytes.  The solver's adapters (Cast,
Reshape, Slice, Pad, Tanh, Sigmoid) come with their TensorFlow-style params
(``begin``/``size`` for a Slice, no mode for a Pad) and are emitted here too.

No TensorFlow.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..graph.ir import Graph, Node, Params, TensorType
from ..ops.onnx_specs import FLOAT_SPECIALS, INT_EDGES, ONNX_SPECS, MatMul
from ..ops.recorded import Instance, RecordedSpec
from ..ops.registry import opset_of, registry_of
from . import registrar
from .onnx_exported import EXPORTED_EMITTERS
from .onnx_patterns import parsed
from .weights import divisor, uniform, weights_rng

IR_VERSION = 8  # the IR version of opset 17's onnx release (1.12): older readers accept it
DTYPES = {"float32": TensorProto.FLOAT, "int32": TensorProto.INT32, "int64": TensorProto.INT64,
          "bool": TensorProto.BOOL, "uint8": TensorProto.UINT8, "int8": TensorProto.INT8,
          "float16": TensorProto.FLOAT16}
NP = {"float32": np.float32, "int32": np.int32, "int64": np.int64, "bool": np.bool_, "uint8": np.uint8,
      "int8": np.int8, "float16": np.float16}


@dataclass
class Ctx:
    """What an emitter writes into: the node's ONNX nodes and initializers."""

    g: Graph
    node: Node
    rng: np.random.Generator
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)

    @property
    def opset(self) -> int:
        """The opset the graph is written at (its forms follow it)."""
        return opset_of(self.g)

    def type(self, name: str) -> TensorType:
        return self.g.tensor_type(name)

    def const(self, suffix: str, value: Any, dtype: Any = np.float32) -> str:
        name = f"{self.node.id}_{suffix}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def ints(self, suffix: str, values: list[int]) -> str:
        return self.const(suffix, np.array(values, np.int64), np.int64)

    def reduce(self, op_type: str, x: str, axes: list[int], keepdims: bool, out: str | None = None) -> str:
        """A Reduce* node in the graph's opset's form: its axes an input from 18 on (ReduceSum's
        from 13), an attribute before."""
        if op_type == "ReduceSum" or self.opset >= 18:
            taken = any(t.name == f"{self.node.id}_axes" for t in self.inits)
            name = self.ints(f"axes{len(self.inits)}" if taken else "axes", axes)
            return self.op(op_type, [x, name], out=out, keepdims=int(keepdims))
        return self.op(op_type, [x], out=out, axes=list(axes), keepdims=int(keepdims))

    def op(self, op_type: str, inputs: list[str], out: str | None = None, outputs: list[str] | None = None,
           **attrs: Any) -> str:
        """Add one ONNX node; its (first) output is ``out``, by default the node's own tensor."""
        out = out or self.node.id
        self.nodes.append(helper.make_node(op_type, inputs, outputs or [out], name=out, **attrs))
        return out


Emitter = Callable[[Ctx, list[str], dict[str, object]], Any]
EMITTERS: dict[str, Emitter] = {}


emits = registrar(EMITTERS)
EMITTERS.update(EXPORTED_EMITTERS)  # the exported forms (ops.onnx_exported), written out


def value_info(name: str, t: TensorType) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, DTYPES[t.dtype], list(t.shape))


def ir_version(opset: int) -> int:
    """The IR version a model of ``opset`` declares: the oldest that carries it (8 at 17)."""
    return helper.find_min_ir_version_for([helper.make_opsetid("", opset)])


def build(g: Graph, extra_outputs: list[str] | tuple[str, ...] = ()) -> onnx.ModelProto:
    """``g`` as an ONNX model; ``extra_outputs`` (node ids) become graph outputs too (intermediates)."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    opset = opset_of(g)
    for node in g.nodes:
        ctx = Ctx(g, node, weights_rng(g.seed, node.id))
        EMITTERS.get(node.op, _recorded)(ctx, list(node.inputs), node.params)
        if not any(node.id in n.output for n in ctx.nodes):
            raise RuntimeError(f"emitter for {node.op} did not produce the tensor {node.id!r}")
        nodes += ctx.nodes
        inits += ctx.inits
    outs = list(g.outputs) + [t for t in extra_outputs if t not in g.outputs]
    graph = helper.make_graph(
        nodes, "gbft", [value_info(k, t) for k, t in g.inputs.items()],
        [value_info(o, g.tensor_type(o)) for o in outs], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="gbft-action")
    model.ir_version = ir_version(opset)
    return model


def check(model: onnx.ModelProto) -> onnx.ModelProto:
    """The checker, then strict shape inference (raises on any inconsistency); returns the inferred model."""
    onnx.checker.check_model(model, full_check=False)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)


# --------------------------------------------------------------------------- element-wise


BINARY = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Greater", "Less"}


def operand(ctx: Ctx, x: str, p: Params) -> str:
    """The constant second operand of a one-input binary op (broadcast as exporters write it)."""
    s = ctx.type(x).shape
    shape = {"same": s, "scalar": (), "row": s[-1:],
             "channel": (s[1],) + (1,) * (len(s) - 2) if len(s) >= 2 else s[-1:]}[p["operand"]]
    return ctx.const("b", divisor(ctx.rng, shape) if ctx.node.op == "Div" else uniform(ctx.rng, shape))


@emits(*BINARY)
def _binary(ctx, xs, p):
    b = xs[1] if len(xs) > 1 else operand(ctx, xs[0], p)
    ctx.op(ctx.node.op, [xs[0], b])


@emits("Where")
def _where(ctx, xs, p):
    if "values" in p:  # the solver's hinge: special values or integer edges at constant places
        return _hinge_values(ctx, xs[0], p["values"])
    # x < t written as t > x: the condition is glue, and MNN's Less is wrong for two negative
    # operands (it is a block of its own): with Less here, every Where on a negative threshold
    # failed alone, and its keys named Where for Less's defect.
    cond = ctx.op("Greater", [ctx.const("t", np.float32(p["threshold"])), xs[0]], out=f"{ctx.node.id}_cond")
    y = xs[1] if len(xs) > 1 else ctx.const("y", uniform(ctx.rng, ctx.type(xs[0]).shape))
    ctx.op("Where", [cond, xs[0], y])


def _hinge_values(ctx: Ctx, x: str, kind: str) -> None:
    """Where(mask, values, x): the hinge's values (ops.onnx_specs: NaN, +-Inf, +-0 for
    "nonfinite"; integer edges for "edges") at a third of x's elements, each value once when
    there is room (an IsNaN of 6 elements sees every kind), one element of x kept at least."""
    t = ctx.type(x)
    pool: np.ndarray = np.asarray(FLOAT_SPECIALS if kind == "nonfinite" else INT_EDGES, dtype=NP[t.dtype])
    size = int(np.prod(t.shape, dtype=np.int64))
    n = max(0, min(size - 1, max(len(pool), size // 3)))
    at = ctx.rng.permutation(size)[:n]
    mask, values = np.zeros(size, np.bool_), np.zeros(size, pool.dtype)
    mask[at], values[at] = True, np.resize(ctx.rng.permutation(pool), n)
    ctx.op("Where", [ctx.const("mask", mask.reshape(t.shape), np.bool_),
                     ctx.const("values", values.reshape(t.shape), pool.dtype), x])


UNARY = ("Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Abs", "Neg", "Erf", "Floor", "Ceil", "Softplus", "HardSwish")


@emits(*UNARY)
def _unary(ctx, xs, p):
    if "scale" in p:  # the solver's ties hinge: Floor(x * scale) / scale
        np_type = NP[ctx.type(xs[0]).dtype]
        scaled = ctx.op("Mul", [xs[0], ctx.const("scale", p["scale"], np_type)], out=f"{ctx.node.id}_scaled")
        floor = ctx.op(ctx.node.op, [scaled], out=f"{ctx.node.id}_floor")
        ctx.op("Mul", [floor, ctx.const("unscale", 1.0 / p["scale"], np_type)])
        return
    ctx.op(ctx.node.op, xs)


@emits("LeakyRelu", "HardSigmoid", "Elu")
def _unary_attrs(ctx, xs, p):
    ctx.op(ctx.node.op, xs, **{k: float(v) for k, v in p.items()})


@emits("Clip")
def _clip(ctx, xs, p):
    ctx.op("Clip", [xs[0], ctx.const("min", np.float32(p["min"])), ctx.const("max", np.float32(p["max"]))])


@emits("Cast")
def _cast(ctx, xs, p):
    ctx.op("Cast", xs, to=DTYPES[p["to"]])


# --------------------------------------------------------------------------- convolution & normalisation


@emits("Conv")
def _conv(ctx, xs, p):
    c = ctx.type(xs[0]).shape[1]
    w = ctx.const("w", uniform(ctx.rng, (p["out_ch"], c // p["group"], p["kh"], p["kw"])))
    ins = [xs[0], w] + ([ctx.const("bias", uniform(ctx.rng, (p["out_ch"],)))] if p["bias"] else [])
    attrs: dict[str, object] = {"kernel_shape": [p["kh"], p["kw"]], "strides": [p["sh"], p["sw"]],
                             "dilations": [p["dh"], p["dw"]], "group": p["group"]}
    if p["auto_pad"] == "NOTSET":
        attrs["pads"] = list(p["pads"])
    else:
        attrs["auto_pad"] = p["auto_pad"]
    ctx.op("Conv", ins, **attrs)


@emits("ConvTranspose")
def _conv_transpose(ctx, xs, p):
    c = ctx.type(xs[0]).shape[1]
    w = ctx.const("w", uniform(ctx.rng, (c, p["out_ch"] // p["group"], p["kh"], p["kw"])))
    ins = [xs[0], w] + ([ctx.const("bias", uniform(ctx.rng, (p["out_ch"],)))] if p["bias"] else [])
    ctx.op("ConvTranspose", ins, kernel_shape=[p["kh"], p["kw"]], strides=[p["sh"], p["sw"]], pads=list(p["pads"]),
           output_padding=list(p["output_padding"]), group=p["group"])


@emits("DepthToSpace")
def _depth_to_space(ctx, xs, p):
    ctx.op("DepthToSpace", xs, blocksize=p["blocksize"], mode=p["mode"])


@emits("SpaceToDepth")
def _space_to_depth(ctx, xs, p):
    ctx.op("SpaceToDepth", xs, blocksize=p["blocksize"])


@emits("PRelu")
def _prelu(ctx, xs, p):
    s = ctx.type(xs[0]).shape
    shape = (s[1],) + (1,) * (len(s) - 2) if p["slope"] == "channel" else (1,)
    ctx.op("PRelu", [xs[0], ctx.const("slope", uniform(ctx.rng, shape))])


@emits("InstanceNormalization")
def _instance_norm(ctx, xs, p):
    c = ctx.type(xs[0]).shape[1]
    scale, bias = ctx.const("scale", uniform(ctx.rng, (c,))), ctx.const("bias", uniform(ctx.rng, (c,)))
    ctx.op("InstanceNormalization", [xs[0], scale, bias], epsilon=float(p["epsilon"]))


@emits("MaxPool", "AveragePool")
def _pool(ctx, xs, p):
    attrs = {"kernel_shape": [p["kh"], p["kw"]], "strides": [p["sh"], p["sw"]], "pads": list(p["pads"]),
             "ceil_mode": int(p["ceil_mode"])}
    if ctx.node.op == "AveragePool":
        attrs["count_include_pad"] = int(p["count_include_pad"])
    ctx.op(ctx.node.op, xs, **attrs)


@emits("GlobalAveragePool")
def _global_pool(ctx, xs, p):
    ctx.op("GlobalAveragePool", xs)


@emits("BatchNormalization")
def _batch_norm(ctx, xs, p):
    c = ctx.type(xs[0]).shape[1]
    scale, bias, mean = (ctx.const(k, uniform(ctx.rng, (c,))) for k in ("scale", "bias", "mean"))
    var = ctx.const("var", uniform(ctx.rng, (c,), 0.1, 1.0))  # a variance is positive (ranges.BN_MIN_VARIANCE)
    ctx.op("BatchNormalization", [xs[0], scale, bias, mean, var], epsilon=float(p["epsilon"]))


@emits("LayerNormalization")
def _layer_norm(ctx, xs, p):
    shape = ctx.type(xs[0]).shape[p["axis"]:]
    scale, bias = ctx.const("scale", uniform(ctx.rng, shape)), ctx.const("bias", uniform(ctx.rng, shape))
    ctx.op("LayerNormalization", [xs[0], scale, bias], axis=p["axis"], epsilon=float(p["epsilon"]))


@emits("Gemm")
def _gemm(ctx, xs, p):
    r0, r1 = ctx.type(xs[0]).shape
    m, k = (r1, r0) if p["transA"] else (r0, r1)
    n = p["n"]
    b = xs[1] if len(xs) > 1 else ctx.const("w", uniform(ctx.rng, (n, k) if p["transB"] else (k, n)))
    c_shape = {"none": None, "scalar": (1,), "row": (n,), "full": (m, n)}[p["c"]]
    ins = [xs[0], b] + ([ctx.const("c", uniform(ctx.rng, c_shape))] if c_shape else [])
    ctx.op("Gemm", ins, alpha=float(p["alpha"]), beta=float(p["beta"]), transA=int(p["transA"]),
           transB=int(p["transB"]))


@emits("MatMul")
def _matmul(ctx, xs, p):
    if len(xs) > 1:
        ctx.op("MatMul", xs)
        return
    spec = ONNX_SPECS["MatMul"]
    assert isinstance(spec, MatMul)
    w = ctx.const("w", uniform(ctx.rng, spec.weight_shape(ctx.type(xs[0]).shape, p)))
    ctx.op("MatMul", [w, xs[0]] if p["form"] == "left" else [xs[0], w])


# --------------------------------------------------------------------------- image


@emits("Resize")
def _resize(ctx, xs, p):
    n, c, _, _ = ctx.type(xs[0]).shape
    roi = ""
    if p["coordinate_transformation_mode"] == "tf_crop_and_resize":
        lo, hi = ctx.rng.uniform(0.0, 0.4, size=2), ctx.rng.uniform(0.6, 1.0, size=2)
        roi = ctx.const("roi", [0.0, 0.0, lo[0], lo[1], 1.0, 1.0, hi[0], hi[1]])
    if p["by"] == "scales":
        ins = [xs[0], roi, ctx.const("scales", [1.0, 1.0, p["sh"], p["sw"]])]
    else:
        ins = [xs[0], roi, "", ctx.ints("sizes", [n, c, p["out_h"], p["out_w"]])]
    ctx.op("Resize", ins, mode=p["mode"], coordinate_transformation_mode=p["coordinate_transformation_mode"],
           nearest_mode=p["nearest_mode"], cubic_coeff_a=float(p["cubic_coeff_a"]),
           exclude_outside=int(p["exclude_outside"]))


@emits("GridSample")
def _grid_sample(ctx, xs, p):
    n = ctx.type(xs[0]).shape[0]
    grid = ctx.const("grid", uniform(ctx.rng, (n, p["out_h"], p["out_w"], 2), -1.2, 1.2))  # some outside: padding
    mode = GRID_MODES_20.get(p["mode"], p["mode"]) if ctx.opset >= 20 else p["mode"]
    ctx.op("GridSample", [xs[0], grid], mode=mode, padding_mode=p["padding_mode"],
           align_corners=int(p["align_corners"]))


GRID_MODES_20 = {"bilinear": "linear", "bicubic": "cubic"}  # GridSample-20's names of the 2-D modes


# --------------------------------------------------------------------------- shape & layout


@emits("Pad")
def _pad(ctx, xs, p):
    t = ctx.type(xs[0])
    pads = ctx.ints("pads", [a for a, _ in p["pads"]] + [b for _, b in p["pads"]])
    mode = p.get("mode", "constant")  # the solver's adapter pads with zeros
    ins = [xs[0], pads]
    if mode == "constant":
        ins.append(ctx.const("value", np.asarray(p.get("value", 0.0)).astype(NP[t.dtype]), NP[t.dtype]))
    ctx.op("Pad", ins, mode=mode)


@emits("Slice")
def _slice(ctx, xs, p):
    if "begin" in p:  # the solver's adapter: begin / size on every axis
        starts, ends = list(p["begin"]), [b + s for b, s in zip(p["begin"], p["size"])]
        axes, steps = list(range(len(starts))), [1] * len(starts)
    else:
        starts, ends, axes, steps = p["starts"], p["ends"], p["axes"], p["steps"]
    ctx.op("Slice", [xs[0], ctx.ints("starts", starts), ctx.ints("ends", ends), ctx.ints("axes", axes),
                     ctx.ints("steps", steps)])


@emits("Split")
def _split(ctx, xs, p):
    outs = [ctx.node.id if k == p["take"] else f"{ctx.node.id}_part{k}" for k in range(len(p["split"]))]
    if ctx.opset >= 18 and len(set(p["split"])) == 1 and ctx.rng.random() < 0.5:
        # Split-18's other form of equal parts, as exporters write it: num_outputs, no sizes
        # input (a converter reading only the input would split into one part).
        return ctx.op("Split", xs[:1], outputs=outs, axis=p["axis"], num_outputs=len(outs))
    ctx.op("Split", [xs[0], ctx.ints("split", p["split"])], outputs=outs, axis=p["axis"])


@emits("Concat")
def _concat(ctx, xs, p):
    ctx.op("Concat", xs, axis=p["axis"])


@emits("Reshape")
def _reshape(ctx, xs, p):
    shape = list(p["shape"])
    if p.get("infer_at", -1) >= 0:
        shape[p["infer_at"]] = -1
    ctx.op("Reshape", [xs[0], ctx.ints("shape", shape)])


@emits("ShapeReshape")
def _shape_reshape(ctx, xs, p):
    i = ctx.node.id
    shape = ctx.op("Shape", xs, out=f"{i}_shape")
    kept = ctx.op("Gather", [shape, ctx.ints("keep", list(range(p["keep"])))], out=f"{i}_kept", axis=0)
    target = ctx.op("Concat", [kept, ctx.ints("rest", [-1])], out=f"{i}_target", axis=0)
    ctx.op("Reshape", [xs[0], target])


@emits("Flatten")
def _flatten(ctx, xs, p):
    ctx.op("Flatten", xs, axis=p["axis"])


@emits("Transpose")
def _transpose(ctx, xs, p):
    ctx.op("Transpose", xs, perm=list(p["perm"]))


@emits("Squeeze")
def _squeeze(ctx, xs, p):
    if not p["axes"]:  # Squeeze without axes would drop every 1-dim
        ctx.op("Identity", xs)
        return
    ctx.op("Squeeze", [xs[0], ctx.ints("axes", p["axes"])])


@emits("Unsqueeze")
def _unsqueeze(ctx, xs, p):
    ctx.op("Unsqueeze", [xs[0], ctx.ints("axes", [p["axis"]])])


@emits("Expand")
def _expand(ctx, xs, p):
    ctx.op("Expand", [xs[0], ctx.ints("shape", p["shape"])])


@emits("Tile")
def _tile(ctx, xs, p):
    ctx.op("Tile", [xs[0], ctx.ints("repeats", p["multiples"])])


# --------------------------------------------------------------------------- selection & indexing


@emits("Gather")
def _gather(ctx, xs, p):
    idx = np.array(p["indices"], np.int64).reshape(p["ishape"])
    ctx.op("Gather", [xs[0], ctx.const("indices", idx, np.int64)], axis=p["axis"])


@emits("GatherElements")
def _gather_elements(ctx, xs, p):
    d = ctx.type(xs[0]).shape[p["axis"]]
    idx = ctx.rng.integers(-d, d, size=p["ishape"])  # negative indices count from the end
    ctx.op("GatherElements", [xs[0], ctx.const("indices", idx, np.int64)], axis=p["axis"])


@emits("GatherND")
def _gather_nd(ctx, xs, p):
    s, b, k = ctx.type(xs[0]).shape, p["batch_dims"], p["k"]
    cols = [ctx.rng.integers(-s[b + j], s[b + j], size=s[:b] + (p["m"],)) for j in range(k)]
    ctx.op("GatherND", [xs[0], ctx.const("indices", np.stack(cols, axis=-1), np.int64)], batch_dims=b)


@emits("Softmax", "LogSoftmax")
def _softmax(ctx, xs, p):
    ctx.op(ctx.node.op, xs, axis=p["axis"])


REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceLogSumExp")


@emits(*REDUCE)
def _reduce(ctx, xs, p):
    ctx.reduce(ctx.node.op, xs[0], list(p["axes"]), bool(p["keepdims"]))


@emits("ArgMax")
def _argmax(ctx, xs, p):
    ctx.op("ArgMax", xs, axis=p["axis"], keepdims=int(p["keepdims"]), select_last_index=int(p["select_last_index"]))


@emits("TopK")
def _topk(ctx, xs, p):
    me, other = ctx.node.id, f"{ctx.node.id}_other"
    outs = [me, other] if p["output"] == "values" else [other, me]
    ctx.op("TopK", [xs[0], ctx.ints("k", [p["k"]])], outputs=outs, axis=p["axis"], largest=int(p["largest"]),
           sorted=1)


# --------------------------------------------------------------------------- recurrent


@emits("LSTM", "GRU")
def _recurrent(ctx, xs, p):
    i = ctx.type(xs[0]).shape[-1]
    h, d = p["hidden_size"], 2 if p["direction"] == "bidirectional" else 1
    gates = 4 if ctx.node.op == "LSTM" else 3
    w = ctx.const("w", uniform(ctx.rng, (d, gates * h, i)))
    r = ctx.const("r", uniform(ctx.rng, (d, gates * h, h)))
    b = ctx.const("bias", uniform(ctx.rng, (d, 2 * gates * h)))
    attrs: dict[str, object] = {"hidden_size": h, "direction": p["direction"], "layout": p["layout"]}
    if ctx.node.op == "GRU":
        attrs["linear_before_reset"] = int(p["linear_before_reset"])
    ctx.op(ctx.node.op, [xs[0], w, r, b], **attrs)


# --------------------------------------------------------------------------- recorded operators


def _recorded(ctx: Ctx, xs: list[str], p: dict[str, object]) -> None:
    """An operator known from its recorded instances (ops.recorded): the instance's attributes
    and constants, its fed input the node's one input; outputs past the first get names of
    their own (an operator with optional outputs computes what it is asked for)."""
    spec = registry_of(ctx.g).specs.get(ctx.node.op)
    if not isinstance(spec, RecordedSpec):
        raise ValueError(f"graph: node {ctx.node.id}: no operator {ctx.node.op!r} at opset {ctx.opset}")
    k = p.get("instance")
    if not isinstance(k, int) or not 0 <= k < len(spec.instances):
        raise ValueError(f"graph: node {ctx.node.id}: no instance {k!r} of {ctx.node.op}")
    inst = spec.instances[k]
    if inst.body:
        return _inline(ctx, parsed(inst.body), xs[0])
    names = [_recorded_input(ctx, inst, i, xs[0]) for i in range(len(inst.inputs))]
    outs = [ctx.node.id] + [f"{ctx.node.id}_o{j}" for j in range(1, inst.outputs_named)]
    node = helper.make_node(ctx.node.op, names, outs, name=ctx.node.id)
    node.attribute.extend(_attr(a, v, spec.attr_types.get(a, "")) for a, v in sorted(inst.attrs.items()))
    ctx.nodes.append(node)


def _inline(ctx: Ctx, pattern: onnx.GraphProto, fed: str) -> None:
    """A pattern's nodes (its subgraphs' too) in place of the node: its input X is the node's
    input, its output Y the node's tensor, every other name prefixed by the node's id."""
    def name(v: str) -> str:
        return fed if v == "X" else ctx.node.id if v == "Y" else v and f"{ctx.node.id}_{v}"

    h = _renamed(pattern, name)
    ctx.nodes.extend(h.node)
    ctx.inits.extend(h.initializer)


def _renamed(g: onnx.GraphProto, name: Callable[[str], str]) -> onnx.GraphProto:
    h = copy.deepcopy(g)
    for v in [*h.input, *h.output, *h.value_info]:
        v.name = name(v.name)
    for t in h.initializer:
        t.name = name(t.name)
    for n in h.node:
        n.ClearField("domain")  # the default domain, as helper.make_node leaves it (and a repro prints it)
        n.name = name(n.name or n.output[0])
        n.input[:] = [name(v) for v in n.input]
        n.output[:] = [name(v) for v in n.output]
        attrs = sorted(n.attribute, key=lambda a: a.name)  # in helper.make_node's order, as a repro prints them
        for a in attrs:
            if a.type == onnx.AttributeProto.GRAPH:
                a.g.CopyFrom(_renamed(a.g, name))
            elif a.type == onnx.AttributeProto.TENSOR:
                # As numpy_helper writes it (raw bytes), as a repro prints it and exporters
                # write it: the parser keeps a bool in int32_data, which MNN's converter reads
                # as bytes (a Compress condition [1,0,1,1,0,1] became [1,0,0,0,0,0]).
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t), a.t.name))
        n.ClearField("attribute")
        n.attribute.extend(attrs)
    return h


def _recorded_input(ctx: Ctx, inst: Instance, i: int, fed: str) -> str:
    t = inst.inputs[i]
    if t is None:
        return ""  # an optional input the instance leaves out
    if i == inst.fed:
        return fed
    v = t["value"]
    return ctx.const(f"c{i}", np.asarray(v["data"], dtype=v["dtype"]).reshape(v["shape"]), v["dtype"])


def _attr(name: str, v: Any, kind: str) -> onnx.AttributeProto:
    """A recorded attribute, typed by its schema (helper cannot infer an empty list's type); a
    tensor value rebuilt from its JSON form."""
    if isinstance(v, dict) and "tensor" in v:
        t = v["tensor"]
        v = numpy_helper.from_array(np.asarray(t["data"], dtype=t["dtype"]).reshape(t["shape"]))
    return helper.make_attribute(name, v, attr_type=getattr(onnx.AttributeProto, kind.upper(), None))

