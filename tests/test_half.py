"""float16 tensors between operators (issue 26, item 3): a model holding one is compared with
float16's bounds (oracle.bounds_for), everywhere a model is compared, so that half-precision
rounding is a precision difference, never a wrong result; and generated ONNX models carry them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gbft_action.bugs.rootcause import classify
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.graph.solver import Builder
from gbft_action.oracle import (HALF, LOOSE, LOOSE_NORM, Bounds, Tolerance, bounds_for, compare, holds_half,
                                judge_outputs, precision_only, tolerance_for)
from gbft_action.ops.recorded import TYPES, RecordedSpec
from gbft_action.ops.registry import registry
from gbft_action.records.enums import Symptom


def _chain(dtype: str) -> Graph:
    """in0 (float32) -> Cast(dtype) -> Sin -> Cast(float32): a float32 model when dtype is float32."""
    t, h = TensorType((2, 8)), TensorType((2, 8), dtype)
    nodes = [Node("n0", "Cast", ["in0"], {"to": dtype}, h, role="adapter"), Node("n1", "Sin", ["n0"], {}, h, "Sin"),
             Node("n2", "Cast", ["n1"], {"to": "float32"}, t, role="adapter")]
    return Graph({"in0": t}, nodes, ["n2"], seed=3, meta={"frontend": "onnx"})


def _half_chain(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Six operators in half precision (what a reference computing float16 gives) and the same
    in float32 (what MNN gives: it runs a float16 chain in float32)."""
    def run(dt: type) -> np.ndarray:
        y = x.astype(dt)
        for _ in range(3):
            y = np.tanh(np.exp(y) * dt(0.7) - dt(0.5)).astype(dt)
            y = (np.sin(y * dt(2)) + y * dt(0.1)).astype(dt)
        return y
    return run(np.float16), run(np.float32)


# --------------------------------------------------------------------------- the rule

def test_a_float32_model_keeps_the_campaigns_bounds_untouched():
    base = Tolerance()
    b = bounds_for(_chain("float32"), base)
    assert not holds_half(_chain("float32"))
    assert b == Bounds(base, LOOSE, LOOSE_NORM) and b.strict is base and tolerance_for(_chain("float32"), base) is base
    own = Tolerance(rtol=0.5, atol=0.25, min_ratio=0.9)  # a campaign's --rtol/--atol: as given
    assert tolerance_for(_chain("float32"), own) is own


def test_a_model_holding_any_float16_tensor_is_compared_with_float16s_bounds():
    g = _chain("float16")
    assert holds_half(g)
    b = bounds_for(g, Tolerance())
    assert b.strict == Tolerance(rtol=1e-2, atol=1e-3, min_ratio=Tolerance().min_ratio)
    assert (b.loose, b.norm) == (HALF.loose, HALF.norm) and b.loose.rtol > LOOSE.rtol and b.norm > LOOSE_NORM
    assert b.all_loose == Tolerance(HALF.loose.rtol, HALF.loose.atol, 1.0)
    # Widened, never narrowed: a campaign's looser bound and its min_ratio stay.
    wide = Tolerance(rtol=0.05, atol=1e-4, min_ratio=0.9)
    assert tolerance_for(g, wide) == Tolerance(rtol=0.05, atol=1e-3, min_ratio=0.9)
    # A float16 graph input (an operator isolated on a float16 tensor) counts too.
    alone = Graph({"in0": TensorType((4,), "float16")}, [Node("n0", "Sin", ["in0"], {}, TensorType((4,), "float16"))],
                  ["n0"])
    assert holds_half(alone)


def test_half_precision_rounding_passes_a_float16_model_and_fails_a_float32_one():
    x = np.random.default_rng(0).uniform(-1, 1, (64, 64)).astype(np.float32)
    half, single = _half_chain(x)
    assert not compare(half, single, "y", Tolerance()).ok  # float32's bound: a storm of failures
    out = judge_outputs({"n2": half}, {"n2": single}, ["n2"], tolerance_for(_chain("float16"), Tolerance()))
    assert all(d.ok for d in out), out


def test_a_half_precision_difference_is_precision_and_a_wrong_value_still_wrong():
    b = bounds_for(_chain("float16"), Tolerance())
    e = np.random.default_rng(1).uniform(-1, 1, 500).astype(np.float16)
    a = e.astype(np.float32) * np.float32(1.03)  # beyond float16's strict bound, within its loose one
    assert not compare(e, a, "y", b.strict).ok
    assert precision_only(e, a, b.loose, b.norm) and not precision_only(e, a)  # float32's split: wrong
    loose = precision_only(e, a, b.loose, b.norm)
    assert classify("DCF", "compare", mismatch="values", loose_ok=loose) == Symptom.PRECISION.value
    wrong = a.copy()
    wrong[7] = -wrong[7] + 0.5  # a wrong element stays a wrong result under float16's bounds
    assert not precision_only(e, wrong, b.loose, b.norm)
    assert classify("DCF", "compare", mismatch="values",
                    loose_ok=precision_only(e, wrong, b.loose, b.norm)) == Symptom.WRONG.value
    inf = a.copy()
    inf[3] = np.inf  # a special value where the reference has none is never precision
    assert not precision_only(e, inf, b.loose, b.norm)


# --------------------------------------------------------------------------- generated models

def test_float16_is_an_element_type_the_generator_casts_to():
    assert "float16" in TYPES
    from gbft_action.reference.onnx_emit import DTYPES, NP

    assert "float16" in DTYPES and NP["float16"] is np.float16


def test_a_generated_onnx_model_carries_a_float16_tensor_that_onnx_runtime_runs():
    """The solver casts a float32 tensor to a float16 instance's fed type; the model passes the
    checker and strict shape inference, holds a FLOAT16 tensor, and ONNX Runtime runs it."""
    ort = pytest.importorskip("onnxruntime")
    import onnx

    from gbft_action.reference import onnx_emit
    from gbft_action.reference.onnx_code import model_source

    reg = registry("onnx")
    spec = reg.specs["Sin"]
    assert isinstance(spec, RecordedSpec)
    k = next(i for i, inst in enumerate(spec.instances) if inst.fed_type.dtype == "float16")
    b = Builder(random.Random(0), seed=7, reg=reg)
    x = b.add_input("in0", TensorType((2, 3, 4, 5)))
    y = b.add_op("Sin", [x], block="Sin", fixed={"instance": k})
    b.add_op("Sin", [y], block="Sin", fixed={"instance": 0})  # float32 again after the float16 one
    g = b.finish({"frontend": "onnx"})
    assert holds_half(g) and any(n.op == "Cast" and n.params["to"] == "float16" for n in g.nodes)
    m = onnx_emit.check(onnx_emit.build(g))
    typed = {v.name: v.type.tensor_type.elem_type for v in [*m.graph.value_info, *m.graph.output]}
    assert onnx.TensorProto.FLOAT16 in typed.values()
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4, 5)).astype(np.float32)
    (out,) = sess.run(g.outputs, {"in0": feed})
    assert out.dtype == np.float32 and np.isfinite(out).all()
    assert f"to={onnx.TensorProto.FLOAT16}" in "\n".join(model_source(g).nodes)  # the repro prints the cast


def test_random_onnx_models_carry_float16_tensors():
    """Random models of the default ONNX corpus (onnx-all): some hold a float16 tensor."""
    from gbft_action.corpus import load_corpus
    from gbft_action.graph.generate import GenOptions
    from gbft_action.search import RandomSource

    from gbft_action.corpus import ONNX_CORPUS

    corpus = load_corpus(str(ONNX_CORPUS.with_name("onnx-all.yaml")))
    src = RandomSource(corpus, GenOptions(blocks=(3, 10)), 1)
    assert any(holds_half(src.next_graph(i)) for i in range(200))


def test_the_lane_judges_a_float16_model_with_float16s_bound():
    """Lane._compare, the campaign's judgement: half-precision rounding of a float16 model passes
    (with float32's bound it fails, and the lane would go on to localise it on the engine)."""
    from types import SimpleNamespace

    from gbft_action.oracle import judge_outputs
    from gbft_action.pipeline import Draft, Lane
    from gbft_action.records.enums import Status

    x = np.random.default_rng(1).uniform(-1, 1, (2, 8)).astype(np.float32)
    half, full = _half_chain(x)
    expected, actual = {"n2": half.astype(np.float32)}, {"n2": full}
    assert not all(d.ok for d in judge_outputs(expected, actual, ["n2"], Tolerance()))  # float32's bound fails it
    lane = Lane.__new__(Lane)  # the judgement only: no workers (a localisation would need them)
    lane.cfg = SimpleNamespace(tolerance=Tolerance())
    res = Draft(0, _chain("float16"), Status.DCP, arrays={"expected": expected, "actual": actual})
    lane._compare(res, 1.0)
    assert res.status is Status.DCP and all(d["ok"] for d in res.diffs)


# --------------------------------------------------------------------------- the repro

def _repro(g: Graph) -> str:
    import jinja2

    from gbft_action.bugs.bundle import TEMPLATES
    from gbft_action.bugs.repro import render_repro
    from gbft_action.records import BundleMeta

    fp = {"code": "values", "frontend": "onnx", "id": "f16f16f16f16", "kind": "mismatch", "op": "Sin",
          "stage": "compare", "status": "DCF", "structure": "in-degree 1"}
    meta = {"title": "[onnx] DCF: wrong results from Sin", "status": "DCF", "stage": "compare",
            "symptom": "wrong-result", "op": "Sin", "node": "n0", "fingerprint": fp, "id": fp["id"], "seed": 0,
            "case_index": 1, "tool_version": "0", "engine": {"engine": "mnn", "version": "3.6.1", "machine": "x86_64"},
            "platforms": ["x86_64"], "tolerance": {"rtol": Tolerance.rtol, "atol": Tolerance.atol,
                                                   "min_ratio": Tolerance.min_ratio}}
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), keep_trailing_newline=True)
    return render_repro(env, g, BundleMeta.from_json(meta))


def test_the_repro_applies_the_bound_the_campaign_judged_with_and_feeds_mnn_a_float16_input(tmp_path):
    """An operator isolated on a float16 tensor (its graph input float16): the pasted repro
    compares with float16's bound, as the campaign did, and hands MNN the input as float32 (its
    const refuses a float16 array: "numpy type does not match", exit 2).  MNN computes Sin in
    float32, ONNX Runtime in half precision: within float16's bound, so the bug does not show."""
    pytest.importorskip("onnxruntime")
    import os
    import subprocess
    import sys

    spec = registry("onnx").specs["Sin"]
    assert isinstance(spec, RecordedSpec)
    k = next(i for i, inst in enumerate(spec.instances) if inst.fed_type.dtype == "float16")
    t = spec.instances[k].fed_type
    g = Graph({"in0": t}, [Node("n0", "Sin", ["in0"], {"instance": k}, spec.instances[k].outputs[0], "Sin")], ["n0"],
              seed=5, meta={"frontend": "onnx", "minimized": True})
    text = _repro(g)
    assert "RTOL, ATOL, MIN_RATIO = 0.01, 0.001, 0.999" in text and "float16's bound" in text
    assert 'v.astype("float32") if v.dtype == np.float16' in text
    f32 = spec.instances[0]  # a float32 model's repro: as before
    assert f32.fed_type.dtype == "float32"
    plain = _repro(Graph({"in0": f32.fed_type}, [Node("n0", "Sin", ["in0"], {"instance": 0}, f32.outputs[0],
                                                                  "Sin")], ["n0"], seed=5, meta={"frontend": "onnx"}))
    line = f"RTOL, ATOL, MIN_RATIO = {Tolerance.rtol}, {Tolerance.atol}, {Tolerance.min_ratio}  # passes: "
    assert line + "this share of elements close\n" in plain and "float16" not in plain
    import importlib.util

    if importlib.util.find_spec("MNN") is None:  # found, never imported here: MNN beside TensorFlow aborts
        pytest.skip("MNN is not installed")
    script = tmp_path / "repro.py"
    script.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0 and "the bug does not show" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
