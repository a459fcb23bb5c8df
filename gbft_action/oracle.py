"""Statuses and the output comparison (paper IV: DCP/MCF/IF/DCF).

A case passes (DCP) when, for every output, at least ``min_ratio`` (99.9%) of the
elements are close: ``|actual - expected| <= atol + rtol * |expected|`` with
``rtol`` 0.1% (the paper's relative error) and a small ``atol`` (1e-5) so that
values near zero, where relative error is meaningless (a sum of terms that
cancel), do not fail on float rounding.  NaN matches NaN and an infinity matches
the same infinity; NaN or Inf on one side only is a mismatch (the paper's
sigmoid(NaN) and x/0 cases).  A shape mismatch fails outright; values of
different dtypes (int32 from the engine, int64 from TensorFlow; bool) are
compared as numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .graph.ir import Graph, Params
from .ops.onnx_exported import quantum_of
from .records.enums import Status
from .records.tolerance import Tolerance


ENGINE_FAILURES = (Status.MCF, Status.IF, Status.DCF, Status.XPF, Status.XBF, Status.XTF)


@dataclass
class OutputDiff:
    name: str
    ok: bool
    ratio: float  # share of elements within tolerance
    reason: str = ""
    worst: list[dict[str, object]] = field(default_factory=list)  # index, expected, actual

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "ok": self.ok, "ratio": self.ratio, "reason": self.reason, "worst": self.worst}


def compare(expected: np.ndarray, actual: np.ndarray, name: str = "", tol: Tolerance = Tolerance(),
            n_worst: int = 5, signed_zero: bool = False, excused: np.ndarray | None = None) -> OutputDiff:
    """``signed_zero``: -0 and +0 differ (intermediates: a later division turns the sign of a
    zero into the sign of an infinity); ``excused``: elements that may take any value (ties,
    undefined behaviour; see judge_node)."""
    e = np.asarray(expected)
    a = np.asarray(actual)
    if e.shape != a.shape:
        # Some engines drop or add unit dims; same data in another shape is still a bug to report.
        return OutputDiff(name, False, 0.0, f"shape {list(a.shape)} != expected {list(e.shape)}")
    if e.size == 0:
        return OutputDiff(name, True, 1.0)
    e64, a64 = _f64(e), _f64(a)
    ok_mask = _close(e64, a64, tol)
    if signed_zero:
        ok_mask &= ~((e64 == 0) & (a64 == 0) & (np.signbit(e64) != np.signbit(a64)))
    if excused is not None:
        ok_mask |= excused
    ratio = float(ok_mask.mean())
    ok = ratio >= tol.min_ratio
    worst = [] if ok else _worst(e64, a64, ok_mask, n_worst)
    reason = "" if ok else f"{(~ok_mask).sum()} of {e.size} elements differ ({100 * (1 - ratio):.3f}%)"
    return OutputDiff(name, ok, ratio, reason, worst)


def _f64(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(x).astype(np.float64)


def _close(e64: np.ndarray, a64: np.ndarray, tol: Tolerance) -> np.ndarray:
    """Per element: within tolerance, or the same special value (NaN and NaN, the same infinity)."""
    with np.errstate(invalid="ignore", over="ignore"):
        # Only finite pairs can be "close": |inf - x| <= rtol * inf would pass anything.
        close = np.isfinite(e64) & np.isfinite(a64) & (np.abs(a64 - e64) <= tol.atol + tol.rtol * np.abs(e64))
        same_special = (np.isnan(e64) & np.isnan(a64)) | (np.isinf(e64) & (a64 == e64))
    return (close | same_special) & ~(np.isnan(e64) ^ np.isnan(a64))


def _worst(e: np.ndarray, a: np.ndarray, ok: np.ndarray, n: int) -> list[dict[str, Any]]:
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a - e)
    err = np.where(np.isnan(err), np.inf, err)
    err = np.where(ok, -1.0, err)
    idx = np.argsort(err.ravel())[::-1][:n]
    out = []
    for i in idx:
        if ok.ravel()[i]:
            break
        out.append({"index": [int(x) for x in np.unravel_index(i, e.shape)],
                    "expected": _num(e.ravel()[i]), "actual": _num(a.ravel()[i])})
    return out


def _num(x: float) -> float | str:
    return float(x) if np.isfinite(x) else str(x)


def judge_outputs(expected: dict[str, np.ndarray], actual: dict[str, np.ndarray], names: list[str],
                  tol: Tolerance = Tolerance()) -> list[OutputDiff]:
    diffs = []
    for n in names:
        if n not in actual:
            diffs.append(OutputDiff(n, False, 0.0, "output missing from the engine's results"))
        else:
            diffs.append(compare(expected[n], actual[n], n, tol))
    return diffs


def relative_error(expected: dict[str, np.ndarray], actual: dict[str, np.ndarray], names: list[str],
                   tol: Tolerance = Tolerance()) -> float | None:
    """The worst error of ``actual`` against ``expected`` over ``names``, relative to |expected|
    floored at atol/rtol (near zero a relative error says nothing): how far a build is from the
    reference, to say by how much a precision regression lost.  inf for a special value on one
    side only, a shape mismatch or a missing output; None when no output can be measured."""
    worst: float | None = None
    floor = tol.atol / tol.rtol if tol.rtol > 0 else 1.0
    for n in names:
        if n not in expected:
            continue
        if n not in actual or np.shape(actual[n]) != np.shape(expected[n]):
            return float("inf")
        e, a = _f64(expected[n]), _f64(actual[n])
        if e.size == 0:
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.where(np.isfinite(e) & np.isfinite(a), np.abs(a - e) / np.maximum(np.abs(e), floor), 0.0)
        # A non-finite pair that is not the same special value (_close: NaN and NaN, the same infinity).
        special = ~(np.isfinite(e) & np.isfinite(a)) & ~_close(e, a, tol)
        here = float("inf") if special.any() else float(err.max())
        worst = here if worst is None else max(worst, here)
    return worst


# --------------------------------------------------------------------------- symptoms

# The looser bound that separates "precision" from "wrong result": NNSmith's rtol/atol, or
# MNN's own test criterion (max |diff| within 1% of max |expected|), whichever is kinder.
LOOSE = Tolerance(rtol=1e-2, atol=1e-3)
LOOSE_NORM = 0.01
ALL_LOOSE = Tolerance(LOOSE.rtol, LOOSE.atol, min_ratio=1.0)  # every element within the loose bound


# --------------------------------------------------------------------------- per-type bounds

@dataclass(frozen=True)
class Bounds:
    """How a case is compared: ``strict`` passes or fails it (DCP/DCF...), ``loose`` and
    ``norm`` split a failure into precision and wrong result (precision_only)."""

    strict: Tolerance
    loose: Tolerance = LOOSE
    norm: float = LOOSE_NORM

    @property
    def all_loose(self) -> Tolerance:
        """Every element within the loose bound (references_disagree)."""
        return Tolerance(self.loose.rtol, self.loose.atol, min_ratio=1.0)


# Half precision.  The reference (ONNX Runtime) may compute a float16 tensor in float16 where
# the engine computes it in float32 (MNN 3.6 runs a Cast-to-float16 chain in float32), so they
# differ by float16's rounding, 2^-11 ~ 4.9e-4 relative per operation, compounding along the
# graph: float32's strict bound (rtol 1e-3, atol 1e-5) fails such a case within a few
# operations (tests/test_half.py), and its loose bound files it as a wrong result.  A case
# holding any float16 tensor is compared with float16's bounds, each the float32 one widened
# by half's precision: strict rtol 1e-2 and atol 1e-3 (NNSmith's fp16 bound, ~10 half ulps of
# a value ~1; TF-TRT's fp16 atol is 2e-2), loose 10 times that (rtol 0.1, atol 1e-2, the
# max-norm rule at 10%), as float32's loose rtol is 10 times its strict one.  Whole cases, not
# tensors: the rounding flows on into every float32 tensor computed from a float16 one.
HALF_TYPES = frozenset({"float16"})
HALF = Bounds(Tolerance(rtol=1e-2, atol=1e-3), Tolerance(rtol=1e-1, atol=1e-2), norm=0.1)


def holds_half(g: Graph) -> bool:
    """Whether any tensor of g (an input or a node's output) is of a half-precision type."""
    return bool(g.element_types() & HALF_TYPES)


# Quantised layers.  A QDQ form's output lies on a grid of step q (its output scale), and an
# engine running its integer kernels may round an accumulation one step apart from ONNX
# Runtime's float reading of the same graph, and one more where an input element sits on a
# rounding edge: QUANTA steps of the largest such grid in the model pass (strict), ten times
# that is still precision (loose), as float16's loose bound is ten times its strict one.
# Whole cases again: the step flows on into every tensor computed from the layer's output.
QUANTA = 2.0


def quantised(g: Graph) -> float:
    """The largest output step of the quantised layers g holds (0.0: none)."""
    return quantum_of((n.op, n.params) for n in g.nodes)


def weight_step(bits: int) -> float:
    """The relative step of weights quantised to ``bits`` (symmetric, per channel: 1 / 127 at 8)."""
    return 1.0 / (2 ** (bits - 1) - 1)


def bounds_for(g: Graph, base: Tolerance, half_arithmetic: bool = False, weight_bits: int = 0) -> Bounds:
    """The one rule for how a case is compared: ``base`` (the campaign's tolerance) and the
    float32 loose bound, or, for a case holding a float16 tensor or run by an engine set to
    compute in float16 (``half_arithmetic``: MNN's precision low), each widened to at least
    HALF's (see above; min_ratio stays the campaign's); for a case holding quantised layers,
    atol widened to QUANTA steps of their output grid, and rtol to at least HALF's; for an
    engine whose converter quantises weights (``weight_bits``: MNN's --weightQuantBits), judged
    against the float model, rtol widened to QUANTA relative steps of that quantisation (each
    weight moves by up to half a step of its channel's largest) and atol to twice that (the
    error sums over a dot product's terms: 8-bit weights of a 72-term Conv moved outputs up to
    3.8 by 0.023, 0.6% of the largest), the loose bound ten times that: at 4 bits almost only
    crashes and gross errors stay wrong results."""
    b = Bounds(base)
    if holds_half(g) or half_arithmetic:
        b = Bounds(Tolerance(max(base.rtol, HALF.strict.rtol), max(base.atol, HALF.strict.atol), base.min_ratio),
                   HALF.loose, HALF.norm)
    if weight_bits:
        w = QUANTA * weight_step(weight_bits)
        b = Bounds(Tolerance(max(b.strict.rtol, w), max(b.strict.atol, 2 * w), base.min_ratio),
                   Tolerance(max(b.loose.rtol, 10 * w), max(b.loose.atol, 20 * w)), max(b.norm, 10 * w))
    q = quantised(g)
    if q:
        s, lo = b.strict, b.loose
        b = Bounds(Tolerance(max(s.rtol, HALF.strict.rtol), max(s.atol, QUANTA * q), s.min_ratio),
                   Tolerance(max(lo.rtol, HALF.loose.rtol), max(lo.atol, 10 * QUANTA * q)), max(b.norm, HALF.norm))
    return b


def widened_because(g: Graph, half_arithmetic: bool = False, weight_bits: int = 0) -> str:
    """Why g's bound is not the campaign's (bounds_for), in words a repro prints ("": it is)."""
    why = ["float16's bound: the model holds float16" if holds_half(g) else
           "float16's bound: the engine computes in float16 at this precision" if half_arithmetic else ""]
    if weight_bits:
        why.append(f"the converter quantises weights to {weight_bits} bits: {QUANTA:g} steps of "
                   f"{weight_step(weight_bits):.3g} relative")
    if q := quantised(g):
        why.append(f"{QUANTA:g} quanta of its quantised layers' output step {q:.6g}")
    return "; ".join(w for w in why if w)


def tolerance_for(g: Graph, base: Tolerance, half_arithmetic: bool = False, weight_bits: int = 0) -> Tolerance:
    """The strict bound g is judged with (bounds_for): ``base`` itself unless g holds float16 or
    quantised layers, or the engine computes in float16 or quantises weights."""
    return bounds_for(g, base, half_arithmetic, weight_bits).strict


def references_disagree(first: dict[str, np.ndarray], second: dict[str, np.ndarray], actual: dict[str, np.ndarray],
                        names: list[str], tol: Tolerance = Tolerance(),
                        all_loose: Tolerance = ALL_LOOSE) -> list[OutputDiff]:
    """The outputs among ``names`` where a second reference (ONNX Runtime on the TF graph, the
    same inputs) differs from the first at an element the engine got wrong (beyond ``tol``).

    Only there: a reference question elsewhere in the output does not excuse an engine that
    is wrong where both references agree.  Beyond the loose bound only: two frameworks'
    float rounding, amplified by a deep model, is no disagreement.  An output either
    reference lacks, or of another shape, says nothing."""
    out = []
    for n in names:
        if n not in first or n not in second or np.shape(first[n]) != np.shape(second[n]):
            continue
        e, s = _f64(first[n]), _f64(second[n])
        wrong = ~_close(e, _f64(actual[n]), tol) if n in actual and np.shape(actual[n]) == e.shape else \
            np.ones(e.shape, bool)
        d = compare(e[wrong], s[wrong], n, all_loose)
        if not d.ok:
            out.append(d)
    return out


def precision_only(expected: np.ndarray, actual: np.ndarray, loose: Tolerance = LOOSE,
                   norm: float = LOOSE_NORM) -> bool:
    """True when a difference is within the loose bound: same shape, the same special values
    in the same places, and the finite values close by ``loose`` or by the max-norm rule (max
    |diff| within ``norm`` of max |expected|); bounds_for gives a case's."""
    e, a = np.asarray(expected), np.asarray(actual)
    if e.shape != a.shape or e.size == 0:
        return e.shape == a.shape
    e64, a64 = _f64(e), _f64(a)
    finite = np.isfinite(e64)
    same_special = (np.isnan(e64) & np.isnan(a64)) | (e64 == a64)
    if (np.isfinite(a64) != finite).any() or not same_special[~finite].all():
        return False
    if _close(e64, a64, loose).all():
        return True
    if not finite.any():
        return True
    scale = float(np.abs(e64[finite]).max())
    return float(np.abs(a64[finite] - e64[finite]).max()) <= norm * scale


# --------------------------------------------------------------------------- one node

# Operators whose output jumps where the input crosses a boundary: a difference in them that
# is right in isolation came from an upstream difference within tolerance (a tie), not a bug.
DISCONTINUOUS = frozenset({"Argmax", "Greater", "Ceil", "Cast", "TopKV2",
                           # ONNX front end: its names for these, and its other step functions
                           "ArgMax", "ArgMin", "Less", "Floor", "TopK", "Round", "Sign",
                           # recorded ONNX operators: an in-tolerance input flips an equality, a
                           # rounding or a distinct value (a Tanh's 0.99999994 and 1.0 before a
                           # Unique were one value in MNN, two in ONNX Runtime)
                           "Equal", "GreaterOrEqual", "LessOrEqual", "Hardmax", "Unique", "NonZero",
                           "QuantizeLinear", "DynamicQuantizeLinear", "Mod", "Shrink", "NonMaxSuppression"})
# Views: an engine may skip them for tensors that are not outputs (their shape is free there).
VIEWS = frozenset({"Squeeze", "Reshape", "Expanddims"})


def judge_node(op: str, params: dict[str, object], inputs: list[np.ndarray], expected: np.ndarray,
               actual: np.ndarray, name: str = "", tol: Tolerance = Tolerance(),
               signed_zero: bool = False) -> OutputDiff:
    """Compare one node's output knowing what computed it (``inputs``: the reference's values of
    its inputs).  Ties and undefined behaviour are not differences:
      Argmax  an index is right if its value ties the expected one's within tolerance;
      Cast    a float-to-int cast of NaN, Inf or a value out of the target's range is undefined;
      TopKV2  the order of a row holding NaN is undefined;
      Softmax a row without a finite maximum is undefined (0/0);
      Lrn     a depth column holding NaN/Inf: TensorFlow's band-matrix form spreads it;
      LayerNormPattern, GroupNormPattern  a (nearly) constant row at a tiny epsilon: float32
              rounding of its mean, magnified by 1 / sqrt(var + eps) (_ill_conditioned);
      Resize  (ONNX, nearest, floor or ceil) a pixel whose source coordinate is an integer: float
              error on either side picks the neighbour."""
    return compare(expected, actual, name, tol, signed_zero=signed_zero,
                   excused=excused_elements(op, params, inputs, expected, actual, tol))


def excused_elements(op: str, params: dict[str, object], inputs: list[np.ndarray], expected: np.ndarray,
                     actual: np.ndarray, tol: Tolerance = Tolerance()) -> np.ndarray | None:
    """The elements the node rules excuse (None: none).  Shapes an engine gave in another
    form (a view's input unsqueezed) excuse nothing, never raise."""
    try:
        return _excused(op, params, inputs, expected, actual, tol)
    except (ValueError, IndexError, TypeError):
        return None


def _overflowed(e: np.ndarray) -> np.ndarray:
    """Integer elements at their type's extremes: where a reference saturated an overflow."""
    info = np.iinfo(e.dtype)
    return (e == info.min) | (e == info.max)


def undefined_anywhere(op: str, params: dict[str, object], inputs: list[np.ndarray], expected: np.ndarray) -> bool:
    """Whether the node rules leave some element of this node undefined for these inputs,
    whatever the engine gave: for a node the engine fused away (no value to judge), whose
    undefined elements still reach what it feeds (a NaN cast to int, then back to float)."""
    e = np.asarray(expected)
    mask = excused_elements(op, params, inputs, e, e)
    return mask is not None and bool(np.any(mask))


def _excused(op: str, params: Params, inputs: list[np.ndarray], expected: np.ndarray,
             actual: np.ndarray, tol: Tolerance) -> np.ndarray | None:
    e, a = np.asarray(expected), np.asarray(actual)
    if not inputs or e.shape != a.shape:
        return None
    x = np.asarray(inputs[0])
    if op == "Argmax" and x.ndim == e.ndim + 1:
        return _argmax_ties(x, int(params.get("axis", 0)), e, a, tol)
    if op == "Cast" and x.dtype.kind == "f" and e.dtype.kind in "iu" and x.shape == e.shape:
        info = np.iinfo(e.dtype)
        # over: a float16 x makes the bounds +-inf (float16 holds no int32 bound), and every
        # finite float16 fits an int32 or int64 anyway
        with np.errstate(invalid="ignore", over="ignore"):
            return ~np.isfinite(x) | (x <= info.min - 1.0) | (x >= info.max + 1.0)
    if op == "Resize" and params.get("mode") == "nearest" and x.ndim == 4 == e.ndim:
        return _on_integer_coordinates(params, x, a)
    if op == "NonMaxSuppression" and x.size != np.unique(x).size:
        # Equal scores: which box is kept first is the implementation's choice (MNN and ONNX
        # Runtime picked different ones of six scores 0.9993 after a Tanh).
        return np.ones(e.shape, bool)
    if e.dtype.kind == "i" and _overflowed(e).any():
        # ONNX leaves integer overflow undefined: ONNX Runtime saturated a ReduceL1 of int32 to
        # 2147483647 where MNN wrapped to -2147483648 (its input a Cast of +-Inf, undefined too).
        return _overflowed(e)
    if x.dtype.kind != "f" or x.ndim == 0:
        return None
    with np.errstate(invalid="ignore"):
        if op == "TopKV2" and x.shape[:-1] == e.shape[:-1]:
            # The order of a row holding NaN is undefined (TensorFlow's own is not sorted).
            return np.broadcast_to(np.isnan(x).any(axis=-1, keepdims=True), e.shape)
        if op == "Softmax" and x.shape == e.shape:
            # A row without a finite maximum (all -Inf, or +Inf in it) is 0/0 or Inf/Inf.
            axis = int(params.get("axis", -1)) % x.ndim
            top = np.nanmax(np.where(np.isnan(x), -np.inf, x), axis=axis, keepdims=True)
            return np.broadcast_to(~np.isfinite(top), e.shape)
        if op in NORM_GROUPS and x.shape == e.shape:
            return _ill_conditioned(NORM_GROUPS[op](x, params), float(params.get("epsilon", 1e-5)), tol).reshape(e.shape)
        if op == "Lrn" and x.shape == e.shape:
            # TensorFlow's LRN is a band-matrix product over the whole depth: an Inf anywhere in
            # the column makes every element of it NaN (Inf * 0), not only those in its window.
            return np.broadcast_to(~np.isfinite(x).all(axis=-1, keepdims=True), e.shape)
    return None


# The exported normalisations (ops.onnx_exported): x viewed as [rows, the elements one mean and
# variance cover].
NORM_GROUPS: dict[str, Callable[[np.ndarray, Params], np.ndarray]] = {
    "LayerNormPattern": lambda x, p: x.reshape(-1, x.shape[-1]),
    "GroupNormPattern": lambda x, p: x.reshape(x.shape[0] * int(p.get("groups", 1)), -1),
}


MEAN_ULPS = 4  # a float32 mean's rounding, in ulps of the row's largest value (seed 919's was 1)


def _ill_conditioned(rows: np.ndarray, eps: float, tol: Tolerance) -> np.ndarray:
    """The elements of the rows a float32 normalisation cannot compute to ``tol``: x - mean is
    float32 rounding of the mean (a few ulps of the row's largest value: MEAN_ULPS) where the row
    is (nearly) constant, and 1 / sqrt(var + eps) magnifies it a millionfold at eps 1e-12.  Not
    n ulps: that bound grows with the row, and would excuse long rows of any variance.  Seen on seed 919:
    a row clamped to one value by a Min, LayerNorm at eps 1e-12; ONNX Runtime's mean was exact (0
    out), MNN's an ulp off (0.06 out).  Neither is wrong; any order of summation may land there."""
    r = rows.astype(np.float64)
    noise = MEAN_ULPS * np.finfo(np.float32).eps * np.abs(r).max(axis=1, keepdims=True)
    kappa = noise / np.sqrt(r.var(axis=1, keepdims=True) + eps)
    return np.broadcast_to(kappa > tol.rtol, r.shape)


def _on_integer_coordinates(params: Params, x: np.ndarray, a: np.ndarray) -> np.ndarray | None:
    """The output pixels of an ONNX nearest Resize (NCHW) whose exact source row or column is a
    whole number, where floor and ceil decide nothing, and that hold the neighbouring pixel: the
    engine's and ONNX Runtime's float32 coordinates land a hair either side (seen on random
    graphs: (15 + 0.5) / 6.2 - 0.5 is 2 exactly, and 1.9999999 in MNN).  The round modes' ties at
    .5 are not excused: choosing there is what nearest_mode is for (MNN ignores round_prefer_ceil)."""
    mode = params.get("nearest_mode")
    if mode not in ("floor", "ceil"):
        return None
    ctm = params.get("coordinate_transformation_mode", "half_pixel")
    picks = []  # per axis: the index ONNX picks, and the neighbour float error may pick instead
    for axis, scale in ((2, params.get("sh", 1.0)), (3, params.get("sw", 1.0))):
        size, n = x.shape[axis], a.shape[axis]
        coord = _source_coordinates(ctm, size, n, float(scale) if params.get("by") == "scales" else n / size)
        if coord is None:
            return None
        whole = np.abs(coord - np.round(coord)) < 1e-5 * np.maximum(1.0, np.abs(coord))
        exact = np.clip(np.where(whole, np.round(coord), np.floor(coord) if mode == "floor" else np.ceil(coord)),
                        0, size - 1).astype(np.int64)
        other = np.clip(np.where(whole, exact + (-1 if mode == "floor" else 1), exact), 0, size - 1)
        picks.append((exact, other))
    (rows, rows2), (cols, cols2) = picks
    excused = np.zeros(a.shape, bool)
    with np.errstate(invalid="ignore"):
        for r, c in ((rows2, cols), (rows, cols2), (rows2, cols2)):
            neighbour = x[:, :, r][:, :, :, c]
            excused |= (neighbour == a) | (np.isnan(neighbour) & np.isnan(a))
    return excused


def _source_coordinates(ctm: str, size: int, n: int, scale: float) -> np.ndarray | None:
    """ONNX Resize's source coordinate of each output index along one axis, in float64."""
    i = np.arange(n, dtype=np.float64)
    if ctm == "half_pixel":
        return (i + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (i + 0.5) / scale - 0.5 if n > 1 else np.zeros(n)
    if ctm == "asymmetric":
        return i / scale
    if ctm == "align_corners":
        return i * (size - 1) / (n - 1) if n > 1 else np.zeros(n)
    return None  # tf_crop_and_resize: the roi moves every coordinate


def _argmax_ties(x: np.ndarray, axis: int, e: np.ndarray, a: np.ndarray, tol: Tolerance) -> np.ndarray:
    axis = axis % x.ndim
    n = x.shape[axis]
    ei, ai = np.clip(e.astype(np.int64), 0, n - 1), a.astype(np.int64)
    valid = (ai >= 0) & (ai < n)
    ai = np.clip(ai, 0, n - 1)
    xe = np.take_along_axis(x, np.expand_dims(ei, axis), axis).squeeze(axis).astype(np.float64)
    xa = np.take_along_axis(x, np.expand_dims(ai, axis), axis).squeeze(axis).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return valid & ((np.abs(xa - xe) <= tol.atol + tol.rtol * np.abs(xe)) | (np.isnan(xe) & np.isnan(xa)))
