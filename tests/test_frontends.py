"""Front ends (issue 14): parsing, fingerprints that name the front end, the ONNX Runtime adapter."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gbft_action.bugs.fingerprint import Fingerprint
from gbft_action.engines.adapter import ConvertError
from gbft_action.frontends import FRONTENDS, frontend_of, parse_frontend


def F(d: dict) -> Fingerprint:
    """A fingerprint from the fields a test names (the rest empty)."""
    return Fingerprint.from_json(d)

onnx = pytest.importorskip("onnx")


def test_front_ends_parse_and_bad_ones_name_the_choices():
    assert parse_frontend("ONNX") is FRONTENDS["onnx"] and parse_frontend("") is FRONTENDS["tf"]
    with pytest.raises(ValueError, match="unknown front end 'caffe' .*tf, tflite, onnx"):
        parse_frontend("caffe")
    fp = Fingerprint("compare", "DCF", "mismatch", "values", "Relu")
    assert frontend_of(fp).name == "tf" and frontend_of(replace(fp, frontend="tflite")).model == "model.tflite"


def test_a_tf_fingerprint_keeps_its_id_and_other_front_ends_get_their_own():
    fp = Fingerprint("compare", "DCF", "mismatch", "values", "Lrn", "in-degree 1, input ranks [4]")
    assert fp.id == "c8c87aeed8f9"  # as filed before front ends existed (users' issue markers)
    onnx_fp = replace(fp, frontend="onnx")
    assert onnx_fp.id != fp.id and onnx_fp.title.startswith("[onnx] DCF: wrong results from Lrn")
    assert Fingerprint.from_json(onnx_fp.to_json()) == onnx_fp and "frontend" not in fp.to_json()


def _model(path: Path) -> Path:
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("in0", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("n1", TensorProto.FLOAT, [1, 4])
    c = helper.make_tensor("c", TensorProto.FLOAT, [1, 4], [1.0, -2.0, 3.0, -4.0])
    nodes = [helper.make_node("Relu", ["in0"], ["n0"], name="n0"), helper.make_node("Add", ["n0", "c"], ["n1"], name="n1")]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [c]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, str(path))
    return path


def test_onnxruntime_adapter_runs_outputs_and_intermediates_and_rejects_a_broken_model(tmp_path):
    pytest.importorskip("onnxruntime")
    from gbft_action.engines.onnxruntime import OnnxRuntimeEngine
    eng = OnnxRuntimeEngine()
    art = eng.convert(_model(tmp_path / "model.onnx"), "onnx", tmp_path)
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)
    out = eng.infer(art, {"in0": x}, ["n1", "n0"])
    assert np.array_equal(out["n0"], [[0, 2, 0, 4]]) and np.array_equal(out["n1"], [[1, 0, 3, 0]])
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    with pytest.raises(ConvertError):
        eng.convert(tmp_path / "bad.onnx", "onnx", tmp_path)
    with pytest.raises(ConvertError, match="reads ONNX models"):
        eng.convert(tmp_path / "model.onnx", "pb", tmp_path)


def test_root_cause_keys_name_a_front_end_other_than_tf():
    from gbft_action.bugs.rootcause import RootKey, root_key
    lrn = RootKey("wrong-result", ("Lrn",), "", True)
    assert lrn.id == "rc-591413f00fb9"  # as keyed before front ends (issue markers, state)
    onnx_concat = root_key("wrong-result", F({"op": "Concat", "frontend": "onnx"}), None, minimized=False)
    tf_concat = root_key("wrong-result", F({"op": "Concat"}), None, minimized=False)
    # Unminimised, unisolated: the title says the operator was not shown wrong alone.
    assert onnx_concat.id != tf_concat.id
    assert onnx_concat.title == "[onnx] Concat: wrong results (not yet shown wrong alone)"
    assert RootKey.from_json(onnx_concat.to_json()) == onnx_concat and "frontend" not in tf_concat.to_json()


def test_an_onnx_repro_is_printed_from_the_graph_and_rejects_names_that_would_write_code():
    from gbft_action.graph.ir import Graph, Node, TensorType
    from gbft_action.reference.onnx_code import check_graph, model_source
    t = TensorType((1, 2, 3, 3))
    g = Graph({"in0": t}, [Node("n0", "Relu", ["in0"], {}, t, "Relu")], ["n0"], seed=4, meta={"frontend": "onnx"})
    src = model_source(g)
    assert src.nodes == ["helper.make_node('Relu', ['in0'], ['n0'], name='n0')"] and not src.blob
    bad = Graph({"in0": t}, [Node('n0"]; import os', "Relu", ["in0"], {}, t, "Relu")], ['n0"]; import os'], seed=4,
                meta={"frontend": "onnx"})
    with pytest.raises(ValueError, match="is not a tensor name"):
        check_graph(bad)
    # Some emitters pass a node's params on as attributes: a key must not become code.
    evil = Graph({"in0": t}, [Node("n0", "LeakyRelu", ["in0"], {'alpha=__import__("os").system("id"), beta': 0.1},
                                   t, "LeakyRelu")], ["n0"], seed=4, meta={"frontend": "onnx"})
    with pytest.raises(ValueError, match="not an identifier"):
        model_source(evil)
    nan = Graph({"in0": t}, [Node("n0", "LeakyRelu", ["in0"], {"alpha": float("nan")}, t, "LeakyRelu")], ["n0"],
                seed=4, meta={"frontend": "onnx"})
    assert model_source(nan).nodes[0].endswith('alpha=float("nan"))')  # Python reads it back
    # A generated Slice "to the start" ends at INT64_MIN: clamped, it sizes nothing (the check
    # refused it, and the campaign stopped on writing its bundle's repro).
    sl = Graph({"in0": t}, [Node("n0", "Slice", ["in0"], {"starts": [-1], "ends": [-2**63], "axes": [3], "steps": [-1]},
                                 t, "Slice")], ["n0"], seed=4, meta={"frontend": "onnx"})
    check_graph(sl)
    with pytest.raises(ValueError, match="larger than any generated model's"):
        check_graph(Graph({"in0": t}, [Node("n0", "Tile", ["in0"], {"repeats": [1, 1, 1, 2**40]}, t, "Tile")], ["n0"],
                          seed=4, meta={"frontend": "onnx"}))


def test_the_mnn_adapter_feeds_bool_and_integer_inputs(tmp_path):
    """Isolation feeds an operator the reference's own values: a bool into an And, an int64
    into a Cast.  MNN's const refused them ("numpy type does not match"): every such run failed
    and the operator was never shown wrong alone.  (In a process of its own, as in a worker:
    MNN and TensorFlow in one process abort.)"""
    from onnx import TensorProto, helper

    ins = [helper.make_tensor_value_info("b", TensorProto.BOOL, [4]), helper.make_tensor_value_info("i", TensorProto.INT64, [4])]
    outs = [helper.make_tensor_value_info("nb", TensorProto.BOOL, [4]), helper.make_tensor_value_info("fi", TensorProto.FLOAT, [4])]
    nodes = [helper.make_node("Not", ["b"], ["nb"]), helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT)]
    m = helper.make_model(helper.make_graph(nodes, "g", ins, outs), opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "model.onnx"))
    script = (
        "import json, sys, numpy as np\n"
        "from pathlib import Path\n"
        "from gbft_action.engines.mnn import MNNEngine\n"
        "d = Path(sys.argv[1]); eng = MNNEngine(); art = eng.convert(d / 'model.onnx', 'onnx', d)\n"
        "out = eng.infer(art, {'b': np.array([True, False, True, False]), 'i': np.array([1, -2, 3, 250], np.int64)}, ['nb', 'fi'])\n"
        "print(json.dumps({k: v.tolist() for k, v in out.items()}))\n")
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert [bool(v) for v in out["nb"]] == [False, True, False, True] and out["fi"] == [1.0, -2.0, 3.0, 250.0]


def test_a_replay_the_reference_cannot_judge_is_never_a_pass():
    """A bundle replayed on a lane of another front end (or cut short) gets GEN/REF or no
    result: that says nothing of the bug, and a "passes" would close its issue as fixed."""
    from gbft_action.rerun.replay import replay
    from gbft_action.graph.ir import Graph, Node, TensorType
    from gbft_action.records import Status
    from gbft_action.pipeline import CaseResult

    t = TensorType((1, 4))
    g = Graph({"in0": t}, [Node("n0", "Relu", ["in0"], {}, t, "Relu")], ["n0"], seed=1)

    class Lane:
        def __init__(self, **kw):
            self.kw = kw

        def restart_engines(self):
            pass

        def run(self, index, graph, budget, platforms=None, base=False, inputs=None):
            return CaseResult(index, graph, workdir=None, **self.kw)

    fp = Fingerprint("compare", "DCF", "mismatch", "values", "Relu")
    assert replay(Lane(status=Status.GEN, stage="reference"), g, fp).outcome == "different"
    assert replay(Lane(status=Status.DCP, aborted=True), g, fp).outcome == "different"
    assert replay(Lane(status=Status.DCP, stage="compare"), g, fp).outcome == "passes"


def test_a_replay_runs_again_when_heap_damage_crashes_a_bug_of_wrong_values():
    """MNN's BatchToSpaceND writes outside its output: its minimised bug of wrong values
    crashed one CI replay with SIGABRT (exit 4, "different") and gave wrong values in the next
    fresh process.  A memory error is run again on fresh workers; the crash is kept and said."""
    from gbft_action.rerun.replay import MEMORY_RUNS, is_flaky, replay
    from gbft_action.graph.ir import Graph, Node, TensorType
    from gbft_action.records import Status
    from gbft_action.pipeline import CaseResult

    t = TensorType((1, 4))
    g = Graph({"in0": t}, [Node("n0", "Relu", ["in0"], {}, t, "Relu")], ["n0"], seed=1)
    wrong = Fingerprint("compare", "DCF", "mismatch", "values", "Batchtospacend")
    abrt = Fingerprint("infer", "IF", "signal", "SIGABRT", "Batchtospacend")
    fpe = Fingerprint("infer", "IF", "signal", "SIGFPE", "Batchtospacend")

    class Lane:
        def __init__(self, *seen):
            self.seen, self.restarts = list(seen), 0

        def restart_engines(self):
            self.restarts += 1

        def run(self, index, graph, budget, platforms=None, base=False, inputs=None):
            fp = self.seen.pop(0)
            return CaseResult(index, graph, Status.DCP if fp is None else Status[fp.status], stage="compare",
                              fingerprint=fp, workdir=None)

    lane = Lane(abrt, wrong)
    v = replay(lane, g, wrong, fresh=False)
    assert (v.outcome, v.crashes, lane.restarts) == ("same", (abrt,), 1)  # the second run on fresh workers
    assert replay(Lane(*[abrt] * MEMORY_RUNS), g, wrong).outcome == "different"  # a crash every time
    assert replay(Lane(abrt, None), g, wrong).fingerprint == abrt  # a crash then a pass is not fixed
    assert replay(Lane(abrt, None), g, wrong).outcome == "different"
    assert replay(Lane(fpe, wrong), g, wrong).outcome == "different"  # not a memory error: not run again
    assert replay(Lane(abrt, wrong), g, abrt).outcome == "same"  # a crash bug is its crash
    assert is_flaky(Lane(abrt, wrong, wrong, wrong), g, wrong)  # found only after a crash: flaky
    assert not is_flaky(Lane(wrong, wrong, wrong), g, wrong)


def test_a_corpus_of_another_front_end_is_a_usage_error(tmp_path):
    from gbft_action.campaign import Campaign
    from gbft_action.records.config import Config
    from gbft_action.corpus import DEFAULT_CORPUS
    with pytest.raises(ValueError, match="is for the tf front end, not onnx"):
        Campaign(Config(out=tmp_path / "o", frontend="onnx", corpus=str(DEFAULT_CORPUS)))
    with pytest.raises(ValueError, match="is for the onnx front end, not tflite"):
        Campaign(Config(out=tmp_path / "o", frontend="tflite", corpus=str(FRONTENDS["onnx"].default_corpus)))
