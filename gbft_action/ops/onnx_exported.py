"""Exported forms: the subgraphs exporters write for a transformer's layers, one block each (issue 36).

torch.onnx.export and HF's exporters write RMSNorm, LayerNorm, GroupNorm, Gelu, SiLU /
SwiGLU, rotary embeddings, scaled dot-product attention and causal convolutions as primitive
operators (the function bodies of ONNX's opset-18+ operators, written out), and MNN's
converter recognises those subgraphs and fuses them into its own kernels (its
``optimizer/merge/Fuse*`` passes).  A defect there lives in a pass no single-operator probe
and no CNN-era block reaches.

Each form is ONE node of the IR, expanded by ``reference.onnx_exported`` into its ONNX nodes,
so that:
  * a key names the pattern and what sets the instance apart ("AttentionPattern: wrong
    results (mask=causal, heads=4)"): its choice parameters are the ones diagnosis names;
  * the minimiser can drop or simplify the node but never cut the subgraph in two: a
    minimised model still holds the whole form, so it still triggers the fusion.
Constants a pass checks by value (Gelu's 0.5 and sqrt(2), a norm's epsilon, the exponent 2)
are written as exporters write them, never drawn at random.

Framework-free.
"""

from __future__ import annotations

import math
import random
from typing import Iterable

from ..graph.ir import Params, TensorType
from .domains import Choice, Domain, IntRange
from .shapes import MAX_ELEMS, MAX_RANK, divisors, factorize, prod
from .specs import F32, Spec

BOOL = Choice((True, False))
EPSILONS = Choice((1e-5, 1e-6, 1e-12))  # torch's LayerNorm, LLaMA's RMSNorm, BERT's LayerNorm


class Pattern(Spec):
    """An exported form over its input's last axis (or NCHW channels): the output has the
    input's shape unless a subclass says otherwise."""

    def __init__(self, name: str, ranks: tuple[int, int], domains: dict[str, Domain]) -> None:
        super().__init__(name, name, frozenset({1}), ranks=ranks, domains=domains)

    def rank4(self, rng: random.Random, size: int) -> tuple[int, ...]:
        return factorize(rng, size, 4)

    def infer(self, ins: list[TensorType], p: Params) -> TensorType:
        return TensorType(ins[0].shape, F32)

    def operators(self, p: Params, x: TensorType) -> tuple[str, ...]:
        """The ONNX operators the form writes with parameters ``p`` on input ``x`` (coverage
        counts these; the emitter, reference.onnx_exported, is the authority and
        tests/test_exported.py holds them to it)."""
        return _OPERATORS[self.name](p)


class GroupNormPattern(Pattern):
    """torch's GroupNorm export: Reshape [N, G, -1] -> InstanceNormalization -> Reshape back ->
    per-channel Mul and Add.  ``groups`` is repaired to a divisor of C."""

    def repair(self, rng, ins, p):
        c = ins[0].shape[1]
        ok = [d for d in divisors(c) if d <= p["groups"]] or [1]
        p["groups"] = max(ok)
        return p


class SwiGLUPattern(Pattern):
    """SiLU (x * Sigmoid(x)) or LLaMA's MLP: down(silu(x Wg) * (x Wu)), back to the input's width."""

    def repair(self, rng, ins, p):
        lead = prod(ins[0].shape[:-1])
        while p["hidden"] > 2 and lead * p["hidden"] > MAX_ELEMS:
            p["hidden"] //= 2
        return p


class RotaryPattern(Pattern):
    """Rotary embedding on [B, H, S, D]: the first ``rot`` = D or D/2 (partial, GPT-NeoX) dims,
    rounded down to even, rotated as HF's rotate_half (Slice, Neg, Concat), with cos and sin as
    constants or gathered from a cache by position ids; the rest passes through."""

    def want(self, rng, ins):
        t = ins[0]
        shape = t.shape if t.rank == 4 else factorize(rng, t.size, 4)
        if shape[-1] < 2:  # nothing to rotate: put the largest dim last
            shape = tuple(sorted(shape))
        return [TensorType(shape, F32)]

    @staticmethod
    def rot(d: int, p: Params) -> int:
        r = d // 2 if p["partial"] else d
        return r - r % 2

    def operators(self, p: Params, x: TensorType) -> tuple[str, ...]:
        return ("Mul",) if self.rot(x.shape[-1], p) == 0 else super().operators(p, x)  # 0: x times cos 0


class AttentionPattern(Pattern):
    """Scaled dot-product attention as exporters write it, on x [B, S, E]: q, k, v = x W (MatMul),
    Reshape [B, S, heads, dh] and Transpose to [B, heads, S, dh]; k (and v) after ``past``
    cached positions (Concat on the sequence axis); grouped key/value heads (gqa: heads / 2 of
    them) repeated to full as HF's repeat_kv (Unsqueeze, Expand, Reshape); scores q k^T scaled
    (Mul by 1/sqrt(dh) or Div by sqrt(dh)); a causal or padding mask added (0 or the float
    minimum, as HF writes it); Softmax on the last axis; p v; Transpose and Reshape back and an
    output projection to E."""

    MAX_SEQ, MAX_WIDTH = 16, 32

    def want(self, rng, ins):
        t = ins[0]
        b, s, e = t.shape if t.rank == 3 else factorize(rng, t.size, 3)
        return [TensorType((min(b, 2), min(s, self.MAX_SEQ), min(e, self.MAX_WIDTH)), F32)]

    def repair(self, rng, ins, p):
        if p["kv"] == "gqa" and p["heads"] < 2:
            p["kv"] = "mha"
        return p

    @staticmethod
    def kv_heads(p: Params) -> int:
        return p["heads"] // 2 if p["kv"] == "gqa" else p["heads"]


class CausalConvPattern(Pattern):
    """A causal 1-D convolution with its state (Mamba / streaming conv): Concat(state, x) on the
    time axis of [N, C, T], then Conv with kernel K and no padding, depthwise or dense: the
    output has x's shape (dense: ``out_ch`` channels).  The state is a constant [N, C, K - 1]."""

    def want(self, rng, ins):
        t = ins[0]
        n, c, tt = t.shape if t.rank == 3 else factorize(rng, t.size, 3)
        return [TensorType((n, min(c, 16), tt), F32)]

    def infer(self, ins, p):
        n, c, t = ins[0].shape
        return TensorType((n, c if p["depthwise"] else p["out_ch"], t), F32)


class RecurrentPattern(Pattern):
    """LSTM / GRU as torch.onnx.export writes them: weights, bias and (``init``) initial states
    as initialisers, every output named (Y, Y_h and, for LSTM, Y_c: MNN's converter crashes on
    an LSTM that names Y alone, so that form would settle the operator as a crash), optional
    ``sequence_lens``, ``clip`` and ``input_forget``; the node's tensor is Y in torch's
    [seq, batch, dirs * hidden] (Transpose and Reshape after the op) or the last state Y_h."""

    MAX_STEPS = 128  # elements of [seq, batch, input] at most: sequential kernels are slow

    def want(self, rng, ins):
        t = ins[0]
        seq = t.shape if t.rank == 3 else factorize(rng, t.size, 3)
        while prod(seq) > self.MAX_STEPS and max(seq) > 1:
            i = max(range(3), key=lambda j: seq[j])
            seq = seq[:i] + ((seq[i] + 1) // 2,) + seq[i + 1:]
        return [TensorType(seq, F32)]

    @staticmethod
    def dirs(p: Params) -> int:
        return 2 if p["direction"] == "bidirectional" else 1

    def lowers_to(self, p: Params) -> tuple[str, str] | None:
        # A root cause names the operator the engine converts: one GRU defect seen through this
        # form and through the GRU block is one key (seed 202 filed "GRU: ... (linear_before_reset=False)"
        # and "GRUPattern: ..." for one defect).
        return self.name.removesuffix("Pattern"), ""

    def infer(self, ins, p):
        s, b, _ = ins[0].shape
        h, d = p["hidden_size"], self.dirs(p)
        return TensorType((s, b, d * h) if p["output"] == "y" else (d, b, h), F32)


class QDQPattern(Pattern):
    """A quantised layer as ONNX Runtime's quantiser (``quantize_static``, QuantFormat.QDQ)
    writes it, and MNN's converter fuses into its int8 kernels: the input QuantizeLinear ->
    DequantizeLinear; the weight an integer initialiser through DequantizeLinear, per tensor or
    per output channel; the bias (Conv, Gemm) int32 through DequantizeLinear at the input scale
    times the weight scale; the float operator; the output QuantizeLinear -> DequantizeLinear.

    Activations int8 (zero point 0, scale range / 127) or uint8 (zero point 128, scale
    2 range / 255), over ``range`` at the input and ``out_range`` at the output (values beyond
    saturate, as in a calibrated model fed an outlier); weights int8, or int4 (``bits`` 4)
    from opset 21, where DequantizeLinear takes it (int8 below: the form stays valid).

    ``quantiser`` says who writes it: ``written``, this form as above; ``onnxruntime``, ONNX
    Runtime's own ``quantize_static`` on the float layer (reference.onnx_exported), at the same
    activation scales (its TensorQuantOverrides), so the oracle's bound in quanta holds, with
    the quantiser's own options users ship: ``weights`` asymmetric (non-zero weight zero
    points) and ``bias`` left float (QuantizeBias off)."""

    def repair(self, rng, ins, p):
        if p.get("quantiser") != "onnxruntime":  # the written form has one of each: no key names them
            p.update(weights="symmetric", **({"bias": "int32"} if "bias" in p else {}))
        return p

    def want(self, rng, ins):
        t = ins[0]
        if self.name == "QDQConvPattern":
            n, c, h, w = t.shape if t.rank == 4 else factorize(rng, t.size, 4)
            return [TensorType((n, min(c, 16), h, w), F32)]
        if self.name == "QDQGemmPattern":
            return [TensorType(t.shape if t.rank == 2 else factorize(rng, t.size, 2), F32)]
        return [TensorType(t.shape, F32)]

    def infer(self, ins, p):
        s = ins[0].shape
        return TensorType((s[0], p["out_ch"], *s[2:]) if self.name == "QDQConvPattern" else (*s[:-1], p["out_ch"]), F32)

    @staticmethod
    def scale(dtype: str, span: float) -> float:
        """The scale of an activation over [-span, span]: int8 symmetric, uint8 about 128."""
        return span / 127.0 if dtype == "int8" else 2.0 * span / 255.0

    @staticmethod
    def quantum(p: Params) -> float:
        """The step of the form's output grid: an integer kernel may round one step apart."""
        return QDQPattern.scale(p["act"], p["out_range"])


WRITERS = ("onnxruntime",)  # writers of a quantised form other than this module (``quantiser``)
QDQ: dict[str, Domain] = {
    "act": Choice(("int8", "uint8")), "bits": Choice((8, 4)), "per_channel": BOOL,
    "range": Choice((1.0, 4.0)), "out_range": Choice((2.0, 8.0)), "out_ch": IntRange(1, 16),
    "quantiser": Choice(("written", *WRITERS)), "weights": Choice(("symmetric", "asymmetric")),
    "bias": Choice(("int32", "float"))}
QDQ_OPS = {"QDQConvPattern": "Conv", "QDQMatMulPattern": "MatMul", "QDQGemmPattern": "Gemm"}


def quantum_of(nodes: Iterable[tuple[str, Params]]) -> float:
    """The largest output step of the quantised forms among ``nodes`` (operator, params); 0.0
    when there are none (oracle.bounds_for widens a model's bound by it)."""
    return max((QDQPattern.quantum(p) for op, p in nodes if op in QDQ_OPS), default=0.0)


ANY = (1, MAX_RANK)
RECURRENT: dict[str, Domain] = {
    "hidden_size": IntRange(1, 8), "direction": Choice(("forward", "reverse", "bidirectional")),
    "init": Choice((False, True)), "seqlens": Choice((False, True)), "clip": Choice((0.0, 3.0)),
    "output": Choice(("y", "h"))}


def exported_specs() -> list[Spec]:
    """The forms, with the choices that set instances apart (a key names those a defect needs)."""
    return [
        Pattern("RMSNormPattern", ANY, {"epsilon": EPSILONS, "form": Choice(("div", "reciprocal")),
                                        "gamma": BOOL}),
        Pattern("LayerNormPattern", (2, MAX_RANK), {"epsilon": EPSILONS, "square": Choice(("pow", "mul")),
                                             "affine": BOOL}),
        GroupNormPattern("GroupNormPattern", (4, 4), {"groups": IntRange(1, 8), "epsilon": EPSILONS}),
        Pattern("GeluPattern", ANY, {"form": Choice(("erf", "tanh_torch", "tanh_nested"))}),
        SwiGLUPattern("SwiGLUPattern", (2, 4), {"form": Choice(("silu", "swiglu")), "hidden": IntRange(2, 16)}),
        RotaryPattern("RotaryPattern", (4, 4), {"cache": Choice(("const", "gathered")), "partial": BOOL,
                                                "base": Choice((10000.0, 500000.0))}),
        AttentionPattern("AttentionPattern", (3, 3), {
            "heads": Choice((1, 2, 4)), "head_dim": Choice((4, 8)), "kv": Choice(("mha", "gqa")),
            "mask": Choice(("none", "causal", "padding")), "scale": Choice(("mul", "div")),
            "past": Choice((0, 2))}),
        CausalConvPattern("CausalConvPattern", (3, 3), {"kernel": IntRange(2, 4), "depthwise": BOOL,
                                                        "out_ch": IntRange(1, 8)}),
        RecurrentPattern("LSTMPattern", (3, 3), {**RECURRENT, "input_forget": Choice((False, True))}),
        RecurrentPattern("GRUPattern", (3, 3), {**RECURRENT, "linear_before_reset": BOOL}),
        QDQPattern("QDQConvPattern", (4, 4), {**QDQ, "kernel": Choice((1, 3))}),
        QDQPattern("QDQMatMulPattern", (2, 4), {k: d for k, d in QDQ.items() if k != "bias"}),  # no bias
        QDQPattern("QDQGemmPattern", (2, 2), QDQ),
    ]


def _norm_ops(p: Params) -> tuple[str, ...]:
    head = ("ReduceMean", "Sub", "Pow" if p.get("square") == "pow" else "Mul") if "square" in p else ("Pow", "ReduceMean")
    scale = ("Div",) if p.get("form", "div") == "div" else ("Reciprocal", "Mul")
    affine = ("Mul", "Add") if p.get("affine") else ("Mul",) if p.get("gamma") else ()
    return (*head, "Add", "Sqrt", *scale, *affine)


def _attention_ops(p: Params) -> tuple[str, ...]:
    return ("MatMul", "Reshape", "Transpose", "Mul" if p["scale"] == "mul" else "Div", "Softmax",
            *(("Add",) if p["mask"] != "none" else ()), *(("Concat",) if p["past"] else ()),
            *(("Unsqueeze", "Expand") if p["kv"] == "gqa" and p["heads"] >= 2 else ()))


_OPERATORS = {
    "RMSNormPattern": _norm_ops,
    "LayerNormPattern": _norm_ops,
    "GroupNormPattern": lambda p: ("Reshape", "InstanceNormalization", "Mul", "Add"),
    "GeluPattern": lambda p: ("Div", "Erf", "Add", "Mul") if p["form"] == "erf" else ("Pow", "Mul", "Add", "Tanh"),
    "SwiGLUPattern": lambda p: ("Sigmoid", "Mul") if p["form"] == "silu" else ("MatMul", "Sigmoid", "Mul"),
    "RotaryPattern": lambda p: ("Slice", "Neg", "Concat", "Mul", "Add", *(("Gather",) if p["cache"] == "gathered" else ())),
    "AttentionPattern": _attention_ops,
    "CausalConvPattern": lambda p: ("Concat", "Conv"),
    "LSTMPattern": lambda p: ("LSTM", *(("Transpose", "Reshape") if p["output"] == "y" else ())),
    "GRUPattern": lambda p: ("GRU", *(("Transpose", "Reshape") if p["output"] == "y" else ())),
    **{name: (lambda op: lambda p: ("QuantizeLinear", "DequantizeLinear", op))(op) for name, op in QDQ_OPS.items()},
}
EXPORTED_FORMS = frozenset(s.name for s in exported_specs())


def rope_angles(positions: int, rot: int, base: float) -> list[list[float]]:
    """θ[s][i] = s / base^(2i / rot) for the first rot / 2 frequencies, duplicated as HF's
    ``torch.cat((freqs, freqs), -1)``: [positions, rot]."""
    half = [1.0 / base ** (2 * i / rot) for i in range(rot // 2)]
    return [[s * f for f in half + half] for s in range(positions)]


GELU_TANH_C = math.sqrt(2.0 / math.pi)
