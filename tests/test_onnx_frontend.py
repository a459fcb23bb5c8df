"""The ONNX front end, model side (issue 14 items 1-3).

Random graphs from corpora/onnx-mnn.yaml pass the ONNX checker and strict shape
inference and run in ONNX Runtime (the reference) with the shapes and dtypes the
IR says (GEN near 0); the same seed gives the same model bytes; intermediates
come back without changing the written model; hand-written graphs of the tricky
operator families match numpy.  Real onnx and onnxruntime, no TensorFlow: not slow.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from gbft_action.corpus import CorpusError, ONNX_CORPUS, load_corpus, parse_corpus  # noqa: E402
from gbft_action.graph.generate import GenOptions, generate  # noqa: E402
from gbft_action.graph.ir import Graph, Node, TensorType  # noqa: E402
from gbft_action.ops.onnx_specs import INT64_MAX, INT64_MIN, ONNX_SPECS  # noqa: E402
from gbft_action.ops.registry import registry  # noqa: E402
from gbft_action.ops.specs import ADAPTERS, SPECS  # noqa: E402
from gbft_action.reference import onnx_emit  # noqa: E402
from gbft_action.reference.onnx_worker import OnnxReferenceHandler  # noqa: E402
from gbft_action.reference.weights import uniform, weights_rng  # noqa: E402
from gbft_action.wire.arrays import pack, unpack  # noqa: E402
from gbft_action.records.case import CaseRecord

CORPUS = load_corpus(ONNX_CORPUS)
HANDLER = OnnxReferenceHandler()
N_GRAPHS = 300


def _graph(seed: int, blocks: tuple[int, int] = (1, 8)) -> Graph:
    return generate(random.Random(seed), CORPUS, GenOptions(blocks=blocks), seed)


def _run(g: Graph, d: Path, **msg) -> dict:
    return HANDLER.build({"op": "build", "graph": g.to_json(), "dir": str(d), **msg})


# --------------------------------------------------------------------------- registry & corpus


def test_corpus_is_onnx_and_covers_the_issue_operators():
    assert CORPUS.frontend == "onnx" and all(CORPUS.specs[op] is spec for op, spec in ONNX_SPECS.items())
    ops = set(CORPUS.op_types)
    for op in ("Conv", "BatchNormalization", "Relu", "Clip", "HardSwish", "Gemm", "MatMul", "Resize", "Pad",
               "Split", "Concat", "Gather", "GatherElements", "GatherND", "Where", "Slice", "LayerNormalization",
               "Softmax", "LogSoftmax", "GridSample", "ReduceMean", "Transpose", "Reshape", "Expand", "Cast",
               "ArgMax", "TopK", "LSTM", "GRU", "ConvTranspose", "DepthToSpace", "ShapeReshape"):
        assert op in ops, op
    subgraphs = {b.name for b in CORPUS.blocks if b.is_subgraph}
    assert {"ConvBnRelu", "AttentionHead", "SEBlock", "ChannelShuffle"} <= subgraphs


def test_tf_corpus_keeps_the_tf_registry():
    tf = load_corpus()
    assert tf.frontend == "tf" and tf.specs is SPECS and registry("tf").rules is not registry("onnx").rules
    g = generate(random.Random(3), tf, GenOptions(blocks=(1, 6)), 3)
    assert "frontend" not in g.meta  # TF graphs keep their bytes and hashes


def test_every_registry_has_the_solver_adapters():
    for fe in ("tf", "onnx"):
        assert set(ADAPTERS) <= set(registry(fe).specs)


def test_unknown_frontend_and_foreign_operator_are_corpus_errors():
    with pytest.raises(CorpusError, match="frontend"):
        parse_corpus({"frontend": "caffe", "blocks": [{"name": "Relu", "in_degree": [1], "out_degree": [0]}]})
    with pytest.raises(CorpusError, match="unknown operator 'Conv2d'"):  # a TF name in an ONNX corpus
        parse_corpus({"frontend": "onnx", "blocks": [{"name": "Conv2d", "in_degree": [1], "out_degree": [0]}]})


def test_onnx_graphs_are_nchw_and_say_their_frontend():
    g = _graph(5)
    assert g.meta["frontend"] == "onnx"
    (t,) = g.inputs.values()
    assert t.rank == 4 and t.shape[0] == 1


# --------------------------------------------------------------------------- GEN near 0


def test_random_onnx_graphs_check_and_run_in_onnx_runtime(tmp_path):
    rejected = []
    for seed in range(N_GRAPHS):
        g = _graph(seed)
        try:
            inferred = onnx_emit.check(onnx_emit.build(g))
        except Exception as e:  # noqa: BLE001 - recorded and asserted below
            rejected.append((seed, "check", str(e)[:200]))
            continue
        types = {vi.name: vi for vi in inferred.graph.output}
        for o in g.outputs:  # shape inference agrees with the IR
            dims = [d.dim_value for d in types[o].type.tensor_type.shape.dim]
            assert tuple(dims) == g.tensor_type(o).shape, (seed, o)
        r = _run(g, tmp_path)
        if not r["ok"]:
            rejected.append((seed, r["kind"], r["error"][:200]))
            continue
        exp = unpack(r["expected"])
        for o in g.outputs:
            t = g.tensor_type(o)
            assert exp[o].shape == t.shape and str(exp[o].dtype) == t.dtype, (seed, g.node(o).op)
            if g.values == "normal" and exp[o].dtype.kind == "f":
                assert np.isfinite(exp[o]).all(), (seed, g.node(o).op)  # the guards work in ONNX too
    assert rejected == []


def test_every_corpus_block_is_generated():
    seen = set()
    for seed in range(N_GRAPHS):
        seen |= set(_graph(seed).meta["blocks"])
    assert seen == {b.name for b in CORPUS.blocks}


# --------------------------------------------------------------------------- determinism & intermediates


def test_same_seed_same_model_bytes(tmp_path):
    for seed in (1, 17, 99):
        a, b = onnx_emit.build(_graph(seed)), onnx_emit.build(_graph(seed))
        assert a.SerializeToString() == b.SerializeToString()
        _run(_graph(seed), tmp_path / "a")
        _run(_graph(seed), tmp_path / "b")
        assert (tmp_path / "a" / "model.onnx").read_bytes() == (tmp_path / "b" / "model.onnx").read_bytes()


def test_node_tensors_are_named_by_node_id_and_inputs_by_graph_input():
    g = _graph(7, (4, 8))
    m = onnx_emit.build(g)
    produced = {o for n in m.graph.node for o in n.output}
    assert {n.id for n in g.nodes} <= produced
    assert [i.name for i in m.graph.input] == list(g.inputs)
    assert [o.name for o in m.graph.output] == g.outputs


def test_extra_outputs_return_intermediates_without_changing_the_model(tmp_path):
    g = next(g for g in map(lambda s: _graph(s, (4, 8)), range(50)) if len(g.nodes) >= 4)
    plain = _run(g, tmp_path / "plain")
    inner = [n.id for n in g.nodes if n.id not in g.outputs][:3]
    extra = _run(g, tmp_path / "extra", extra_outputs=inner)
    assert plain["ok"] and extra["ok"]
    assert (tmp_path / "plain" / "model.onnx").read_bytes() == (tmp_path / "extra" / "model.onnx").read_bytes()
    model = onnx.load(str(tmp_path / "extra" / "model.onnx"))
    assert [o.name for o in model.graph.output] == g.outputs
    a, b = unpack(plain["expected"]), unpack(extra["expected"])
    for o in g.outputs:
        np.testing.assert_array_equal(a[o], b[o])
    for t in inner:
        assert b[t].shape == g.tensor_type(t).shape


def test_given_inputs_are_used_and_hello_names_onnxruntime(tmp_path):
    g = _graph(11)
    xs = {k: np.full(t.shape, 0.25, np.float32) for k, t in g.inputs.items()}
    r = _run(g, tmp_path, inputs=pack(xs))
    assert r["ok"] and np.all(unpack(r["inputs"])["in0"] == 0.25)
    assert HANDLER.hello()["framework"] == "onnxruntime"


def test_an_ill_formed_model_is_invalid_and_a_failing_run_is_reference(tmp_path):
    x = TensorType((2, 3))
    bad = Graph({"in0": x}, [Node("n0", "Concat", ["in0", "in0"], {"axis": 0}, TensorType((5, 3)))], ["n0"])
    r = _run(bad, tmp_path)  # ORT only warns of the declared (5, 3): the handler compares with the IR
    assert not r["ok"] and r["kind"] == "invalid" and "(5, 3)" not in r["error"] and "[4, 3]" in r["error"]
    # Concat of a float and an int tensor: ORT's type check refuses it at load.
    mixed = Graph({"in0": x}, [Node("n0", "Cast", ["in0"], {"to": "int32"}, TensorType((2, 3), "int32")),
                               Node("n1", "Concat", ["in0", "n0"], {"axis": 0}, TensorType((4, 3)))], ["n1"])
    r = _run(mixed, tmp_path)
    assert not r["ok"] and r["kind"] == "invalid", r
    # A Reshape to a shape of another size loads (the shape is data) and fails while running.
    fail = Graph({"in0": x}, [Node("n0", "Reshape", ["in0"], {"shape": [4, 2], "rank": 2}, TensorType((4, 2)))],
                 ["n0"])
    r = _run(fail, tmp_path)
    assert not r["ok"] and r["kind"] == "reference"


def test_onnx_worker_does_not_import_tensorflow():
    code = "import sys, gbft_action.reference.onnx_worker; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- tricky operators vs numpy


def _one(op: str, x: TensorType, params: dict, seed: int = 4, n_in: int = 1) -> tuple[Graph, np.ndarray]:
    """A one-node graph; its output type inferred by the spec (as the solver would)."""
    ins = [x] * n_in
    out = ONNX_SPECS[op].infer(ins, params)
    g = Graph({"in0": x}, [Node("n0", op, ["in0"] * n_in, params, out, block=op)], ["n0"], seed=seed)
    return g, out


def _ort(g: Graph, tmp_path: Path) -> tuple[np.ndarray, np.ndarray]:
    onnx_emit.check(onnx_emit.build(g))
    r = _run(g, tmp_path)
    assert r["ok"], r
    y = unpack(r["expected"])["n0"]
    assert y.shape == g.nodes[0].out.shape
    return unpack(r["inputs"])["in0"], y


def _conv_np(x, w, b, stride, dil, pads, group):
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp = np.pad(x, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    oh = (xp.shape[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, oc, oh, ow), np.float64)
    per = oc // group
    for o in range(oc):
        g0 = (o // per) * cg
        for i in range(oh):
            for j in range(ow):
                patch = xp[0, g0:g0 + cg, i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                           j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]
                y[0, o, i, j] = (patch * w[o]).sum() + (b[o] if b is not None else 0.0)
    return y


@pytest.mark.parametrize("group,dil,pads", [(2, (1, 2), [1, 0, 2, 1]), (4, (2, 1), [0, 2, 1, 0]), (1, (1, 1), [2, 1, 0, 1])])
def test_conv_groups_dilations_asymmetric_pads_match_numpy(tmp_path, group, dil, pads):
    p = {"kh": 3, "kw": 2, "sh": 2, "sw": 1, "dh": dil[0], "dw": dil[1], "out_ch": 4, "bias": True,
         "groups": "some", "group": group, "auto_pad": "NOTSET", "pads": pads}
    g, _ = _one("Conv", TensorType((1, 4, 7, 6)), p)
    x, y = _ort(g, tmp_path)
    rng = weights_rng(g.seed, "n0")
    w = uniform(rng, (4, 4 // group, 3, 2))
    b = uniform(rng, (4,))
    np.testing.assert_allclose(y, _conv_np(x, w, b, (2, 1), dil, pads, group), rtol=1e-5, atol=1e-5)


def _coord(mode: str, out_i: np.ndarray, n_in: int, n_out: int) -> np.ndarray:
    scale = n_out / n_in
    if mode == "half_pixel":
        return (out_i + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (out_i + 0.5) / scale - 0.5 if n_out > 1 else np.zeros_like(out_i)
    if mode == "align_corners":
        return out_i * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros_like(out_i)
    return out_i / scale  # asymmetric


def _resize_axis(x: np.ndarray, axis: int, n_out: int, ctm: str, mode: str, nearest: str) -> np.ndarray:
    n_in = x.shape[axis]
    c = _coord(ctm, np.arange(n_out, dtype=np.float64), n_in, n_out)
    if mode == "nearest":
        f = {"floor": np.floor, "ceil": np.ceil,
             "round_prefer_floor": lambda v: np.where(v - np.floor(v) == 0.5, np.floor(v), np.round(v)),
             "round_prefer_ceil": lambda v: np.floor(v + 0.5)}[nearest]
        return np.take(x, np.clip(f(c), 0, n_in - 1).astype(int), axis=axis)
    c = np.clip(c, 0, n_in - 1)
    lo = np.floor(c).astype(int)
    hi = np.minimum(lo + 1, n_in - 1)
    t = (c - lo).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
    return np.take(x, lo, axis=axis) * (1 - t) + np.take(x, hi, axis=axis) * t


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("ctm", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("by", ["scales", "sizes"])
def test_resize_modes_and_coordinate_transformations_match_numpy(tmp_path, mode, ctm, by):
    nearest = {"half_pixel": "round_prefer_floor", "pytorch_half_pixel": "floor", "align_corners": "ceil",
               "asymmetric": "round_prefer_ceil"}[ctm]
    p = {"mode": mode, "coordinate_transformation_mode": ctm, "nearest_mode": nearest, "cubic_coeff_a": -0.75,
         "exclude_outside": False, "by": by}
    p.update({"sh": 2.0, "sw": 0.75} if by == "scales" else {"out_h": 7, "out_w": 3})
    g, out = _one("Resize", TensorType((1, 2, 3, 4)), p)
    x, y = _ort(g, tmp_path)
    want = _resize_axis(_resize_axis(x.astype(np.float64), 2, out.shape[2], ctm, mode, nearest), 3,
                        out.shape[3], ctm, mode, nearest)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_resize_cubic_and_crop_run_with_the_inferred_shape(tmp_path):
    for ctm in ("half_pixel", "tf_crop_and_resize"):
        p = {"mode": "cubic", "coordinate_transformation_mode": ctm, "nearest_mode": "floor", "cubic_coeff_a": -0.5,
             "exclude_outside": True, "by": "sizes", "out_h": 5, "out_w": 9}
        g, _ = _one("Resize", TensorType((1, 3, 4, 4)), p)
        _, y = _ort(g, tmp_path)
        assert np.isfinite(y).all()


def test_slice_negative_steps_axes_and_clamped_ends_match_python(tmp_path):
    p = {"starts": [-1, 4, 0], "ends": [INT64_MIN, -6, INT64_MAX], "axes": [-1, 1, -3], "steps": [-2, -1, 3]}
    g, _ = _one("Slice", TensorType((5, 6, 7)), p)
    x, y = _ort(g, tmp_path)
    np.testing.assert_array_equal(y, x[0::3, 4:-6:-1, -1::-2])


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_transposes_match_numpy(tmp_path, ta, tb):
    p = {"n": 5, "transA": ta, "transB": tb, "alpha": 0.75, "beta": 1.25, "c": "row"}
    g, out = _one("Gemm", TensorType((3, 4)), p)
    x, y = _ort(g, tmp_path)
    a = x.T if ta else x
    rng = weights_rng(g.seed, "n0")
    w = uniform(rng, (5, a.shape[1]) if tb else (a.shape[1], 5))
    c = uniform(rng, (5,))
    np.testing.assert_allclose(y, 0.75 * a @ (w.T if tb else w) + 1.25 * c, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("form,shape", [("vector", (2, 3, 4)), ("weight", (4,)), ("left", (2, 3, 4)),
                                        ("batched", (3, 4))])
def test_matmul_one_d_and_broadcast_match_numpy(tmp_path, form, shape):
    p = {"form": form, "n": 3}
    g, out = _one("MatMul", TensorType(shape), p)
    x, y = _ort(g, tmp_path)
    w = uniform(weights_rng(g.seed, "n0"), ONNX_SPECS["MatMul"].weight_shape(shape, p))
    np.testing.assert_allclose(y, np.matmul(w, x) if form == "left" else np.matmul(x, w), rtol=1e-5, atol=1e-5)


def test_split_takes_its_output_and_topk_indices_are_int64(tmp_path):
    g, _ = _one("Split", TensorType((2, 7)), {"axis": 1, "split": [2, 4, 1], "take": 1})
    x, y = _ort(g, tmp_path)
    np.testing.assert_array_equal(y, x[:, 2:6])
    g, _ = _one("TopK", TensorType((3, 5)), {"k": 2, "axis": 0, "largest": False, "output": "indices"})
    x, y = _ort(g, tmp_path)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, np.argsort(x, axis=0, kind="stable")[:2])


# --------------------------------------------------------------------------- the minimiser keeps the front end


def test_minimiser_rebuilds_onnx_graphs_with_the_onnx_registry(tmp_path):
    from gbft_action.rerun.diagnose import single_node
    from gbft_action.bugs.minimize import Program, minimize

    g = next(g for g in map(lambda s: _graph(s, (4, 8)), range(100)) if any(n.op == "Conv" for n in g.nodes))
    again = Program.from_graph(g).realise()
    assert again.meta["frontend"] == "onnx" and [n.op for n in again.block_nodes()] == [n.op for n in g.block_nodes()]
    conv = next(n.id for n in g.nodes if n.op == "Conv")
    small, _, _ = minimize(g, lambda h: any(n.op == "Conv" for n in h.nodes), time_limit=5.0)
    assert small.meta["frontend"] == "onnx" and [n.op for n in small.block_nodes()] == ["Conv"]
    assert _run(small, tmp_path)["ok"]
    alone, _ = single_node(g, conv)
    assert alone.meta["frontend"] == "onnx" and _run(alone, tmp_path)["ok"]


def test_mutated_and_re_solved_onnx_graphs_still_check_and_run(tmp_path):
    """PM-fixed params and the minimiser repair a spec's own output again: repairs must take it."""
    from gbft_action.bugs.minimize import Program
    from gbft_action.search.guided import GuidedSource

    src = GuidedSource(CORPUS, GenOptions(blocks=(1, 10)), seed=7)
    for i in range(100):
        g = src.next_graph(i)
        again = Program.from_graph(g).realise()  # every block param given back as fixed
        for h in (g, again):
            onnx_emit.check(onnx_emit.build(h))
            assert _run(h, tmp_path)["ok"], (i, h.meta)
        src.feedback(i, g, CaseRecord.from_json({"status": "DCP"}))


def test_conv_transpose_pads_and_output_padding_match_numpy(tmp_path):
    p = {"kh": 3, "kw": 2, "sh": 2, "sw": 3, "out_ch": 2, "bias": True, "groups": "one", "group": 1,
         "pads": [1, 0, 2, 1], "output_padding": [1, 2]}
    g, out = _one("ConvTranspose", TensorType((1, 3, 4, 3)), p)
    x, y = _ort(g, tmp_path)
    rng = weights_rng(g.seed, "n0")
    w, b = uniform(rng, (3, 2, 3, 2)), uniform(rng, (2,))
    full = np.zeros((2, (4 - 1) * 2 + 3 + 1, (3 - 1) * 3 + 2 + 2))  # before cropping the pads
    for c in range(3):
        for i in range(4):
            for j in range(3):
                full[:, i * 2:i * 2 + 3, j * 3:j * 3 + 2] += x[0, c, i, j] * w[c]
    want = full[:, 1:full.shape[1] - 2, 0:full.shape[2] - 1] + b[:, None, None]
    assert want.shape == out.shape[1:]
    np.testing.assert_allclose(y[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_modes_match_numpy(tmp_path, mode):
    g, _ = _one("DepthToSpace", TensorType((1, 8, 2, 3)), {"blocksize": 2, "mode": mode})
    x, y = _ort(g, tmp_path)
    if mode == "DCR":
        want = x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 4, 6)
    else:
        want = x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6)
    np.testing.assert_array_equal(y, want)


def test_shape_reshape_computes_its_shape_in_the_graph(tmp_path):
    g, _ = _one("ShapeReshape", TensorType((2, 3, 4, 5)), {"keep": 2})
    assert [n.op_type for n in onnx_emit.build(g).graph.node] == ["Shape", "Gather", "Concat", "Reshape"]
    x, y = _ort(g, tmp_path)
    np.testing.assert_array_equal(y, x.reshape(2, 3, 20))


def test_repairs_keep_every_choice_of_the_domains_reachable():
    """No repair erases a whole enum value (a mode, a coordinate transformation, a padding)."""
    from gbft_action.ops.domains import Choice

    seen: dict[tuple[str, str], set[str]] = {}
    for seed in range(1500):
        for n in _graph(seed, (1, 10)).block_nodes():
            for k, v in n.params.items():
                seen.setdefault((n.op, k), set()).add(str(v))
    missing = [(op, k, v) for b in CORPUS.blocks for op in b.ops for k, dom in CORPUS.specs[op].domains.items()
               if isinstance(dom, Choice) and (op, k) in seen for v in dom.values if str(v) not in seen[(op, k)]]
    assert missing == []


def test_conv_transpose_never_builds_an_empty_output_from_a_one_pixel_input():
    """s3l: kernel 4, pads 3 + 1 and output_padding 1 on a 1-pixel input: the stride cut for size
    took output_padding down to 0 after the pads were fitted, and the width became 0."""
    import random as _random

    from gbft_action.graph.ir import TensorType

    spec = ONNX_SPECS["ConvTranspose"]
    for seed in range(400):
        rng = _random.Random(seed)
        ins = [TensorType((1, 6, rng.choice([1, 2, 1305, 2554]), rng.choice([1, 2, 3])))]
        # Strides of 2 and many channels on a tall input: the size cut is what brought it on.
        p = {**spec.sample(rng, ins), "sh": 2, "sw": 2, "out_ch": 15, "groups": "one"}
        p = spec.repair(rng, ins, p)
        assert min(spec.infer(ins, p).shape) >= 1, (seed, p, ins)
