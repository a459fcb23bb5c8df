"""TensorFlow-front-end IR graph -> ONNX model with TensorFlow's semantics: a second reference.

The model is never given to an engine: ONNX Runtime runs it beside TensorFlow so that a
case the engine fails can be told apart from a case where the references themselves
disagree (``pipeline.Lane._cross_reference``).  So tensors stay NHWC as in the TF model,
and layout-sensitive operators are wrapped in Transposes to ONNX's NCHW.

Each TF operator is written as ONNX nodes with the *same* semantics (TF's SAME padding as
explicit pads, TF's LRN alpha per element, TF's resize coordinate rules, ...); an operator,
or a parameter of one, that ONNX cannot express exactly makes the whole graph not
cross-checkable (``translate`` returns no model and names it): an approximate
translation would blame TensorFlow for what the translation got wrong.  Constants come
from ``weights_rng(graph seed, node id)`` in the order ``tf_emit`` draws them, so they are
bit-identical to the TF model's (transposed where ONNX wants another layout).

No TensorFlow.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..graph.ir import Graph, Params
from . import registrar
from ..frontends import LEGACY_OPSET
from .onnx_emit import DTYPES, IR_VERSION, NP, Ctx, value_info
from .weights import divisor, uniform, weights_rng

INT64_MAX, INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


class NotCrossCheckable(Exception):
    """The operator (with these parameters) has no faithful ONNX counterpart."""

    def __init__(self, op: str, why: str = "") -> None:
        super().__init__(f"{op}: {why}" if why else op)
        self.op = op


Emitter = Callable[[Ctx, list[str], dict[str, object]], Any]
EMITTERS: dict[str, Emitter] = {}


emits = registrar(EMITTERS)


def translate(g: Graph, extra_outputs: list[str] | tuple[str, ...] = ()) -> tuple[onnx.ModelProto | None, str]:
    """``(model, "")``, or ``(None, reason)`` naming the first operator without a faithful
    counterpart ("Cropandresize", "Resize: method=area")."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    try:
        for node in g.nodes:
            if node.op not in EMITTERS:
                raise NotCrossCheckable(node.op)
            ctx = Ctx(g, node, weights_rng(g.seed, node.id))
            EMITTERS[node.op](ctx, list(node.inputs), node.params)
            nodes += ctx.nodes
            inits += ctx.inits
    except NotCrossCheckable as e:
        return None, str(e)
    outs = list(g.outputs) + [t for t in extra_outputs if t not in g.outputs]
    graph = helper.make_graph(nodes, "gbft-tf-reference", [value_info(k, t) for k, t in g.inputs.items()],
                              [value_info(o, g.tensor_type(o)) for o in outs], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", LEGACY_OPSET)], producer_name="gbft-action")
    model.ir_version = IR_VERSION
    return model, ""


def blocker(g: Graph) -> str:
    """Why ``g`` is not cross-checkable ("" when it is)."""
    return translate(g)[1]


# --------------------------------------------------------------------------- helpers


def nchw(ctx: Ctx, x: str) -> str:
    return ctx.op("Transpose", [x], out=f"{ctx.node.id}_nchw", perm=TO_NCHW)


def to_nhwc(ctx: Ctx, y: str) -> None:
    ctx.op("Transpose", [y], perm=TO_NHWC)


def in_nchw(ctx: Ctx, op_type: str, xs: list[str], **attrs: Any) -> None:
    """``op_type`` on the NCHW view of xs[0] (further inputs as given), the result back in NHWC."""
    y = ctx.op(op_type, [nchw(ctx, xs[0]), *xs[1:]], out=f"{ctx.node.id}_y", **attrs)
    to_nhwc(ctx, y)


def same_pads(i: int, o: int, k: int, s: int, d: int = 1) -> tuple[int, int]:
    """TensorFlow's SAME padding of one axis: the odd pixel goes at the end."""
    total = max((o - 1) * s + (k - 1) * d + 1 - i, 0)
    return total // 2, total - total // 2


def spatial_pads(ctx: Ctx, p: Params, kh: int, kw: int, s: int, d: int = 1) -> list[int]:
    """ONNX pads [top, left, bottom, right] for TF's padding of this node (NHWC shapes)."""
    _, h, w, _ = ctx.type(ctx.node.inputs[0]).shape
    _, oh, ow, _ = ctx.node.out.shape
    if p["padding"] == "VALID":
        return [0, 0, 0, 0]
    if p["padding"] == "EXPLICIT":
        t, b, left, r = p["pads"]
        return [t, left, b, r]
    (t, b), (left, r) = same_pads(h, oh, kh, s, d), same_pads(w, ow, kw, s, d)
    return [t, left, b, r]


# --------------------------------------------------------------------------- element-wise


UNARY = {"Ceil": "Ceil", "Exp": "Exp", "Relu": "Relu", "Sigmoid": "Sigmoid", "Sqrt": "Sqrt", "Tanh": "Tanh"}
BINARY = {"Add": "Add", "Sub": "Sub", "Mul": "Mul", "Realdiv": "Div", "Maximum": "Max", "Minimum": "Min",
          "Greater": "Greater"}
# tf.nn.selu's constants (as float32 they are ONNX's defaults, written out so no default is assumed)
SELU_ALPHA, SELU_GAMMA = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


@emits(*UNARY)
def _unary(ctx, xs, p):
    ctx.op(UNARY[ctx.node.op], xs)


@emits("Relu6")
def _relu6(ctx, xs, p):
    ctx.op("Clip", [xs[0], ctx.const("min", np.float32(0)), ctx.const("max", np.float32(6))])


@emits("Rsqrt")
def _rsqrt(ctx, xs, p):
    ctx.op("Reciprocal", [ctx.op("Sqrt", xs, out=f"{ctx.node.id}_sqrt")])


@emits("Square")
def _square(ctx, xs, p):
    ctx.op("Mul", [xs[0], xs[0]])


@emits("Selu")
def _selu(ctx, xs, p):
    ctx.op("Selu", xs, alpha=SELU_ALPHA, gamma=SELU_GAMMA)


@emits(*BINARY)
def _binary(ctx, xs, p):
    a = xs[0]
    if len(xs) == 2:
        b = xs[1]
    else:  # the constant operand, drawn as tf_emit draws it (numpy broadcasting is ONNX's)
        s = list(ctx.type(a).shape)
        shape = {"same": s, "scalar": [], "channel": s[-1:]}[p["operand"]]
        b = ctx.const("b", divisor(ctx.rng, shape) if ctx.node.op == "Realdiv" else uniform(ctx.rng, shape))
    ctx.op(BINARY[ctx.node.op], [a, b])


@emits("Biasadd")
def _bias_add(ctx, xs, p):
    c = ctx.type(xs[0]).shape[-1]
    ctx.op("Add", [xs[0], ctx.const("bias", uniform(ctx.rng, [c]))])  # NHWC: the channel is the last axis


@emits("Cast")
def _cast(ctx, xs, p):
    ctx.op("Cast", xs, to=DTYPES[p["to"]])


@emits("Fill")
def _fill(ctx, xs, p):
    shape = ctx.op("Shape", xs, out=f"{ctx.node.id}_shape")
    value = helper.make_tensor("value", TensorProto.FLOAT, [1], [float(np.float32(p["value"]))])
    ctx.op("ConstantOfShape", [shape], value=value)


# --------------------------------------------------------------------------- convolution & pooling


@emits("Conv2d")
def _conv2d(ctx, xs, p):
    cin = ctx.type(xs[0]).shape[-1]
    w = uniform(ctx.rng, [p["kh"], p["kw"], cin, p["out_ch"]])  # HWIO, as TensorFlow's
    s, d = p["stride"], p["dilation"]
    in_nchw(ctx, "Conv", [xs[0], ctx.const("w", w.transpose(3, 2, 0, 1))], kernel_shape=[p["kh"], p["kw"]],
            strides=[s, s], dilations=[d, d], pads=spatial_pads(ctx, p, p["kh"], p["kw"], s, d))


@emits("Depthwise")
def _depthwise(ctx, xs, p):
    cin = ctx.type(xs[0]).shape[-1]
    kh, kw, m = p["kh"], p["kw"], p["multiplier"]
    w = uniform(ctx.rng, [kh, kw, cin, m])
    # TF's output channel c*m + j reads input channel c: ONNX's group c, filter c*m + j.
    w_onnx = w.reshape(kh, kw, cin * m).transpose(2, 0, 1).reshape(cin * m, 1, kh, kw)
    s, d = p["stride"], p["dilation"]
    in_nchw(ctx, "Conv", [xs[0], ctx.const("w", w_onnx)], kernel_shape=[kh, kw], strides=[s, s],
            dilations=[d, d], group=cin, pads=spatial_pads(ctx, p, kh, kw, s, d))


@emits("Deconv2d")
def _deconv2d(ctx, xs, p):
    _, h, w, cin = ctx.type(xs[0]).shape
    _, oh, ow, _ = ctx.node.out.shape
    f = uniform(ctx.rng, [p["kh"], p["kw"], p["out_ch"], cin])  # TF: [kh, kw, out, in]
    s = p["stride"]
    # TF's transposed conv is the gradient of a conv from the output shape with this padding:
    # the full result cropped by that conv's pads, zero-filled at the end if it falls short.
    pads, extra = [0, 0, 0, 0], [0, 0]
    for ax, (i, o, k) in enumerate(((h, oh, p["kh"]), (w, ow, p["kw"]))):
        lo, hi = same_pads(o, i, k, s) if p["padding"] == "SAME" else (0, 0)
        full = (i - 1) * s + k
        pads[ax], pads[ax + 2], extra[ax] = lo, hi, o - (full - lo - hi)
    if any(e < 0 or 0 < s <= e for e in extra):  # ONNX's output_padding is below the stride
        raise NotCrossCheckable("Deconv2d", f"output shape {ctx.node.out.shape} not reachable by output_padding")
    in_nchw(ctx, "ConvTranspose", [xs[0], ctx.const("w", f.transpose(3, 2, 0, 1))],
            kernel_shape=[p["kh"], p["kw"]], strides=[s, s], pads=pads, output_padding=extra)


@emits("Avgpooling", "Maxpooling")
def _pool(ctx, xs, p):
    attrs: dict[str, object] = {"kernel_shape": [p["kh"], p["kw"]], "strides": [p["stride"]] * 2,
                             "pads": spatial_pads(ctx, p, p["kh"], p["kw"], p["stride"])}
    if ctx.node.op == "Avgpooling":
        attrs["count_include_pad"] = 0  # TF averages over the real pixels of a window only
    in_nchw(ctx, "AveragePool" if ctx.node.op == "Avgpooling" else "MaxPool", xs, **attrs)


@emits("Fusedbatchnorm")
def _fused_bn(ctx, xs, p):
    c = ctx.type(xs[0]).shape[-1]
    scale, offset, mean = (uniform(ctx.rng, [c]) for _ in range(3))
    var = uniform(ctx.rng, [c], 0.1, 1.0)
    ins = [ctx.const(k, v) for k, v in (("scale", scale), ("offset", offset), ("mean", mean), ("var", var))]
    in_nchw(ctx, "BatchNormalization", [xs[0], *ins], epsilon=float(p["epsilon"]))


@emits("Lrn")
def _lrn(ctx, xs, p):
    size = 2 * p["depth_radius"] + 1
    # TF: x / (bias + alpha * sum)^beta; ONNX divides alpha by the window's size.
    alpha = float(np.float32(p["alpha"]) * np.float32(size))
    in_nchw(ctx, "LRN", xs, size=size, alpha=alpha, beta=float(p["beta"]), bias=float(p["bias"]))


# --------------------------------------------------------------------------- shape & layout


@emits("Concat")
def _concat(ctx, xs, p):
    if len(xs) == 1:
        ctx.op("Identity", xs)
    else:
        ctx.op("Concat", xs, axis=p["axis"])


@emits("Reshape")
def _reshape(ctx, xs, p):
    ctx.op("Reshape", [xs[0], ctx.ints("shape", list(p["shape"]))])


@emits("Slice")
def _slice(ctx, xs, p):
    dims = ctx.type(xs[0]).shape
    ends = [d if s == -1 else b + s for b, s, d in zip(p["begin"], p["size"], dims)]  # TF: -1 is "to the end"
    ctx.op("Slice", [xs[0], ctx.ints("starts", list(p["begin"])), ctx.ints("ends", ends)])


@emits("Pad")
def _pad(ctx, xs, p):
    t = ctx.type(xs[0])
    pads = [a for a, _ in p["pads"]] + [b for _, b in p["pads"]]
    zero = ctx.const("value", np.zeros((), NP[t.dtype]), NP[t.dtype])
    ctx.op("Pad", [xs[0], ctx.ints("pads", pads), zero], mode="constant")


@emits("Stridedslice")
def _strided_slice(ctx, xs, p):
    starts, ends = [], []
    for i, (b, e, s) in enumerate(zip(p["begin"], p["end"], p["strides"])):
        # A mask bit means "from the first / to the last element in the stride's direction".
        starts.append((0 if s > 0 else INT64_MAX) if p["begin_mask"] >> i & 1 else b)
        ends.append((INT64_MAX if s > 0 else INT64_MIN) if p["end_mask"] >> i & 1 else e)
    axes = list(range(len(starts)))
    ctx.op("Slice", [xs[0], ctx.ints("starts", starts), ctx.ints("ends", ends), ctx.ints("axes", axes),
                     ctx.ints("steps", list(p["strides"]))])


@emits("Expanddims")
def _expand_dims(ctx, xs, p):
    ctx.op("Unsqueeze", [xs[0], ctx.ints("axes", [p["axis"]])])


@emits("Squeeze")
def _squeeze(ctx, xs, p):
    # TF's Squeeze without axes drops every 1-dim, as ONNX's does.
    ctx.op("Squeeze", [xs[0], ctx.ints("axes", list(p["axes"]))] if p["axes"] else xs)


@emits("Transpose")
def _transpose(ctx, xs, p):
    ctx.op("Transpose", xs, perm=list(p["perm"]))


@emits("Tile")
def _tile(ctx, xs, p):
    ctx.op("Tile", [xs[0], ctx.ints("repeats", list(p["multiples"]))])


@emits("Shape")
def _shape(ctx, xs, p):
    ctx.op("Cast", [ctx.op("Shape", xs, out=f"{ctx.node.id}_i64")], to=TensorProto.INT32)


@emits("GatherV2")
def _gather(ctx, xs, p):
    idx = ctx.const("indices", np.array(p["indices"], np.int64), np.int64)
    ctx.op("Gather", [xs[0], idx], axis=p["axis"])


@emits("Spacetobatchnd")
def _space_to_batch(ctx, xs, p):
    i = ctx.node.id
    n, h, w, c = ctx.type(xs[0]).shape
    bh, bw = p["bh"], p["bw"]
    (t, b), (left, r) = p["pads"]
    hp, wp = (h + t + b) // bh, (w + left + r) // bw
    zero = ctx.const("zero", np.float32(0))
    x = ctx.op("Pad", [xs[0], ctx.ints("pads", [0, t, left, 0, 0, b, r, 0]), zero], out=f"{i}_pad")
    x = ctx.op("Reshape", [x, ctx.ints("s6", [n, hp, bh, wp, bw, c])], out=f"{i}_r6")
    # TF's batch index is (row offset, column offset, original batch), outermost first.
    x = ctx.op("Transpose", [x], out=f"{i}_t6", perm=[2, 4, 0, 1, 3, 5])
    ctx.op("Reshape", [x, ctx.ints("shape", list(ctx.node.out.shape))])


@emits("Batchtospacend")
def _batch_to_space(ctx, xs, p):
    i = ctx.node.id
    n, h, w, c = ctx.type(xs[0]).shape
    bh, bw = p["bh"], p["bw"]
    (t, b), (left, r) = p["crops"]
    x = ctx.op("Reshape", [xs[0], ctx.ints("s6", [bh, bw, n // (bh * bw), h, w, c])], out=f"{i}_r6")
    x = ctx.op("Transpose", [x], out=f"{i}_t6", perm=[2, 3, 0, 4, 1, 5])
    x = ctx.op("Reshape", [x, ctx.ints("s4", [n // (bh * bw), h * bh, w * bw, c])], out=f"{i}_r4")
    ctx.op("Slice", [x, ctx.ints("starts", [t, left]), ctx.ints("ends", [h * bh - b, w * bw - r]),
                     ctx.ints("axes", [1, 2])])


# --------------------------------------------------------------------------- reductions & selection


REDUCE = {"Reducemax": "ReduceMax", "Reducemean": "ReduceMean", "Reduceprod": "ReduceProd",
          "Reducesum": "ReduceSum"}


@emits(*REDUCE)
def _reduce(ctx, xs, p):
    op, keep = REDUCE[ctx.node.op], int(bool(p["keepdims"]))
    if op == "ReduceSum":  # axes became an input at ReduceSum-13 (the others at 18)
        ctx.op(op, [xs[0], ctx.ints("axes", list(p["axes"]))], keepdims=keep)
    else:
        ctx.op(op, xs, axes=list(p["axes"]), keepdims=keep)


@emits("Argmax")
def _argmax(ctx, xs, p):
    if p["output_type"] == "int64":
        ctx.op("ArgMax", xs, axis=p["axis"], keepdims=0)
        return
    y = ctx.op("ArgMax", xs, out=f"{ctx.node.id}_i64", axis=p["axis"], keepdims=0)
    ctx.op("Cast", [y], to=TensorProto.INT32)


@emits("Softmax")
def _softmax(ctx, xs, p):
    ctx.op("Softmax", xs, axis=p["axis"])


@emits("TopKV2")
def _topk(ctx, xs, p):
    i = ctx.node.id
    ctx.op("TopK", [xs[0], ctx.ints("k", [p["k"]])], outputs=[i, f"{i}_indices"], axis=-1, largest=1, sorted=1)


# --------------------------------------------------------------------------- image


def _resize(ctx: Ctx, xs: list[str], mode: str, ctm: str, nearest: str = "round_prefer_floor",
            cubic_a: float = -0.75, exclude_outside: int = 0) -> None:
    n, _, _, c = ctx.type(xs[0]).shape
    _, oh, ow, _ = ctx.node.out.shape
    in_nchw(ctx, "Resize", [xs[0], "", "", ctx.ints("sizes", [n, c, oh, ow])], mode=mode,
            coordinate_transformation_mode=ctm, nearest_mode=nearest, cubic_coeff_a=cubic_a,
            exclude_outside=exclude_outside)


def _tf_bilinear(ctx: Ctx, xs: list[str], align: bool, half: bool) -> None:
    # TF clamps a half-pixel source coordinate below 0 to the first pixel, as ONNX's linear mode does.
    _resize(ctx, xs, "linear", "align_corners" if align else "half_pixel" if half else "asymmetric")


def _tf_nearest(ctx: Ctx, xs: list[str], align: bool, half: bool) -> None:
    """TF's nearest-neighbour resize as two Gathers of the source rows and columns TF picks.

    Its source index is a float32 product rounded (align_corners) or floored, and at an
    exact tie or integer the float error of TF's product and ONNX Runtime's quotient picks
    different pixels (seen on random graphs): the indices TF's own formula gives are the
    operator's definition, so the model gathers those."""
    i = ctx.node.id
    _, h, w, _ = ctx.type(xs[0]).shape
    _, oh, ow, _ = ctx.node.out.shape
    rows = ctx.const("rows", tf_nearest_indices(h, oh, align, half), np.int64)
    cols = ctx.const("cols", tf_nearest_indices(w, ow, align, half), np.int64)
    ctx.op("Gather", [ctx.op("Gather", [xs[0], rows], out=f"{i}_picked", axis=1), cols], axis=2)


def tf_nearest_indices(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    """TensorFlow's ResizeNearestNeighbor source index per output index, in its float32
    arithmetic (image_resizer_state.h: CalculateResizeScale, the scalers, roundf/floorf)."""
    f32 = np.float32
    scale = f32(n_in - 1) / f32(n_out - 1) if align and n_out > 1 else f32(n_in) / f32(n_out)
    y = np.arange(n_out, dtype=f32)
    v = ((y + f32(0.5)) * scale if half else y * scale).astype(f32)
    if align:  # roundf: halves away from zero (v >= 0)
        idx = np.where(v - np.floor(v) >= f32(0.5), np.ceil(v), np.floor(v))
    else:
        idx = np.floor(v)
    return np.clip(idx.astype(np.int64), 0, n_in - 1)


@emits("Resizebilinear")
def _resize_bilinear(ctx, xs, p):
    _tf_bilinear(ctx, xs, bool(p["align_corners"]), bool(p["half_pixel_centers"]))


@emits("Resizenearestneighbor")
def _resize_nearest(ctx, xs, p):
    _tf_nearest(ctx, xs, bool(p["align_corners"]), bool(p["half_pixel_centers"]))


@emits("Resize")
def _resize_v2(ctx, xs, p):
    m = p["method"]
    if m == "bilinear":
        _tf_bilinear(ctx, xs, False, True)
    elif m == "nearest":
        _tf_nearest(ctx, xs, False, True)
    else:
        # bicubic: TensorFlow reads Keys' kernel from a 1024-entry table (its weights are
        # quantised); area: exact pixel areas.  No ONNX mode computes either.
        raise NotCrossCheckable("Resize", f"method={m}")


@emits("Cropandresize")
def _crop_and_resize(ctx, xs, p):
    i = ctx.node.id
    _, h, w, c = ctx.type(xs[0]).shape
    # The boxes as tf_emit draws them; every box crops image 0.
    y0, x0 = ctx.rng.uniform(0.0, 0.5, size=(2, p["boxes"]))
    y1, x1 = ctx.rng.uniform(0.5, 1.0, size=(2, p["boxes"]))
    boxes = np.stack([y0, x0, y1, x1], axis=1).astype(np.float32)
    if p["method"] not in ("bilinear", "nearest"):
        raise NotCrossCheckable("Cropandresize", f"method={p['method']}")
    if p["crop_h"] == h or p["crop_w"] == w:
        # ONNX Runtime 1.32 copies an axis whose size does not change and ignores its ROI
        # (seen on random graphs): a crop as tall or as wide as the image is not its to judge.
        raise NotCrossCheckable("Cropandresize", "a crop size equal to the image's")
    image = ctx.op("Slice", [xs[0], ctx.ints("first", [0]), ctx.ints("one", [1]), ctx.ints("batch", [0])],
                   out=f"{i}_image")
    image = ctx.op("Transpose", [image], out=f"{i}_nchw", perm=TO_NCHW)
    sizes = ctx.ints("sizes", [1, c, p["crop_h"], p["crop_w"]])
    crops = []
    for b, (by0, bx0, by1, bx1) in enumerate(boxes):
        # ONNX's tf_crop_and_resize maps coordinates as TF's CropAndResize does (ROI in [0, 1],
        # a one-pixel crop at the box's centre); TF rounds half away from zero for nearest.
        roi = ctx.const(f"roi{b}", np.array([0, 0, by0, bx0, 1, 1, by1, bx1], np.float32))
        crops.append(ctx.op("Resize", [image, roi, "", sizes], out=f"{i}_crop{b}",
                            mode="linear" if p["method"] == "bilinear" else "nearest",
                            coordinate_transformation_mode="tf_crop_and_resize", nearest_mode="round_prefer_ceil",
                            extrapolation_value=0.0))
    y = ctx.op("Concat", crops, out=f"{i}_y", axis=0)
    to_nhwc(ctx, y)
