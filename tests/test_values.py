"""Special values on purpose, not by accident (issue 13).

Value intervals and guards: a "normal" model's reference computes no NaN or Inf
(Rsqrt of a negative, x / 0, Exp or Square chains that overflow are guarded by
Tanh / Sigmoid adapters), the intervals are conservative, and the guards are
adapters the minimiser re-inserts.  The "special" flag: a share of the models
feeds NaN, +-Inf and +-0 on purpose, deterministically from the graph
seed, and the repro script draws the very same inputs.

TensorFlow runs in this process in the slow tests (never at collection time);
they refuse to run in a process that already loaded MNN: the two abort together.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gbft_action.bugs.minimize import Program, minimize
from gbft_action.corpus import load_corpus
from gbft_action.graph.generate import GenOptions, draw_values, generate
from gbft_action.graph.ir import Graph, TensorType
from gbft_action.graph.solver import Builder
from gbft_action.ops import ranges
from gbft_action.ops.domains import Choice, IntRange
from gbft_action.ops.specs import GUARDS, SPECS
from gbft_action.reference.inputs import draw_inputs, input_rng
from gbft_action.search import RandomSource, case_seed
from gbft_action.search.guided import GuidedSource

from .conftest import tensorflow_in_process

CORPUS = load_corpus()
NORMAL = GenOptions(special_share=0.0)


def guards(g: Graph) -> list[Any]:
    return [n for n in g.nodes if n.role == "adapter" and n.op in GUARDS]


def chain(ops: list[str], values: str = "normal", shape: tuple[int, ...] = (1, 4, 4, 3),
          doms: dict[str, Any] | None = None) -> tuple[Builder, list[str]]:
    """A Builder with ``ops`` applied in series to one input; returns the block tensors too."""
    b = Builder(random.Random(0), 1, values)
    x = b.add_input("in0", TensorType(shape))
    outs = []
    for op in ops:
        x = b.add_op(op, [x], doms)
        outs.append(x)
    return b, outs


def feeding(b: Builder, nid: str, k: int = 0) -> list[str]:
    """The ops between block node ``nid``'s k-th input and the previous block node."""
    by = {n.id: n for n in b.g.nodes}
    name, ops = by[nid].inputs[k], []
    while name in by and by[name].role == "adapter":
        ops.append(by[name].op)
        name = by[name].inputs[0]
    return ops[::-1]


# --------------------------------------------------------------------------- intervals


def test_every_operator_has_an_interval_rule():
    # Greater's bool output is (0, 1) without a rule; every other operator needs one, or
    # its output would be "anything" and every consumer would be squashed.
    assert set(SPECS) - {"Greater"} <= set(ranges.RULES)
    assert ranges.out_range("NoSuchOp", [(0.0, 1.0)], [TensorType((1,))], {}, TensorType((1,))) == ranges.UNKNOWN
    assert ranges.out_range("NoSuchOp", [(0.0, 1.0)], [TensorType((1,))], {}, TensorType((1,), "bool")) == (0.0, 1.0)


def test_interval_rules_on_known_cases():
    t = TensorType((2, 3))
    r = ranges.out_range
    assert r("Exp", [(-1.0, 1.0)], [t], {}, t) == (math.exp(-1), math.exp(1))
    assert r("Exp", [(0.0, 1000.0)], [t], {}, t)[1] == math.inf  # no OverflowError
    assert r("Square", [(-3.0, 2.0)], [t], {}, t) == (0.0, 9.0)
    assert r("Rsqrt", [(-1.0, 1.0)], [t], {}, t)[1] == math.inf
    assert r("Rsqrt", [(0.25, 4.0)], [t], {}, t) == (0.5, 2.0)
    assert r("Realdiv", [(-1.0, 1.0)], [t], {"operand": "scalar"}, t) == (-2.0, 2.0)  # constant +-U[0.5, 1]
    assert r("Realdiv", [(-1.0, 1.0), (-1.0, 1.0)], [t, t], {}, t) == ranges.UNKNOWN
    assert r("Reducesum", [(-1.0, 2.0)], [t], {"axes": [1]}, TensorType((2,))) == (-3.0, 6.0)
    assert r("Reduceprod", [(-2.0, 1.0)], [t], {"axes": [0, 1]}, TensorType((1,))) == (-64.0, 64.0)
    assert r("Reduceprod", [(-2.0, 1.0)], [TensorType((16384,))], {"axes": [0]}, TensorType((1,)))[1] == math.inf
    conv = {"kh": 3, "kw": 2, "stride": 1, "dilation": 1, "padding": "SAME", "out_ch": 4}
    x4 = TensorType((1, 5, 5, 7))
    assert r("Conv2d", [(-0.5, 1.0)], [x4], conv, x4) == (-42.0, 42.0)
    assert r("Cast", [(-2.5, 3.5)], [t], {"to": "int32"}, TensorType((2, 3), "int32")) == (-3.0, 4.0)
    assert r("Pad", [(1.0, 2.0)], [t], {}, t) == (0.0, 2.0)  # the padding's zeros
    assert r("Argmax", [(-9.0, 9.0)], [t], {"axis": 1}, TensorType((2,), "int32")) == (0.0, 2.0)


def test_domains():
    f = TensorType((3,))
    assert ranges.domain("Rsqrt", 0, f) == "positive"
    assert ranges.domain("Sqrt", 0, f) == "non-negative"
    assert ranges.domain("Realdiv", 1, f) == "non-zero" and ranges.domain("Realdiv", 0, f) == ""
    assert ranges.domain("Cast", 0, TensorType((3,), "int32")) == "int32"
    assert ranges.domain("Cast", 0, f) == ""
    assert not ranges.satisfies((0.0, 1.0), "positive") and ranges.satisfies((0.5, 1.0), "positive")
    assert not ranges.satisfies((-0.1, 1.0), "non-negative") and ranges.satisfies((0.0, 1.0), "non-negative")
    assert not ranges.satisfies((-1.0, 1.0), "non-zero") and ranges.satisfies((-2.0, -0.5), "non-zero")
    assert not ranges.satisfies((0.0, 3e9), "int32") and ranges.satisfies((-1e9, 1e9), "int32")


# --------------------------------------------------------------------------- guards


def test_rsqrt_and_sqrt_of_a_signed_range_read_a_sigmoid():
    b, (y,) = chain(["Rsqrt"])
    assert feeding(b, y) == ["Sigmoid"]
    lo, hi = b.range_of(y)
    assert 0.0 < lo <= hi < 10.0
    b, (y,) = chain(["Sqrt"])
    assert feeding(b, y) == ["Sigmoid"]
    b, (_, y) = chain(["Relu", "Sqrt"])  # already non-negative
    assert feeding(b, y) == []
    b, (_, y) = chain(["Exp", "Rsqrt"])  # Exp of [-1, 1] is at least 1/e
    assert feeding(b, y) == []


def test_a_wide_range_is_squashed_before_the_sigmoid():
    # Reducesum of a large tensor spans far beyond [-6.9, 6.9]: Sigmoid alone would reach 0.
    b, (s, y) = chain(["Reducesum", "Rsqrt"], shape=(1, 16, 16, 8), doms={"naxes": IntRange(3, 3),
                                                                             "keepdims": Choice((True,))})
    assert ranges.magnitude(b.range_of(s)) > 10
    assert feeding(b, y) == ["Tanh", "Sigmoid"]
    assert b.range_of(y)[1] < 2.0


def test_two_tensor_realdiv_guards_the_divisor_only():
    b = Builder(random.Random(0), 1)
    x = b.add_input("in0", TensorType((1, 4, 4, 3)))
    y = b.add_op("Realdiv", [x, x])
    assert feeding(b, y, 0) == [] and feeding(b, y, 1) == ["Sigmoid"]
    assert ranges.magnitude(b.range_of(y)) < 4.0
    z = b.add_op("Realdiv", [x], {"operand": Choice(("scalar",))})  # a constant divisor: drawn away from 0
    assert feeding(b, z) == [] and b.range_of(z) == (-2.0, 2.0)


def test_overflowing_chains_are_squashed_with_tanh():
    b, outs = chain(["Exp"] * 6)
    squashed = [y for y in outs if feeding(b, y) == ["Tanh"]]
    assert squashed, "exp(exp(exp(exp(1)))) overflows float32: a Tanh must come first"
    assert all(ranges.magnitude(b.range_of(y)) <= ranges.LIMIT for y in outs)
    b, outs = chain(["Conv2d", "Square"] * 6, doms={"kh": IntRange(5, 5), "kw": IntRange(5, 5),
                                                     "out_ch": IntRange(16, 16)})
    assert any(feeding(b, y) == ["Tanh"] for y in outs)
    assert all(ranges.magnitude(b.range_of(y)) <= ranges.LIMIT for y in outs)


def test_a_cast_to_int_of_a_huge_range_is_squashed():
    b, (*_, y) = chain(["Exp", "Exp", "Exp", "Square", "Cast"], doms={"to": Choice(("int32",))})
    assert feeding(b, y) == ["Tanh"]
    assert ranges.INT32[0] <= b.range_of(y)[0] and b.range_of(y)[1] <= ranges.INT32[1]


def test_guards_are_adapters_and_come_after_the_shape_adapters():
    seen = Counter()
    for i in range(300):
        g = RandomSource(CORPUS, NORMAL, 5).next_graph(i)
        by = {n.id: n for n in g.nodes}
        for n in guards(g):
            seen[n.op] += 1
            assert n.role == "adapter" and n.block == "" and n.gnode == -1 and n.id.startswith("a")
            assert len(n.inputs) == 1 and n.params == {} and n.out == g.tensor_type(n.inputs[0])
            assert n.out.dtype == "float32"
        # A guard's consumer is a block node or another guard: a Pad after a Sigmoid would
        # bring back the zeros the Sigmoid kept from a divisor.
        for n in g.nodes:
            for src in n.inputs:
                if src in by and by[src].op in GUARDS and by[src].role == "adapter":
                    assert n.role == "block" or n.op in GUARDS, (i, n.op)
    assert seen["Tanh"] > 0 and seen["Sigmoid"] > 0


def test_special_graphs_get_no_guards():
    b, (y,) = chain(["Rsqrt"], values="special")
    assert feeding(b, y) == [] and b.g.values == "special"
    b, outs = chain(["Exp"] * 6, values="special")
    assert not guards(b.g)
    specials = [g for g in (RandomSource(CORPUS, GenOptions(special_share=1.0), 2).next_graph(i)
                            for i in range(100))]
    assert all(g.values == "special" and not guards(g) for g in specials)


def test_guards_are_deterministic():
    a = [RandomSource(CORPUS, NORMAL, 9).next_graph(i).to_json() for i in range(40)]
    b = [RandomSource(CORPUS, NORMAL, 9).next_graph(i).to_json() for i in range(40)]
    assert a == b


# --------------------------------------------------------------------------- the flag


def test_values_flag_in_json_and_hash():
    g = generate(random.Random(1), CORPUS, NORMAL, seed=3)
    assert g.values == "normal" and "values" not in json.loads(g.to_json())  # old graphs keep their bytes
    h = g.structure_hash()
    g.values = "special"
    d = json.loads(g.to_json())
    assert d["values"] == "special"
    back = Graph.from_json(g.to_json())
    assert back.values == "special" and back.to_json() == g.to_json()
    assert g.structure_hash() != h  # the same nodes mean another model
    d["values"] = "weird"
    with pytest.raises(ValueError, match="values"):
        Graph.from_dict(d)
    with pytest.raises(ValueError, match="values"):
        Builder(random.Random(0), 0, "weird")


def test_special_share_option():
    with pytest.raises(ValueError, match="special share"):
        GenOptions(special_share=1.5).validate()
    with pytest.raises(ValueError, match="special share"):
        GenOptions(special_share=-0.1).validate()
    GenOptions(special_share=0.0).validate()
    flags = [draw_values(case_seed(0, i), 0.1) for i in range(2000)]
    assert flags == [draw_values(case_seed(0, i), 0.1) for i in range(2000)]
    assert 0.07 < flags.count("special") / 2000 < 0.13
    assert all(draw_values(case_seed(0, i), 0.0) == "normal" for i in range(200))
    assert all(draw_values(case_seed(0, i), 1.0) == "special" for i in range(200))
    # Both case sources draw the flag from the case seed: the same case is special in both.
    opts = GenOptions(special_share=0.3)
    rand = [RandomSource(CORPUS, opts, 4).next_graph(i).values for i in range(60)]
    guided = GuidedSource(CORPUS, opts, 4)
    assert rand == [guided.next_graph(i).values for i in range(60)]
    assert 5 < rand.count("special") < 35


def test_program_and_minimiser_keep_the_flag():
    g = generate(random.Random(6), CORPUS, GenOptions(blocks=(8, 8), special_share=1.0), seed=6)
    assert g.values == "special"
    p = Program.from_graph(g)
    assert p.values == "special"
    again = p.realise()
    assert again.values == "special" and not guards(again)
    target = g.block_nodes()[-1].op
    small, res, _ = minimize(g, lambda h: any(n.op == target for n in h.block_nodes()), time_limit=20)
    assert res and small.values == "special" and len(small.block_nodes()) == 1
    # A normal program re-inserts its guards on every realisation.
    b, _ = chain(["Relu", "Rsqrt"])
    g = b.finish({})
    p = Program.from_graph(g)
    assert p.values == "normal" and [s.op for s in p.steps] == ["Relu", "Rsqrt"]
    h = p.realise()
    assert [n.op for n in guards(h)] == ["Sigmoid"] and h.values == "normal"


# --------------------------------------------------------------------------- special inputs


def test_special_inputs_hold_special_values_reproducibly():
    g = generate(random.Random(2), CORPUS, GenOptions(special_share=1.0), seed=11)
    g.inputs = {"in0": TensorType((1, 8, 8, 4))}
    a, b = draw_inputs(g), draw_inputs(g)
    assert a.keys() == b.keys() == {"in0"}
    assert a["in0"].tobytes() == b["in0"].tobytes()  # bit for bit, NaN payloads and -0 included
    x = a["in0"]
    assert x.dtype == np.float32 and x.shape == (1, 8, 8, 4)
    assert np.isnan(x).any() and np.isposinf(x).any() and np.isneginf(x).any()
    assert ((x == 0) & np.signbit(x)).any() and ((x == 0) & ~np.signbit(x)).any()
    tiny = np.finfo(np.float32).tiny
    # No denormals: TensorFlow flushes them to zero, so it cannot judge an engine on them.
    assert not ((x != 0) & (np.abs(x) < tiny)).any()
    assert (x[np.isfinite(x)] < -0.01).any()  # negatives as usual
    assert 5 <= (~np.isfinite(x) | (x == 0)).sum() <= 16  # one element in sixteen of 256
    g.seed = 12
    assert draw_inputs(g)["in0"].tobytes() != x.tobytes()
    # A one-element input still gets a special value.
    g.inputs = {"in0": TensorType((1, 1, 1, 1))}
    assert not (np.isfinite(draw_inputs(g)["in0"]) & (np.abs(draw_inputs(g)["in0"]) >= tiny)).any()


def test_normal_inputs_are_the_uniform_draw_as_before():
    g = generate(random.Random(2), CORPUS, NORMAL, seed=11)
    x = draw_inputs(g)["in0"]
    want = np.random.default_rng([11, 0x1F]).uniform(-1.0, 1.0, size=g.inputs["in0"].shape).astype(np.float32)
    assert x.tobytes() == want.tobytes()
    assert input_rng(11).uniform() == np.random.default_rng([11, 0x1F]).uniform()


# --------------------------------------------------------------------------- TensorFlow (slow)


@pytest.fixture
def tf() -> Any:
    tensorflow_in_process()
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    tf.get_logger().setLevel("ERROR")
    return tf


def run_reference(tf: Any, g: Graph, fetch: list[str], inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    from gbft_action.reference.tf_emit import build
    from gbft_action.reference.worker import session_config

    tg, names = build(g)
    with tf.compat.v1.Session(graph=tg, config=session_config()) as s:
        return s.run([names[t] for t in fetch], {names[k]: v for k, v in inputs.items()})


@pytest.mark.slow
def test_default_corpus_reference_outputs_are_finite(tf):
    """1,000 models of the default corpus, no special share: no output holds NaN or Inf
    (before the guards, 29.5% of the models had one)."""
    src = RandomSource(CORPUS, NORMAL, 0)
    bad, ran = [], 0
    for i in range(1000):
        g = src.next_graph(i)
        try:
            vals = run_reference(tf, g, list(g.outputs), draw_inputs(g))
        except (ValueError, TypeError, tf.errors.OpError):
            continue  # GEN / REF: counted by test_graph's validity test
        ran += 1
        for o, v in zip(g.outputs, vals):
            v = np.asarray(v)
            if v.dtype.kind == "f" and not np.isfinite(v).all():
                bad.append(f"#{i} {o} ({g.node(o).op}): {sorted(n.op for n in g.block_nodes())}")
    assert ran >= 990
    assert not bad, f"{len(bad)} outputs with NaN/Inf:\n" + "\n".join(bad[:10])


@pytest.mark.slow
def test_intervals_are_conservative(tf):
    """Every intermediate of 300 random models lies in its interval: inputs uniform and at the corners."""
    src = RandomSource(CORPUS, GenOptions(blocks=(1, 12), special_share=0.0), 3)
    out_of_range, checked = [], 0
    for i in range(300):
        g = src.next_graph(i)
        want = ranges.graph_ranges(g)
        fetch = [n.id for n in g.nodes]
        uniform = draw_inputs(g)
        corners = {k: np.where(v < 0, -1.0, 1.0).astype(v.dtype) for k, v in uniform.items()}
        for inputs in (uniform, corners):
            try:
                vals = run_reference(tf, g, fetch, inputs)
            except (ValueError, TypeError, tf.errors.OpError):
                continue
            for t, v in zip(fetch, vals):
                v = np.asarray(v, np.float64)
                lo, hi = want[t]
                slack = 1e-4 * max(1.0, abs(lo) if math.isfinite(lo) else 0, abs(hi) if math.isfinite(hi) else 0)
                if v.size and not (np.isfinite(v).all() and v.min() >= lo - slack and v.max() <= hi + slack):
                    out_of_range.append(f"#{i} {t} ({g.node(t).op}): [{v.min()}, {v.max()}] not in [{lo}, {hi}]")
                checked += 1
    assert checked > 3000
    assert not out_of_range, "\n".join(out_of_range[:10])


@pytest.mark.slow
def test_special_models_do_feed_special_values(tf):
    """Special values reach the outputs of most special models (they are not squashed)."""
    src = RandomSource(CORPUS, GenOptions(blocks=(1, 5), special_share=1.0), 7)
    nonfinite = 0
    for i in range(40):
        g = src.next_graph(i)
        try:
            vals = run_reference(tf, g, list(g.outputs), draw_inputs(g))
        except (ValueError, TypeError, tf.errors.OpError):
            continue
        nonfinite += any(np.asarray(v).dtype.kind == "f" and not np.isfinite(v).all() for v in vals)
    assert nonfinite >= 20


@pytest.mark.slow
@pytest.mark.parametrize("values", ["normal", "special"])
def test_the_repro_script_draws_the_same_inputs(tf, tmp_path, values):
    """repro.py's reference() feeds TensorFlow what the fuzzer fed it, bit for bit."""
    import jinja2

    from gbft_action.bugs.bundle import TEMPLATES
    from gbft_action.bugs.repro import render_repro
    from gbft_action.records import BundleMeta

    g = generate(random.Random(4), CORPUS, GenOptions(blocks=(3, 3), special_share=float(values == "special")), 21)
    assert g.values == values
    meta = {"id": "0123456789ab", "title": "t", "engine": {"engine": "mnn"}, "tool_version": "0", "status": "DCF",
            "fingerprint": {}, "tolerance": {"rtol": 1e-3, "atol": 1e-5, "min_ratio": 0.999}}
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), keep_trailing_newline=True)
    script = tmp_path / "repro.py"
    script.write_text(render_repro(env, g, BundleMeta.from_json(meta)))
    spec = importlib.util.spec_from_file_location("repro_under_test", script)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    inputs, expected = mod.reference(str(tmp_path))
    want = draw_inputs(g)
    assert inputs.keys() == want.keys()
    assert all(inputs[k].tobytes() == want[k].tobytes() for k in want)
    assert (values == "special") == ("with_special_values" in script.read_text())
    ref = run_reference(tf, g, list(g.outputs), want)
    for o, v in zip(g.outputs, ref):
        np.testing.assert_array_equal(np.asarray(expected[o]), np.asarray(v))
    assert Path(tmp_path / "model.pb").exists()
