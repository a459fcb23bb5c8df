"""Value-range rules of the ONNX operators (``ONNX_RULES``), for the solver's guards.

The same contract as ``ops.ranges.RULES`` (a conservative interval of the
output, over the constants ``reference.onnx_emit`` draws: weights U[-1, 1],
BatchNormalization variances U[0.1, 1], divisors +-U[0.5, 1]), keyed by ONNX
operator name.  Names that mean the same in both front ends reuse the
TensorFlow rule; the others are here.
"""

from __future__ import annotations

import math

from . import ranges as R
from .shapes import prod

ONNX_RULES: dict[str, R.Rule] = {
    op: R.RULES[op]
    for op in ("Exp", "Sigmoid", "Tanh", "Ceil", "Relu", "Sqrt", "Add", "Sub", "Mul", "Cast", "Softmax",
               "Reshape", "Slice", "Transpose", "Squeeze", "Tile", "Concat")
}
ONNX_RULES.update({
    "Div": R.RULES["Realdiv"], "Max": R.RULES["Maximum"], "Min": R.RULES["Minimum"],
    "ReduceSum": R.RULES["Reducesum"], "ReduceProd": R.RULES["Reduceprod"],
    "Erf": R._monotone(math.erf),
    "Neg": lambda ins, types, p, out: (-ins[0][1], -ins[0][0]),
})
CUBIC_OVERSHOOT = 1.0  # |weights| of a 2-D cubic (a = -0.75 or -0.5) sum below 2: overshoot below one span


def rule(*ops: str):
    def deco(fn: R.Rule) -> R.Rule:
        for op in ops:
            ONNX_RULES[op] = fn
        return fn
    return deco


def _same(ins, types, p, out):
    return R._hull(*ins)


for _op in ("DepthToSpace", "SpaceToDepth", "ShapeReshape", "Unsqueeze", "Flatten", "Expand", "Split", "Gather", "GatherElements", "GatherND", "ReduceMax",
            "ReduceMin", "ReduceMean", "MaxPool", "GlobalAveragePool", "Identity"):
    ONNX_RULES[_op] = _same


@rule("AveragePool")
def _avg_pool(ins, types, p, out):
    # with count_include_pad the padded zeros count in the mean
    return R._hull(ins[0], (0.0, 0.0)) if p["count_include_pad"] else ins[0]


def _softplus(x: float) -> float:
    return x if x > 30.0 else math.log1p(R._exp(x))


def _hard_swish(x: float) -> float:
    return x * min(max(x / 6.0 + 0.5, 0.0), 1.0)


ONNX_RULES["Softplus"] = R._monotone(_softplus)


@rule("HardSwish")
def _hswish(ins, types, p, out):
    lo, hi = ins[0]
    ends = [_hard_swish(lo) if not math.isinf(lo) else 0.0, _hard_swish(hi) if not math.isinf(hi) else hi]
    low = _hard_swish(-1.5) if lo <= -1.5 <= hi else min(ends)
    return (min(low, *ends), max(ends))


@rule("HardSigmoid")
def _hsigmoid(ins, types, p, out):
    f = lambda x: min(max(p["alpha"] * x + p["beta"], 0.0), 1.0)  # noqa: E731 - monotone for alpha > 0
    return (f(ins[0][0]), f(ins[0][1]))


@rule("LeakyRelu")
def _leaky(ins, types, p, out):
    f = lambda x: x if x >= 0 else p["alpha"] * x  # noqa: E731
    return (f(ins[0][0]), f(ins[0][1]))


@rule("Elu")
def _elu(ins, types, p, out):
    f = lambda x: x if x >= 0 else p["alpha"] * (R._exp(x) - 1.0)  # noqa: E731
    return (f(ins[0][0]), f(ins[0][1]))


@rule("Abs")
def _abs(ins, types, p, out):
    lo, hi = ins[0]
    return (0.0 if lo <= 0.0 <= hi else min(abs(lo), abs(hi)), R.magnitude(ins[0]))


@rule("Clip")
def _clip(ins, types, p, out):
    lo, hi = ins[0]
    return (min(max(lo, p["min"]), p["max"]), min(max(hi, p["min"]), p["max"]))


@rule("Where")
def _where(ins, types, p, out):
    if p.get("values") == "edges":  # the solver's hinge: int32's extremes (ops.onnx_specs.INT_EDGES)
        return R._hull(ins[0], R.INT32)
    if "values" in p:  # NaN and Inf on purpose
        return R.UNKNOWN
    return R._hull(ins[0], ins[1] if len(ins) > 1 else R.UNIT)


@rule("Floor")
def _floor(ins, types, p, out):
    s = float(p.get("scale", 1.0))  # the ties hinge: Floor(x * s) / s
    return (R._floor(ins[0][0] * s) / s, R._floor(ins[0][1] * s) / s)


@rule("Conv")
def _conv(ins, types, p, out):
    # each output sums kh * kw * C / group products with weights in [-1, 1], plus a bias in [-1, 1]
    k = p["kh"] * p["kw"] * types[0].shape[1] // p["group"]
    return R._sym(R._mul(R.magnitude(ins[0]), k) + 1.0)


@rule("ConvTranspose")
def _conv_transpose(ins, types, p, out):
    # each output sums at most kh * kw * C / group products (fewer with stride > 1), plus a bias
    k = p["kh"] * p["kw"] * types[0].shape[1] // p["group"]
    return R._sym(R._mul(R.magnitude(ins[0]), k) + 1.0)


@rule("PRelu")
def _prelu(ins, types, p, out):
    lo, hi = ins[0]  # slopes U[-1, 1]: a negative x times a slope stays within |x|
    return (min(lo, -max(-lo, 0.0)) if lo < 0 else lo, max(hi, max(-lo, 0.0)))


@rule("InstanceNormalization")
def _instance_norm(ins, types, p, out):
    n = prod(types[0].shape[2:])  # a normalised element is at most sqrt(n - 1); scale and bias in [-1, 1]
    return R._sym(math.sqrt(n) + 1.0)


@rule("BatchNormalization")
def _bn(ins, types, p, out):
    return R._sym((R.magnitude(ins[0]) + 1.0) / math.sqrt(R.BN_MIN_VARIANCE + p["epsilon"]) + 1.0)


@rule("LayerNormalization")
def _ln(ins, types, p, out):
    # a normalised element is at most sqrt(n - 1) in magnitude; then scale and bias in [-1, 1]
    n = prod(types[0].shape[p["axis"]:])
    return R._sym(math.sqrt(n) + 1.0)


@rule("Gemm")
def _gemm(ins, types, p, out):
    k = types[0].shape[0] if p["transA"] else types[0].shape[1]
    other = R.magnitude(ins[1]) if len(ins) > 1 else 1.0
    return R._sym(p["alpha"] * R._mul(R.magnitude(ins[0]), R._mul(other, k)) + p["beta"])


@rule("MatMul")
def _matmul(ins, types, p, out):
    x = types[0].shape
    k = x[-2] if p["form"] == "left" else x[-1]
    other = R.magnitude(ins[1]) if len(ins) > 1 else 1.0
    return R._sym(R._mul(R.magnitude(ins[0]), R._mul(other, k)))


def _resample(lo: float, hi: float, cubic: bool, zero: bool) -> R.Interval:
    if zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    if not cubic:
        return (lo, hi)
    over = CUBIC_OVERSHOOT * (hi - lo)
    return (lo - over, hi + over)


@rule("Resize")
def _resize(ins, types, p, out):
    crop = p["coordinate_transformation_mode"] == "tf_crop_and_resize"  # extrapolates 0 outside the roi
    return _resample(*ins[0], p["mode"] == "cubic", crop)


@rule("GridSample")
def _grid_sample(ins, types, p, out):
    return _resample(*ins[0], p["mode"] == "bicubic", p["padding_mode"] == "zeros")


@rule("Pad")
def _pad(ins, types, p, out):
    if p.get("mode", "constant") != "constant":
        return ins[0]
    v = float(p.get("value", 0.0))
    return R._hull(ins[0], (v, v))


@rule("LogSoftmax")
def _log_softmax(ins, types, p, out):
    lo, hi = ins[0]
    return (lo - hi - math.log(types[0].shape[p["axis"]]), 0.0)


@rule("ReduceL2")
def _reduce_l2(ins, types, p, out):
    n = prod([types[0].shape[a] for a in p["axes"]])
    return (0.0, R._mul(R.magnitude(ins[0]), math.sqrt(n)))


@rule("ReduceLogSumExp")
def _reduce_lse(ins, types, p, out):
    n = prod([types[0].shape[a] for a in p["axes"]])
    return (ins[0][0], ins[0][1] + math.log(n))


@rule("ArgMax")
def _argmax(ins, types, p, out):
    return (0.0, float(types[0].shape[p["axis"]] - 1))


@rule("TopK")
def _topk(ins, types, p, out):
    if p["output"] == "indices":
        return (0.0, float(types[0].shape[p["axis"]] - 1))
    return ins[0]


@rule("LSTM", "GRU")
def _recurrent(ins, types, p, out):
    return R.UNIT  # o * tanh(c) and (1 - z) * tanh(.) + z * h with h0 = 0


# --------------------------------------------------------------------------- exported forms (ops.onnx_exported)


@rule("RMSNormPattern", "LayerNormPattern")
def _norm_pattern(ins, types, p, out):
    # |x / rms(x)| <= sqrt(n) over the n elements of the last axis; gamma and beta in [-1, 1]
    return R._sym(math.sqrt(types[0].shape[-1]) + 1.0)


@rule("GroupNormPattern")
def _group_norm_pattern(ins, types, p, out):
    n, c = types[0].shape[:2]
    return R._sym(math.sqrt(prod(types[0].shape) // (n * p["groups"])) + 1.0)


@rule("GeluPattern", "SwiGLUPattern")
def _gated(ins, types, p, out):
    lo, hi = ins[0]
    if p.get("form") == "swiglu":  # down(silu(x Wg) * (x Wu)): weights U[-1, 1]
        e = types[0].shape[-1]
        m = R._mul(R.magnitude(ins[0]), e)
        return R._sym(R._mul(R._mul(m, m), p["hidden"]))
    return (min(lo, -0.3), max(hi, 0.0))  # x * gate(x) >= -0.28 (SiLU's minimum; Gelu's is -0.17)


@rule("RotaryPattern")
def _rotary(ins, types, p, out):
    return R._sym(2.0 * R.magnitude(ins[0]))  # |x cos + y sin| <= |x| + |y|


@rule("AttentionPattern")
def _attention(ins, types, p, out):
    e = types[0].shape[-1]
    v = max(R._mul(R.magnitude(ins[0]), e), 1.0)  # a value (or a cached one, in [-1, 1])
    return R._sym(R._mul(v, p["heads"] * p["head_dim"]))  # a convex mix of values, projected


@rule("CausalConvPattern")
def _causal_conv(ins, types, p, out):
    c = types[0].shape[1]
    taps = p["kernel"] * (1 if p["depthwise"] else c)
    return R._sym(R._mul(max(R.magnitude(ins[0]), 1.0), taps) + 1.0)


@rule("LSTMPattern", "GRUPattern")
def _recurrent_pattern(ins, types, p, out):
    # o * tanh(c) and (1 - z) * tanh(.) + z * h: within [-1, 1] from a state in [-1, 1]
    return R.UNIT


@rule("QDQConvPattern", "QDQMatMulPattern", "QDQGemmPattern")
def _qdq_pattern(ins, types, p, out):
    return R._sym(p["out_range"] * 128 / 127)  # the output grid: uint8's 128 steps below its zero point
