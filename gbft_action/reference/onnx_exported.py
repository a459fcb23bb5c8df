"""Emitters of the exported forms (``ops.onnx_exported``): each node written out as the
primitive ONNX operators torch.onnx.export and HF's exporters emit for it, the constants a
converter's fusion pass checks by value written as the exporters write them.

Every helper tensor is ``<id>_<suffix>`` and the last node's output is the node's tensor, as
in ``onnx_emit``.  Registered into ``onnx_emit.EMITTERS`` when that module loads.

No TensorFlow.
"""

from __future__ import annotations

from collections.abc import Mapping
import contextlib
import logging
import math
import os
import tempfile
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..ops.onnx_exported import (GELU_TANH_C, QDQ_OPS, AttentionPattern, QDQPattern, RecurrentPattern, RotaryPattern,
                                  rope_angles)
from . import registrar
from .weights import uniform

if TYPE_CHECKING:  # onnx_emit imports this module: its Ctx for the hints only
    from .onnx_emit import Ctx

EXPORTED_EMITTERS: dict[str, Callable[..., Any]] = {}
emits = registrar(EXPORTED_EMITTERS)

F32_MIN = float(np.finfo(np.float32).min)  # HF's additive mask value: torch.finfo(dtype).min


def _scalar(ctx: Ctx, suffix: str, v: float) -> str:
    return ctx.const(suffix, np.float32(v))


def _t(ctx: Ctx, suffix: str) -> str:
    return f"{ctx.node.id}_{suffix}"


def _mean_last(ctx: Ctx, x: str, out: str) -> str:
    return ctx.reduce("ReduceMean", x, [-1], True, out=_t(ctx, out))


@emits("RMSNormPattern")
def _rms_norm(ctx, xs, p):
    """x * rsqrt(mean(x^2, -1) + eps) * gamma (LLaMA), or x / sqrt(...) (T5's Div form)."""
    x = xs[0]
    d = ctx.type(x).shape[-1]
    sq = ctx.op("Pow", [x, _scalar(ctx, "two", 2.0)], out=_t(ctx, "sq"))
    var = _mean_last(ctx, sq, "var")
    rms = ctx.op("Sqrt", [ctx.op("Add", [var, _scalar(ctx, "eps", p["epsilon"])], out=_t(ctx, "var_eps"))],
                 out=_t(ctx, "rms"))
    last = None if not p["gamma"] else _t(ctx, "normed")
    if p["form"] == "div":
        normed = ctx.op("Div", [x, rms], out=last)
    else:
        normed = ctx.op("Mul", [x, ctx.op("Reciprocal", [rms], out=_t(ctx, "inv"))], out=last)
    if p["gamma"]:
        ctx.op("Mul", [normed, ctx.const("gamma", uniform(ctx.rng, (d,)))])


@emits("LayerNormPattern")
def _layer_norm(ctx, xs, p):
    """(x - mean) / sqrt(mean((x - mean)^2) + eps) * gamma + beta over the last axis."""
    x = xs[0]
    d = ctx.type(x).shape[-1]
    mean = _mean_last(ctx, x, "mean")
    cen = ctx.op("Sub", [x, mean], out=_t(ctx, "centred"))
    sq = (ctx.op("Pow", [cen, _scalar(ctx, "two", 2.0)], out=_t(ctx, "sq")) if p["square"] == "pow"
          else ctx.op("Mul", [cen, cen], out=_t(ctx, "sq")))
    var = _mean_last(ctx, sq, "var")
    std = ctx.op("Sqrt", [ctx.op("Add", [var, _scalar(ctx, "eps", p["epsilon"])], out=_t(ctx, "var_eps"))],
                 out=_t(ctx, "std"))
    if not p["affine"]:
        ctx.op("Div", [cen, std])
        return
    normed = ctx.op("Div", [cen, std], out=_t(ctx, "normed"))
    scaled = ctx.op("Mul", [normed, ctx.const("gamma", uniform(ctx.rng, (d,)))], out=_t(ctx, "scaled"))
    ctx.op("Add", [scaled, ctx.const("beta", uniform(ctx.rng, (d,)))])


@emits("GroupNormPattern")
def _group_norm(ctx, xs, p):
    """torch.nn.GroupNorm's export: InstanceNormalization over [N, G, C/G * H * W] with unit
    scale and zero bias, reshaped back, then the per-channel affine."""
    x = xs[0]
    n, c, h, w = ctx.type(x).shape
    g = p["groups"]
    grouped = ctx.op("Reshape", [x, ctx.ints("grouped_shape", [n, g, -1])], out=_t(ctx, "grouped"))
    normed = ctx.op("InstanceNormalization", [grouped, ctx.const("ones", np.ones(g, np.float32)),
                                              ctx.const("zeros", np.zeros(g, np.float32))],
                    out=_t(ctx, "normed"), epsilon=float(p["epsilon"]))
    back = ctx.op("Reshape", [normed, ctx.ints("shape", [n, c, h, w])], out=_t(ctx, "back"))
    scaled = ctx.op("Mul", [back, ctx.const("gamma", uniform(ctx.rng, (c, 1, 1)))], out=_t(ctx, "scaled"))
    ctx.op("Add", [scaled, ctx.const("beta", uniform(ctx.rng, (c, 1, 1)))])


@emits("GeluPattern")
def _gelu(ctx, xs, p):
    """erf: x * 0.5 * (1 + erf(x / sqrt(2))), in torch's export order (Div, Erf, Add, Mul, Mul);
    tanh: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), in torch's order or nested
    as MNN's own pass expects it."""
    x = xs[0]
    if p["form"] == "erf":
        e = ctx.op("Erf", [ctx.op("Div", [x, _scalar(ctx, "sqrt2", math.sqrt(2.0))], out=_t(ctx, "scaled"))],
                   out=_t(ctx, "erf"))
        one_plus = ctx.op("Add", [e, _scalar(ctx, "one", 1.0)], out=_t(ctx, "one_plus"))
        ctx.op("Mul", [ctx.op("Mul", [x, one_plus], out=_t(ctx, "x_times")), _scalar(ctx, "half", 0.5)])
        return
    cube = ctx.op("Pow", [x, _scalar(ctx, "three", 3.0)], out=_t(ctx, "cube"))
    inner = ctx.op("Add", [x, ctx.op("Mul", [cube, _scalar(ctx, "c", 0.044715)], out=_t(ctx, "c_cube"))],
                   out=_t(ctx, "inner"))
    t = ctx.op("Tanh", [ctx.op("Mul", [inner, _scalar(ctx, "k", GELU_TANH_C)], out=_t(ctx, "k_inner"))],
               out=_t(ctx, "tanh"))
    one_plus = ctx.op("Add", [t, _scalar(ctx, "one", 1.0)], out=_t(ctx, "one_plus"))
    if p["form"] == "tanh_nested":  # x * ((1 + tanh) * 0.5): the nesting MNN's FuseGeLu matches
        ctx.op("Mul", [x, ctx.op("Mul", [one_plus, _scalar(ctx, "half", 0.5)], out=_t(ctx, "gate"))])
        return
    half_x = ctx.op("Mul", [x, _scalar(ctx, "half", 0.5)], out=_t(ctx, "half_x"))  # torch / HF's order
    ctx.op("Mul", [half_x, one_plus])


@emits("SwiGLUPattern")
def _swiglu(ctx, xs, p):
    x = xs[0]
    if p["form"] == "silu":
        ctx.op("Mul", [x, ctx.op("Sigmoid", [x], out=_t(ctx, "sig"))])
        return
    e, hid = ctx.type(x).shape[-1], p["hidden"]
    gate = ctx.op("MatMul", [x, ctx.const("w_gate", uniform(ctx.rng, (e, hid)))], out=_t(ctx, "gate"))
    up = ctx.op("MatMul", [x, ctx.const("w_up", uniform(ctx.rng, (e, hid)))], out=_t(ctx, "up"))
    silu = ctx.op("Mul", [gate, ctx.op("Sigmoid", [gate], out=_t(ctx, "gate_sig"))], out=_t(ctx, "silu"))
    h = ctx.op("Mul", [silu, up], out=_t(ctx, "h"))
    ctx.op("MatMul", [h, ctx.const("w_down", uniform(ctx.rng, (hid, e)))])


@emits("RotaryPattern")
def _rotary(ctx, xs, p):
    """x * cos + rotate_half(x) * sin on the first ``rot`` dims of [B, H, S, D]."""
    x = xs[0]
    b, h, s, d = ctx.type(x).shape
    rot = RotaryPattern.rot(d, p)
    if rot == 0:  # too narrow to rotate (D < 2, or D < 4 when partial): cos of angle 0
        ctx.op("Mul", [x, _scalar(ctx, "cos0", 1.0)])
        return
    cos, sin = _rope_tables(ctx, s, rot, p)
    part = x if rot == d else ctx.op("Slice", [x, ctx.ints("rot_start", [0]), ctx.ints("rot_end", [rot]),
                                               ctx.ints("rot_axes", [-1])], out=_t(ctx, "rot_part"))
    x1 = ctx.op("Slice", [part, ctx.ints("x1_start", [0]), ctx.ints("x1_end", [rot // 2]),
                          ctx.ints("x1_axes", [-1])], out=_t(ctx, "x1"))
    x2 = ctx.op("Slice", [part, ctx.ints("x2_start", [rot // 2]), ctx.ints("x2_end", [rot]),
                          ctx.ints("x2_axes", [-1])], out=_t(ctx, "x2"))
    rotated = ctx.op("Concat", [ctx.op("Neg", [x2], out=_t(ctx, "neg_x2")), x1], out=_t(ctx, "rotated"), axis=-1)
    a = ctx.op("Mul", [part, cos], out=_t(ctx, "x_cos"))
    c = ctx.op("Mul", [rotated, sin], out=_t(ctx, "rot_sin"))
    if rot == d:
        ctx.op("Add", [a, c])
        return
    emb = ctx.op("Add", [a, c], out=_t(ctx, "embedded"))
    rest = ctx.op("Slice", [x, ctx.ints("pass_start", [rot]), ctx.ints("pass_end", [d]),
                            ctx.ints("pass_axes", [-1])], out=_t(ctx, "pass"))
    ctx.op("Concat", [emb, rest], axis=-1)


def _rope_tables(ctx: Ctx, s: int, rot: int, p: dict) -> tuple[str, str]:
    """cos and sin [S, rot]: constants, or Gather'ed from a cache of S + 4 positions by
    position ids (HF's cos_cached[position_ids]), then broadcast over batch and heads."""
    angles = np.asarray(rope_angles(s + 4 if p["cache"] == "gathered" else s, rot, p["base"]), np.float64)
    if p["cache"] == "const":
        return (ctx.const("cos", np.cos(angles).astype(np.float32)),
                ctx.const("sin", np.sin(angles).astype(np.float32)))
    ids = ctx.const("position_ids", np.arange(s, dtype=np.int64), np.int64)
    cos = ctx.op("Gather", [ctx.const("cos_cache", np.cos(angles).astype(np.float32)), ids], out=_t(ctx, "cos"),
                 axis=0)
    sin = ctx.op("Gather", [ctx.const("sin_cache", np.sin(angles).astype(np.float32)), ids], out=_t(ctx, "sin"),
                 axis=0)
    return cos, sin


@emits("AttentionPattern")
def _attention(ctx, xs, p):
    x = xs[0]
    b, s, e = ctx.type(x).shape
    heads, dh, kvh, past = p["heads"], p["head_dim"], AttentionPattern.kv_heads(p), p["past"]
    q = _heads(ctx, x, "q", heads, dh)
    kv_shape = (b, kvh, past + s, dh)  # after the cache
    k = _repeat_kv(ctx, _cached(ctx, _heads(ctx, x, "k", kvh, dh), "k", past, kv_shape), "k", heads, kv_shape)
    v = _repeat_kv(ctx, _cached(ctx, _heads(ctx, x, "v", kvh, dh), "v", past, kv_shape), "v", heads, kv_shape)
    kt = ctx.op("Transpose", [k], out=_t(ctx, "k_t"), perm=[0, 1, 3, 2])
    scores = ctx.op("MatMul", [q, kt], out=_t(ctx, "qk"))
    scores = (ctx.op("Mul", [scores, _scalar(ctx, "scale", 1.0 / math.sqrt(dh))], out=_t(ctx, "scaled"))
              if p["scale"] == "mul" else
              ctx.op("Div", [scores, _scalar(ctx, "sqrt_dh", math.sqrt(dh))], out=_t(ctx, "scaled")))
    if p["mask"] != "none":
        scores = ctx.op("Add", [scores, ctx.const("mask", _mask(p["mask"], s, past))], out=_t(ctx, "masked"))
    probs = ctx.op("Softmax", [scores], out=_t(ctx, "probs"), axis=-1)
    ctxv = ctx.op("MatMul", [probs, v], out=_t(ctx, "pv"))
    merged = ctx.op("Transpose", [ctxv], out=_t(ctx, "pv_t"), perm=[0, 2, 1, 3])
    flat = ctx.op("Reshape", [merged, ctx.ints("merged_shape", [b, s, heads * dh])], out=_t(ctx, "merged"))
    ctx.op("MatMul", [flat, ctx.const("w_o", uniform(ctx.rng, (heads * dh, e)))])


def _heads(ctx: Ctx, x: str, name: str, heads: int, dh: int) -> str:
    """x W reshaped to [B, S, heads, dh] and transposed to [B, heads, S, dh]."""
    b, s, e = ctx.type(x).shape
    proj = ctx.op("MatMul", [x, ctx.const(f"w_{name}", uniform(ctx.rng, (e, heads * dh)))], out=_t(ctx, name))
    split = ctx.op("Reshape", [proj, ctx.ints(f"{name}_shape", [b, s, heads, dh])], out=_t(ctx, f"{name}_heads"))
    return ctx.op("Transpose", [split], out=_t(ctx, f"{name}_bhsd"), perm=[0, 2, 1, 3])


def _cached(ctx: Ctx, t: str, name: str, past: int, shape: tuple[int, int, int, int]) -> str:
    """The key-value cache: ``past`` earlier positions (a constant) concatenated in front;
    ``shape`` is the result's [B, kv heads, past + S, dh]."""
    b, kvh, _, dh = shape
    if past == 0:
        return t
    cache = ctx.const(f"past_{name}", uniform(ctx.rng, (b, kvh, past, dh)))
    return ctx.op("Concat", [cache, t], out=_t(ctx, f"{name}_all"), axis=2)


def _repeat_kv(ctx: Ctx, t: str, name: str, heads: int, shape: tuple[int, int, int, int]) -> str:
    """HF's repeat_kv: [B, kvh, L, dh] -> Unsqueeze(2) -> Expand [B, kvh, rep, L, dh] -> Reshape."""
    b, kvh, length, dh = shape
    if heads == kvh:
        return t
    u = ctx.op("Unsqueeze", [t, ctx.ints(f"{name}_unsq_axes", [2])], out=_t(ctx, f"{name}_unsq"))
    ex = ctx.op("Expand", [u, ctx.ints(f"{name}_expand_shape", [b, kvh, heads // kvh, length, dh])],
                out=_t(ctx, f"{name}_expanded"))
    return ctx.op("Reshape", [ex, ctx.ints(f"{name}_rep_shape", [b, heads, length, dh])], out=_t(ctx, f"{name}_rep"))


def _mask(kind: str, s: int, past: int) -> np.ndarray:
    """[S, past + S]: causal (query i sees keys up to past + i) or padding (the last key, a
    padded position, hidden from every query; never a whole row)."""
    m = np.zeros((s, past + s), np.float32)
    if kind == "causal":
        m[np.triu_indices(s, k=past + 1, m=past + s)] = F32_MIN
    elif past + s > 1:
        m[:, -1] = F32_MIN
    return m


@emits("LSTMPattern", "GRUPattern")
def _recurrent(ctx, xs, p):
    """The op with initialiser weights, every output named; Y transposed to [S, B, D, H] and
    reshaped to [S, B, D * H] as torch writes it, or the last state Y_h."""
    x = xs[0]
    s, b, i = ctx.type(x).shape
    lstm = ctx.node.op == "LSTMPattern"
    h, d, gates = p["hidden_size"], RecurrentPattern.dirs(p), 4 if lstm else 3
    ins = [x, ctx.const("w", uniform(ctx.rng, (d, gates * h, i))), ctx.const("r", uniform(ctx.rng, (d, gates * h, h))),
           ctx.const("bias", uniform(ctx.rng, (d, 2 * gates * h)))]
    # sequence_lens: the last batch entry shorter (padded), never zero steps
    ins.append(ctx.const("seq_lens", np.array([s] * (b - 1) + [max(1, s - 2)], np.int32), np.int32)
               if p["seqlens"] else "")
    if p["init"]:
        ins += [ctx.const(k, uniform(ctx.rng, (d, b, h))) for k in (("h0", "c0") if lstm else ("h0",))]
    while ins[-1] == "":
        ins.pop()
    attrs: dict[str, object] = {"hidden_size": h, "direction": p["direction"]}
    if p["clip"]:
        attrs["clip"] = float(p["clip"])
    if lstm:
        attrs["input_forget"] = int(p["input_forget"])
    else:
        attrs["linear_before_reset"] = int(p["linear_before_reset"])
    y, y_h = (_t(ctx, "y"), ctx.node.id) if p["output"] == "h" else (_t(ctx, "y4"), _t(ctx, "y_h"))
    outs = [y, y_h] + ([_t(ctx, "y_c")] if lstm else [])
    ctx.op("LSTM" if lstm else "GRU", ins, out=outs[0], outputs=outs, **attrs)
    if p["output"] == "y":
        t = ctx.op("Transpose", [y], out=_t(ctx, "y_sbdh"), perm=[0, 2, 1, 3])
        ctx.op("Reshape", [t, ctx.ints("y_shape", [s, b, d * h])])


@emits("CausalConvPattern")
def _causal_conv(ctx, xs, p):
    x = xs[0]
    n, c, t = ctx.type(x).shape
    k = p["kernel"]
    state = ctx.const("state", uniform(ctx.rng, (n, c, k - 1)))
    full = ctx.op("Concat", [state, x], out=_t(ctx, "with_state"), axis=2)
    oc, group = (c, c) if p["depthwise"] else (p["out_ch"], 1)
    w = ctx.const("w", uniform(ctx.rng, (oc, c // group, k)))
    ctx.op("Conv", [full, w, ctx.const("bias", uniform(ctx.rng, (oc,)))], kernel_shape=[k], pads=[0, 0],
           strides=[1], dilations=[1], group=group)


@emits(*QDQ_OPS)
def _qdq(ctx, xs, p):
    """ONNX Runtime's QDQ form of a Conv, MatMul or Gemm (ops.onnx_exported.QDQPattern)."""
    x, op = xs[0], QDQ_OPS[ctx.node.op]
    shape = ctx.type(x).shape
    fan_in, w_shape, axis = _qdq_weight_shape(op, shape, p)
    w = uniform(ctx.rng, w_shape, -1.0 / math.sqrt(fan_in), 1.0 / math.sqrt(fan_in))
    b = uniform(ctx.rng, (p["out_ch"],), -0.1, 0.1) if op != "MatMul" else None
    attrs = {"pads": [p["kernel"] // 2] * 4} if op == "Conv" else {"transB": 1} if op == "Gemm" else {}
    if p.get("quantiser") == "onnxruntime":
        _ort_quantised(ctx, x, op, w, b, attrs, p)
        return
    s_x = QDQPattern.scale(p["act"], p["range"])
    xd = _qdq_pair(ctx, x, "x", s_x, p["act"])
    w_scale, wd = _qdq_weight(ctx, w, axis, p)
    ins = [xd, wd]
    if b is not None:  # ORT's quantiser: an int32 bias at the input scale times the weight scale
        b_scale = np.asarray(s_x * w_scale, np.float32)
        bq = np.round(b / b_scale).astype(np.int32)
        ins.append(ctx.op("DequantizeLinear", [ctx.const("bias_q", bq, np.int32), ctx.const("bias_scale", b_scale),
                                               ctx.const("bias_zp", np.zeros(b_scale.shape, np.int32), np.int32)],
                          out=_t(ctx, "bias"), **({"axis": 0} if b_scale.ndim else {})))
    y = ctx.op(op, ins, out=_t(ctx, "float_out"), **attrs)
    _qdq_pair(ctx, y, "y", QDQPattern.quantum(p), p["act"], out=ctx.node.id)


def _ort_quantised(ctx: Ctx, x: str, op: str, w: np.ndarray, b: np.ndarray | None, attrs: Mapping[str, Any],
                   p: dict) -> None:
    """The float layer quantised by ONNX Runtime's own quantiser (``quantize_static``, QDQ
    format), its nodes and initialisers inlined under this node's names.  The input's and the
    output's scales and zero points are the written form's (TensorQuantOverrides): the oracle's
    bound in quanta needs the output step before the model exists, and calibrating on data
    would make it depend on the values.  What the quantiser decides itself is what users ship:
    where the pairs go, the weights' and the bias's quantisation (asymmetric weights, a float
    bias), per tensor or per channel."""
    from onnx import numpy_helper
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    act = np.int8 if p["act"] == "int8" else np.uint8
    zp = np.array(0 if p["act"] == "int8" else 128, act)
    x_shape, y_shape = ctx.type(x).shape, ctx.node.out.shape
    opset = min(ctx.opset, 21)  # the quantiser's own calibration session runs it
    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(b, "b")] if b is not None else [])
    graph = helper.make_graph([helper.make_node(op, ["x", "w"] + (["b"] if b is not None else []), ["y"], **attrs)],
                              "layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = helper.find_min_ir_version_for([helper.make_opsetid("", opset)])

    class _Zeros:  # a CalibrationDataReader (read by get_next): the overrides fix every range, one sample
        def __init__(self) -> None:
            self.left = [{"x": np.zeros(x_shape, np.float32)}]

        def get_next(self) -> dict[str, np.ndarray] | None:
            return self.left.pop() if self.left else None

    overrides = {name: [{"scale": np.array(s, np.float32), "zero_point": zp}] for name, s in
                 (("x", QDQPattern.scale(p["act"], p["range"])), ("y", QDQPattern.quantum(p)))}
    int4 = p["bits"] == 4 and ctx.opset >= 21
    with tempfile.TemporaryDirectory() as d, _quiet():
        src, dst = os.path.join(d, "float.onnx"), os.path.join(d, "qdq.onnx")
        onnx.save(model, src)
        quantize_static(src, dst, _Zeros(), quant_format=QuantFormat.QDQ, per_channel=bool(p["per_channel"]),
                        activation_type=QuantType.QInt8 if p["act"] == "int8" else QuantType.QUInt8,
                        weight_type=QuantType.QInt4 if int4 else QuantType.QInt8,
                        extra_options={"TensorQuantOverrides": overrides,
                                       "WeightSymmetric": p.get("weights", "symmetric") == "symmetric",
                                       "QuantizeBias": p.get("bias", "int32") == "int32"})
        _inline(ctx, onnx.load(dst).graph, {"x": x, "y": ctx.node.id})


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The quantiser's advice to pre-process, logged on every call, kept out of the worker's log."""
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def _inline(ctx: Ctx, g: onnx.GraphProto, bound: dict[str, str]) -> None:
    """``g``'s nodes and initialisers added to ctx, each name not in ``bound`` under this node's."""
    def name(n: str) -> str:
        return bound.get(n) or (_t(ctx, f"ort_{n}") if n else n)

    for t in g.initializer:
        t.name = name(t.name)
        ctx.inits.append(t)
    for n in g.node:
        ctx.nodes.append(helper.make_node(n.op_type, [name(i) for i in n.input], [name(o) for o in n.output],
                                          name=name(n.output[0]), domain=n.domain or None,
                                          **{a.name: helper.get_attribute_value(a) for a in n.attribute}))


def _qdq_weight_shape(op: str, shape: tuple[int, ...], p: dict) -> tuple[int, tuple[int, ...], int]:
    """The weight's fan-in, shape and output-channel axis: Conv [O, C, k, k] and Gemm [O, K]
    (transB, torch's Linear) on axis 0, MatMul [K, O] on axis 1."""
    o = p["out_ch"]
    if op == "Conv":
        k = p["kernel"]
        return shape[1] * k * k, (o, shape[1], k, k), 0
    if op == "Gemm":
        return shape[-1], (o, shape[-1]), 0
    return shape[-1], (shape[-1], o), 1


def _qdq_pair(ctx: Ctx, t: str, name: str, scale: float, act: str, out: str | None = None) -> str:
    """QuantizeLinear -> DequantizeLinear of tensor ``t`` at ``scale`` (int8 about 0, uint8 about 128)."""
    dtype = np.int8 if act == "int8" else np.uint8
    s, z = ctx.const(f"{name}_scale", np.float32(scale)), ctx.const(f"{name}_zp", dtype(0 if act == "int8" else 128), dtype)
    q = ctx.op("QuantizeLinear", [t, s, z], out=_t(ctx, f"{name}_q"))
    return ctx.op("DequantizeLinear", [q, s, z], out=out or _t(ctx, f"{name}_dq"))


def _qdq_weight(ctx: Ctx, w: np.ndarray, axis: int, p: dict) -> tuple[np.ndarray, str]:
    """The weight as ORT's quantiser stores it: symmetric integers (int4 from opset 21, where
    DequantizeLinear takes it; int8 below) per tensor or per output channel, through
    DequantizeLinear; its scale (a scalar, or one per channel)."""
    int4 = p["bits"] == 4 and ctx.opset >= 21
    qmax = 7 if int4 else 127
    other = tuple(i for i in range(w.ndim) if i != axis)
    peak = np.abs(w).max(axis=other) if p["per_channel"] else np.abs(w).max()
    scale = (np.maximum(peak, 1e-6) / qmax).astype(np.float32)
    per = np.expand_dims(scale, other) if p["per_channel"] else scale
    wq = np.clip(np.round(w / per), -qmax, qmax).astype(np.int8)
    name, zp = f"{ctx.node.id}_w_q", f"{ctx.node.id}_w_zp"
    kind = TensorProto.INT4 if int4 else TensorProto.INT8
    ctx.inits.append(helper.make_tensor(name, kind, wq.shape, wq.ravel().tolist()))
    ctx.inits.append(helper.make_tensor(zp, kind, scale.shape, [0] * scale.size))
    attrs: dict[str, Any] = {"axis": axis} if p["per_channel"] else {}
    return scale, ctx.op("DequantizeLinear", [name, ctx.const("w_scale", scale), zp], out=_t(ctx, "w"), **attrs)
