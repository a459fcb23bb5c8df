"""One spec per operator, in one declarative table (``SPECS``).

A spec knows three things about its operator and nothing about any framework:
  * ``want``: the input types it needs, given the types it is offered (the solver
    inserts Cast/Reshape/Slice/Pad adapters to meet them);
  * ``sample``/``repair``: parameters drawn from the (corpus-narrowed) domains,
    then repaired so that they are valid for the actual input shapes;
  * ``infer``: the output type.
Emitters live in ``gbft_action.reference``, apart from specs.  This is the
TensorFlow registry; ONNX's is ``ops.onnx_specs`` (a corpus picks one: ``ops.registry``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..graph.ir import Params, TensorType
from .domains import Choice, Domain, FloatRange, IntRange
from .shapes import (
    MAX_ELEMS,
    MAX_RANK,
    conv_out,
    factorize,
    prod,
    same_out,
    slice_len,
    solve_explicit_padding,
    to_rank4,
)

F32 = "float32"
FLOATS = (F32, "float16")  # the float element types tensors take (the guards squash both)


@dataclass
class Spec:
    name: str
    tf_type: str  # the TensorFlow op type it lowers to, as engines name it in errors
    arity: frozenset[int] = frozenset({1})
    ranks: tuple[int, int] = (1, MAX_RANK)
    float_in: bool = True
    domains: dict[str, Domain] = field(default_factory=dict)

    # -- inputs ---------------------------------------------------------------
    def want(self, rng: random.Random, ins: list[TensorType]) -> list[TensorType]:
        return [self._want_one(rng, t) for t in ins]

    def _want_one(self, rng: random.Random, t: TensorType) -> TensorType:
        dtype = F32 if self.float_in else t.dtype
        lo, hi = self.ranks
        if lo <= t.rank <= hi:
            return TensorType(t.shape, dtype)
        if lo <= 4 <= hi:
            return TensorType(self.rank4(rng, t.size), dtype)
        return TensorType(factorize(rng, t.size, max(lo, min(hi, self.fallback_rank))), dtype)

    #: the rank an input of a rank the operator cannot take is factorised to, when not 4
    fallback_rank = 2

    def rank4(self, rng: random.Random, size: int) -> tuple[int, ...]:
        """A rank-4 shape of ``size`` elements in the operator's layout (TensorFlow's NHWC)."""
        return to_rank4(rng, size)

    def lowers_to(self, p: Params) -> tuple[str, str] | None:
        """(the spec whose operator this node lowers to, the parameter that chose it), or None:
        a root cause names the operator the engine converts, so tf.image.resize(method=nearest)
        and ResizeNearestNeighbor, one node in the GraphDef, are one operator's defects."""
        return None

    # -- parameters -----------------------------------------------------------
    def sample(self, rng: random.Random, ins: list[TensorType], doms: dict[str, Domain] | None = None) -> Params:
        doms = {**self.domains, **(doms or {})}
        params = {k: d.draw(rng) for k, d in sorted(doms.items())}
        return self.repair(rng, ins, params)

    def repair(self, rng: random.Random, ins: list[TensorType], p: Params) -> Params:
        return p

    def align(self, ins: list[TensorType], p: Params) -> list[TensorType]:
        """Input types needed once parameters are known (the solver coerces to them)."""
        return ins

    # -- output ---------------------------------------------------------------
    def infer(self, ins: list[TensorType], p: Params) -> TensorType:
        return TensorType(ins[0].shape, F32)


# --------------------------------------------------------------------------- families


class Unary(Spec):
    pass


@dataclass
class Binary(Spec):
    """Element-wise binary op; with one input the other operand is a constant."""

    out_dtype: str = F32

    def want(self, rng: random.Random, ins: list[TensorType]) -> list[TensorType]:
        first = self._want_one(rng, ins[0])
        return [first] + [TensorType(first.shape, F32) for _ in ins[1:]]

    def repair(self, rng: random.Random, ins: list[TensorType], p: Params) -> Params:
        if len(ins) > 1:
            p.pop("operand", None)
        return p

    def infer(self, ins: list[TensorType], p: Params) -> TensorType:
        return TensorType(ins[0].shape, self.out_dtype)


class BiasAdd(Spec):
    pass


@dataclass
class Cast(Spec):
    def infer(self, ins: list[TensorType], p: Params) -> TensorType:
        return TensorType(ins[0].shape, p["to"])


class ArgMax(Spec):
    def repair(self, rng, ins, p):
        p["axis"] = p["axis"] % ins[0].rank
        return p

    def infer(self, ins, p):
        s = list(ins[0].shape)
        del s[p["axis"]]
        return TensorType(tuple(s), p["output_type"])


class Pool(Spec):
    def repair(self, rng, ins, p):
        _, h, w, _ = ins[0].shape
        if p["padding"] == "VALID":
            p["kh"], p["kw"] = min(p["kh"], h), min(p["kw"], w)
        return p

    def infer(self, ins, p):
        n, h, w, c = ins[0].shape
        if p["padding"] == "SAME":
            return TensorType((n, same_out(h, p["stride"]), same_out(w, p["stride"]), c))
        return TensorType((n, conv_out(h, p["kh"], p["stride"], 1, 0), conv_out(w, p["kw"], p["stride"], 1, 0), c))


class Conv(Spec):
    """Conv2d and Depthwise: SAME, VALID, or EXPLICIT padding solved by eqs. (9)-(13)."""

    def repair(self, rng, ins, p):
        _, h, w, _ = ins[0].shape
        if p["dilation"] > 1:
            p["stride"] = 1  # TF's CPU kernels reject dilation > 1 with stride > 1
        if p["padding"] == "EXPLICIT":
            return self._solve(rng, h, w, p)
        if p["padding"] == "VALID":
            p["kh"] = self._fit(h, p["kh"], p["dilation"])
            p["kw"] = self._fit(w, p["kw"], p["dilation"])
        return p

    @staticmethod
    def _fit(i: int, f: int, d: int) -> int:
        while f > 1 and d * (f - 1) + 1 > i:
            f -= 1
        return f

    def _solve(self, rng, h, w, p):
        fd = self.domains["kh"]
        fs = list(range(fd.lo, fd.hi + 1))
        # Prefer the drawn values; fall back to any kernel size with stride and dilation 1 (still eq. 9-13).
        sol_h = solve_explicit_padding(rng, h, [p["kh"]], [p["stride"]], [p["dilation"]]) or \
            solve_explicit_padding(rng, h, fs, [1], [1])
        assert sol_h is not None  # f=1, s=1, d=1 always solves it
        kh, s, d, ph0, ph1 = sol_h
        sol_w = solve_explicit_padding(rng, w, [p["kw"]], [s], [d]) or solve_explicit_padding(rng, w, fs, [s], [d])
        if sol_w is None:
            if s > 1:  # stride > 1 has no oW == iW solution for this width
                p["padding"] = "SAME"
                return p
            sol_w = (1, s, d, 0, 0)
        kw, _, _, pw0, pw1 = sol_w
        p.update(kh=kh, kw=kw, stride=s, dilation=d, pads=[ph0, ph1, pw0, pw1])
        return p

    def _spatial(self, ins, p):
        n, h, w, c = ins[0].shape
        s, d = p["stride"], p["dilation"]
        if p["padding"] == "SAME":
            return n, same_out(h, s), same_out(w, s), c
        pads = p.get("pads", [0, 0, 0, 0]) if p["padding"] == "EXPLICIT" else [0, 0, 0, 0]
        return n, conv_out(h, p["kh"], s, d, pads[0] + pads[1]), conv_out(w, p["kw"], s, d, pads[2] + pads[3]), c

    def infer(self, ins, p):
        n, oh, ow, c = self._spatial(ins, p)
        oc = p["out_ch"] if "out_ch" in p else c * p["multiplier"]
        return TensorType((n, oh, ow, oc))


class Deconv(Spec):
    def repair(self, rng, ins, p):
        _, h, w, _ = ins[0].shape
        while p["stride"] > 1 and prod(self._out(ins, p)) > MAX_ELEMS:
            p["stride"] -= 1
        while p["out_ch"] > 1 and prod(self._out(ins, p)) > MAX_ELEMS:
            p["out_ch"] //= 2
        return p

    def _out(self, ins, p):
        n, h, w, _ = ins[0].shape
        s = p["stride"]
        if p["padding"] == "SAME":
            return (n, h * s, w * s, p["out_ch"])
        return (n, (h - 1) * s + p["kh"], (w - 1) * s + p["kw"], p["out_ch"])

    def infer(self, ins, p):
        return TensorType(self._out(ins, p))


class Concat(Spec):
    def repair(self, rng, ins, p):
        p["axis"] = p["axis"] % ins[0].rank
        return p

    def align(self, ins: list[TensorType], p: Params) -> list[TensorType]:
        # Every dim but the axis must match the first input; an input of
        # another rank is coerced to the first input's shape as a whole.
        ax = p["axis"]
        base = list(ins[0].shape)
        out = []
        for t in ins:
            s = list(base)
            s[ax] = t.shape[ax] if t.rank == len(base) else base[ax]
            out.append(TensorType(tuple(s), F32))
        return out

    def infer(self, ins, p):
        s = list(ins[0].shape)
        s[p["axis"]] = sum(t.shape[p["axis"]] for t in ins)
        return TensorType(tuple(s))


class CropAndResize(Spec):
    def repair(self, rng, ins, p):
        c = ins[0].shape[3]
        while p["boxes"] * p["crop_h"] * p["crop_w"] * c > MAX_ELEMS and p["crop_h"] > 1:
            p["crop_h"] //= 2
        return p

    def infer(self, ins, p):
        return TensorType((p["boxes"], p["crop_h"], p["crop_w"], ins[0].shape[3]))


class ExpandDims(Spec):
    def repair(self, rng, ins, p):
        r = ins[0].rank
        p["axis"] = p["axis"] % (r + 1)
        return p

    def infer(self, ins, p):
        s = list(ins[0].shape)
        s.insert(p["axis"], 1)
        return TensorType(tuple(s))


class Gather(Spec):
    def repair(self, rng, ins, p):
        ax = p["axis"] % ins[0].rank
        dim = ins[0].shape[ax]
        p["axis"] = ax
        p["indices"] = [rng.randrange(dim) for _ in range(p["count"])]
        return p

    def infer(self, ins, p):
        s = list(ins[0].shape)
        s[p["axis"]] = len(p["indices"])
        return TensorType(tuple(s))


class Reduce(Spec):
    def repair(self, rng, ins, p):
        r = ins[0].rank
        n = min(p["naxes"], r if p["keepdims"] else r - 1)
        p["axes"] = sorted(rng.sample(range(r), max(1, n)))
        return p

    def infer(self, ins, p):
        s = list(ins[0].shape)
        if p["keepdims"]:
            return TensorType(tuple(1 if i in p["axes"] else d for i, d in enumerate(s)))
        return TensorType(tuple(d for i, d in enumerate(s) if i not in p["axes"]))


class Reshape(Spec):
    def repair(self, rng, ins, p):
        shape = p.get("shape")
        if not shape or prod(shape) != ins[0].size:
            p["shape"] = list(factorize(rng, ins[0].size, p["rank"]))
        p["rank"] = len(p["shape"])
        return p

    def infer(self, ins, p):
        return TensorType(tuple(p["shape"]), ins[0].dtype)


class ResizeImage(Spec):
    #: tf.image.resize (the "Resize" spec): the operator each method lowers to, named as its own
    #: spec (ops.specs.Spec.lowers_to)
    METHODS = {"bilinear": "Resizebilinear", "nearest": "Resizenearestneighbor"}

    def lowers_to(self, p):
        return (self.METHODS[p["method"]], "method") if self.name == "Resize" and p.get("method") in self.METHODS \
            else None

    def repair(self, rng, ins, p):
        c = ins[0].shape[3]
        while p["h"] * p["w"] * c > MAX_ELEMS:
            p["h"], p["w"] = max(1, p["h"] // 2), max(1, p["w"] // 2)
        if p.get("align_corners") and p.get("half_pixel_centers"):
            p["half_pixel_centers"] = False  # TF rejects both together
        return p

    def infer(self, ins, p):
        n, _, _, c = ins[0].shape
        return TensorType((n, p["h"], p["w"], c))


class ShapeOp(Spec):
    def infer(self, ins, p):
        return TensorType((ins[0].rank,), "int32")


class Slice(Spec):
    def repair(self, rng, ins, p):
        shape = ins[0].shape
        if not self._valid(shape, p):
            begin = [rng.randrange(d) for d in shape]
            p["begin"] = begin
            p["size"] = [rng.randint(1, d - b) for d, b in zip(shape, begin)]
        return p

    @staticmethod
    def _valid(shape, p) -> bool:
        b, s = p.get("begin"), p.get("size")
        return (b is not None and s is not None and len(b) == len(shape) == len(s)
                and all(0 <= bi and si >= 1 and bi + si <= d for bi, si, d in zip(b, s, shape)))

    def infer(self, ins, p):
        return TensorType(tuple(p["size"]), ins[0].dtype)


class Pad(Spec):
    def repair(self, rng, ins, p):
        if len(p.get("pads", [])) != ins[0].rank:
            p["pads"] = [[rng.randint(0, 2), rng.randint(0, 2)] for _ in ins[0].shape]
        return p

    def infer(self, ins, p):
        return TensorType(tuple(d + a + b for d, (a, b) in zip(ins[0].shape, p["pads"])), ins[0].dtype)


class Softmax(Spec):
    def repair(self, rng, ins, p):
        p["axis"] = p["axis"] % ins[0].rank
        return p


class SpaceToBatch(Spec):
    def repair(self, rng, ins, p):
        _, h, w, _ = ins[0].shape
        pads = []
        for dim, b in ((h, p["bh"]), (w, p["bw"])):
            lo = rng.randint(0, b - 1)
            hi = (-(dim + lo)) % b
            pads.append([lo, hi])
        p["pads"] = pads
        return p

    def infer(self, ins, p):
        n, h, w, c = ins[0].shape
        (a, b), (cc, d) = p["pads"]
        return TensorType((n * p["bh"] * p["bw"], (h + a + b) // p["bh"], (w + cc + d) // p["bw"], c))


class BatchToSpace(Spec):
    def want(self, rng, ins):
        # Leave room for the batch to grow to bh*bw (at most 9) in ``align``.
        n, h, w, c = self._want_one(rng, ins[0]).shape
        while 9 * h * w * c > MAX_ELEMS and max(h, w) > 1:
            h, w = (h // 2 or 1, w) if h >= w else (h, w // 2 or 1)
        return [TensorType((n, h, w, c))]

    def align(self, ins, p):
        # The batch must be a multiple of bh*bw.
        n, h, w, c = ins[0].shape
        k = p["bh"] * p["bw"]
        return [TensorType((k * max(1, n // k), h, w, c))]

    def repair(self, rng, ins, p):
        _, h, w, _ = ins[0].shape
        crops = []
        for dim, b in ((h, p["bh"]), (w, p["bw"])):
            total = rng.randint(0, dim * b - 1)
            lo = rng.randint(0, total)
            crops.append([lo, total - lo])
        p["crops"] = crops
        return p

    def infer(self, ins, p):
        n, h, w, c = ins[0].shape
        (a, b), (cc, d) = p["crops"]
        k = p["bh"] * p["bw"]
        return TensorType((n // k, h * p["bh"] - a - b, w * p["bw"] - cc - d, c))


class Squeeze(Spec):
    def want(self, rng, ins):
        t = self._want_one(rng, ins[0])
        if t.rank == 1:  # squeezing (1,) would give a scalar: make it (1, d) first
            return [TensorType((1,) + t.shape, t.dtype)]
        if 1 not in t.shape and t.rank < MAX_RANK:
            s = list(t.shape)
            s.insert(rng.randint(0, len(s)), 1)
            return [TensorType(tuple(s), t.dtype)]
        return [t]

    def repair(self, rng, ins, p):
        shape = ins[0].shape
        ones = [i for i, d in enumerate(shape) if d == 1]
        if len(ones) == len(shape):
            ones = ones[:-1]  # keep rank >= 1: scalars are not worth the trouble
        if ones:
            p["axes"] = sorted(rng.sample(ones, rng.randint(1, len(ones))))
        else:
            p["axes"] = []
        return p

    def infer(self, ins, p):
        return TensorType(tuple(d for i, d in enumerate(ins[0].shape) if i not in p["axes"]))


class StridedSlice(Spec):
    def repair(self, rng, ins, p):
        shape = ins[0].shape
        begin, end, strides = [], [], []
        bmask = emask = 0
        for i, d in enumerate(shape):
            s = rng.choice([1, 1, 2, 3, -1])
            b = rng.randrange(d)
            e = rng.randint(b + 1, d) if s > 0 else rng.randint(-1, b - 1) if b > 0 else -1
            if s < 0 and e == -1:
                emask |= 1 << i  # "to the start": -1 would mean the last element
                e = 0
            if s > 0 and rng.random() < 0.2:
                bmask |= 1 << i
            begin.append(b)
            end.append(e)
            strides.append(s)
        p.update(begin=begin, end=end, strides=strides, begin_mask=bmask, end_mask=emask)
        return p

    def infer(self, ins, p):
        out = []
        for i, d in enumerate(ins[0].shape):
            b = None if p["begin_mask"] >> i & 1 else p["begin"][i]
            e = None if p["end_mask"] >> i & 1 else p["end"][i]
            out.append(slice_len(d, b, e, p["strides"][i]))
        return TensorType(tuple(out))


class Tile(Spec):
    def repair(self, rng, ins, p):
        shape = ins[0].shape
        mult = [rng.randint(1, p["max_multiple"]) for _ in shape]
        while prod([a * b for a, b in zip(shape, mult)]) > MAX_ELEMS:
            i = max(range(len(mult)), key=lambda j: mult[j])
            if mult[i] == 1:
                break
            mult[i] -= 1
        p["multiples"] = mult
        return p

    def infer(self, ins, p):
        return TensorType(tuple(a * b for a, b in zip(ins[0].shape, p["multiples"])))


class TopK(Spec):
    def repair(self, rng, ins, p):
        p["k"] = min(p["k"], ins[0].shape[-1])
        return p

    def infer(self, ins, p):
        return TensorType(ins[0].shape[:-1] + (p["k"],))


class Transpose(Spec):
    def repair(self, rng, ins, p):
        perm = list(range(ins[0].rank))
        rng.shuffle(perm)
        p["perm"] = perm
        return p

    def infer(self, ins, p):
        return TensorType(tuple(ins[0].shape[i] for i in p["perm"]))


class Fill(Spec):
    pass


# --------------------------------------------------------------------------- the table

R4 = (4, 4)
BOOL = Choice((True, False))
CONV_DOMS: dict[str, Domain] = {
    "kh": IntRange(1, 5), "kw": IntRange(1, 5), "stride": IntRange(1, 3),
    "dilation": IntRange(1, 3), "padding": Choice(("SAME", "VALID", "EXPLICIT")),
}
POOL_DOMS: dict[str, Domain] = {
    "kh": IntRange(1, 5), "kw": IntRange(1, 5), "stride": IntRange(1, 3), "padding": Choice(("SAME", "VALID")),
}
BIN = frozenset({1, 2})
OPERAND = {"operand": Choice(("same", "scalar", "channel"))}
RESIZE_DOMS: dict[str, Domain] = {"h": IntRange(1, 32), "w": IntRange(1, 32)}
REDUCE_DOMS: dict[str, Domain] = {"naxes": IntRange(1, 3), "keepdims": BOOL}


def _table() -> dict[str, Spec]:
    specs: list[Spec] = [
        Binary("Add", "Add", BIN, domains=dict(OPERAND)),
        Binary("Sub", "Sub", BIN, domains=dict(OPERAND)),
        Binary("Mul", "Mul", BIN, domains=dict(OPERAND)),
        Binary("Realdiv", "RealDiv", BIN, domains=dict(OPERAND)),
        Binary("Maximum", "Maximum", BIN, domains=dict(OPERAND)),
        Binary("Minimum", "Minimum", BIN, domains=dict(OPERAND)),
        Binary("Greater", "Greater", BIN, domains=dict(OPERAND), out_dtype="bool"),
        ArgMax("Argmax", "ArgMax", ranks=(2, MAX_RANK),
               domains={"axis": IntRange(-6, 5), "output_type": Choice(("int32", "int64"))}),
        Pool("Avgpooling", "AvgPool", ranks=R4, domains=dict(POOL_DOMS)),
        Pool("Maxpooling", "MaxPool", ranks=R4, domains=dict(POOL_DOMS)),
        BatchToSpace("Batchtospacend", "BatchToSpaceND", ranks=R4, domains={"bh": IntRange(1, 3), "bw": IntRange(1, 3)}),
        SpaceToBatch("Spacetobatchnd", "SpaceToBatchND", ranks=R4, domains={"bh": IntRange(1, 3), "bw": IntRange(1, 3)}),
        BiasAdd("Biasadd", "BiasAdd", ranks=(2, MAX_RANK)),
        Cast("Cast", "Cast", float_in=False, domains={"to": Choice(("float32", "int32"))}),
        Unary("Ceil", "Ceil"),
        Concat("Concat", "ConcatV2", frozenset(range(1, 9)), domains={"axis": IntRange(-6, 5)}),
        Conv("Conv2d", "Conv2D", ranks=R4, domains={**CONV_DOMS, "out_ch": IntRange(1, 16)}),
        Conv("Depthwise", "DepthwiseConv2dNative", ranks=R4, domains={**CONV_DOMS, "multiplier": IntRange(1, 3)}),
        Deconv("Deconv2d", "Conv2DBackpropInput", ranks=R4, domains={
            "kh": IntRange(1, 4), "kw": IntRange(1, 4), "stride": IntRange(1, 3), "out_ch": IntRange(1, 16),
            "padding": Choice(("SAME", "VALID"))}),
        CropAndResize("Cropandresize", "CropAndResize", ranks=R4, domains={
            "boxes": IntRange(1, 3), "crop_h": IntRange(1, 8), "crop_w": IntRange(1, 8),
            "method": Choice(("bilinear", "nearest"))}),
        Unary("Exp", "Exp"),
        ExpandDims("Expanddims", "ExpandDims", ranks=(1, MAX_RANK - 1), domains={"axis": IntRange(-6, 5)}),
        Fill("Fill", "Fill", domains={"value": FloatRange(-1.0, 1.0)}),
        Unary("Fusedbatchnorm", "FusedBatchNormV3", ranks=R4, domains={"epsilon": FloatRange(0.0001, 0.01)}),
        Gather("GatherV2", "GatherV2", domains={"axis": IntRange(-6, 5), "count": IntRange(1, 6)}),
        Unary("Lrn", "LRN", ranks=R4, domains={
            "depth_radius": IntRange(1, 5), "bias": FloatRange(0.5, 2.0), "alpha": FloatRange(0.0001, 1.0),
            "beta": FloatRange(0.25, 1.0)}),
        Reduce("Reducemax", "Max", ranks=(2, MAX_RANK), domains=dict(REDUCE_DOMS)),
        Reduce("Reducemean", "Mean", ranks=(2, MAX_RANK), domains=dict(REDUCE_DOMS)),
        Reduce("Reduceprod", "Prod", ranks=(2, MAX_RANK), domains=dict(REDUCE_DOMS)),
        Reduce("Reducesum", "Sum", ranks=(2, MAX_RANK), domains=dict(REDUCE_DOMS)),
        Unary("Relu", "Relu"),
        Unary("Relu6", "Relu6"),
        Reshape("Reshape", "Reshape", float_in=False, domains={"rank": IntRange(1, 5)}),
        ResizeImage("Resizebilinear", "ResizeBilinear", ranks=R4, domains={
            **RESIZE_DOMS, "align_corners": BOOL, "half_pixel_centers": BOOL}),
        ResizeImage("Resizenearestneighbor", "ResizeNearestNeighbor", ranks=R4, domains={
            **RESIZE_DOMS, "align_corners": BOOL, "half_pixel_centers": BOOL}),
        ResizeImage("Resize", "ResizeBilinear", ranks=R4, domains={
            **RESIZE_DOMS, "method": Choice(("bilinear", "nearest", "bicubic", "area"))}),
        Unary("Rsqrt", "Rsqrt"),
        Unary("Selu", "Selu"),
        ShapeOp("Shape", "Shape", float_in=False),
        Unary("Sigmoid", "Sigmoid"),
        Slice("Slice", "Slice", float_in=False),
        Softmax("Softmax", "Softmax", domains={"axis": IntRange(-6, 5)}),
        Unary("Sqrt", "Sqrt"),
        Unary("Square", "Square"),
        Squeeze("Squeeze", "Squeeze", ranks=(1, MAX_RANK)),
        StridedSlice("Stridedslice", "StridedSlice"),
        Unary("Tanh", "Tanh"),
        Tile("Tile", "Tile", domains={"max_multiple": IntRange(1, 3)}),
        TopK("TopKV2", "TopKV2", domains={"k": IntRange(1, 8)}),
        Transpose("Transpose", "Transpose", ranks=(2, MAX_RANK)),
        # Adapter-only operator: not a corpus block in the paper, used by the solver.
        Pad("Pad", "Pad", float_in=False),
    ]
    return {s.name: s for s in specs}


SPECS: dict[str, Spec] = _table()

# Operators the shape solver inserts; corpus blocks may also use them.  The
# guards keep values in range (ops.ranges): existing operators, so engines, the
# TensorFlow emitter and the repro code need nothing new.
GUARDS = ("Tanh", "Sigmoid")
ADAPTERS = ("Cast", "Reshape", "Slice", "Pad", *GUARDS)
