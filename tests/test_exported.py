"""The exported forms (ops.onnx_exported, reference.onnx_exported): each computes its layer's
formula (ONNX Runtime against float64 numpy written here from the papers' formulas, not
from the emitter), and the forms MNN's converter fuses reach its fusion passes."""

from __future__ import annotations

import importlib.util
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.ops.onnx_exported import (QDQ_OPS, AttentionPattern, QDQPattern, RecurrentPattern, RotaryPattern,
                                         exported_specs)
from gbft_action.frontends import NEWEST_OPSET
from gbft_action.ops.onnx_specs import ONNX_SPECS
from gbft_action.reference.onnx_worker import OnnxReferenceHandler
from gbft_action.reference.weights import weights_rng
from gbft_action.wire.arrays import unpack

HANDLER = OnnxReferenceHandler()
SHAPES = {"GroupNormPattern": (1, 6, 3, 4), "RotaryPattern": (2, 2, 5, 6), "AttentionPattern": (2, 5, 6),
          "CausalConvPattern": (1, 4, 7), "LSTMPattern": (5, 3, 3), "GRUPattern": (5, 3, 3),
          "QDQConvPattern": (1, 4, 5, 5), "QDQGemmPattern": (3, 8)}
FORMS = [s.name for s in exported_specs()]


def _one(op: str, params: dict, seed: int) -> Graph:
    t = TensorType(SHAPES.get(op, (2, 3, 8)))
    out = ONNX_SPECS[op].infer([t], params)
    # The quantised forms at the newest opset, where their weights may be int4.
    meta = {"frontend": "onnx", "opset": NEWEST_OPSET} if op in QDQ_OPS else {}
    return Graph({"in0": t}, [Node("n0", op, ["in0"], params, out, block=op)], ["n0"], seed=seed, meta=meta)


def _ort(g: Graph, d: Path) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    import onnx
    from onnx import numpy_helper

    r = HANDLER.build({"op": "build", "graph": g.to_json(), "dir": str(d)})
    assert r["ok"], r
    m = onnx.load(str(d / "model.onnx"))
    consts = {t.name.removeprefix("n0_"): numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    return unpack(r["inputs"])["in0"].astype(np.float64), unpack(r["expected"])["n0"], consts


# --------------------------------------------------------------------------- float64 formulas


def _rms(x, p, c):
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + p["epsilon"])
    return y * c["gamma"] if p["gamma"] else y


def _ln(x, p, c):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + p["epsilon"])
    return y * c["gamma"] + c["beta"] if p["affine"] else y


def _gn(x, p, c):
    n, ch = x.shape[:2]
    g = x.reshape(n, p["groups"], -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + p["epsilon"])).reshape(x.shape)
    return y * c["gamma"] + c["beta"]


def _gelu(x, p, c):
    if p["form"] == "erf":
        return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _swiglu(x, p, c):
    silu = lambda v: v / (1 + np.exp(-v))  # noqa: E731
    if p["form"] == "silu":
        return silu(x)
    return (silu(x @ c["w_gate"]) * (x @ c["w_up"])) @ c["w_down"]


def _rotary(x, p, c):
    d = x.shape[-1]
    rot = RotaryPattern.rot(d, p)
    if rot == 0:
        return x
    s = x.shape[2]
    inv = p["base"] ** (-np.arange(0, rot, 2) / rot)
    ang = np.arange(s)[:, None] * np.concatenate([inv, inv])[None, :]
    part = x[..., :rot]
    half = np.concatenate([-part[..., rot // 2:], part[..., :rot // 2]], -1)
    return np.concatenate([part * np.cos(ang) + half * np.sin(ang), x[..., rot:]], -1)


def _attention(x, p, c):
    b, s, e = x.shape
    h, dh, kvh, past = p["heads"], p["head_dim"], AttentionPattern.kv_heads(p), p["past"]
    split = lambda t, n: t.reshape(b, s, n, dh).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(x @ c["w_q"], h), split(x @ c["w_k"], kvh), split(x @ c["w_v"], kvh)
    if past:
        k, v = np.concatenate([c["past_k"], k], 2), np.concatenate([c["past_v"], v], 2)
    k, v = np.repeat(k, h // kvh, axis=1), np.repeat(v, h // kvh, axis=1)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
    allowed = np.ones((s, past + s), bool)
    if p["mask"] == "causal":
        allowed = np.arange(past + s)[None, :] <= np.arange(s)[:, None] + past
    elif p["mask"] == "padding" and past + s > 1:
        allowed[:, -1] = False
    scores = np.where(allowed, scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(b, s, h * dh) @ c["w_o"]


def _causal_conv(x, p, c):
    full = np.concatenate([c["state"], x], 2)
    k, (n, ch, t) = p["kernel"], x.shape
    w, out = c["w"], []
    for o in range(w.shape[0]):
        chans = [o] if p["depthwise"] else range(ch)
        out.append(sum(np.convolve(full[0, i], w[o, 0 if p["depthwise"] else i][::-1], "valid") for i in chans)
                   + c["bias"][o])
    return np.stack(out)[None]


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _recurrent(x, p, c, lstm: bool):
    """ONNX's LSTM (gates i, o, f, c) and GRU (z, r, h) in float64: clip on the gates'
    pre-activations, input_forget (f = 1 - i), linear_before_reset, sequence_lens (steps past
    a sequence's end are 0 in Y, its state is the last valid one; reverse runs within it)."""
    s, b, _ = x.shape
    h, d = p["hidden_size"], RecurrentPattern.dirs(p)
    lens = c["seq_lens"].astype(int) if p["seqlens"] else np.full(b, s)
    clip = (lambda v: np.clip(v, -p["clip"], p["clip"])) if p["clip"] else (lambda v: v)  # noqa: E731
    y, hs = np.zeros((s, d, b, h)), []
    for k in range(d):
        reverse = p["direction"] == "reverse" or k == 1
        w, r, bias = c["w"][k], c["r"][k], c["bias"][k]
        wb, rb = np.split(bias, 2)
        ht = c["h0"][k].copy() if p["init"] else np.zeros((b, h))
        ct = c["c0"][k].copy() if p["init"] and lstm else np.zeros((b, h))
        for n in range(b):
            steps = range(lens[n] - 1, -1, -1) if reverse else range(lens[n])
            hn, cn = ht[n], ct[n]
            for t in steps:
                if lstm:
                    g = clip(x[t, n] @ w.T + hn @ r.T + wb + rb)
                    i, o, f, cc = np.split(g, 4)
                    i, o, cc = _sig(i), _sig(o), np.tanh(cc)
                    f = 1 - i if p["input_forget"] else _sig(f)
                    cn = f * cn + i * cc
                    hn = o * np.tanh(cn)
                else:
                    wz, wr, wh = np.split(w, 3)
                    rz, rr, rh = np.split(r, 3)
                    bz, br, bh = np.split(wb, 3)
                    cz, cr, ch = np.split(rb, 3)
                    z = _sig(clip(x[t, n] @ wz.T + hn @ rz.T + bz + cz))
                    rt = _sig(clip(x[t, n] @ wr.T + hn @ rr.T + br + cr))
                    inner = rt * (hn @ rh.T + ch) if p["linear_before_reset"] else (rt * hn) @ rh.T + ch
                    hh = np.tanh(clip(x[t, n] @ wh.T + inner + bh))
                    hn = (1 - z) * hh + z * hn
                y[t, k, n] = hn
            ht[n] = hn
        hs.append(ht)
    if p["output"] == "h":
        return np.stack(hs)
    return y.transpose(0, 2, 1, 3).reshape(s, b, d * h)


def _quantised(v, scale, act):
    """QuantizeLinear then DequantizeLinear: round half to even, saturate, back to floats."""
    lo, hi, zp = (-128, 127, 0) if act == "int8" else (0, 255, 128)
    return (np.clip(np.round(v / scale) + zp, lo, hi) - zp) * scale


def _layer(op, p, c):
    """The layer's float weight and bias as its DequantizeLinear nodes give them: the written
    form's names, or ONNX Runtime's quantiser's (``ort_``: zero points, a bias maybe float)."""
    ort = p.get("quantiser") == "onnxruntime"
    q, s = (c["ort_w_quantized"], c["ort_w_scale"]) if ort else (c["w_q"], c["w_scale"])
    zp = c["ort_w_zero_point"] if ort else np.zeros_like(s)
    if p["per_channel"]:
        other = tuple(i for i in range(q.ndim) if i != (1 if op == "MatMul" else 0))
        s, zp = np.expand_dims(s, other), np.expand_dims(zp, other)
    if not ort:
        return q * s, c.get("bias_q", 0) * c.get("bias_scale", 0)
    return (q - zp) * s, c["ort_b"] if "ort_b" in c else c.get("ort_b_quantized", 0) * c.get("ort_b_quantized_scale", 0)


def _qdq(op):
    def formula(x, p, c):
        xd = _quantised(x, QDQPattern.scale(p["act"], p["range"]), p["act"])
        w, bias = _layer(op, p, c)
        if op == "Conv":
            k = p["kernel"]
            xp = np.pad(xd, [(0, 0), (0, 0), (k // 2, k // 2), (k // 2, k // 2)])
            h, wd = xd.shape[2:]
            y = np.stack([np.stack([np.einsum("nchw,ochw->no", xp[:, :, i:i + k, j:j + k], w) for j in range(wd)], -1)
                          for i in range(h)], -2)
            y = y + bias[None, :, None, None]
        elif op == "Gemm":
            y = xd @ w.T + bias
        else:
            y = xd @ w
        return _quantised(y, QDQPattern.quantum(p), p["act"])
    return formula


FORMULAS = {"QDQConvPattern": _qdq("Conv"), "QDQMatMulPattern": _qdq("MatMul"), "QDQGemmPattern": _qdq("Gemm"),
            "RMSNormPattern": _rms, "LayerNormPattern": _ln, "GroupNormPattern": _gn, "GeluPattern": _gelu,
            "SwiGLUPattern": _swiglu, "RotaryPattern": _rotary, "AttentionPattern": _attention,
            "CausalConvPattern": _causal_conv,
            "LSTMPattern": lambda x, p, c: _recurrent(x, p, c, lstm=True),
            "GRUPattern": lambda x, p, c: _recurrent(x, p, c, lstm=False)}


def test_every_form_has_a_formula_here():
    assert set(FORMS) == set(FORMULAS)


@pytest.mark.parametrize("op", FORMS)
def test_every_form_computes_its_layers_formula(tmp_path, op):
    """Each form, sampled until every value of its choices has run (12 samples at least):
    ONNX Runtime's output equals the float64 formula to float32's rounding (the model is what
    the formula says, whatever shape)."""
    rng, seen = random.Random(op), set()
    spec = ONNX_SPECS[op]
    choices = {(k, v) for k, d in spec.domains.items() if hasattr(d, "values") for v in d.values}
    for i in range(60):
        if i >= 12 and choices <= seen:
            break
        p = spec.sample(rng, [TensorType(SHAPES.get(op, (2, 3, 8)))])
        g = _one(op, p, seed=i)
        x, y, consts = _ort(g, tmp_path / str(i))
        want = FORMULAS[op](x, p, consts)
        assert y.shape == want.shape == g.nodes[0].out.shape, (op, p)
        if op in QDQ_OPS:  # float32 against float64 may round an element on a grid edge one step apart
            step = QDQPattern.quantum(p)
            assert np.abs(y - want).max() <= 1.01 * step and np.mean(np.abs(y - want) > 1e-6) < 0.05, (op, p)
        else:
            assert np.allclose(y, want, rtol=1e-4, atol=1e-5), (op, p, np.abs(y - want).max())
        import onnx

        written = {n.op_type for n in onnx.load(str(tmp_path / str(i) / "model.onnx")).graph.node}
        assert written == set(spec.operators(p, g.tensor_type("in0"))), (op, p, written)  # coverage counts what is written
        seen |= {(k, v) for k, v in p.items() if (k, v) in choices}
    assert choices <= seen, (op, choices - seen)  # every form of it was run


def test_constants_are_drawn_from_the_graph_seed_and_node():
    """Weights come from weights_rng(seed, node id), so the same graph is the same model."""
    a = _one("AttentionPattern", ONNX_SPECS["AttentionPattern"].sample(random.Random(1), [TensorType((1, 4, 6))]), 5)
    b = Graph.from_json(json.loads(json.dumps(a.to_json())))
    from gbft_action.reference.onnx_emit import build

    assert build(a).SerializeToString() == build(b).SerializeToString()
    assert weights_rng(5, "n0").uniform() == weights_rng(5, "n0").uniform()


# --------------------------------------------------------------------------- MNN's fusion passes

_MNN_OPS = r"""
import sys, json, _tools, MNN.expr as F
src, dst = sys.argv[1], sys.argv[2]
_tools.mnnconvert(["mnnconvert", "-f", "ONNX", "--modelFile", src, "--MNNModel", dst, "--bizCode", "gbft"])
print(json.dumps(sorted({v.op_type for v in F.load_as_dict(dst).values()})))
"""


@pytest.mark.slow
@pytest.mark.parametrize("op,params,fused", [
    ("GeluPattern", {"form": "erf"}, "GELU"),
    ("GeluPattern", {"form": "tanh_nested"}, "GELU"),
    ("RMSNormPattern", {"epsilon": 1e-6, "form": "reciprocal", "gamma": True}, "LayerNorm"),
    ("RMSNormPattern", {"epsilon": 1e-5, "form": "div", "gamma": False}, "LayerNorm"),
    ("LayerNormPattern", {"epsilon": 1e-5, "square": "pow", "affine": True}, "LayerNorm"),
])
def test_forms_reach_mnns_fusion_passes(tmp_path, op, params, fused):
    """Written as exporters write them, the forms are what MNN's converter fuses: the converted
    model holds the fused kernel and none of the primitives it replaced (a form one constant
    off would test the primitives only, and a change to the fused kernel would go unseen)."""
    if importlib.util.find_spec("MNN") is None:  # found, never imported here: MNN beside TensorFlow aborts
        pytest.skip("MNN is not installed")
    g = _one(op, params, seed=3)
    r = HANDLER.build({"op": "build", "graph": g.to_json(), "dir": str(tmp_path)})
    assert r["ok"], r
    out = subprocess.run([sys.executable, "-c", _MNN_OPS, str(tmp_path / "model.onnx"), str(tmp_path / "m.mnn")],
                         capture_output=True, text=True, timeout=120)
    ops = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(ops) == {"Input", fused}, ops  # MNN's op types: the primitives ("ERF", "Reduction"...) all gone


_ADAPTER_OPS = r"""
import sys, json, pathlib, MNN.expr as F
from gbft_action.engines.mnn import MNNEngine
out = MNNEngine().convert(pathlib.Path(sys.argv[1]), "onnx", pathlib.Path(sys.argv[2]))
print(json.dumps(sorted({v.op_type for v in F.load_as_dict(str(out)).values()})))
"""


@pytest.mark.slow
def test_the_transformer_fuse_setting_reaches_mnns_converter(tmp_path):
    """transformer_fuse=on (--engine-settings; GBFT_MNN_TRANSFORMER_FUSE in the engine worker)
    converts with --transformerFuse: the attention form becomes MNN's fused Attention, which
    the default conversion leaves as MatMul and Softmax."""
    if importlib.util.find_spec("MNN") is None:  # found, never imported here: MNN beside TensorFlow aborts
        pytest.skip("MNN is not installed")
    p = {"heads": 2, "head_dim": 4, "kv": "mha", "mask": "causal", "scale": "div", "past": 0}
    g = _one("AttentionPattern", p, seed=3)
    assert HANDLER.build({"op": "build", "graph": g.to_json(), "dir": str(tmp_path)})["ok"]
    seen = {}
    for fuse in ("off", "on"):
        env = {**__import__("os").environ, "GBFT_MNN_TRANSFORMER_FUSE": fuse}
        (tmp_path / fuse).mkdir()
        out = subprocess.run([sys.executable, "-c", _ADAPTER_OPS, str(tmp_path / "model.onnx"), str(tmp_path / fuse)],
                             capture_output=True, text=True, timeout=120, env=env)
        seen[fuse] = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert "Attention" in seen["on"] and "Attention" not in seen["off"] and "Softmax" in seen["off"], seen


def test_the_job_summary_names_the_settings_and_the_forms_reached():
    """The heading names the engine's settings (words only: summary.json is an artifact's data)
    and the coverage line the exported forms the models reached; a summary.json without them
    (an older one, or a TensorFlow campaign) renders as before."""
    from gbft_action.corpus import ONNX_CORPUS, load_corpus
    from gbft_action.records.bundle import EngineInfo
    from gbft_action.records.summary import Summary
    from gbft_action.report.render import Renderer
    from gbft_action.search.coverage import Coverage

    corpus = load_corpus(ONNX_CORPUS)
    cov = Coverage.from_corpus(corpus)
    g = _one("GeluPattern", {"form": "erf"}, seed=1)
    g.meta["frontend"] = "onnx"
    cov.add(g)
    shown = cov.summary()
    assert shown["forms"] == ["GeluPattern"]
    qdq = {"act": "int8", "bits": 8, "per_channel": False, "range": 1.0, "out_range": 2.0, "out_ch": 2, "kernel": 1,
           "quantiser": "onnxruntime", "weights": "asymmetric", "bias": "float"}
    cov.add(_one("QDQConvPattern", qdq, seed=1))  # ONNX Runtime's quantiser wrote it: a form of its own
    assert cov.summary()["forms"] == ["GeluPattern", "QDQConvPattern", "QDQConvPattern (onnxruntime)"]
    from gbft_action.ops.recorded import by_opset

    assert shown["operators"] == []  # the campaign's generator fills these (search.guided.model_operators)
    shown["operators"] = ["Add", "Div", "Erf", "Mul"]
    shown["operators_by_opset"] = by_opset(shown["operators"])  # as search.guided adds it for ONNX
    assert shown["operators_by_opset"] == {"13": 1, "14": 3}  # Erf-13; Add, Div, Mul-14
    eng = EngineInfo("mnn", "3.6.1", "x86_64", {"precision": "low", "threads": "4", "x": "<script>"})
    back = Summary.from_json(Summary(1, engine=eng, coverage=shown).to_json())
    assert back.engine.settings == eng.settings
    md = Renderer().summary(back, "", [], [], [])
    assert md.splitlines()[0] == "## gbft-action: mnn 3.6.1 (precision low, threads 4)"
    assert "4 operators in the models (by operator-set version: 13: 1, 14: 3)" in md
    assert "exported forms reached: GeluPattern." in md
    plain = Renderer().summary(Summary(1, engine=EngineInfo("mnn", "3.6.1")), "", [], [], [])
    assert plain.splitlines()[0] == "## gbft-action: mnn 3.6.1" and "exported forms" not in plain
    tf = {k: v for k, v in shown.items() if k not in ("forms", "operators_by_opset")}  # a TensorFlow campaign's
    assert "operators in the models." in Renderer().summary(Summary(1, coverage=tf), "", [], [], [])
    hostile = {**shown, "forms": "x", "operators_by_opset": {"13": "<b>", "<i>": 2},
               "opsets": {"<b>": {"models": 1, "operators": 2}, "17": {"models": "<i>", "operators": 1}}}
    md = Renderer().summary(Summary(1, coverage=hostile), "", [], [], [])
    assert "exported forms" not in md and "operator-set version" not in md and "opset " not in md
    # A campaign of several opsets (search.opsets): each one's models and operators.
    two = {**shown, "opsets": {"27": {"models": 30, "operators": 4, "OLC": 0.5}, "17": {"models": 10, "operators": 3}}}
    md = Renderer().summary(Summary.from_json(Summary(1, coverage=two).to_json()), "", [], [], [])
    assert "(opset 27: 30 models, 4 operators; opset 17: 10 models, 3 operators)" in md


def test_a_rotary_form_too_narrow_to_rotate_counts_only_what_it_writes(tmp_path):
    import onnx

    p = {"cache": "gathered", "partial": True, "base": 10000.0}
    g = Graph({"in0": TensorType((1, 1, 3, 3))}, [Node("n0", "RotaryPattern", ["in0"], p, TensorType((1, 1, 3, 3)),
                                                     block="RotaryPattern")], ["n0"], seed=1)
    _ort(g, tmp_path)
    written = {n.op_type for n in onnx.load(str(tmp_path / "model.onnx")).graph.node}
    assert written == set(ONNX_SPECS["RotaryPattern"].operators(p, TensorType((1, 1, 3, 3)))) == {"Mul"}


def test_a_model_holding_a_quantised_layer_is_judged_in_quanta_of_its_output_step():
    """One step of the layer's output grid apart (an integer kernel rounding its accumulation
    the other way) passes; ten steps is precision; a hundred is a wrong result.  The repro
    says why its bound is wider than the campaign's."""
    from gbft_action.oracle import QUANTA, bounds_for, compare, precision_only, widened_because
    from gbft_action.records.tolerance import Tolerance

    p = {"act": "uint8", "bits": 8, "per_channel": True, "range": 1.0, "out_range": 8.0, "out_ch": 4, "kernel": 3}
    g = _one("QDQConvPattern", p, seed=1)
    step = QDQPattern.quantum(p)
    assert step == pytest.approx(16 / 255)
    b = bounds_for(g, Tolerance())
    assert b.strict.atol == pytest.approx(QUANTA * step) and b.strict.rtol == 1e-2 and b.loose.atol == pytest.approx(
        10 * QUANTA * step)
    assert widened_because(g) == f"2 quanta of its quantised layers' output step {step:.6g}"
    plain = _one("GeluPattern", {"form": "erf"}, seed=1)
    assert bounds_for(plain, Tolerance()).strict == Tolerance() and widened_because(plain) == ""
    assert "float16's bound" in widened_because(g, half_arithmetic=True) and "quanta" in widened_because(g, True)
    want = np.round(np.linspace(-3, 3, 200) / step) * step
    for off, passes, precision in ((1, True, True), (10, False, True), (100, False, False)):
        got = want.copy()
        got[::7] += off * step
        assert compare(want, got, "y", b.strict).ok is passes, off
        assert precision_only(want, got, b.loose, b.norm) is precision, off


def test_weight_quantisation_at_conversion_is_a_setting_judged_at_its_own_bound():
    """MNN's --weightQuantBits is a setting (recorded, rendered in the repro's converter call):
    the model is judged against the float model at that quantisation's bound, said in the
    repro; a setting the engine does not know is a one-line error."""
    from gbft_action.knowledge.registry import knowledge_of
    from gbft_action.oracle import bounds_for, weight_step, widened_because
    from gbft_action.records.tolerance import Tolerance

    known = knowledge_of("mnn")
    assert known.parse_settings("weight_quant_bits=8") == {"weight_quant_bits": "8"}
    with pytest.raises(ValueError, match="weight_quant_bits takes off, 8, 4"):
        known.parse_settings("weight_quant_bits=3")
    assert known.env_for({"weight_quant_bits": "4"}) == {"GBFT_MNN_WEIGHT_QUANT_BITS": "4"}
    assert (known.weight_bits({"weight_quant_bits": "8"}), known.weight_bits({})) == (8, 0)
    g = _one("GeluPattern", {"form": "erf"}, seed=1)
    at8, at4 = bounds_for(g, Tolerance(), weight_bits=8), bounds_for(g, Tolerance(), weight_bits=4)
    assert at8.strict.rtol == pytest.approx(2 / 127) and at8.strict.atol == pytest.approx(4 / 127)
    assert at4.strict.rtol == pytest.approx(2 / 7) and at4.loose.rtol == pytest.approx(20 / 7)
    assert weight_step(8) == 1 / 127
    assert widened_because(g, weight_bits=8) == "the converter quantises weights to 8 bits: 2 steps of 0.00787 relative"
    from .conftest import render_repro_of

    text = render_repro_of({"engine": {"engine": "mnn", "version": "3.6.1",
                                       "settings": {"precision": "high", "weight_quant_bits": "8"}}})
    assert '"--weightQuantBits", "8"' in text and "quantises weights to 8 bits" in text
