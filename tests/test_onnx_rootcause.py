"""Root causes on ONNX models (issue 24 items 1-2): ONNX Runtime gives every node's value, so a
failing ONNX model is localised to the first node that differs, and its suspect is run alone on
ONNX Runtime's values of its inputs.  Real ONNX Runtime and MNN; the engine's converter damages
one operator type on purpose (tests/fake_engines.py:OnnxRewrites), so the culprit is known."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

from .conftest import case_meta

pytest.importorskip("onnxruntime")

from gbft_action.rerun.diagnose import _key, blame  # noqa: E402
from gbft_action.frontends import FRONTENDS  # noqa: E402
from gbft_action.graph.ir import Graph, Node, TensorType  # noqa: E402
from gbft_action.records import Status  # noqa: E402
from gbft_action.pipeline import Lane, LaneConfig  # noqa: E402
from gbft_action.reference.onnx_worker import OnnxReferenceHandler  # noqa: E402
from gbft_action.wire.arrays import digest, unpack  # noqa: E402

T = TensorType((1, 3, 4, 4))


def chain(*ops: str, seed: int = 7) -> Graph:
    """in0 -> ops[0] -> ops[1] -> ...: one ONNX node per operator."""
    nodes, prev = [], "in0"
    for i, op in enumerate(ops):
        nodes.append(Node(f"n{i}", op, [prev], {}, T, op))
        prev = f"n{i}"
    return Graph({"in0": T}, nodes, [prev], seed, {"frontend": "onnx", "blocks": list(ops)})


def test_the_onnx_reference_gives_intermediates_of_the_model_it_built_last(tmp_path):
    h, g = OnnxReferenceHandler(), chain("Neg", "Exp", "Sigmoid")
    r = h.build({"op": "build", "graph": g.to_json(), "dir": str(tmp_path)})
    assert r["ok"]
    x = unpack(r["inputs"])["in0"]
    ask = {"op": "intermediates", "graph": g.to_json(), "dir": str(tmp_path), "names": ["n0", "n1", "n2"],
           "inputs": digest(unpack(r["inputs"]))}
    got = h.handle(ask)
    assert got["ok"]
    vals = unpack(got["expected"])
    assert np.allclose(vals["n0"], -x) and np.allclose(vals["n1"], np.exp(-x), rtol=1e-6)
    # Another model, or other inputs: stale (the caller builds it again), never a wrong answer.
    assert h.handle({**ask, "graph": chain("Neg", "Exp").to_json()})["kind"] == "stale"
    assert h.handle({**ask, "inputs": "0" * 40})["kind"] == "stale"


@pytest.fixture
def onnx_lane(tmp_path, fake_engines_path, monkeypatch):
    monkeypatch.setenv("GBFT_FAKE_WRONG", "Neg=Identity")
    monkeypatch.setenv("GBFT_FAKE_CRASH", "Erf")
    lane = Lane(LaneConfig("fake_engines:OnnxRewrites", tmp_path / "lane", frontend=FRONTENDS["onnx"]), 0)
    lane.start()
    try:
        yield lane
    finally:
        lane.stop()


def test_a_chain_whose_upstream_operator_is_wrong_is_blamed_on_it(onnx_lane):
    g = chain("Relu", "Neg", "Exp", "Sigmoid")
    res = onnx_lane.run(0, g, 60)
    # Localised upstream of the Sigmoid the difference reached: to the Exp right after the Neg
    # (MNN drops the Identity the Neg became, so it exposes no value for n1).
    assert res.status == Status.DCF and res.localised and res.node == "n2" and not res.harness
    res = replace(res, node="n3")  # as if localisation had named the output: isolation walks back to Neg
    b = blame(onnx_lane, res, "n3", None, until=time.monotonic() + 60)
    assert b.tried == ["n3", "n2", "n1"] and b.node == "n1" and b.symptom == "wrong-result"
    meta = case_meta(res.fingerprint, "wrong-result", platforms=(res.platform,))
    key, alone = _key(onnx_lane, meta, g, time.monotonic() + 60)
    assert key.isolated and key.ops == ("Neg",) and key.title == "[onnx] Neg: wrong results"
    # The repro shows the Neg alone, on inputs drawn as a repro draws them: it is wrong so too.
    assert alone is not None and [n.op for n in alone.nodes] == ["Neg"] and alone.outputs == ["n1"]


def test_one_operators_converter_crash_is_that_operators_crash(onnx_lane):
    g = chain("Relu", "Erf", "Sigmoid")
    res = onnx_lane.run(1, g, 60)
    assert res.status == Status.MCF and res.signal == 11
    meta = case_meta(res.fingerprint, "crash", platforms=(res.platform,))
    key, alone = _key(onnx_lane, meta, g, time.monotonic() + 60)
    assert key.isolated and key.ops == ("Erf",) and key.title == "[onnx] memory error with Erf"
    assert alone is not None and [n.op for n in alone.nodes] == ["Erf"]


def test_a_reference_that_cannot_give_intermediates_is_counted_not_silent(onnx_lane, monkeypatch):
    g = chain("Relu", "Neg", "Exp")
    real = onnx_lane.ref.call

    def lacks(msg, timeout):  # the ONNX reference before this issue: no such operation
        if msg["op"] == "intermediates":
            msg = {**msg, "op": "no-such-op"}
        return real(msg, timeout)

    monkeypatch.setattr(onnx_lane.ref, "call", lacks)
    res = onnx_lane.run(2, g, 60)
    assert res.status == Status.DCF and not res.localised
    assert res.harness.startswith("the reference cannot give intermediates: ")


def _one(op: str, params: dict, shape: tuple[int, ...], seed: int = 3) -> Graph:
    from gbft_action.ops.onnx_specs import ONNX_SPECS

    t = TensorType(shape)
    out = ONNX_SPECS[op].infer([t], params)
    return Graph({"in0": t}, [Node("n0", op, ["in0"], params, out, op)], ["n0"], seed, {"frontend": "onnx",
                                                                                      "blocks": [op]})


def test_a_key_names_only_the_parameters_its_defect_needs(tmp_path):
    """MNN 3.6.1's Less is wrong whatever the form of its second operand (bench/catalogue, ONNX:
    less-int-compare): a Less minimised with operand=row is keyed without it.  Its Conv with
    SAME_LOWER computes SAME_UPPER (conv-same-lower): that key keeps auto_pad."""
    lane = Lane(LaneConfig("mnn", tmp_path / "lane", frontend=FRONTENDS["onnx"]), 0)
    lane.start()
    try:
        keys = []
        for g in (_one("Less", {"operand": "row"}, (1, 2, 3, 4), seed=11),
                  _one("Conv", {"auto_pad": "SAME_LOWER", "bias": True, "dh": 1, "dw": 1, "group": 1,
                                "groups": "one", "kh": 2, "kw": 2, "out_ch": 2, "pads": [0, 0, 0, 0], "sh": 1,
                                "sw": 1}, (1, 2, 5, 5))):
            res = lane.run(len(keys), g, 60)
            assert res.status == Status.DCF, res.message
            meta = case_meta(res.fingerprint, res.symptom, platforms=(res.platform,))
            key, alone = _key(lane, meta, g, time.monotonic() + 60)
            assert alone is None  # the model is that operator already
            keys.append(key)
    finally:
        lane.stop()
    assert keys[0].title == "[onnx] Less: wrong results" and keys[0].isolated
    assert keys[1].title == "[onnx] Conv: wrong results (auto_pad=SAME_LOWER)" and keys[1].isolated


def test_both_builds_failing_alike_is_pre_existing_wherever_each_localised(tmp_path, fake_engines_path, monkeypatch):
    """Issue 35: a model both builds fail with the same outputs (within the tolerance: the base
    build rounds differently) is pre-existing, although the base build exposes no value for the
    Exp, so its localisation stops at the Sigmoid and its fingerprint differs; a model only the
    PR build fails is new."""
    from gbft_action.knowledge.builds import EngineBuild

    monkeypatch.setenv("GBFT_FAKE_WRONG", "Neg=Identity")
    base = EngineBuild("fake_engines:OnnxRewrites", env={"GBFT_FAKE_WRONG": "Neg=Identity", "GBFT_FAKE_HIDE": "n2",
                                                                "GBFT_FAKE_NUDGE": "1e-6"})
    lane = Lane(LaneConfig("fake_engines:OnnxRewrites", tmp_path / "lane", frontend=FRONTENDS["onnx"], base=base), 0)
    lane.start()
    try:
        res = lane.run(0, chain("Relu", "Neg", "Exp", "Sigmoid"), 90)
        assert res.status == res.base.status == Status.DCF
        assert (res.fingerprint.op, res.base.fingerprint.op) == ("Exp", "Sigmoid")  # localised apart
        assert res.verdict == "pre-existing"
        assert res.error is not None and res.error > 1e-3  # how far from the reference, recorded
    finally:
        lane.stop()
    # The same model where the base build computes the Neg right: new.
    base = EngineBuild("fake_engines:OnnxRewrites", env={"GBFT_FAKE_WRONG": "", "GBFT_FAKE_HIDE": "n2"})
    lane = Lane(LaneConfig("fake_engines:OnnxRewrites", tmp_path / "lane2", frontend=FRONTENDS["onnx"], base=base), 0)
    lane.start()
    try:
        res = lane.run(1, chain("Relu", "Neg", "Exp", "Sigmoid"), 90)
        assert res.status == Status.DCF and res.base.status == Status.DCP and res.verdict == "new"
        assert res.base.error is not None and res.base.error < 1e-3 < res.error
    finally:
        lane.stop()


def test_a_defect_of_one_converter_unit_is_one_key_whichever_operator_showed_it():
    """MNN lowers the five composite reductions in one transform: their axes-input defect was
    keyed four times (ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSumExp)."""
    from gbft_action.bugs.rootcause import in_unit
    from gbft_action.knowledge.mnn import MNNKnowledge
    from gbft_action.records.keys import RootKey

    keys = [in_unit(RootKey("wrong-result", (op,), "wrong shape", True, frontend="onnx"), MNNKnowledge().unit_of)
            for op in ("ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp")]
    assert len({k.id for k in keys}) == 1
    assert keys[0].title == ("[onnx] ReduceL1 / ReduceL2 / ReduceLogSum / ReduceLogSumExp / ReduceSumSquare: "
                             "wrong results (wrong shape)")
    assert RootKey.from_json(keys[1].to_json()) == keys[1] and keys[1].ops == ("ReduceL2",)  # the one that showed it
    # Another detail, another defect; NaN semantics are each operator's; a TensorFlow Sum has no unit.
    assert in_unit(RootKey("wrong-result", ("ReduceL1",), "", True, frontend="onnx"), MNNKnowledge().unit_of).id != keys[0].id
    nan = RootKey("nan-inf", ("ReduceL1",), "NaN->Inf", True, frontend="onnx")
    assert in_unit(nan, MNNKnowledge().unit_of) == nan
    after = RootKey("wrong-result", ("ReduceL2",), "", False, ("Relu", "ReduceL2"), "onnx")  # a pattern's
    assert in_unit(after, MNNKnowledge().unit_of) == after
    plain = RootKey("wrong-result", ("Conv",), "", True, frontend="onnx")
    assert in_unit(plain, MNNKnowledge().unit_of) == plain and "unit" not in plain.to_json()  # stored as before
