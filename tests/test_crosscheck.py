"""The second reference (issue 14): TensorFlow's graphs as ONNX, judged by ONNX Runtime.

  * the translation (reference.tf_as_onnx) computes what TensorFlow computes on random graphs
    of the default corpus, and the share of graphs it can translate is printed;
  * an operator without a faithful counterpart makes a graph not cross-checkable;
  * a wrong result where the two references disagree is a reference disagreement, not the
    engine's defect; where they agree the verdict stands (a Lane with a fake engine).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from gbft_action.records import Fingerprint
from gbft_action.records.case import CaseRecord
from gbft_action.policy import DEFAULT_POLICY, parse_policy
from gbft_action.bugs.rootcause import Symptom, root_key, wants_second_reference, with_second_reference
from gbft_action.corpus import load_corpus
from gbft_action.graph.generate import GenOptions, generate
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.oracle import LOOSE, references_disagree
from gbft_action.records import Status
from gbft_action.pipeline import FOUND, Lane, LaneConfig, _located
from gbft_action.reference import tf_as_onnx
from gbft_action.reference.onnx_emit import check
from gbft_action.reference.onnx_worker import OnnxReferenceHandler
from gbft_action.reference.worker import ReferenceHandler
from gbft_action.wire.arrays import pack, unpack


def F(d: dict) -> Fingerprint:
    """A fingerprint from the fields a test names (the rest empty)."""
    return Fingerprint.from_json(d)

N_GRAPHS = 80


def _one(op: str, shape: tuple[int, ...], params: dict, out: tuple[int, ...], values: str = "normal") -> Graph:
    return Graph({"x": TensorType(shape)}, [Node("n0", op, ["x"], params, TensorType(out))], ["n0"], seed=3,
                 values=values)


def _second(g: Graph, inputs: dict[str, np.ndarray]) -> dict:
    return OnnxReferenceHandler().crosscheck({"graph": g.to_json(), "inputs": pack(inputs), "outputs": list(g.outputs)})


# --------------------------------------------------------------------------- translation


def test_translation_computes_what_tensorflow_computes_on_random_graphs(tmp_path):
    corpus, tf_ref = load_corpus(), ReferenceHandler()
    checkable, blocked, compared = 0, {}, 0
    for seed in range(N_GRAPHS):
        g = generate(random.Random(seed), corpus, GenOptions(), seed)
        names = [n.id for n in g.nodes]
        model, why = tf_as_onnx.translate(g, names)
        if model is None:
            blocked[why] = blocked.get(why, 0) + 1
            continue
        checkable += 1
        check(model)  # the checker and strict shape inference agree with the IR's types
        r = tf_ref.build({"op": "build", "graph": g.to_json(), "dir": str(tmp_path / str(seed)),
                          "extra_outputs": names})
        if not r["ok"] or g.values == "special":
            continue  # on NaN/Inf the references may differ: that is what the cross-check is for
        inputs = unpack(r["inputs"])
        o = OnnxReferenceHandler().crosscheck({"graph": g.to_json(), "inputs": r["inputs"], "outputs": names})
        assert o["ok"] and o["checkable"], o
        # Node by node, ties (Argmax) excused, within the loose bound: float rounding of two
        # frameworks, amplified along a model, is not a difference of semantics.
        how, first = _located(g, {**inputs, **unpack(r["expected"])}, unpack(o["outputs"]), LOOSE)
        assert how != FOUND, f"seed {seed}: {first}"
        compared += 1
    print(f"\ncross-checkable: {checkable}/{N_GRAPHS} = {checkable / N_GRAPHS:.0%} of the default generator's "
          f"models; not: {blocked}; compared node by node: {compared}")
    assert checkable / N_GRAPHS >= 0.8
    assert compared >= N_GRAPHS // 2


def test_constants_are_tensorflow_s_bit_for_bit():
    g = _one("Conv2d", (1, 4, 4, 3), {"kh": 2, "kw": 3, "stride": 1, "dilation": 1, "padding": "VALID", "out_ch": 5},
             (1, 3, 2, 5))
    model, _ = tf_as_onnx.translate(g)
    w = next(t for t in model.graph.initializer if t.name == "n0_w")
    from onnx import numpy_helper

    from gbft_action.reference.weights import uniform, weights_rng
    tf_w = uniform(weights_rng(g.seed, "n0"), [2, 3, 3, 5])  # as tf_emit draws it: HWIO
    assert np.array_equal(numpy_helper.to_array(w), tf_w.transpose(3, 2, 0, 1))


@pytest.mark.parametrize("op,params,why", [
    ("Resize", {"h": 3, "w": 3, "method": "area"}, "Resize: method=area"),
    ("Resize", {"h": 3, "w": 3, "method": "bicubic"}, "Resize: method=bicubic"),
    ("Cropandresize", {"boxes": 1, "crop_h": 4, "crop_w": 3, "method": "bilinear"}, "Cropandresize"),
])
def test_an_operator_without_a_faithful_counterpart_is_not_cross_checkable(op, params, why):
    out = (1, 3, 3, 2) if op == "Resize" else (1, 4, 3, 2)
    g = _one(op, (1, 4, 3, 2), params, out)
    model, reason = tf_as_onnx.translate(g)
    assert model is None and reason.startswith(why)
    assert tf_as_onnx.blocker(g) == reason
    reply = _second(g, {"x": np.zeros((1, 4, 3, 2), np.float32)})
    assert reply["ok"] and not reply["checkable"] and reply["why"] == reason
    g.nodes[0].op = "NoSuchOp"
    assert tf_as_onnx.translate(g) == (None, "NoSuchOp")


# --------------------------------------------------------------------------- the decision


def test_only_wrong_results_against_the_reference_ask_the_second_one():
    assert wants_second_reference("DCF", "wrong-result") and wants_second_reference("DCF", "nan-inf")
    assert not wants_second_reference("MCF", "conversion-error")
    assert not wants_second_reference("IF", "crash")
    assert not wants_second_reference("XPF", "wrong-result")  # engine against engine
    assert not wants_second_reference("DCF", "nondeterministic")
    assert with_second_reference("nan-inf", True) == "reference-disagreement"
    assert with_second_reference("nan-inf", False) == "nan-inf"
    assert DEFAULT_POLICY["reference-disagreement"] == "summary"
    assert parse_policy("reference-disagreement=ignore") == {"reference-disagreement": "ignore"}
    key = root_key(Symptom.REFERENCE.value, F({"op": "Maxpooling"}), None, minimized=False)
    assert key.ops == ("Maxpooling",) and "not an engine defect" in key.title


def test_references_disagree_only_where_the_engine_is_wrong():
    tf = {"y": np.array([1.0, 2.0, np.nan], np.float32)}
    ort = {"y": np.array([1.0, 2.0, 5.0], np.float32)}  # differs at element 2 only
    wrong_at_0 = {"y": np.array([9.0, 2.0, np.nan], np.float32)}
    wrong_at_2 = {"y": np.array([1.0, 2.0, 5.0], np.float32)}
    assert references_disagree(tf, ort, wrong_at_0, ["y"]) == []  # the engine is wrong where both agree
    assert [d.name for d in references_disagree(tf, ort, wrong_at_2, ["y"])] == ["y"]
    noise = {"y": np.array([1.0, 2.001, np.nan], np.float32)}  # float rounding: within the loose bound
    assert references_disagree(tf, noise, {"y": np.array([1.0, 9.0, np.nan], np.float32)}, ["y"]) == []


# --------------------------------------------------------------------------- in the pipeline

NAN_IN_WINDOW = np.array([1.0, np.nan, 0.5, 0.2], np.float32).reshape(1, 2, 2, 1)  # TF's max: 1, ORT's: NaN


def test_max_pool_of_nan_is_a_known_reference_disagreement(tmp_path):
    g = _one("Maxpooling", (1, 2, 2, 1), {"kh": 2, "kw": 2, "stride": 2, "padding": "VALID"}, (1, 1, 1, 1), "special")
    tf = ReferenceHandler().build({"op": "build", "graph": g.to_json(), "dir": str(tmp_path),
                                   "inputs": pack({"x": NAN_IN_WINDOW})})
    assert unpack(tf["expected"])["n0"].item() == 1.0
    assert np.isnan(unpack(_second(g, {"x": NAN_IN_WINDOW})["outputs"])["n0"].item())


@pytest.mark.usefixtures("fake_engines_path")
def test_a_lane_blames_the_references_where_they_disagree_and_the_engine_where_they_agree(tmp_path, monkeypatch):
    graphs = {
        # special values: the fake engine answers as ONNX Runtime does, NaN, where TF says 1
        1: _one("Maxpooling", (1, 2, 2, 1), {"kh": 2, "kw": 2, "stride": 2, "padding": "VALID"}, (1, 1, 1, 1),
                "special"),
        # normal values: the fake engine is off by one; ONNX Runtime agrees with TensorFlow
        2: _one("Relu", (1, 2, 2, 3), {}, (1, 2, 2, 3)),
        # off by one too, on a graph the second reference cannot read
        3: _one("Resize", (1, 2, 2, 3), {"h": 3, "w": 3, "method": "area"}, (1, 3, 3, 3)),
    }
    gdir = tmp_path / "graphs"
    gdir.mkdir()
    for k, g in graphs.items():
        (gdir / f"{k}.json").write_text(g.to_json())
    cfg = LaneConfig("fake_engines:OnnxRuntimeSays", tmp_path / "work", engine_env={"GBFT_FAKE_GRAPHS": str(gdir)})
    lane = Lane(cfg, 0)
    try:
        lane.start()
        assert not lane.second_ref.alive()  # started by the first failing case only
        disagree = lane.run(1, graphs[1], 120.0, inputs={"x": NAN_IN_WINDOW})
        agree = lane.run(2, graphs[2], 120.0)
        blind = lane.run(3, graphs[3], 120.0)
    finally:
        lane.stop()
    assert disagree.status == Status.DCF and disagree.symptom == "reference-disagreement"
    assert disagree.crosscheck == "disagrees"
    assert np.isnan(disagree.arrays["reference-ort"]["n0"]).all()  # both references' values kept
    assert disagree.arrays["expected"]["n0"].item() == 1.0
    assert any("reference disagreement" in n for n in disagree.notes)
    assert (disagree.workdir / "model-reference.onnx").exists()
    assert agree.status == Status.DCF and agree.symptom == "wrong-result" and agree.crosscheck == "agrees"
    assert any("verdict stands" in n for n in agree.notes)
    assert blind.symptom == "wrong-result" and blind.crosscheck == "uncheckable: Resize: method=area"


def test_the_store_records_the_cross_check(tmp_path):
    from gbft_action.pipeline import CaseResult
    from gbft_action.store import ResultStore

    g = _one("Relu", (1, 2), {}, (1, 2))
    res = CaseResult(0, g, Status.DCF, stage="compare", symptom="reference-disagreement", crosscheck="disagrees")
    rec = ResultStore(tmp_path).append(res)
    assert rec.crosscheck == "disagrees" and rec.symptom == "reference-disagreement"
    line = json.loads((tmp_path / "cases.jsonl").read_text())  # plain JSON, read back the same
    assert line["crosscheck"] == "disagrees" and CaseRecord.from_json(line) == rec


def test_an_onnx_front_end_lane_has_no_second_reference(tmp_path):
    from gbft_action.frontends import FRONTENDS

    lane = Lane(LaneConfig("mnn", Path(tmp_path), frontend=FRONTENDS["onnx"]), 0)
    assert lane.second_ref is None
    assert Lane(LaneConfig("mnn", Path(tmp_path), cross_reference=False), 1).second_ref is None
