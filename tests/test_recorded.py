"""Operators known from ONNX's recorded instances (issue 26): the records file, the spec that
places an instance, the emitter that writes it, the corpus that adds them."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from gbft_action.corpus import CorpusError, load_corpus, parse_corpus
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.graph.solver import Builder
from gbft_action.ops.onnx_specs import ONNX_SPECS
from gbft_action.ops.recorded import RECORDS_VERSION, TYPES, RecordedSpec, RecordsError, recorded_specs
from gbft_action.frontends import LEGACY_OPSET
from gbft_action.ops.registry import registry

ort = pytest.importorskip("onnxruntime")

from gbft_action.reference import onnx_emit  # noqa: E402
from gbft_action.reference.onnx_code import model_source  # noqa: E402
from gbft_action.records import Summary  # noqa: E402
from gbft_action.records.case import CaseRecord

REG = registry("onnx")
RECORDED = {k: v for k, v in REG.specs.items() if isinstance(v, RecordedSpec)}


def test_the_records_reach_the_operators_nobody_wrote_a_spec_for():
    assert not set(RECORDED) & set(ONNX_SPECS)  # a hand-written spec wins where one exists
    assert {"CumSum", "OneHot", "ScatterElements", "Einsum", "IsNaN", "IsInf", "Mod", "Trilu"} <= set(RECORDED)
    assert len(set(RECORDED) | set(ONNX_SPECS)) >= 130
    fed = {s.instances[i].fed_type.dtype for s in RECORDED.values() for i in range(len(s.instances))}
    assert fed == set(TYPES)  # every element type the generator casts to feeds some instance


def _alone(op: str, i: int) -> Graph:
    b = Builder(random.Random(i), seed=7, reg=REG)
    x = b.add_input("in0", TensorType((2, 3, 4, 5)))
    b.add_op(op, [x], block=op, fixed={"instance": i})
    return b.finish({"frontend": "onnx"})


def test_every_recorded_instance_placed_on_a_generated_tensor_is_a_model_onnx_runtime_runs():
    """The solver coerces a float32 [2, 3, 4, 5] tensor to each instance's fed input; the model
    passes the checker and strict shape inference, and ONNX Runtime gives the IR's output type."""
    so = ort.SessionOptions()
    so.log_severity_level = 4
    bad = []
    for op, spec in sorted(RECORDED.items()):
        for i in range(len(spec.instances)):
            g = _alone(op, i)
            try:
                m = onnx_emit.check(onnx_emit.build(g))
                sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
                x = np.random.default_rng(i).standard_normal((2, 3, 4, 5)).astype(np.float32)
                y = sess.run([g.outputs[0]], {"in0": x})[0]
                want = g.node(g.outputs[0]).out
                assert y.shape == want.shape and str(y.dtype) == want.dtype, (y.shape, y.dtype, want)
            except Exception as e:  # noqa: BLE001 - collected: the message lists every failure
                bad.append(f"{op}#{i}: {type(e).__name__}: {str(e)[:160]}")
    assert not bad, "\n".join(bad[:20])


def test_a_bundle_can_pick_an_instance_never_write_one():
    g = _alone("CumSum", 0)
    assert "'CumSum'" in "\n".join(model_source(g).nodes)
    k = next(i for i, n in enumerate(g.nodes) if n.id == "n0")
    for hostile in (10**6, -1, "0", None):
        n = g.nodes[k]
        g.nodes[k] = Node(n.id, n.op, n.inputs, {"instance": hostile}, n.out, n.block, n.role, n.gnode)
        with pytest.raises(ValueError, match="no instance"):
            model_source(g)


def test_a_corpus_adds_the_recorded_operators_only_when_it_says_so():
    base = load_corpus("gbft_action/corpora/onnx-mnn.yaml").raw
    own = {b["name"] for b in base["blocks"]}
    plain = parse_corpus({**base, "recorded": False})
    assert {b.name for b in plain.blocks} == own
    more = parse_corpus({**base, "recorded": True})
    assert set(RECORDED) <= set(more.op_types) and len(more.blocks) == len(own) + len(set(RECORDED) - own)
    with pytest.raises(CorpusError, match="recorded"):
        parse_corpus({**base, "recorded": "yes"})


def test_the_records_builder_keeps_only_what_the_oracle_takes(tmp_path):
    from gbft_action.reference.onnx_records import build_records

    r = build_records(only=frozenset({"CumSum", "NonZero", "Abs"}))
    assert r["version"] == RECORDS_VERSION and r["opset"] == LEGACY_OPSET
    ops = r["ops"]
    assert set(ops) == {"CumSum", "NonZero", "Abs"}
    # NonZero's output shape depends on the values: the solver could not know it; only its
    # pattern, which reduces the indices to a shape the graph knows, is kept.
    assert ops["NonZero"]["schema"]["inputs"][0]["name"] == "X"
    assert [i["case"] for i in ops["NonZero"]["instances"]] == ["pattern mean-of-nonzero-indices"]
    assert ops["NonZero"]["instances"][0]["ops"] == ["Add", "Cast", "NonZero", "ReduceMean"]
    cums = ops["CumSum"]["instances"]
    assert cums and cums[0]["inputs"][0]["dtype"] == "float32"  # float32 first, though recorded as float64
    assert {"exclusive", "reverse"} <= set(ops["CumSum"]["schema"]["attributes"])
    assert any(i["attrs"].get("reverse") == 1 for i in cums)
    # A file of another version is refused with its name, not misread.
    old = tmp_path / "old.json"
    old.write_text('{"version": 0, "ops": {}}')
    with pytest.raises(RecordsError, match="old.json: records version 0"):
        recorded_specs(old)


def test_a_campaign_probes_each_recorded_instance_alone_first_and_then_avoids_what_failed():
    """The first cases are every recorded instance alone (search.probe); what fails alone is
    proof: an operator none of whose instances works is never placed again, a failing instance
    never drawn again, and the support matrix counts what each did."""
    from gbft_action.graph.generate import GenOptions
    from gbft_action.search.guided import GuidedSource
    from gbft_action.search.probe import PROBE, probes

    corpus = load_corpus("gbft_action/corpora/onnx-all.yaml")
    todo = probes(corpus)
    assert len({op for op, _ in todo}) == len(set(RECORDED) - set(ONNX_SPECS)) and ("CumSum", 0) in todo
    src = GuidedSource(corpus, GenOptions(blocks=(3, 8)), seed=11)
    for i, (op, k) in enumerate(todo):
        g = src.next_graph(i)
        assert [n.op for n in g.block_nodes()] == [op] and g.meta[PROBE] == [op, k] and g.node("n0").params == {
            "instance": k}
        # Hardmax fails alone on every instance, CumSum on its first only; the rest pass.
        fails = op == "Hardmax" or (op, k) == ("CumSum", 0)
        src.feedback(i, g, CaseRecord.from_json({"status": "MCF" if fails else "DCP", "op": op}))
    sup = src.summary()["support"]["rows"]
    assert sup["Hardmax"]["converts"] == 0 and sup["CumSum"]["agrees"] == sup["CumSum"]["instances"] - 1
    # Per attribute value: what sets the failing instance apart, as its key would name it.
    assert sup["CumSum"]["failing"] == [f"{REG.specs['CumSum'].instances[0].describe()}: MCF"]
    from gbft_action.report.render import support_matrix

    shown = support_matrix(Summary(0, coverage=src.summary()))
    assert shown["rows"][0]["agrees"] == 0 and "Hardmax" in [r["op"] for r in shown["rows"]]
    assert "CumSum" in [r["op"] for r in shown["rows"]] and shown["agree_all"] == shown["operators"] - 2
    placed = []
    for i in range(len(todo), len(todo) + 150):
        g = src.next_graph(i)
        assert PROBE not in g.meta
        placed += [(n.op, n.params.get("instance")) for n in g.block_nodes()]
        src.feedback(i, g, CaseRecord.from_json({"status": "DCP"}))
    ops = {op for op, _ in placed}
    assert "Hardmax" not in ops and ("CumSum", 0) not in placed and "CumSum" in ops
    assert len(ops - set(ONNX_SPECS)) >= 40  # the recorded operators that work are placed
    # What the probes found is not in the state: a campaign started from it (--state, another
    # build) probes again, and draws from what its own probes find.
    again = GuidedSource(corpus, GenOptions(blocks=(3, 8)), seed=12)
    again.load_state(json.loads(json.dumps(src.state())))
    assert again.next_graph(0).meta[PROBE] == list(todo[0]) and not again.known.excluded("Hardmax")


def test_the_shipped_records_are_what_the_installed_onnx_gives():
    """The data file is generated, never edited: rebuilt for a few operators with the onnx this
    venv holds, they are what the package ships (else: run make records)."""
    import json

    import onnx

    from gbft_action.ops.recorded import RECORDS_FILE
    from gbft_action.reference.onnx_records import build_records

    shipped = json.loads(RECORDS_FILE.read_text())
    if shipped["onnx"] != onnx.__version__:
        pytest.skip(f"records written with onnx {shipped['onnx']}, this venv has {onnx.__version__}")
    few = frozenset({"CumSum", "Einsum", "OneHot", "Mod"})
    assert build_records(only=few)["ops"] == {op: shipped["ops"][op] for op in few}


def test_neuri_mutations_are_instances_the_oracle_took_and_rules_are_inferred_by_running():
    """Each mutant is one change of a recorded instance (an integer attribute, a string from the
    operator's other test cases, an optional input left out) that the oracle took; a flag only
    flips; "same" is inferred where the output follows the input's every dimension."""
    from gbft_action.reference.onnx_records import build_records

    ops = build_records(only=frozenset({"ReduceL1", "LpNormalization", "Gather", "Pad"}))["ops"]
    # ReduceL1's test cases are opset 18 (axes an input): at ours, the attribute again.
    red = ops["ReduceL1"]["instances"]
    assert red and all(len(i["inputs"]) == 1 for i in red) and any("axes" in i["attrs"] for i in red)
    muts = [i for op in ops.values() for i in op["instances"] if "mutation" in i]
    assert muts and all(i["case"].endswith(f"({i['mutation']})") for i in muts)
    assert all(i["attrs"].get("keepdims", 0) in (0, 1) for i in red)  # never keepdims=2, which ORT takes
    modes = {i["attrs"].get("mode") for i in ops["Pad"]["instances"] if "mutation" in i}
    assert {"edge", "reflect"} & modes  # values of Pad's other test cases
    assert all(i.get("rule") == "same" for i in ops["LpNormalization"]["instances"])
    assert not any(i.get("rule") for i in ops["Gather"]["instances"])  # the indices pin the output


def test_an_instance_whose_output_follows_its_input_is_placed_with_no_adapter():
    same = [(op, k) for op, s in sorted(RECORDED.items()) for k, inst in enumerate(s.instances)
            if inst.rule == "same" and len(inst.fed_type.shape) == 4 and inst.fed_type.dtype == "float32"]
    assert len(same) >= 6
    for op, k in same:
        g = _alone(op, k)
        # No shape adapter (a hinge before a Unique or an ArgMin changes values, not the shape)
        shaping = [n.op for n in g.nodes if not ("scale" in n.params or "values" in n.params)]
        assert shaping == [op] and g.node("n0").out.shape == (2, 3, 4, 5), (op, k)
    pinned = next((op, k) for op, s in sorted(RECORDED.items()) for k, inst in enumerate(s.instances)
                  if not inst.rule and inst.fed_type.shape != (2, 3, 4, 5) and inst.fed_type.dtype == "float32")
    assert len(_alone(*pinned).nodes) > 1  # coerced to its recorded shape by an adapter


def test_a_builder_killed_by_a_signal_falls_back_and_a_python_error_is_raised():
    """ONNX Runtime segfaults on one mutant: that operator keeps its recorded instances. A bug
    of the builder itself is never read as "no instances"."""
    import os
    import signal

    from gbft_action.reference.onnx_records import _isolated

    def crashing(mutate: bool) -> list[dict]:
        if mutate:
            os.kill(os.getpid(), signal.SIGSEGV)
        return [{"recorded": True}]

    assert _isolated(crashing) == [{"recorded": True}]
    with pytest.raises(RuntimeError, match="records builder failed"):
        _isolated(lambda mutate: [{"x": 1 / 0}])


def test_a_pattern_is_an_instance_only_if_the_oracle_takes_it_and_follows_its_input_when_it_can():
    """Patterns (reference.onnx_patterns) go through the validity oracle like test cases: one
    that strict shape inference refuses is no instance; the shape rule is inferred by running."""
    from gbft_action.reference.onnx_patterns import R4, Pattern
    from gbft_action.reference.onnx_records import pattern_instance

    same = pattern_instance(Pattern("Size", "t", f"p ({R4} X) => ({R4} Y) {{ s = Size(X) f = Cast<to=1>(s) Y = Div(X, f) }}"))
    assert same is not None and same["rule"] == "same" and same["ops"] == ["Cast", "Div", "Size"]
    pinned = pattern_instance(Pattern("RandomUniform", "t", f"p ({R4} X) => ({R4} Y) "
                                      "{ r = RandomUniform<shape=[5], low=0.5, high=0.5>() Y = Add(X, r) }"))
    assert pinned is not None and "rule" not in pinned  # its constant shape pins the last dimension
    wrong = pattern_instance(Pattern("Size", "t", f"p ({R4} X) => (float[2,3] Y) {{ Y = Relu(X) }}"))
    assert wrong is None  # the declared output is not what inference gives
    random = pattern_instance(Pattern("RandomUniformLike", "t", f"p ({R4} X) => ({R4} Y) "
                                      "{ r = RandomUniformLike<low=0.0, high=1.0>(X) Y = Mul(X, r) }"))
    assert random is None  # two runs differ: nothing to compare the engine with


def test_a_pattern_is_inlined_with_its_names_prefixed_subgraphs_too_and_counted_whole():
    """The If pattern's branches read the pattern's input from the outer scope: renaming must
    reach into them, or the model refers to a tensor that does not exist."""
    import numpy as np
    import onnxruntime as ort

    from gbft_action.corpus import load_corpus
    from gbft_action.graph.ir import Graph, Node, TensorType
    from gbft_action.search.coverage import Coverage
    from gbft_action.search.guided import model_operators

    k = next(i for i, inst in enumerate(RECORDED["If"].instances) if inst.case == "pattern relu-or-neg")
    t = TensorType((1, 2, 3, 3))
    g = Graph({"in0": t}, [Node("n0", "Relu", ["in0"], {}, t, "Relu"), Node("n1", "If", ["n0"], {"instance": k}, t, "If")],
              ["n1"], seed=3, meta={"frontend": "onnx"})
    m = onnx_emit.build(g)
    onnx_emit.check(m)
    if_node = next(n for n in m.graph.node if n.op_type == "If")
    assert if_node.output[0] == "n1" and all(n.name.startswith("n1_") or n.name == "n1" for n in m.graph.node[1:])
    then = next(a.g for a in if_node.attribute if a.name == "then_branch")
    assert list(then.node[0].input) == ["n0"] and then.node[0].output[0] == "n1_a"
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3)).astype(np.float32)
    y = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"in0": x})[0]
    r = np.maximum(x, 0)
    np.testing.assert_allclose(y, r if r.mean() > 0 else -r)
    corpus = load_corpus("gbft_action/corpora/onnx-all.yaml")
    assert model_operators(g, corpus) == {"Relu", "If", "ReduceMean", "Constant", "Greater", "Neg"}
    cov = Coverage.from_corpus(corpus)
    cov.operators.update(model_operators(g, corpus))
    other = Coverage.from_corpus(corpus)
    other.operators.add("Loop")
    back = Coverage.from_json(cov.union(other).to_json())  # a merge keeps both shards' operators
    assert back.summary()["operators"] == sorted({"Relu", "If", "ReduceMean", "Constant", "Greater", "Neg", "Loop"})


def test_every_pattern_prints_as_the_python_a_repro_runs():
    """An ONNX bug's repro prints the model as helper calls (reference.onnx_code): a pattern's
    If branches and loop bodies too, with their symbolic dimensions; the printed nodes are the
    emitted ones."""
    import onnx.printer
    from onnx import TensorProto, helper, numpy_helper

    patterns = [(op, k, inst) for op, spec in RECORDED.items() for k, inst in enumerate(spec.instances) if inst.body]
    assert {"If", "Loop", "Scan", "SequenceMap"} <= {op for op, _, _ in patterns}
    env = {"helper": helper, "numpy_helper": numpy_helper, "np": np, "TensorProto": TensorProto}
    for op, k, inst in patterns:
        g = Graph({"in0": inst.fed_type}, [Node("n1", op, ["in0"], {"instance": k}, inst.outputs[0], op)], ["n1"],
                  seed=3, meta={"frontend": "onnx"})
        printed = [eval(line, env) for line in model_source(g).nodes]  # noqa: S307 - our own printer's output
        assert [onnx.printer.to_text(n) for n in printed] == [onnx.printer.to_text(n) for n in onnx_emit.build(g).graph.node], inst.case


def test_an_instance_whose_reference_is_known_wrong_is_not_kept():
    """ONNX Runtime warns that its RoiAlign max mode is wrong: a key of it ("RoiAlign: wrong
    results (as test_roialign_mode_max)") judged the engine against a known-wrong reference."""
    from gbft_action.reference.onnx_records import build_records

    kept = build_records(only=frozenset({"RoiAlign"}))["ops"]["RoiAlign"]["instances"]
    assert kept and all(i["attrs"].get("mode", "avg") != "max" for i in kept)


def _toy(features: list[dict[str, object]], shape: tuple[int, ...] = (2, 3)) -> RecordedSpec:
    from gbft_action.ops.recorded import Instance

    ins = [Instance.from_json({"attrs": a, "inputs": [{"dtype": "float32", "shape": list(shape)}], "fed": 0,
                               "outputs": [{"dtype": "float32", "shape": list(shape)}], "outputs_named": 1,
                               "case": f"toy {i}"}) for i, a in enumerate(features)]
    return RecordedSpec("Toy", tuple(ins), {})


def test_a_defect_of_several_instances_is_named_by_what_they_share_and_the_right_ones_lack():
    """One ArgMin defect (select_last_index ignored) was keyed four ways, by each instance's every
    attribute; the instances swept beside it name it once."""
    spec = _toy([{"axis": 0}, {"axis": 1}, {"axis": 0, "last": 1}, {"axis": 1, "last": 1}, {"axis": 1, "keep": 0}])
    assert spec.distinguishing([2, 3], [0, 1, 4]) == "last=1"
    assert spec.distinguishing([3, 2], [0]) == "last=1"  # whatever the order found
    # Common features that a right instance holds all of set nothing apart: the first failing
    # instance's own words.
    assert spec.distinguishing([2, 4], [1]) == spec.instances[2].describe() == "axis=0, last=1"
    assert spec.distinguishing([2, 3], [3]) == spec.instances[2].describe()
    assert spec.distinguishing([2, 3], [0, 1]) == "last=1"
    # Neighbours: other instances fed alike, fewest differences first.
    assert spec.neighbours(2, 2) == [0, 3]
    other = _toy([{"axis": 0}, {"axis": 1}], shape=(4,))
    assert RecordedSpec("Toy", (spec.instances[0], other.instances[1]), {}).neighbours(0, 5) == []


def test_the_real_argmin_defect_is_keyed_by_select_last_index():
    spec = registry("onnx", 27).specs["ArgMin"]
    assert isinstance(spec, RecordedSpec)
    failing = [i for i, x in enumerate(spec.instances) if x.attrs.get("select_last_index") == 1]
    right = [i for i, x in enumerate(spec.instances) if x.attrs.get("select_last_index") != 1]
    assert spec.distinguishing(failing[:3], right[:4]) == "select_last_index=1"

