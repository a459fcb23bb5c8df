"""The values an operator's semantics hinge on, and scalars flowing between operators (issue 26,
item 3): the solver's hinge adapters put ties before an ArgMax, NaN and Inf before an IsNaN and
integer edges before a comparison; rank-0 tensors reach element-wise operators as they are."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from gbft_action.graph.ir import Graph, TensorType
from gbft_action.graph.solver import Builder, GenError
from gbft_action.ops.onnx_specs import INT_EDGES, hinge_kind
from gbft_action.ops.recorded import RecordedSpec
from gbft_action.ops.registry import TF, registry

ort = pytest.importorskip("onnxruntime")

from gbft_action.reference import onnx_emit  # noqa: E402

REG = registry("onnx")


def _hinged(op: str, instance: int | None = None, shape: tuple[int, ...] = (2, 3, 4, 5)) -> Graph:
    """The first graph (over builder seeds) where ``op``'s first input got a hinge adapter."""
    for s in range(64):
        b = Builder(random.Random(s), seed=s, reg=REG)  # the hinge is drawn from the graph seed
        x = b.add_input("in0", TensorType(shape))
        b.add_op(op, [x], block=op, fixed=None if instance is None else {"instance": instance})
        g = b.finish({"frontend": "onnx"})
        if any(n.role == "adapter" and ("scale" in n.params or "values" in n.params) for n in g.nodes):
            return g
    raise AssertionError(f"no hinge before {op} in 64 draws: the share is a half")


def _run(g: Graph, *tensors: str) -> dict[str, np.ndarray]:
    """ONNX Runtime's values of ``tensors`` (node ids) on U[-1, 1] inputs."""
    m = onnx_emit.check(onnx_emit.build(g, extra_outputs=tensors))
    so = ort.SessionOptions()
    so.log_severity_level = 4
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).uniform(-1, 1, g.inputs["in0"].shape).astype(np.float32)
    return dict(zip(tensors, sess.run(list(tensors), {"in0": x})))


def _feeding(g: Graph, op: str) -> str:
    """The tensor the (only) block node ``op`` reads first."""
    return next(n for n in g.nodes if n.op == op and n.role == "block").inputs[0]


def test_an_argmax_is_fed_ties_that_are_exact_in_float():
    g = _hinged("ArgMax")
    fed = _feeding(g, "ArgMax")
    assert g.node(fed).op == "Floor" and g.node(fed).params == {"scale": 4.0}
    v = _run(g, fed)[fed]
    assert np.array_equal(v * 4, np.floor(v * 4))  # multiples of 1/4: exact, so equal values tie
    flat = v.reshape(-1, v.shape[-1])
    assert any(len(np.unique(r)) < len(r) for r in flat)  # ties there are


def test_isnan_and_isinf_see_nan_and_both_infinities_and_say_so():
    for op, check in (("IsNaN", np.isnan), ("IsInf", np.isinf)):
        g = _hinged(op, instance=0)
        fed = _feeding(g, op)
        assert g.node(fed).op == "Where" and g.node(fed).params == {"values": "nonfinite"}
        out = next(n.id for n in g.nodes if n.op == op)
        got = _run(g, fed, out)
        assert np.isnan(got[fed]).any() and np.isposinf(got[fed]).any() and np.isneginf(got[fed]).any()
        assert np.isfinite(got[fed]).any()  # a mix, not a tensor of specials
        assert np.array_equal(got[out], check(got[fed]))  # ONNX Runtime's answer, as the reference


def test_an_integer_comparison_is_fed_int32_edges_and_a_float_one_is_not():
    spec = REG.specs["Equal"]
    assert isinstance(spec, RecordedSpec)
    i = next(k for k, inst in enumerate(spec.instances) if inst.fed_type.dtype == "int32")
    g = _hinged("Equal", instance=i)
    fed = _feeding(g, "Equal")
    v = _run(g, fed)[fed]
    assert v.dtype == np.int32 and set(v.ravel().tolist()) & set(INT_EDGES) - {0, -1}
    assert hinge_kind("Equal", "float32") is None  # floats equal at random rarely: no edges to feed


def test_tensorflow_models_get_no_hinge():
    assert TF.hinge("Argmax", "float32") is None and TF.hinge("ArgMax", "float32") is None
    for s in range(30):
        b = Builder(random.Random(s), seed=3)
        b.add_op("Argmax", [b.add_input("in0", TensorType((2, 4, 4, 3)))], block="Argmax")
        assert [n.op for n in b.g.nodes if n.role == "adapter"] in ([], ["Tanh"], ["Sigmoid"], ["Tanh", "Sigmoid"])


def test_a_scalar_flows_into_an_element_wise_operator_as_it_is():
    spec = REG.specs["Det"]
    assert isinstance(spec, RecordedSpec)
    i = next(k for k, inst in enumerate(spec.instances) if inst.outputs[0] == TensorType((), "float32"))
    b = Builder(random.Random(0), seed=5, reg=REG)
    x = b.add_input("in0", TensorType((2, 3, 4, 5)))
    r = b.add_op("Det", [x], block="Det", fixed={"instance": i})
    y = b.add_op("Neg", [r], block="Neg")
    g = b.finish({"frontend": "onnx"})
    after = g.nodes[[n.id for n in g.nodes].index(r) + 1:]
    assert [n.op for n in after][-1] == "Neg" and "Reshape" not in [n.op for n in after]
    assert all(n.out.shape == () for n in after)  # the guard's Tanh too: a scalar in, a scalar out
    got = _run(g, r, y)
    assert got[y].shape == () and np.isclose(got[y], -np.tanh(got[r]))


def test_a_tensorflow_graph_still_refuses_a_scalar():
    b = Builder(random.Random(0), seed=5)
    x = b.add_input("in0", TensorType((2, 3, 4, 5)))
    with pytest.raises(GenError, match=r"shape \(\)"):
        b._reshape(x, ())


def test_recorded_operators_with_a_narrow_domain_get_inputs_inside_it():
    """Log, Acosh, Atanh... known only from their records had their input squashed into [-1, 1]
    and made NaN by accident in a normal graph (a fifth of onnx-all's normal graphs); their
    domains are now guarded like Sqrt's, float16 inputs too."""
    from gbft_action.ops.ranges import ONNX_DOMAINS

    for op in sorted(ONNX_DOMAINS):
        spec = REG.specs[op]
        assert isinstance(spec, RecordedSpec), op
        for k, inst in enumerate(spec.instances):
            if inst.fed_type.dtype not in ("float32", "float16"):
                continue
            for wide in (False, True):  # U[-1, 1] as it is (negatives, no squash), and e^e^e^x (up to 3.8e6)
                b = Builder(random.Random(k), seed=13, reg=REG)
                x = b.add_input("in0", TensorType((2, 3, 4, 5)))
                for _ in range(3 if wide else 0):
                    x = b.add_op("Exp", [x], block="Exp")
                out = b.add_op(op, [x], block=op, fixed={"instance": k})
                g = b.finish({"frontend": "onnx"})
                got = _run(g, out)[out]
                assert np.isfinite(got.astype(np.float64)).all(), (op, k, inst.case, wide)
        # An integer input cannot be guarded (U[-1, 1] cast to int is 0: ReduceLogSum gives -Inf):
        # the records keep none.
        assert all(inst.fed_type.dtype in ("float32", "float16") for inst in spec.instances), op


def test_the_summary_lists_the_element_types_the_models_held_merged_across_shards():
    from gbft_action.corpus import load_corpus
    from gbft_action.search.coverage import Coverage
    g = _hinged("Equal", instance=next(k for k, inst in enumerate(REG.specs["Equal"].instances)
                                        if inst.fed_type.dtype == "int32"))
    assert g.element_types() == {"float32", "int32", "bool"}  # the input, the cast, Equal's output
    corpus = load_corpus("gbft_action/corpora/onnx-all.yaml")
    a, b = Coverage.from_corpus(corpus), Coverage.from_corpus(corpus)
    a.element_types |= g.element_types()
    b.element_types.add("float16")
    back = Coverage.from_json(a.union(b).to_json())
    assert back.summary()["element_types"] == ["bool", "float16", "float32", "int32"]


def test_the_minimiser_keeps_the_hinges_of_the_blocks_it_keeps_and_probes_get_none():
    from gbft_action.bugs.minimize import Program
    from gbft_action.search.probe import probe_graph
    from gbft_action.corpus import load_corpus

    def hinges(g: Graph) -> list[tuple[str, str]]:
        return [(n.op, g.consumers()[n.id][0]) for n in g.nodes if "scale" in n.params or "values" in n.params]

    for op in ("ArgMax", "IsNaN", "TopK"):
        g = _hinged(op, instance=0 if op == "IsNaN" else None)
        for salt in range(4):  # other adapter draws (slices, pads): the same hinge
            again = replace(Program.from_graph(g), salt=salt).realise()
            assert [h for h, _ in hinges(again)] == [h for h, _ in hinges(g)], (op, salt)
    corpus = load_corpus("gbft_action/corpora/onnx-all.yaml")
    for op in ("IsNaN", "ArgMin", "Hardmax", "Equal"):
        for k in range(len(REG.specs[op].instances)):
            assert not hinges(probe_graph(corpus, op, k, seed=k)), (op, k)


def test_no_ties_in_float16():
    # The reference rounds a float16 tensor to half precision where MNN keeps float32: Floor(x * 4)
    # would make whole steps of the rounding.
    assert hinge_kind("Hardmax", "float16") is None and hinge_kind("Hardmax", "float32") == "ties"
    assert hinge_kind("IsNaN", "float16") == "nonfinite"
