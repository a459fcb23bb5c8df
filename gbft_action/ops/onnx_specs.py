"""ONNX operator specs (``ONNX_SPECS``): a registry apart from TensorFlow's ``SPECS``.

ONNX names clash with TF spec names (Add, Concat, Slice, Resize...) and mean
other things (NCHW, broadcasting, attributes), so the two tables never mix; a
corpus picks one with ``frontend:`` (``ops.registry``).  The families of
``ops.specs`` are reused where the semantics are the same (Reduce, Concat,
Transpose, Tile, Squeeze, Cast, Reshape, Softmax); the others are here.

Domains follow the ONNX operator spec at opset 17 (``docs/Operators.md`` of
onnx/onnx, the versions ``reference.onnx_emit.OPSET`` names), narrowed to what
exported models contain.  Parameters are repaired against the actual shapes so
that every model is valid by construction, as for TensorFlow.  Tensors an
operator needs beside its data input (weights, indices, grids, rois) are drawn
by the emitter from ``weights_rng(seed, node id)``: only their shapes are here.

Framework-free.
"""

from __future__ import annotations

import random

from ..graph.ir import Params, TensorType
from .domains import Choice, Domain, FloatRange, IntRange
from .onnx_exported import exported_specs
from .shapes import MAX_ELEMS, MAX_RANK, conv_out, divisors, factorize, prod, same_out, slice_len, to_rank4
from .specs import (
    F32,
    FLOATS,
    Cast,
    Concat,
    ExpandDims,
    Reduce,
    Reshape,
    Softmax,
    Spec,
    Squeeze,
    Tile,
    Transpose,
)

I64 = "int64"
INT64_MAX = 2**63 - 1  # what exporters write for "to the end" of a Slice
INT64_MIN = -(2**63)


class Nchw(Spec):
    """Rank-4 inputs coerced to NCHW (an image-like N, C, H, W), not TensorFlow's NHWC."""

    fallback_rank = 3

    def rank4(self, rng: random.Random, size: int) -> tuple[int, ...]:
        n, h, w, c = to_rank4(rng, size)
        return (n, c, h, w)


class OnnxUnary(Nchw):
    """An element-wise operator: it takes a tensor of any rank as it is, a scalar too."""

    def __init__(self, name: str, onnx_type: str, ranks: tuple[int, int] = (0, MAX_RANK), **kw) -> None:
        super().__init__(name, onnx_type, ranks=ranks, **kw)


def _axis(p: Params, rank: int) -> int:
    return p["axis"] % rank


# --------------------------------------------------------------------------- element-wise


class OnnxBinary(Nchw):
    """Multidirectional (numpy) broadcasting: with two inputs the second keeps, per dim, its
    own size when it broadcasts and a 1 where ``bmask`` says so; with one input the other
    operand is a constant (same shape, scalar, per-channel [C, 1, 1] or last-axis row)."""

    out_dtype: str = F32

    def __init__(self, name: str, out_dtype: str = F32, **kw) -> None:
        super().__init__(name, name, frozenset({1, 2}), ranks=(0, MAX_RANK), domains=dict(OPERAND), **kw)
        self.out_dtype = out_dtype

    def want(self, rng, ins):
        first = self._want_one(rng, ins[0])
        return [first] + [TensorType(t.shape, F32) for t in ins[1:]]

    def repair(self, rng, ins, p):
        if len(ins) > 1:
            p.pop("operand", None)
            p["bmask"] = [rng.random() < 0.25 for _ in ins[0].shape]
        return p

    def align(self, ins, p):
        if len(ins) == 1:
            return ins
        a, b = ins
        if b.rank != a.rank:
            return [a, TensorType(a.shape, F32)]
        dims = tuple(1 if m else (db if db in (1, da) else da) for da, db, m in zip(a.shape, b.shape, p["bmask"]))
        return [a, TensorType(dims, F32)]

    def infer(self, ins, p):
        shape = tuple(max(x) for x in zip(*(t.shape for t in ins)))
        return TensorType(shape, self.out_dtype)


class Clip(Nchw):
    def repair(self, rng, ins, p):
        if p["min"] > p["max"]:
            p["min"], p["max"] = p["max"], p["min"]
        return p


class Where(OnnxBinary):
    """Where(x0 < threshold, x0, y): y the second input (broadcast) or a constant; the condition
    is emitted as Greater(threshold, x0)."""

    def __init__(self) -> None:
        super().__init__("Where")
        self.domains["threshold"] = FloatRange(-0.5, 0.5)


# --------------------------------------------------------------------------- convolution & normalisation


class Conv(Nchw):
    """Conv with groups (one, depthwise, any divisor of C), dilations, asymmetric pads, auto_pad."""

    def repair(self, rng, ins, p):
        _, c, h, w = ins[0].shape
        g = {"one": 1, "depthwise": c, "some": rng.choice(divisors(c))}[p["groups"]]
        p["group"] = g
        if p["auto_pad"] in ("SAME_UPPER", "SAME_LOWER"):
            p["dh"] = p["dw"] = 1  # ONNX Runtime runs SAME padding without dilation only
        p["out_ch"] = g * max(1, p["out_ch"] // g) if p["groups"] != "depthwise" else c * rng.randint(1, 2)
        eh, ew = p["dh"] * (p["kh"] - 1) + 1, p["dw"] * (p["kw"] - 1) + 1
        if p["auto_pad"] == "VALID":  # no padding: the kernel must fit
            p["kh"], p["dh"] = (p["kh"], p["dh"]) if eh <= h else (min(p["kh"], h), 1)
            p["kw"], p["dw"] = (p["kw"], p["dw"]) if ew <= w else (min(p["kw"], w), 1)
            p["pads"] = [0, 0, 0, 0]
        elif p["auto_pad"] == "NOTSET":  # exporters write explicit, often asymmetric pads below the kernel
            p["pads"] = [rng.randint(0, min(eh - 1, 3)), rng.randint(0, min(ew - 1, 3)),
                         rng.randint(0, min(eh - 1, 3)), rng.randint(0, min(ew - 1, 3))]
            for i, (k, d, dim) in enumerate((("kh", "dh", h), ("kw", "dw", w))):
                while p[d] * (p[k] - 1) + 1 > dim + p["pads"][i] + p["pads"][i + 2]:
                    p[k], p[d] = max(1, p[k] - 1), 1
        else:
            p["pads"] = [0, 0, 0, 0]
        return p

    def spatial(self, ins, p) -> tuple[int, int]:
        _, _, h, w = ins[0].shape
        if p["auto_pad"] in ("SAME_UPPER", "SAME_LOWER"):
            return same_out(h, p["sh"]), same_out(w, p["sw"])
        t, left, b, r = p["pads"]
        return (conv_out(h, p["kh"], p["sh"], p["dh"], t + b), conv_out(w, p["kw"], p["sw"], p["dw"], left + r))

    def infer(self, ins, p):
        oh, ow = self.spatial(ins, p)
        return TensorType((ins[0].shape[0], p["out_ch"], oh, ow))


class ConvTranspose(Nchw):
    """ConvTranspose with groups, explicit pads below the kernel and output_padding below the stride."""

    def repair(self, rng, ins, p):
        _, c, h, w = ins[0].shape
        g = 1 if p["groups"] == "one" else rng.choice(divisors(c))
        p["group"] = g
        p["out_ch"] = g * max(1, p["out_ch"] // g)
        p["pads"] = [rng.randint(0, p["kh"] - 1), rng.randint(0, p["kw"] - 1),
                     rng.randint(0, p["kh"] - 1), rng.randint(0, p["kw"] - 1)]
        p["output_padding"] = [rng.randint(0, p["sh"] - 1), rng.randint(0, p["sw"] - 1)]
        self._unpad(ins, p)
        while prod(self._out(ins, p)) > MAX_ELEMS and (p["sh"] > 1 or p["sw"] > 1):
            p["sh"], p["sw"] = max(1, p["sh"] - 1), max(1, p["sw"] - 1)
            p["output_padding"] = [min(p["output_padding"][0], p["sh"] - 1), min(p["output_padding"][1], p["sw"] - 1)]
        while prod(self._out(ins, p)) > MAX_ELEMS and p["out_ch"] > g:
            p["out_ch"] = g * max(1, p["out_ch"] // g // 2)
        # Again: a smaller stride takes output_padding down with it (s3l: a 1-pixel input, kernel
        # 4, pads 3 + 1 and output_padding 1 became an output of width 0, a GenError that ended
        # the campaign).
        self._unpad(ins, p)
        return p

    def _unpad(self, ins, p) -> None:
        """Pads taken down until every output length is at least 1 (pads may eat a 1-pixel input)."""
        for i in (0, 1):
            while self._len(ins[0].shape[2 + i], p, i) < 1:
                p["pads"][i], p["pads"][i + 2] = max(0, p["pads"][i] - 1), max(0, p["pads"][i + 2] - 1)

    @staticmethod
    def _len(i: int, p: Params, axis: int) -> int:
        k, s = (p["kh"], p["sh"]) if axis == 0 else (p["kw"], p["sw"])
        return s * (i - 1) + p["output_padding"][axis] + k - p["pads"][axis] - p["pads"][axis + 2]

    def _out(self, ins, p) -> tuple[int, ...]:
        n, _, h, w = ins[0].shape
        return (n, p["out_ch"], self._len(h, p, 0), self._len(w, p, 1))

    def infer(self, ins, p):
        return TensorType(self._out(ins, p))


class DepthToSpace(Nchw):
    """C must be a multiple of blocksize^2 (DCR: depth-column-row as TF, CRD as PyTorch's PixelShuffle)."""

    def align(self, ins, p):
        n, c, h, w = ins[0].shape
        bb = p["blocksize"] ** 2
        return [TensorType((n, bb * max(1, c // bb), h, w))]

    def infer(self, ins, p):
        n, c, h, w = ins[0].shape
        b = p["blocksize"]
        return TensorType((n, c // (b * b), h * b, w * b))


class SpaceToDepth(Nchw):
    def align(self, ins, p):
        n, c, h, w = ins[0].shape
        b = p["blocksize"]
        return [TensorType((n, c, b * max(1, h // b), b * max(1, w // b)))]

    def infer(self, ins, p):
        n, c, h, w = ins[0].shape
        b = p["blocksize"]
        return TensorType((n, c * b * b, h // b, w // b))


class Pool(Nchw):
    """MaxPool / AveragePool with explicit pads below the kernel (ORT requires it) and ceil_mode."""

    def repair(self, rng, ins, p):
        _, _, h, w = ins[0].shape
        p["pads"] = [rng.randint(0, p["kh"] - 1), rng.randint(0, p["kw"] - 1),
                     rng.randint(0, p["kh"] - 1), rng.randint(0, p["kw"] - 1)]
        for i, k, s, dim in ((0, "kh", "sh", h), (1, "kw", "sw", w)):
            while p[k] > dim + p["pads"][i] + p["pads"][i + 2]:
                p[k] -= 1
                p["pads"][i], p["pads"][i + 2] = min(p["pads"][i], p[k] - 1), min(p["pads"][i + 2], p[k] - 1)
            lo, hi = p["pads"][i], p["pads"][i + 2]
            if pool_out(dim, p[k], p[s], lo, hi, True) != -(-(dim + lo + hi - p[k]) // p[s]) + 1:
                p["ceil_mode"] = False  # a window starting in the end padding: readers disagree on dropping it
        return p

    def infer(self, ins, p):
        n, c, h, w = ins[0].shape
        t, left, b, r = p["pads"]
        oh = pool_out(h, p["kh"], p["sh"], t, b, p["ceil_mode"])
        ow = pool_out(w, p["kw"], p["sw"], left, r, p["ceil_mode"])
        return TensorType((n, c, oh, ow))


def pool_out(i: int, k: int, s: int, lo: int, hi: int, ceil: bool) -> int:
    """Output length of a pooling window; with ceil_mode, a last window that would start in
    the end padding is dropped (ONNX Runtime and PyTorch agree on this rule)."""
    span = i + lo + hi - k
    if not ceil:
        return span // s + 1
    o = -(-span // s) + 1
    if (o - 1) * s >= i + lo:
        o -= 1
    return o


class GlobalPool(Nchw):
    def infer(self, ins, p):
        n, c, _, _ = ins[0].shape
        return TensorType((n, c, 1, 1))


class BatchNorm(Nchw):
    """Inference-mode BatchNormalization on the channel axis 1 (rank >= 2)."""


class InstanceNorm(Nchw):
    """InstanceNormalization over the spatial dims of N, C, ... (rank >= 3)."""


class LayerNorm(Nchw):
    def repair(self, rng, ins, p):
        p["axis"] = _axis(p, ins[0].rank) - ins[0].rank * bool(p.get("negative"))
        return p


class Gemm(Nchw):
    """Y = alpha * A' B' + beta * C, A' / B' transposed or not; C broadcast from [N], [1, N], [M, N] or a scalar."""

    def want(self, rng, ins):
        a = ins[0]
        if a.rank != 2:
            a = TensorType(factorize(rng, a.size, 2), F32)
        return [TensorType(a.shape, F32)] + [TensorType(t.shape, F32) for t in ins[1:]]

    def repair(self, rng, ins, p):
        m, k = self._mk(ins[0].shape, p)
        while p["n"] > 1 and m * p["n"] > MAX_ELEMS:
            p["n"] //= 2
        return p

    @staticmethod
    def _mk(shape, p) -> tuple[int, int]:
        r0, r1 = shape
        return (r1, r0) if p["transA"] else (r0, r1)

    def align(self, ins, p):
        if len(ins) == 1:
            return ins
        _, k = self._mk(ins[0].shape, p)
        return [ins[0], TensorType((p["n"], k) if p["transB"] else (k, p["n"]), F32)]

    def infer(self, ins, p):
        m, _ = self._mk(ins[0].shape, p)
        return TensorType((m, p["n"]))


class MatMul(Nchw):
    """numpy matmul: against a constant [K, n] (weight), [K] (vector), [n, M] on the left
    (left), [b, 1.., K, n] (batched broadcasting), or a second input aligned to [..., K, n]."""

    def repair(self, rng, ins, p):
        x = ins[0].shape
        if len(x) == 1 and p["form"] in ("vector", "left", "batched"):
            p["form"] = "weight"  # a 1-D input has no rows to put on the left or batch
        if len(ins) > 1:
            p["form"] = "input"
            p["n"] = ins[1].shape[-1]  # keep the second operand's columns (attention: q k^T, then p v)
        while p["n"] > 1 and prod(self._out(ins, p)) > MAX_ELEMS:
            p["n"] //= 2
        return p

    def align(self, ins, p):
        if len(ins) == 1:
            return ins
        a, b = ins
        k = a.shape[-1]
        if a.rank >= 2 and b.rank == a.rank:  # a batched product: b's batch dims follow a's
            return [a, TensorType(a.shape[:-2] + (k, p["n"]), F32)]
        return [a, TensorType((k, p["n"]), F32)]

    def weight_shape(self, x: tuple[int, ...], p: Params) -> tuple[int, ...]:
        form, n = p["form"], p["n"]
        if form == "weight":
            return (x[-1], n)
        if form == "vector":
            return (x[-1],)
        if form == "left":
            return (n, x[-2])
        return (p.get("batch", 2),) + (1,) * (len(x) - 2) + (x[-1], n)

    def _out(self, ins, p) -> tuple[int, ...]:
        x = ins[0].shape
        form, n = p["form"], p["n"]
        if form in ("weight", "input"):
            return x[:-1] + (n,)
        if form == "vector":
            return x[:-1]
        if form == "left":
            return x[:-2] + (n, x[-1])
        return (p.get("batch", 2),) + x[:-2] + (x[-2], n)

    def infer(self, ins, p):
        return TensorType(self._out(ins, p))


# --------------------------------------------------------------------------- image


RESIZE_SCALES = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)  # dyadic: floor(dim * scale) is exact in float32


class Resize(Nchw):
    """Resize of H and W (N, C kept) by scales or sizes, every mode and coordinate transformation."""

    def repair(self, rng, ins, p):
        _, c, h, w = ins[0].shape
        if p["mode"] != "cubic":
            p["exclude_outside"] = False  # ONNX Runtime takes it for cubic only (or linear with antialias, opset 18)
        if p["coordinate_transformation_mode"] == "tf_crop_and_resize":
            p["by"] = "sizes"  # with scales, whether the roi shrinks the output is read differently
        # Both the scales and the sizes stay in the params (``by`` says which is used): a repair
        # runs again on its own output (mutations, the minimiser).
        p["sh"] = p["sh"] if int(h * p["sh"]) >= 1 else 1.0
        p["sw"] = p["sw"] if int(w * p["sw"]) >= 1 else 1.0
        if p["by"] == "sizes":
            while p["out_h"] * p["out_w"] * c * ins[0].shape[0] > MAX_ELEMS and p["out_h"] * p["out_w"] > 1:
                p["out_h"], p["out_w"] = max(1, p["out_h"] // 2), max(1, p["out_w"] // 2)
        return p

    def infer(self, ins, p):
        n, c, h, w = ins[0].shape
        if p["by"] == "scales":
            return TensorType((n, c, int(h * p["sh"]), int(w * p["sw"])))
        return TensorType((n, c, p["out_h"], p["out_w"]))


class GridSample(Nchw):
    def infer(self, ins, p):
        n, c, _, _ = ins[0].shape
        return TensorType((n, c, p["out_h"], p["out_w"]))


# --------------------------------------------------------------------------- shape & layout


class Pad(Nchw):
    """constant / reflect / edge padding; a reflect pad stays below the dim (ONNX Runtime's rule)."""

    def repair(self, rng, ins, p):
        pads = p.get("pads")
        if pads is None or len(pads) != ins[0].rank:
            pads = [[rng.randint(0, 2), rng.randint(0, 2)] for _ in ins[0].shape]
        if p.get("mode") == "reflect":
            pads = [[min(a, d - 1), min(b, d - 1)] for (a, b), d in zip(pads, ins[0].shape)]
        p["pads"] = pads
        return p

    def infer(self, ins, p):
        return TensorType(tuple(d + a + b for d, (a, b) in zip(ins[0].shape, p["pads"])), ins[0].dtype)


class Slice(Nchw):
    """starts / ends / axes / steps: negative steps, negative axes, negative and clamped
    (out of range) starts and ends as exporters write them.  Python slicing == ONNX's."""

    def repair(self, rng, ins, p):
        shape = ins[0].shape
        r = len(shape)
        axes = sorted(rng.sample(range(r), rng.randint(1, min(r, p["naxes"]))))
        starts, ends, steps, names = [], [], [], []
        for a in axes:
            d = shape[a]
            s = rng.choice([1, 1, 2, 3, -1, -2] if p["negative_steps"] else [1, 1, 2, 3])
            b = rng.randrange(d)
            if s > 0:
                e = rng.randint(b + 1, d)
                e = INT64_MAX if e == d and rng.random() < 0.5 else (e - d if e < d and rng.random() < 0.3 else e)
            else:
                e = rng.randint(-1, b - 1)
                e = rng.choice([-d - 1, INT64_MIN]) if e == -1 else e
            b = b - d if rng.random() < 0.3 else b
            starts.append(b)
            ends.append(e)
            steps.append(s)
            names.append(a - r if rng.random() < 0.5 else a)
        p.update(starts=starts, ends=ends, axes=names, steps=steps)
        return p

    def infer(self, ins, p):
        out = list(ins[0].shape)
        r = len(out)
        for b, e, a, s in zip(p["starts"], p["ends"], p["axes"], p["steps"]):
            out[a % r] = slice_len(out[a % r], b, e, s)
        return TensorType(tuple(out), ins[0].dtype)


class Split(Nchw):
    """Split into ``parts`` random sizes along ``axis``; the node's tensor is output ``take``."""

    def repair(self, rng, ins, p):
        ax = _axis(p, ins[0].rank)
        d = ins[0].shape[ax]
        parts = max(1, min(p["parts"], d))
        cuts = sorted(rng.sample(range(1, d), parts - 1)) if parts > 1 else []
        bounds = [0, *cuts, d]
        p.update(axis=ax, split=[bounds[i + 1] - bounds[i] for i in range(parts)], take=p["take"] % parts)
        return p

    def infer(self, ins, p):
        s = list(ins[0].shape)
        s[p["axis"]] = p["split"][p["take"]]
        return TensorType(tuple(s), ins[0].dtype)


class ShapeReshape(Nchw):
    """x.view(x.size(0), ..., -1) as exporters write it: Shape -> Gather -> Concat(-1) -> Reshape,
    the shape computed in the graph (MNN's converter must fold or run it)."""

    def repair(self, rng, ins, p):
        p["keep"] = max(1, min(p["keep"], ins[0].rank - 1)) if ins[0].rank > 1 else 1
        return p

    def infer(self, ins, p):
        s = ins[0].shape
        return TensorType(s[:p["keep"]] + (prod(s[p["keep"]:]),), ins[0].dtype)


class Flatten(Nchw):
    def repair(self, rng, ins, p):
        p["axis"] = p["axis"] % (ins[0].rank + 1)
        return p

    def infer(self, ins, p):
        a = p["axis"]
        return TensorType((prod(ins[0].shape[:a]), prod(ins[0].shape[a:])), ins[0].dtype)


class Expand(Nchw):
    """Broadcast the 1-dims (and maybe a new leading dim) to a bigger shape."""

    def want(self, rng, ins):
        t = self._want_one(rng, ins[0])
        if 1 not in t.shape and t.rank < MAX_RANK and rng.random() < 0.7:
            s = list(t.shape)
            s.insert(rng.randint(0, len(s)), 1)
            return [TensorType(tuple(s), t.dtype)]
        return [t]

    def repair(self, rng, ins, p):
        shape = list(ins[0].shape)
        target = [rng.randint(1, p["max_multiple"]) if d == 1 else d for d in shape]
        if len(target) < MAX_RANK and rng.random() < 0.3:
            target.insert(0, rng.randint(1, p["max_multiple"]))
        if prod(target) > MAX_ELEMS:
            target = shape
        # the shape input may hold a 1 where the input keeps its size (both broadcast the same)
        off = len(target) - len(shape)
        p["shape"] = [1 if i >= off and t == shape[i - off] and rng.random() < 0.2 else t
                      for i, t in enumerate(target)]
        p["out"] = target
        return p

    def infer(self, ins, p):
        return TensorType(tuple(p["out"]), ins[0].dtype)


class OnnxTranspose(Transpose):
    def repair(self, rng, ins, p):
        perm = list(range(ins[0].rank))
        if p.get("kind") == "swap_last":  # attention's K^T
            perm[-2:] = perm[-1], perm[-2]
        else:
            rng.shuffle(perm)
        p["perm"] = perm
        return p


class KeepDtype(Spec):
    """For a reused TF family whose ``infer`` says float32: these ONNX ops take any dtype and keep it."""

    def infer(self, ins, p):
        return TensorType(super().infer(ins, p).shape, ins[0].dtype)


class OnnxSqueeze(KeepDtype, Squeeze):
    pass


class OnnxUnsqueeze(KeepDtype, ExpandDims):
    pass


class OnnxReshape(Reshape):
    """Reshape whose shape input may hold a -1 (one dim inferred), as exporters write it."""

    def repair(self, rng, ins, p):
        p = super().repair(rng, ins, p)
        p["infer_at"] = rng.randrange(len(p["shape"])) if p.get("minus_one") else -1
        return p


# --------------------------------------------------------------------------- selection & indexing


class Gather(Nchw):
    """Gather with constant indices (negative ones too): a vector, a scalar (drops the axis), a matrix."""

    def repair(self, rng, ins, p):
        ax = _axis(p, ins[0].rank)
        d = ins[0].shape[ax]
        form = "vector" if p["form"] == "scalar" and ins[0].rank == 1 else p["form"]
        shape = {"vector": [p["count"]], "scalar": [], "matrix": [2, p["count"]]}[form]
        flat = [rng.randint(-d, d - 1) for _ in range(prod(shape))]
        p.update(axis=ax, form=form, indices=flat, ishape=shape)
        while prod(self._out(ins, p)) > MAX_ELEMS and len(p["indices"]) > 1:
            p.update(form="vector", ishape=[1], indices=p["indices"][:1])
        return p

    def _out(self, ins, p):
        s = ins[0].shape
        return s[:p["axis"]] + tuple(p["ishape"]) + s[p["axis"] + 1:]

    def infer(self, ins, p):
        return TensorType(self._out(ins, p), ins[0].dtype)


class GatherElements(Nchw):
    """Indices of the input's rank; along ``axis`` any count, elsewhere at most the input's dims."""

    def repair(self, rng, ins, p):
        ax = _axis(p, ins[0].rank)
        ishape = [rng.randint(1, p["count"]) if i == ax else rng.randint(1, d) for i, d in enumerate(ins[0].shape)]
        p.update(axis=ax, ishape=ishape)
        return p

    def infer(self, ins, p):
        return TensorType(tuple(p["ishape"]), ins[0].dtype)


class GatherND(Nchw):
    """indices [batch dims..., m, k]: m points of k coordinates each (batch_dims 0 or 1)."""

    def repair(self, rng, ins, p):
        r = ins[0].rank
        b = min(p["batch_dims"], r - 1)
        p["batch_dims"] = b
        p["k"] = rng.randint(1, min(r - b, 3))
        return p

    def index_shape(self, data: tuple[int, ...], p: Params) -> tuple[int, ...]:
        return data[:p["batch_dims"]] + (p["m"], p["k"])

    def infer(self, ins, p):
        s, b, k = ins[0].shape, p["batch_dims"], p["k"]
        return TensorType(s[:b] + (p["m"],) + s[b + k:], ins[0].dtype)


class ArgMax(Nchw):
    def repair(self, rng, ins, p):
        p["axis"] = _axis(p, ins[0].rank)
        if ins[0].rank == 1:
            p["keepdims"] = True  # no scalar from the hand-written ArgMax (recorded instances give them)
        return p

    def infer(self, ins, p):
        s = list(ins[0].shape)
        if p["keepdims"]:
            s[p["axis"]] = 1
        else:
            del s[p["axis"]]
        return TensorType(tuple(s), I64)


class TopK(Nchw):
    def repair(self, rng, ins, p):
        p["axis"] = _axis(p, ins[0].rank)
        p["k"] = min(p["k"], ins[0].shape[p["axis"]])
        return p

    def infer(self, ins, p):
        s = list(ins[0].shape)
        s[p["axis"]] = p["k"]
        return TensorType(tuple(s), I64 if p["output"] == "indices" else F32)


class LogSoftmax(Softmax):
    pass


# --------------------------------------------------------------------------- recurrent


class Recurrent(Nchw):
    """LSTM / GRU over X [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1); the node's
    tensor is Y: [seq, dirs, batch, hidden] or [batch, seq, dirs, hidden].  The table allows layout 0
    only: ONNX Runtime (the reference) refuses batch-first recurrences."""

    def want(self, rng, ins):
        t = ins[0]
        if t.rank != 3:
            t = TensorType(factorize(rng, t.size, 3), F32)
        seq = t.shape
        while prod(seq) > 512 and max(seq) > 1:  # a few hundred steps at most: sequential kernels are slow
            i = max(range(3), key=lambda j: seq[j])
            seq = seq[:i] + ((seq[i] + 1) // 2,) + seq[i + 1:]
        return [TensorType(seq, F32)]

    def dirs(self, p: Params) -> int:
        return 2 if p["direction"] == "bidirectional" else 1

    def infer(self, ins, p):
        a, b, _ = ins[0].shape
        h, d = p["hidden_size"], self.dirs(p)
        return TensorType((a, d, b, h) if p["layout"] == 0 else (a, b, d, h))


# --------------------------------------------------------------------------- the table

BOOL = Choice((True, False))
OPERAND = {"operand": Choice(("same", "scalar", "channel", "row"))}
ANY_AXIS = IntRange(-6, 5)
R4 = (4, 4)
REDUCE_DOMS: dict[str, Domain] = {"naxes": IntRange(1, 3), "keepdims": BOOL}


def _table() -> dict[str, Spec]:
    conv: dict[str, Domain] = {"kh": IntRange(1, 5), "kw": IntRange(1, 5), "sh": IntRange(1, 3), "sw": IntRange(1, 3),
            "dh": IntRange(1, 3), "dw": IntRange(1, 3), "out_ch": IntRange(1, 16), "bias": BOOL,
            "groups": Choice(("one", "depthwise", "some")),
            "auto_pad": Choice(("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"))}
    pool: dict[str, Domain] = {"kh": IntRange(1, 4), "kw": IntRange(1, 4), "sh": IntRange(1, 3), "sw": IntRange(1, 3), "ceil_mode": BOOL}
    specs: list[Spec] = [
        *(OnnxBinary(n) for n in ("Add", "Sub", "Mul", "Div", "Max", "Min")),
        OnnxBinary("Greater", out_dtype="bool"), OnnxBinary("Less", out_dtype="bool"),
        Where(),
        *(OnnxUnary(n, n) for n in ("Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Abs", "Neg", "Erf", "Floor",
                                    "Ceil", "Softplus", "HardSwish")),
        OnnxUnary("LeakyRelu", "LeakyRelu", domains={"alpha": FloatRange(0.01, 0.3)}),
        OnnxUnary("HardSigmoid", "HardSigmoid", domains={"alpha": FloatRange(0.1, 0.5), "beta": FloatRange(0.3, 0.7)}),
        OnnxUnary("Elu", "Elu", domains={"alpha": FloatRange(0.1, 2.0)}),
        OnnxUnary("PRelu", "PRelu", ranks=(2, MAX_RANK), domains={"slope": Choice(("channel", "scalar"))}),
        Clip("Clip", "Clip", domains={"min": FloatRange(-6.0, 0.0), "max": FloatRange(0.0, 6.0)}),
        Conv("Conv", "Conv", ranks=R4, domains=conv),
        ConvTranspose("ConvTranspose", "ConvTranspose", ranks=R4, domains={
            "kh": IntRange(1, 4), "kw": IntRange(1, 4), "sh": IntRange(1, 3), "sw": IntRange(1, 3),
            "out_ch": IntRange(1, 16), "bias": BOOL, "groups": Choice(("one", "some"))}),
        DepthToSpace("DepthToSpace", "DepthToSpace", ranks=R4, domains={
            "blocksize": IntRange(2, 3), "mode": Choice(("DCR", "CRD"))}),
        SpaceToDepth("SpaceToDepth", "SpaceToDepth", ranks=R4, domains={"blocksize": IntRange(2, 3)}),
        Pool("MaxPool", "MaxPool", ranks=R4, domains=dict(pool)),
        Pool("AveragePool", "AveragePool", ranks=R4, domains={**pool, "count_include_pad": BOOL}),
        GlobalPool("GlobalAveragePool", "GlobalAveragePool", ranks=R4),
        BatchNorm("BatchNormalization", "BatchNormalization", ranks=(2, 5),
                  domains={"epsilon": FloatRange(1e-4, 1e-2)}),
        InstanceNorm("InstanceNormalization", "InstanceNormalization", ranks=(3, 5),
                     domains={"epsilon": FloatRange(1e-4, 1e-2)}),
        LayerNorm("LayerNormalization", "LayerNormalization", ranks=(2, MAX_RANK),
                  domains={"axis": ANY_AXIS, "epsilon": FloatRange(1e-4, 1e-2), "negative": BOOL}),
        Gemm("Gemm", "Gemm", frozenset({1, 2}), domains={
            "n": IntRange(1, 16), "transA": BOOL, "transB": BOOL, "alpha": FloatRange(0.5, 1.5),
            "beta": FloatRange(0.5, 1.5), "c": Choice(("none", "scalar", "row", "full"))}),
        MatMul("MatMul", "MatMul", frozenset({1, 2}), ranks=(1, 4), domains={
            "n": IntRange(1, 16), "form": Choice(("weight", "vector", "left", "batched"))}),
        Resize("Resize", "Resize", ranks=R4, domains={
            "mode": Choice(("nearest", "linear", "cubic")),
            "coordinate_transformation_mode": Choice(("half_pixel", "pytorch_half_pixel", "align_corners",
                                                      "asymmetric", "tf_crop_and_resize")),
            "nearest_mode": Choice(("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")),
            "cubic_coeff_a": Choice((-0.75, -0.5)), "exclude_outside": BOOL,
            "by": Choice(("scales", "sizes")), "sh": Choice(RESIZE_SCALES), "sw": Choice(RESIZE_SCALES),
            "out_h": IntRange(1, 32), "out_w": IntRange(1, 32)}),
        GridSample("GridSample", "GridSample", ranks=R4, domains={
            "mode": Choice(("bilinear", "nearest", "bicubic")),
            "padding_mode": Choice(("zeros", "border", "reflection")), "align_corners": BOOL,
            "out_h": IntRange(1, 16), "out_w": IntRange(1, 16)}),
        Pad("Pad", "Pad", float_in=False, domains={
            "mode": Choice(("constant", "reflect", "edge")), "value": FloatRange(-1.0, 1.0)}),
        Slice("Slice", "Slice", float_in=False, domains={
            "naxes": IntRange(1, 4), "negative_steps": BOOL}),
        Split("Split", "Split", float_in=False, domains={"axis": ANY_AXIS, "parts": IntRange(1, 4),
                                                         "take": IntRange(0, 3)}),
        Concat("Concat", "Concat", frozenset(range(1, 9)), domains={"axis": ANY_AXIS}),
        Gather("Gather", "Gather", float_in=False, domains={
            "axis": ANY_AXIS, "count": IntRange(1, 6), "form": Choice(("vector", "scalar", "matrix"))}),
        GatherElements("GatherElements", "GatherElements", domains={"axis": ANY_AXIS, "count": IntRange(1, 6)}),
        GatherND("GatherND", "GatherND", domains={"batch_dims": Choice((0, 1)), "m": IntRange(1, 6)}),
        Softmax("Softmax", "Softmax", domains={"axis": ANY_AXIS}),
        LogSoftmax("LogSoftmax", "LogSoftmax", domains={"axis": ANY_AXIS}),
        *(Reduce(n, n, ranks=(2, MAX_RANK), domains=dict(REDUCE_DOMS))
          for n in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
                    "ReduceLogSumExp")),
        OnnxTranspose("Transpose", "Transpose", ranks=(2, MAX_RANK),
                      domains={"kind": Choice(("random", "swap_last"))}),
        OnnxReshape("Reshape", "Reshape", float_in=False, domains={"rank": IntRange(1, 5), "minus_one": BOOL}),
        ShapeReshape("ShapeReshape", "Reshape", float_in=False, domains={"keep": IntRange(1, 3)}),
        Flatten("Flatten", "Flatten", float_in=False, domains={"axis": IntRange(-6, 6)}),
        OnnxSqueeze("Squeeze", "Squeeze", float_in=False),
        OnnxUnsqueeze("Unsqueeze", "Unsqueeze", float_in=False, ranks=(1, MAX_RANK - 1), domains={"axis": ANY_AXIS}),
        Expand("Expand", "Expand", float_in=False, domains={"max_multiple": IntRange(1, 3)}),
        Tile("Tile", "Tile", domains={"max_multiple": IntRange(1, 3)}),
        Cast("Cast", "Cast", float_in=False, domains={"to": Choice(("float32", "int32", "int64", "bool"))}),
        ArgMax("ArgMax", "ArgMax", domains={"axis": ANY_AXIS, "keepdims": BOOL, "select_last_index": BOOL}),
        TopK("TopK", "TopK", domains={"k": IntRange(1, 8), "axis": ANY_AXIS, "largest": BOOL,
                                      "output": Choice(("values", "indices"))}),
        Recurrent("LSTM", "LSTM", ranks=(3, 3), domains={
            "hidden_size": IntRange(1, 8), "direction": Choice(("forward", "reverse", "bidirectional")),
            "layout": Choice((0,))}),
        Recurrent("GRU", "GRU", ranks=(3, 3), domains={
            "hidden_size": IntRange(1, 8), "direction": Choice(("forward", "reverse", "bidirectional")),
            "layout": Choice((0,)), "linear_before_reset": BOOL}),
        *exported_specs(),
    ]
    return {s.name: s for s in specs}


ONNX_SPECS: dict[str, Spec] = _table()


# --------------------------------------------------------------------------- hinge values

# The values an operator's semantics hinge on (issue 26, item 3): random floats rarely tie, never
# hold NaN in a normal graph, and integers cast from U[-1, 1] never reach their type's edges, so
# ArgMax's select_last_index, IsNaN and an integer comparison would only ever be tested on the
# easy values.  The solver (graph.solver.Builder._hinged) puts one of these adapters before the
# operator's first input, half the time, where the input's element type suits the kind:
#   ties       Floor(x * 4) / 4: few distinct values, exact in float, so equal elements tie in
#              both the reference and the engine (a tie an upstream rounding breaks is still
#              excused: Floor is a step function, oracle.DISCONTINUOUS)
#   nonfinite  Where(mask, specials, x): NaN, +-Inf and +-0 at constant places
#   edges      Where(mask, edges, x): int32's extremes, and 2**24 + 1 (the first integer float32
#              cannot hold: an engine that compares or selects integers through float loses it).
#              Only for operators that cannot overflow on them (ONNX leaves overflow undefined).
INT_TYPES = ("int32", "int64")
# Ties in float32 only: Floor(x * 4) of a float16 tensor turns the reference's half-precision
# rounding (where MNN computes in float32) into whole steps of 0.25.
HINGE_TYPES: dict[str, tuple[str, ...]] = {"ties": ("float32",), "nonfinite": FLOATS, "edges": INT_TYPES}
INT_EDGES = (-2**31, 2**31 - 1, -2**31 + 1, 2**31 - 2, 2**24 + 1, -(2**24 + 1), 0, -1)
FLOAT_SPECIALS = (float("nan"), float("inf"), float("-inf"), -0.0, 0.0)
# Only operators whose first input can be of the kind's types: integer edges go to the recorded
# operators with integer instances; the hand-written ArgMax, TopK, comparisons and reductions
# take float only (a kind listed for them would never fire).
HINGES: dict[str, tuple[str, ...]] = {
    **{op: ("ties",) for op in ("ArgMax", "ArgMin", "TopK", "Hardmax", "Unique")},
    "IsNaN": ("nonfinite",), "IsInf": ("nonfinite",),
    **{op: ("edges",) for op in ("Equal", "GreaterOrEqual", "LessOrEqual", "Sign")},
}


def hinge_kind(op: str, dtype: str) -> str | None:
    """The hinge adapter ``op``'s first input of element type ``dtype`` may get (None: none)."""
    return next((k for k in HINGES.get(op, ()) if dtype in HINGE_TYPES[k]), None)
