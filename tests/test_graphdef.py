"""The direct GraphDef (reference/graphdef) against TensorFlow's Python op layer (reference/tf_emit).

On random graphs of the whole default TF corpus: the same GraphDef (every NodeDef's
op type, inputs, attributes and constant bytes, and the graph's versions: compared
as deterministic serialisations, so equal protos), the same outputs and
intermediates bit for bit from a session on each, and through the reference
worker's ``build`` the same model.pb meaning and the same replies.  Then MNN
converts and runs a handful of directly emitted model.pb files with the same
results as the op layer's.

The worker runs the direct GraphDef eagerly, node by node (reference.eager): the same
kernels as a session, except that TensorFlow's graph mode and its eager mode pick
different oneDNN paths for some Conv2D geometries (one input channel, mostly; 12 of
600 random graphs), which sum in another order.  So eager values are the session's bit
for bit up to the first Conv2D that rounds differently (checked there: within 1e-5),
and downstream of it only as close as the graph keeps them; every other operator
agrees bit for bit.

What may differ, and is not compared: the bytes of model.pb (attribute maps are
serialised in whatever order each serialiser keeps; the protos are equal), and the
text of a TensorFlow error (an op made through the op layer carries the Python stack
that made it, which TensorFlow quotes: "defined at ...").

TensorFlow is imported only inside these tests (never at collection time), and
MNN only in an engine worker process: the two abort together in one process.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from gbft_action.corpus import load_corpus
from gbft_action.graph.generate import GenOptions
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.search import RandomSource

from .conftest import relu_sigmoid, tensorflow_in_process

CORPUS = load_corpus()


def _tf():  # type: ignore[no-untyped-def]
    tensorflow_in_process()
    tf = pytest.importorskip("tensorflow")
    tf.get_logger().setLevel("ERROR")
    return tf


def graphs(n: int, seed: int = 0) -> list[Graph]:
    """n random graphs of 1-30 blocks, after a one-input Concat (tf_emit's identity), a
    Softmax on an inner axis (the op layer's transposes around it), one on axis -1, and a
    Reshape TensorFlow rejects (a GEN: both paths must say "invalid")."""
    t = TensorType((1, 3))
    one = Graph({"in0": t}, [Node("n0", "Concat", ["in0"], {"axis": 1}, t, "Concat")], ["n0"], seed=1)
    bad = Graph({"in0": t}, [Node("n0", "Reshape", ["in0"], {"shape": [5], "rank": 1}, TensorType((5,)), "Reshape")],
                ["n0"], seed=3)
    return [one, softmax(1), softmax(-1), bad, *random_graphs(n, seed)]


def softmax(axis: int) -> Graph:
    t = TensorType((2, 3, 4))
    return Graph({"in0": t}, [Node("n0", "Softmax", ["in0"], {"axis": axis}, t, "Softmax")], ["n0"], seed=2)


def random_graphs(n: int, seed: int) -> list[Graph]:
    src = RandomSource(CORPUS, GenOptions(blocks=(1, 30)), seed)
    return [src.next_graph(i) for i in range(n)]


# The TensorFlow ops whose eager (oneDNN) and graph-mode kernels may sum in another order.
REORDERING = {"Conv2D"}


def first_difference(g: Graph, x: dict[str, np.ndarray], y: dict[str, np.ndarray]) -> str | None:
    """The first node of g (in graph order) whose values in x and y differ in any bit."""
    return next((n.id for n in g.nodes if n.id in x and not same_bits(x[n.id], y[n.id])), None)


def agree_but_for_reordering(g: Graph, ops: dict[str, str], x: dict[str, np.ndarray],
                             y: dict[str, np.ndarray]) -> bool:
    """x and y (every node's values) are the same bits, or first differ at an op of REORDERING,
    by rounding only."""
    t = first_difference(g, x, y)
    if t is None:
        return True
    # A reordered sum errs relative to the sum of its terms' sizes, not to its result (a
    # result near zero of a 100-term sum): the bound scales with the tensor's largest value.
    finite = np.abs(x[t][np.isfinite(x[t])])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    return ops[t] in REORDERING and np.allclose(x[t], y[t], rtol=1e-5, atol=1e-5 * scale, equal_nan=True)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.slow
def test_direct_graphdef_is_the_op_layers_and_computes_the_same_bits():
    tensorflow_in_process()
    tf = _tf()
    from gbft_action.reference.eager import Evaluator
    from gbft_action.reference.graphdef import load, lowered
    from gbft_action.reference.inputs import draw_inputs
    from gbft_action.reference.tf_emit import build
    from gbft_action.reference.worker import session_config

    tf1 = tf.compat.v1
    direct, fallback, invalid, ops, eager_same = 0, Counter(), 0, Counter(), 0
    for i, g in enumerate(graphs(300)):
        b = lowered(g)
        gd = None if b is None else b.gd
        try:
            tg, names = build(g)
        except (ValueError, TypeError):
            invalid += 1  # a model TensorFlow rejects (GEN): the direct path must reject it too
            if b is not None:
                with pytest.raises(ValueError):
                    load(b.gd, list(g.inputs))
                with pytest.raises(ValueError):
                    load(b.gd)
                with pytest.raises(tf.errors.InvalidArgumentError):  # eagerly: the kernel rejects it
                    Evaluator(b.gd, b.consts, draw_inputs(g)).values(list(g.outputs))
            continue
        if gd is None:
            fallback.update({n.op for n in g.nodes})
            continue
        want = tg.as_graph_def()
        assert gd.SerializeToString(deterministic=True) == want.SerializeToString(deterministic=True), \
            f"graph {i}: {_first_difference(gd, want)}"
        fetch = [n.id for n in g.nodes]
        imported = load(gd, [*g.inputs, *fetch])  # as the worker loads it
        feed = draw_inputs(g)
        vals = []
        for graph in (tg, imported):
            with tf1.Session(graph=graph, config=session_config()) as s:
                vals.append(s.run([f"{t}:0" for t in fetch], {f"{k}:0": v for k, v in feed.items()}))
        for t, x, y in zip(fetch, *vals):
            assert same_bits(x, y), f"graph {i}, node {t} ({g.node(t).op})"
        session = dict(zip(fetch, vals[0]))
        eagerly = dict(zip(fetch, Evaluator(gd, b.consts, feed).values(fetch)))
        assert agree_but_for_reordering(g, {nd.name: nd.op for nd in gd.node}, session, eagerly), \
            f"graph {i}: eagerly, node {first_difference(g, session, eagerly)}"
        eager_same += first_difference(g, session, eagerly) is None
        direct += 1
        ops.update(n.op for n in g.nodes)
    assert direct >= 250 and invalid >= 1, (direct, invalid, fallback)
    assert len(ops) >= 48, sorted(ops)  # every corpus operator (and the adapters) went the direct way
    # Which Conv2D geometries take another oneDNN path eagerly depends on the CPU: 98% of graphs
    # were the same bits on an AVX-512 host, 69% on an AVX2-only one (oneDNN forced on).
    assert eager_same >= 0.5 * direct, (eager_same, direct)


def _first_difference(a, b) -> str:  # type: ignore[no-untyped-def]
    for x, y in zip(a.node, b.node):
        if x != y:
            return f"direct:\n{x}\nop layer:\n{y}"
    return f"{len(a.node)} vs {len(b.node)} nodes; versions {a.versions} vs {b.versions}"


@pytest.mark.slow
def test_worker_replies_are_the_same_on_both_paths(tmp_path: Path):
    """The reference worker's build, direct (run eagerly) and through the op layer (a session):
    the same model.pb (as a proto), inputs, and outputs as the fuzz loop asks (outputs only)
    and as localisation asks (every node's tensor): the same bits, or, for every node, the
    same up to a Conv2D that rounds differently (see the module docstring)."""
    tensorflow_in_process()
    tf = _tf()
    from gbft_action.reference.worker import ReferenceHandler
    from gbft_action.wire.arrays import unpack

    h, reordered = ReferenceHandler(), set()
    for i, g in enumerate(graphs(40, seed=5)):
        for extra in ([n.id for n in g.nodes], []):
            replies, pbs = [], []
            for direct in (True, False):
                d = tmp_path / f"{i}-{direct}-{len(extra)}"
                msg = {"op": "build", "graph": g.to_json(), "dir": str(d), "direct": direct, "extra_outputs": extra}
                replies.append(h.handle(msg))
                pbs.append(d / "model.pb")
            a, b = replies
            assert a["ok"] == b["ok"], (i, a.get("error"), b.get("error"))
            if not a["ok"]:
                assert a["kind"] == b["kind"] == "invalid", (a["error"], b["error"])
                continue
            assert (a["graphdef"], b["graphdef"]) == ("direct", "op-layer"), i
            assert (a["runner"], b["runner"]) == ("eager", "session"), i
            protos = []
            for p in pbs:
                gd = tf.compat.v1.GraphDef()
                gd.ParseFromString(p.read_bytes())
                protos.append(gd.SerializeToString(deterministic=True))
            assert protos[0] == protos[1], i
            ops = {nd.name: nd.op for nd in gd.node}  # either model.pb: the protos are equal
            x, y = unpack(a["inputs"]), unpack(b["inputs"])
            assert x.keys() == y.keys() and all(same_bits(x[k], y[k]) for k in x), i
            x, y = unpack(a["expected"]), unpack(b["expected"])
            assert x.keys() == y.keys(), i
            if extra:
                assert agree_but_for_reordering(g, ops, x, y), i
                if first_difference(g, x, y) is not None:
                    reordered.add(i)
            elif i not in reordered:  # no node differed: the outputs do not either
                assert all(same_bits(x[k], y[k]) for k in x), i


def test_intermediates_of_the_model_just_built_are_a_fresh_builds_bit_for_bit(tmp_path: Path):
    """Localisation asks the reference for every node's value of the model it just ran: the
    kept session's answer is what a second build with every node fetched gives, on both
    paths; asked of any other model, folder or inputs it says ``stale``."""
    tensorflow_in_process()
    _tf()
    from gbft_action.reference.worker import ReferenceHandler
    from gbft_action.wire.arrays import digest, unpack

    h, checked = ReferenceHandler(), 0
    for i, g in enumerate(graphs(30, seed=9)):
        for direct in (True, False):
            d, names = str(tmp_path / f"{i}-{direct}"), [n.id for n in g.nodes]
            first = h.handle({"op": "build", "graph": g.to_json(), "dir": d, "direct": direct})
            if not first["ok"]:
                continue
            ask = {"op": "intermediates", "graph": g.to_json(), "dir": d, "names": names,
                   "inputs": digest(unpack(first["inputs"]))}
            kept = h.handle(ask)
            for other in ({**ask, "dir": d + "x"}, {**ask, "inputs": "0" * 40}):
                assert h.handle(other)["kind"] == "stale"
            full = h.handle({"op": "build", "graph": g.to_json(), "dir": d + "-probe", "direct": direct,
                             "extra_outputs": names, "inputs": first["inputs"]})
            x, y = unpack(kept["expected"]), unpack(full["expected"])
            assert set(x) == set(names) and x.keys() == y.keys(), i
            assert all(same_bits(x[k], y[k]) for k in x), i
            assert h.handle(ask)["kind"] == "stale"  # another model was built since
            checked += 1
    assert checked >= 40


@pytest.mark.slow
def test_a_lanes_localisation_takes_the_kept_models_values_not_a_second_build(nan_lane):
    """A wrong result is localised with the reference's kept values: one build for the case,
    one ``intermediates`` call, no second build (which would still give the same answer)."""
    from gbft_action.records import Status

    res = nan_lane.run(0, relu_sigmoid(), 60)
    assert res.status == Status.DCF and res.localised and res.node == "n0"
    assert (nan_lane.ref.calls["build"], nan_lane.ref.calls["intermediates"]) == (1, 1)


@pytest.mark.slow
def test_tflite_copies_are_the_same_on_both_paths(tmp_path: Path):
    """The tflite front end converts the graph the worker built: the same model.tflite bytes
    from the direct GraphDef (imported whole) as from the op layer's graph."""
    tensorflow_in_process()
    _tf()
    from gbft_action.reference.worker import ReferenceHandler

    h, same = ReferenceHandler(), 0
    for i, g in enumerate(random_graphs(8, seed=4)):
        files = []
        for direct in (True, False):
            d = tmp_path / f"{i}-{direct}"
            r = h.handle({"op": "build", "graph": g.to_json(), "dir": str(d), "direct": direct, "tflite": True})
            files.append((d / "model.tflite").read_bytes() if r["ok"] else r["kind"])
        assert files[0] == files[1], i
        same += isinstance(files[0], bytes)
    assert same >= 4, same


@pytest.mark.slow
def test_every_operator_has_a_lowering():
    tensorflow_in_process()
    _tf()
    from gbft_action.ops.specs import SPECS
    from gbft_action.reference.graphdef import LOWERINGS
    from gbft_action.reference.tf_emit import EMITTERS

    assert set(SPECS) == set(EMITTERS) == set(LOWERINGS)
    assert {b for blk in CORPUS.blocks for b in blk.ops} <= set(LOWERINGS)


@pytest.mark.slow
def test_a_graph_the_table_does_not_lower_takes_the_op_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    tensorflow_in_process()
    _tf()
    from gbft_action.reference import graphdef
    from gbft_action.reference.worker import ReferenceHandler

    assert graphdef.lower(softmax(-2)) is None  # tf.nn.softmax would compute the axis in the graph
    g = softmax(1)
    monkeypatch.delitem(graphdef.LOWERINGS, "Softmax")
    assert graphdef.lower(g) is None
    r = ReferenceHandler().handle({"op": "build", "graph": g.to_json(), "dir": str(tmp_path)})
    assert r["ok"] and r["graphdef"] == "op-layer"


@pytest.mark.slow
def test_mnn_runs_a_direct_model_pb_as_it_runs_the_op_layers(tmp_path: Path):
    """A handful of graphs: MNN converts the directly emitted model.pb and gives the same
    outputs, bit for bit, as from the op layer's (reference and engine in worker processes);
    TensorFlow's outputs too, but for graphs with a Conv2D (see the module docstring)."""
    from gbft_action.wire.arrays import pack, unpack
    from gbft_action.workers.supervisor import Worker, WorkerSpec

    ref = Worker(WorkerSpec("reference"), tmp_path / "ref.log")
    eng = Worker(WorkerSpec("engine", "gbft_action.engines.mnn:MNNEngine"), tmp_path / "eng.log")
    ran = 0
    try:
        for i, g in enumerate(random_graphs(10, seed=9)):
            outs, expected = [], []
            for direct in (True, False):
                d = tmp_path / f"{i}-{direct}"
                r = ref.call({"op": "build", "graph": g.to_json(), "dir": str(d), "direct": direct}, 60)
                assert r.kind in ("ok", "error"), r.crash_summary
                if r.kind != "ok":
                    outs.append(("reference", r.reply.get("kind")))
                    continue
                assert r.reply["graphdef"] == ("direct" if direct else "op-layer"), r.reply["graphdef"]
                c = eng.call({"op": "convert", "model": str(d / "model.pb"), "format": "pb", "dir": str(d)}, 60)
                if c.kind != "ok":
                    outs.append(("convert", c.kind))
                    continue
                inputs = unpack(r.reply["inputs"])
                expected.append(unpack(r.reply["expected"]))
                y = eng.call({"op": "infer", "inputs": pack(inputs), "outputs": list(g.outputs)}, 60)
                outs.append(unpack(y.reply["outputs"]) if y.kind == "ok" else ("infer", y.kind))
            a, b = outs
            if len(expected) == 2 and not any(n.op == "Conv2d" for n in g.nodes):
                x, y = expected  # and TensorFlow's own outputs, through the worker, bit for bit
                assert x.keys() == y.keys() and all(same_bits(x[k], y[k]) for k in x), i
            if isinstance(a, dict) and isinstance(b, dict):
                assert a.keys() == b.keys() and all(same_bits(a[k], b[k]) for k in a), i
                ran += 1
            else:
                assert a == b, i  # the same failure on both (MNN's own bugs are not this test's)
    finally:
        ref.close()
        eng.close()
    assert ran >= 5, ran
