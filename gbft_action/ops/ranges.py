"""Value ranges: a conservative interval [lo, hi] per tensor, and each operator's domain.

A NaN or an infinity the generator makes by accident (Rsqrt of a negative, x / 0,
Exp of a large value, a chain of Squares) flows downstream and makes every later
operator "fail" the comparison, masking real wrong results.  The solver tracks an
interval per tensor with ``out_range`` (interval arithmetic, one small rule per
operator, over the constants ``reference.tf_emit`` draws) and, where an input
violates its operator's domain or an output could overflow, inserts guards made
of existing operators (``Builder._guard``): Tanh squashes a range to [-1, 1],
Sigmoid makes it positive and away from zero.

The intervals are conservative for float32 up to rounding: every element the
reference computes lies in [lo, hi] (``tests/test_values.py`` checks this).
"""

from __future__ import annotations

import math
from typing import Callable

from ..graph.ir import Graph, Params, TensorType
from .shapes import MAX_ELEMS, prod

Interval = tuple[float, float]
Rule = Callable[[list[Interval], list[TensorType], Params, TensorType], Interval]

INF = math.inf
UNKNOWN: Interval = (-INF, INF)
UNIT: Interval = (-1.0, 1.0)  # graph inputs and the weights tf_emit draws: U[-1, 1]
INPUT_RANGE = UNIT
LIMIT = 1e30  # largest magnitude a tensor may reach: far below float32's 3.4e38, so sums stay finite
HALF_LIMIT = 1e4  # the same for a float16 tensor: below float16's 65504
MIN_DIVISOR = 1e-3  # a divisor (or Rsqrt argument) at least this far from zero: quotients stay bounded
DIVISOR_RANGE = (0.5, 1.0)  # magnitude of a constant divisor (Realdiv with one input), sign drawn
INT32 = (-2.0**31, 2.0**31 - 1)
BN_MIN_VARIANCE = 0.1  # Fusedbatchnorm's variance is drawn from U[0.1, 1]
BICUBIC_OVERSHOOT = 0.5  # bicubic weights sum to 1 with |weights| <= 1.9 (2-D): overshoot <= 0.45 of the span


def limit(dtype: str) -> float:
    """The largest magnitude a tensor of ``dtype`` may reach in a guarded graph."""
    return HALF_LIMIT if dtype == "float16" else LIMIT


RULES: dict[str, Rule] = {}


def rule(*ops: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for op in ops:
            RULES[op] = fn
        return fn
    return deco


def out_range(op: str, ins: list[Interval], types: list[TensorType], p: Params, out: TensorType,
              rules: dict[str, Rule] | None = None) -> Interval:
    """The interval of ``op``'s output; unknown operators may produce anything.

    ``rules`` is the registry's table (``ops.registry``): TensorFlow's by default.
    """
    if out.dtype == "bool":
        return (0.0, 1.0)
    fn = (RULES if rules is None else rules).get(op)
    return fn(ins, types, p, out) if fn else UNKNOWN


def graph_ranges(g: Graph, inputs: Interval = INPUT_RANGE) -> dict[str, Interval]:
    """Every tensor's interval in a finished graph (the solver computes the same while building)."""
    r: dict[str, Interval] = {name: inputs for name in g.inputs}
    for n in g.nodes:
        r[n.id] = out_range(n.op, [r[i] for i in n.inputs], [g.tensor_type(i) for i in n.inputs], n.params, n.out)
    return r


def magnitude(iv: Interval) -> float:
    return max(abs(iv[0]), abs(iv[1]))


# --------------------------------------------------------------------------- arithmetic

def _hull(*ivs: Interval) -> Interval:
    return (min(i[0] for i in ivs), max(i[1] for i in ivs))


def _mul(a: float, b: float) -> float:
    return 0.0 if a == 0.0 or b == 0.0 else a * b  # the tensors are finite: 0 * "unbounded" is 0


def _times(a: Interval, b: Interval) -> Interval:
    ps = [_mul(x, y) for x in a for y in b]
    return (min(ps), max(ps))


def _scale(iv: Interval, k: float) -> Interval:
    """``iv`` times a non-negative ``k``."""
    return (_mul(iv[0], k), _mul(iv[1], k))


def _sym(m: float) -> Interval:
    return (-m, m)


def _exp(x: float) -> float:
    return INF if x > 709.0 else math.exp(x)


def _pow(m: float, n: int) -> float:
    """m ** n for m >= 0 without OverflowError."""
    if m == 0.0 or m == 1.0 or math.isinf(m):
        return m if n else 1.0
    return INF if n * math.log(m) > 709.0 else m ** n


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + _exp(-x))


def _selu(x: float) -> float:
    scale, alpha = 1.0507009873554805, 1.6732632423543772
    return scale * x if x > 0 else scale * alpha * (_exp(x) - 1.0)


# Not finite: as it is.  A NaN bound (inf - inf in some rule upstream) raised "cannot convert
# float NaN to integer" here and took a whole campaign down once the ties hinge put a Floor
# before every ArgMax.
def _ceil(x: float) -> float:
    return x if not math.isfinite(x) else float(math.ceil(x))


def _floor(x: float) -> float:
    return x if not math.isfinite(x) else float(math.floor(x))


def _monotone(fn: Callable[[float], float]) -> Rule:
    return lambda ins, types, p, out: (fn(ins[0][0]), fn(ins[0][1]))


# --------------------------------------------------------------------------- element-wise

RULES.update({
    "Exp": _monotone(_exp), "Sigmoid": _monotone(_sigmoid), "Tanh": _monotone(math.tanh),
    "Selu": _monotone(_selu), "Ceil": _monotone(_ceil),
    "Relu": _monotone(lambda x: max(x, 0.0)), "Relu6": _monotone(lambda x: min(max(x, 0.0), 6.0)),
})


@rule("Sqrt")
def _sqrt(ins, types, p, out):
    lo, hi = ins[0]
    return (math.sqrt(max(lo, 0.0)), math.sqrt(max(hi, 0.0)))


@rule("Rsqrt")
def _rsqrt(ins, types, p, out):
    lo, hi = ins[0]
    if lo <= 0.0:
        return (0.0, INF)  # Rsqrt(0) is +Inf, of a negative NaN
    return (1.0 / math.sqrt(hi), 1.0 / math.sqrt(lo))


@rule("Square")
def _square(ins, types, p, out):
    lo, hi = ins[0]
    top = max(_mul(lo, lo), _mul(hi, hi))
    return (0.0 if lo <= 0.0 <= hi else min(_mul(lo, lo), _mul(hi, hi)), top)


def _other(ins: list[Interval]) -> Interval:
    """The second operand: an input, or the constant tf_emit draws from U[-1, 1]."""
    return ins[1] if len(ins) > 1 else UNIT


@rule("Add", "Biasadd")
def _add(ins, types, p, out):
    a, b = ins[0], _other(ins)
    return (a[0] + b[0], a[1] + b[1])


@rule("Sub")
def _sub(ins, types, p, out):
    a, b = ins[0], _other(ins)
    return (a[0] - b[1], a[1] - b[0])


@rule("Mul")
def _times_rule(ins, types, p, out):
    return _times(ins[0], _other(ins))


@rule("Realdiv")
def _div(ins, types, p, out):
    a = ins[0]
    if len(ins) == 1:  # the constant divisor is +-U[0.5, 1]
        return _sym(magnitude(a) / DIVISOR_RANGE[0])
    lo, hi = min(ins[1]), max(ins[1])
    if lo <= 0.0 <= hi:  # (a seed-11 ONNX campaign met a divisor range (0.0, negative): ZeroDivisionError)
        return UNKNOWN
    return _times(a, (1.0 / hi, 1.0 / lo))


@rule("Maximum")
def _maximum(ins, types, p, out):
    a, b = ins[0], _other(ins)
    return (max(a[0], b[0]), max(a[1], b[1]))


@rule("Minimum")
def _minimum(ins, types, p, out):
    a, b = ins[0], _other(ins)
    return (min(a[0], b[0]), min(a[1], b[1]))


@rule("Cast")
def _cast(ins, types, p, out):
    lo, hi = ins[0]
    if out.dtype == "float32" or types[0].dtype != "float32":
        return ins[0]
    # float -> int truncates toward zero; out-of-range values are undefined (the domain excludes them)
    return (max(_floor(lo), INT32[0]), min(_ceil(hi), INT32[1]))


@rule("Fill")
def _fill(ins, types, p, out):
    return (float(p["value"]), float(p["value"]))


# --------------------------------------------------------------------------- convolution & normalisation

@rule("Conv2d", "Deconv2d")
def _conv(ins, types, p, out):
    # Each output sums at most kh * kw * cin products with weights in [-1, 1].
    return _sym(_mul(magnitude(ins[0]), p["kh"] * p["kw"] * types[0].shape[-1]))


@rule("Depthwise")
def _depthwise(ins, types, p, out):
    return _sym(_mul(magnitude(ins[0]), p["kh"] * p["kw"]))


@rule("Fusedbatchnorm")
def _batchnorm(ins, types, p, out):
    # (x - mean) * scale / sqrt(variance + epsilon) + offset; mean, scale, offset in [-1, 1]
    return _sym((magnitude(ins[0]) + 1.0) / math.sqrt(BN_MIN_VARIANCE + p["epsilon"]) + 1.0)


@rule("Lrn")
def _lrn(ins, types, p, out):
    # x / (bias + alpha * sum of up to 2r+1 squares) ** beta: the divisor is >= bias ** beta.
    m = magnitude(ins[0])
    if p["alpha"] * (2 * p["depth_radius"] + 1) * _mul(m, m) > LIMIT:
        return UNKNOWN  # the sum of squares itself could overflow
    d = p["bias"] ** p["beta"]
    return _hull((0.0, 0.0), (ins[0][0] / d, ins[0][1] / d))


@rule("Softmax")
def _softmax(ins, types, p, out):
    return (0.0, 1.0)


# --------------------------------------------------------------------------- reductions

def _reduced(types: list[TensorType], p: Params) -> int:
    return prod([types[0].shape[a] for a in p["axes"]])


@rule("Reducesum")
def _reduce_sum(ins, types, p, out):
    return _scale(ins[0], _reduced(types, p))


@rule("Reduceprod")
def _reduce_prod(ins, types, p, out):
    lo, hi = ins[0]
    n = _reduced(types, p)
    if lo >= 0.0:
        return (_pow(lo, n), _pow(hi, n))
    m = _pow(magnitude(ins[0]), n)
    return (-m, m)


@rule("Argmax")
def _argmax(ins, types, p, out):
    return (0.0, float(types[0].shape[p["axis"]] - 1))


@rule("Shape")
def _shape(ins, types, p, out):
    return (1.0, float(MAX_ELEMS))


# --------------------------------------------------------------------------- data movement

def _same(ins, types, p, out):
    return _hull(*ins)


def _with_zero(ins, types, p, out):
    return _hull((0.0, 0.0), *ins)


# Every element of the output is an element of an input (or a convex mix of them).
for _op in ("Reshape", "Slice", "Stridedslice", "Transpose", "Squeeze", "Expanddims", "Tile", "GatherV2",
            "Batchtospacend", "Concat", "TopKV2", "Reducemax", "Reducemean", "Avgpooling", "Maxpooling",
            "Resizebilinear", "Resizenearestneighbor"):
    RULES[_op] = _same
# ... or a zero of the padding / a crop box's extrapolation value.
for _op in ("Pad", "Spacetobatchnd", "Cropandresize"):
    RULES[_op] = _with_zero


@rule("Resize")
def _resize(ins, types, p, out):
    lo, hi = ins[0]
    if p["method"] != "bicubic":
        return (lo, hi)
    over = BICUBIC_OVERSHOOT * (hi - lo)
    return (lo - over, hi + over)


# --------------------------------------------------------------------------- domains

def domain(op: str, i: int, out: TensorType) -> str:
    """What input ``i`` of ``op`` must satisfy: "" (anything finite), "positive" (>= MIN_DIVISOR),
    "non-negative", "non-zero" (|x| >= MIN_DIVISOR), "int32" (a float cast must fit), "unit"
    ([-1, 1]), "open-unit" ((-1, 1)) or "at-least-one" (>= 1)."""
    if op == "Rsqrt":
        return "positive"
    if op == "Sqrt":
        return "non-negative"
    if op in ("Realdiv", "Div") and i == 1:  # Div: ONNX's name (no TF spec is called so)
        return "non-zero"
    if op == "Cast" and out.dtype != "float32":
        return "int32"
    return ONNX_DOMAINS.get(op, "")


# ONNX operators known from their records (ops.recorded) whose domain is not every real: their
# fed input was only squashed into [-1, 1] (no range rule), so a normal graph's Acosh or Log made
# NaN by accident, and the NaN then showed downstream as a NaN-semantics difference of whatever
# came next (523 cases of "Tanh maps NaN to a finite number" in a ten-minute run, seed 37).
ONNX_DOMAINS = {"Log": "positive", "ReduceLogSum": "positive", "Reciprocal": "non-zero", "Acos": "unit", "Asin": "unit",
                "Atanh": "open-unit", "Acosh": "at-least-one"}


def satisfies(iv: Interval, dom: str) -> bool:
    lo, hi = iv
    if dom == "positive":
        return lo >= MIN_DIVISOR
    if dom == "non-negative":
        return lo >= 0.0
    if dom == "non-zero":
        return lo >= MIN_DIVISOR or hi <= -MIN_DIVISOR
    if dom == "int32":
        return INT32[0] <= lo and hi <= INT32[1]
    if dom == "unit":
        return -1.0 <= lo and hi <= 1.0
    if dom == "open-unit":  # float32's tanh of a large input rounds to 1: not open
        return -1.0 < lo and hi < 1.0
    if dom == "at-least-one":
        return lo >= 1.0
    return True


def sigmoid_is_enough(iv: Interval) -> bool:
    """Sigmoid alone keeps ``iv`` at least MIN_DIVISOR from zero (else Tanh goes first)."""
    return _sigmoid(iv[0]) >= MIN_DIVISOR
