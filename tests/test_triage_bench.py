"""The triage benchmark's own parts (bench/catalogue.py, bench/triage.py): no engine runs here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from gbft_action.graph.ir import Graph

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import catalogue as C  # noqa: E402
import triage as T  # noqa: E402


@pytest.fixture(scope="module")
def cat() -> C.Catalogue:
    return C.load()


# --------------------------------------------------------------------------- the catalogue


def test_every_entry_realises_as_a_valid_model(cat: C.Catalogue) -> None:
    assert 15 <= len(cat.entries) <= 80
    for e in cat.entries:
        g = C.build_graph(e)
        assert Graph.from_json(g.to_json()).to_json() == g.to_json(), e.id  # checked and canonical
        if not e.nodes:  # one operator
            assert [n.op for n in g.nodes] == [e.op] and g.nodes[0].params == e.params, e.id
            assert g.outputs == ["n0"], e.id
        else:  # a pattern: its nodes in order, n0, n1, ...; its outputs as named, else the unread nodes
            assert [(n.id, n.op, n.params) for n in g.nodes] == [(f"n{i}", op, p) for i, (op, _, p) in enumerate(e.nodes)]
            assert g.outputs == (list(e.outputs) or [g.nodes[-1].id]) and e.op == e.nodes[-1][0], e.id
        assert [t.shape for t in g.inputs.values()] == list(e.inputs), e.id
        assert all(d >= 1 for n in g.nodes for d in n.out.shape), e.id
        if e.values in ("special", "feed"):
            xs = C.special_inputs(e, g)
            assert {k: x.shape for k, x in xs.items()} == {k: t.shape for k, t in g.inputs.items()}, e.id
        if e.values == "special":
            assert any(not np.isfinite(x).all() or (x == 0).any() or (np.abs(x) < 1e-30).any() or (x > 80).any()
                       for x in xs.values()), f"{e.id}: a special entry without a special value"


def test_catalogue_covers_its_defects_with_controls(cat: C.Catalogue) -> None:
    used = {e.defect for e in cat.entries}
    # every defect and artefact has an entry, every entry a defect or an artefact
    assert {d.id for d in (*cat.defects, *cat.artefacts)} == used
    controls = [e for e in cat.entries if cat.defect(e.defect).control]
    assert len(controls) >= 4 and all(e.expect["status"] == "DCP" for e in controls)
    assert all(e.verified and e.behaviour for e in cat.entries)
    assert cat.artefacts and all(a.artefact and not a.real and a.harness and a.rules for a in cat.artefacts)
    assert all(d.real for d in cat.defects if not d.control)
    order = [d.id for d in cat.matching_order()]  # real defects, then artefacts, then the controls
    assert order[-1] == "control" and order.index(cat.artefacts[0].id) > order.index("lrn-alpha")


def test_a_malformed_catalogue_is_refused(tmp_path: Path) -> None:
    good = C.CATALOGUE.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.replace("defect: lrn-alpha\n", "defect: no-such-defect\n", 1))
    with pytest.raises(ValueError, match="unknown defect"):
        C.load(bad)
    bad.write_text(good.replace("symptom: [wrong-result, precision], ops: [Lrn]", "symptom: [wrong], ops: [Lrn]"))
    with pytest.raises(ValueError, match="unknown symptoms"):
        C.load(bad)
    bad.write_text(good.replace("ops: [Lrn]}", "ops: [Lrn], model_opz: [Lrn]}", 1))
    with pytest.raises(ValueError, match="unknown rule fields"):
        C.load(bad)
    start = good.index("  - id: tf-topk-nan-order")
    end = good.index("    match:", start)
    cut = good[start:end]
    bad.write_text(good.replace(cut, cut[:cut.index("    harness:")]))
    with pytest.raises(ValueError, match="harness"):
        C.load(bad)


def test_build_graph_refuses_a_model_the_spec_would_adapt() -> None:
    e = C.Entry("x", "control", "Lrn", {"depth_radius": 1, "bias": 1.0, "alpha": 1.0, "beta": 0.5}, ((4, 4),),
                {"status": "DCP"}, "", "")
    with pytest.raises(C.GenError):
        C.build_graph(e)


def test_a_pattern_entry_builds_its_nodes_and_outputs() -> None:
    e = C.Entry("p", "control", "Concat", {"axis": 1}, ((2, 2), (2,)), {"status": "DCP"}, "", "", values="feed",
                feed={"in0": [1.0, 2.0, 3.0, 4.0], "in1": [5.0, 6.0]},
                nodes=(("Pad", ("in1",), {"pads": [[1, 1]]}), ("Reshape", ("n0",), {"rank": 2, "shape": [2, 2]}),
                       ("Concat", ("in0", "n1"), {"axis": 1})), outputs=("n2", "n1"))
    g = C.build_graph(e)
    assert [n.op for n in g.nodes] == ["Pad", "Reshape", "Concat"] and g.outputs == ["n2", "n1"]
    assert g.node("n2").out.shape == (2, 4) and g.values == "normal"  # feed: finite inputs, a normal graph
    xs = C.special_inputs(e, g)
    assert xs["in1"].tolist() == [5.0, 6.0] and xs["in0"].shape == (2, 2)
    bad = C.Entry("q", "control", "Concat", {}, ((2, 2),), {"status": "DCP"}, "", "",
                  nodes=(("Concat", ("in0", "n7"), {"axis": 0}),))
    with pytest.raises(C.GenError, match="unknown inputs"):
        C.build_graph(bad)


def test_differs_reads_the_arrays_whatever_the_status() -> None:
    e = {"n0": np.array([1.0, 2.0, np.nan], np.float32)}
    assert C.differs({"expected": e, "actual": {"n0": np.array([1.0, 2.0, np.nan], np.float32)}}) is False
    assert C.differs({"expected": e, "actual": {"n0": np.array([1.0, 0.0, np.nan], np.float32)}}) is True
    assert C.differs({"expected": e, "actual": {"n0": np.zeros(2, np.float32)}}) is True  # another shape
    assert C.differs({"expected": e}) is None
    excused = C.Outcome("DCP", differs=True)  # the oracle's "ties or undefined behaviour"
    assert C.agrees({"status": ["DCP", "DCF"], "differs": True}, excused) == (True, "")
    assert not C.agrees({"status": "DCP", "differs": False}, excused)[0]
    assert excused.brief() == "DCP+differs"


def test_expectations_allow_listed_outcomes_only() -> None:
    crash = {"status": ["IF", "DCF"], "signal": ["SIGABRT", "SIGSEGV"], "mismatch": ["values", "nan"],
             "some_status": "IF"}
    segv = C.Outcome("IF", kind="signal", signal="SIGSEGV")
    garbage = C.Outcome("DCF", mismatch="nan", kind="mismatch", op="Batchtospacend")
    assert C.agrees_all(crash, [segv, garbage]) == []
    assert C.agrees_all(crash, [garbage]) == ["no run of 1 gave IF"]
    assert C.agrees_all(crash, [C.Outcome("IF", kind="signal", signal="SIGBUS")])
    assert C.agrees({"status": "DCF", "mismatch": "values", "op": "Lrn"},
                    C.Outcome("DCF", mismatch="shape", op="Lrn")) == (False, "mismatch shape (recorded values)")
    assert C.agrees({"status": "DCP"}, C.Outcome("DCP"))[0]


# --------------------------------------------------------------------------- matching keys to defects


def _failure(key: str, status: str, op: str, title: str, message: str = "", count: int = 1) -> dict:
    return {"key": key, "fingerprint": key, "status": status, "op": op, "title": title, "message": message,
            "count": count, "platforms": ["x86_64"]}


def _fp(key: str, status: str, kind: str, code: str, op: str) -> dict:
    return {"id": key, "status": status, "kind": kind, "code": code, "op": op, "stage": "compare"}


BEFORE = [  # key, status, kind, code, op, title, message, the defect it must map to
    ("a1", "DCF", "mismatch", "values", "Lrn", "DCF: wrong results from Lrn", "", "lrn-alpha"),
    ("a2", "DCF", "mismatch", "nan", "Relu", "DCF: wrong results from Relu", "", "relu-nan"),
    ("a3", "XPF", "mismatch", "nan", "Sigmoid", "XPF: results from Sigmoid differ", "", "exp-clamp"),
    ("a4", "MCF", "unsupported", "", "ResizeArea", "MCF: converter does not support ResizeArea", "", "resize-area-unsupported"),
    ("a5", "IF", "missing-output", "", "", "IF: a model output is missing from the converted model", "", "missing-output"),
    ("a6", "IF", "error", "RuntimeError: MNN returned N of N outputs", "Reshape",
     "IF: infer error (Reshape): RuntimeError: MNN returned N of N outputs", "", "missing-output"),
    ("a7", "IF", "signal", "SIGABRT", "Batchtospacend", "IF: SIGABRT during infer (Batchtospacend)", "", "batchtospace-heap"),
    ("a8", "DCF", "mismatch", "shape", "Depthwise", "DCF: wrong results from Depthwise", "", "depthwise-multiplier"),
    # a Depthwise value mismatch without a model names no defect (SAME or EXPLICIT padding decides): NaN here
    ("a9", "DCF", "mismatch", "nan", "Depthwise", "DCF: wrong results from Depthwise", "", "conv-inf-clamp"),
    ("b1", "DCF", "mismatch", "values", "Resize", "DCF: wrong results from Resize", "", "resize-nearest-coords"),
    ("b2", "DCF", "mismatch", "values", "Concat", "DCF: wrong results from Concat", "", "control"),
    ("b3", "DCF", "mismatch", "values", "Pad", "DCF: wrong results from Pad", "", ""),
    ("b4", "IF", "signal", "SIGSEGV", "TopKV2", "IF: SIGSEGV during infer (TopKV2)", "", ""),
    ("b5", "DCF", "mismatch", "inf", "Spacetobatchnd", "DCF: wrong results from Spacetobatchnd", "", "spacetobatch-geometry"),
]


def test_fingerprint_symptoms_from_status_and_kind() -> None:
    sym = T.fingerprint_symptom
    assert sym("DCF", "mismatch", "values") == sym("XBF", "mismatch", "shape") == "wrong-result"
    assert sym("XPF", "mismatch", "nan") == sym("DCF", "mismatch", "inf") == "nan-inf"
    assert sym("IF", "signal", "SIGSEGV") == sym("MCF", "signal", "SIGABRT") == "crash"
    assert sym("MCF", "unsupported", "") == "unsupported"
    assert sym("IF", "missing-output", "") == sym("MCF", "check", "x") == "conversion-error"
    assert sym("IF", "error", "RuntimeError: MNN returned N of N outputs") == "conversion-error"
    assert sym("IF", "error", "TypeError: bad argument") == "api-error"
    assert sym("TIMEOUT", "timeout", "") == "timeout"


def test_before_format_each_fingerprint_is_a_key(cat: C.Catalogue) -> None:
    summary = {"models": 100, "failures": [_failure(k, s, op, t, m, count=i + 1)
                                           for i, (k, s, _, _, op, t, m, _) in enumerate(BEFORE)]}
    fps = {k: _fp(k, s, kind, code, op) for k, s, kind, code, op, *_ in BEFORE}
    r = T.analyse(summary, fps, cat)
    got = {k["key"]: k.get("defect", "") for k in r["unmatched"] + r["controls"]}
    want = {k: d for k, *_, d in BEFORE}
    for d in r["per_defect"]:
        for title in d["titles"]:
            assert any(t == title and want[k] == d["defect"] for k, _, _, _, _, t, _, _ in BEFORE), (d, title)
    assert got == {"b2": "control", "b3": "", "b4": ""}
    assert r["format"] == "fingerprints" and r["fingerprints"] == r["reported_keys"] == len(BEFORE)
    assert r["matched_keys"] == 11 and r["control_keys"] == 1 and r["unmatched_keys"] == 2
    found = {d["defect"] for d in r["per_defect"] if d["keys"] and not d["control"]}
    assert r["defects_found"] == len(found) == 10
    assert r["keys_per_defect"] == round(14 / 10, 2) and r["real_share"] == round(11 / 14, 3)
    # The unit: each NaN/Inf key (Relu, Sigmoid, SpaceToBatchND) is one; the other 8
    # matched keys are 7 defects (two missing-output keys).
    assert r["issue_units"] == 10 and r["keys_per_issue_unit"] == round(14 / 10, 2)
    assert [k["key"] for k in r["unmatched"]] == ["b4", "b3"]  # most cases first
    text = T.render(r, Path("OUT"))
    assert "reported keys: 14" in text and "11 / 14 = 78.6%" in text and "b4" in text
    json.dumps(r)


def test_fingerprint_details_come_from_bundles_then_cases(tmp_path: Path) -> None:
    (tmp_path / "bugs" / "a1").mkdir(parents=True)
    (tmp_path / "bugs" / "a1" / "meta.json").write_text(json.dumps({"fingerprint": _fp("a1", "DCF", "mismatch", "nan", "Relu")}))
    recs = [{"index": 0, "status": "DCP"},
            {"index": 1, "fingerprint": _fp("a1", "DCF", "mismatch", "values", "Relu"),
             "others": [{"fingerprint": _fp("x9", "XPF", "mismatch", "inf", "Exp")}]}]
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    fps = T.fingerprint_details(tmp_path)
    assert fps["a1"]["code"] == "nan" and fps["x9"]["status"] == "XPF"


def _rc(key: str, symptom: str, ops: list[str], title: str, fps: list[str], policy: str = "report",
        detail: str = "", count: int = 1) -> dict:
    return {"key": key, "symptom": symptom, "policy": policy, "title": title, "ops": ops, "detail": detail,
            "fingerprints": fps, "canonical": fps[0], "count": count, "platforms": ["x86_64"], "verdict": "",
            "minimized": True, "isolated": True}


def test_root_cause_format_keys_are_the_reported_root_causes(cat: C.Catalogue) -> None:
    failures = [_failure(k, s, op, t, m) for k, s, _, _, op, t, m, _ in BEFORE]
    fps = {k: _fp(k, s, kind, code, op) for k, s, kind, code, op, *_ in BEFORE}
    summary = {"models": 100, "failures": failures, "root_causes": [
        _rc("rc-lrn", "wrong-result", ["Lrn"], "Lrn: wrong results", ["a1"], count=5),
        _rc("rc-relu", "nan-inf", ["Relu"], "Relu maps NaN to a finite number", ["a2"], detail="NaN->finite"),
        _rc("rc-sig", "nan-inf", ["Sigmoid"], "Sigmoid maps NaN to a finite number", ["a3"], detail="NaN->finite"),
        _rc("rc-area", "unsupported", ["ResizeArea"], "converter does not support ResizeArea", ["a4"]),
        _rc("rc-out", "conversion-error", [], "conversion error with an unidentified operator: a model output is "
            "missing", ["a5", "a6"], detail="a model output is missing"),
        _rc("rc-bts", "crash", ["Cast", "Batchtospacend", "Sub"], "SIGSEGV with the pattern Cast -> "
            "Batchtospacend -> Sub", ["a7"], detail="SIGSEGV"),
        _rc("rc-dw", "nan-inf", ["Depthwise"], "Depthwise maps NaN to a finite number", ["a8", "a9"]),  # two defects
        _rc("rc-resize", "wrong-result", ["Resize"], "Resize: wrong results (method=nearest)", ["b1"],
            detail="method=nearest"),
        _rc("rc-concat", "wrong-result", ["Concat"], "Concat: wrong results", ["b2"]),
        _rc("rc-pad", "precision", ["Pad"], "Pad: imprecise results", ["b3"], policy="summary"),
        _rc("rc-topk", "tie", ["TopKV2"], "TopKV2: ties", ["b4"], policy="ignore"),
        _rc("rc-stb", "nondeterministic", ["Spacetobatchnd"], "Spacetobatchnd: output depends on uninitialised "
            "memory", ["b5"]),
    ]}
    r = T.analyse(summary, fps, cat)
    assert r["format"] == "root-causes" and r["fingerprints"] == len(BEFORE)
    assert r["root_causes"] == 12 and r["root_causes_by_policy"] == {"ignore": 1, "report": 10, "summary": 1}
    assert r["reported_keys"] == 10
    by = {d["defect"]: d for d in r["per_defect"]}
    assert by["missing-output"]["keys"] == 1 and by["missing-output"]["fingerprints"] == 2
    assert by["exp-clamp"]["keys"] == by["batchtospace-heap"]["keys"] == by["resize-nearest-coords"]["keys"] == 1
    assert by["spacetobatch-geometry"]["keys"] == 1 and by["resize-area-unsupported"]["keys"] == 1
    assert by["conv-inf-clamp"]["keys"] == 1 and by["depthwise-multiplier"]["keys"] == 0  # merged away
    assert [k["key"] for k in r["controls"]] == ["rc-concat"] and r["unmatched"] == []
    assert r["matched_keys"] == 9 and r["defects_found"] == 9 and r["keys_per_defect"] == round(10 / 9, 2)
    assert r["issue_units"] == 9  # Relu's and Sigmoid's NaN are two units, as two defects here
    assert r["over_merged"] == [{"key": "rc-dw", "title": "Depthwise maps NaN to a finite number", "symptom": "nan-inf",
                                 "ops": ["Depthwise"], "cases": 1, "fingerprints": 2, "defect": "conv-inf-clamp",
                                 "defects": ["conv-inf-clamp", "depthwise-multiplier"]}]
    assert r["as_fingerprints"]["keys"] == len(BEFORE) and r["as_fingerprints"]["defects_found"] == 10
    text = T.render(r, Path("OUT"))
    assert "over-merged root causes (fingerprints of several defects): 1" in text and "rc-dw" in text


def test_model_rules_read_the_minimised_model(cat: C.Catalogue) -> None:
    bts = C.Model.of({"nodes": [{"op": "Pad", "params": {"pads": [[5, 0], [0, 0], [0, 0], [0, 0]]}},
                                {"op": "Batchtospacend", "params": {"bh": 2, "bw": 2, "crops": [[0, 0], [12, 0]]}},
                                {"op": "Add", "params": {}}]})
    assert bts.ops() == {"pad", "batchtospacend", "add"}
    assert '"crops": [[0, 0], [12, 0]]' in bts.text() and "crops" not in bts.text({"add"})
    r = C.Rule(symptom=("wrong-result",), model_ops=("Batchtospacend",))
    assert r.matches("wrong-result", ["Add"], "", model=bts) and not r.matches("wrong-result", ["Add"], "")
    assert C.Rule(all_model_ops=("Pad", "Add")).matches("crash", [], "", model=bts)
    assert not C.Rule(all_model_ops=("Pad", "Concat")).matches("crash", [], "", model=bts)
    assert C.Rule(model_text=('"bh": 2',)).matches("crash", [], "", model=bts)
    assert not C.Rule(op_text=('"bh": 2',)).matches("crash", ["Add"], "", model=bts)  # only the key's operators
    assert C.Rule(op_text=('"bh": 2',)).matches("crash", ["Batchtospacend"], "", model=bts)

    def key(title: str, symptom: str, ops: list[str], detail: str = "", model: C.Model | None = None) -> T.Key:
        return T.Key("k", title, symptom, ops, f"{title} {detail}", model=model or C.Model())

    # a key blamed on the operator after a BatchToSpaceND: the defect by its model, a control without one
    assert T.match(cat, key("Add: wrong results", "wrong-result", ["Add"], model=bts)).id == "batchtospace-geometry"
    assert T.match(cat, key("Add: wrong results", "wrong-result", ["Add"])).id == "control"
    # an artefact comes before the controls: a denormal divided by zero is TensorFlow's flush
    assert T.match(cat, key("Realdiv gives -Inf for NaN", "nan-inf", ["Realdiv"], "NaN->-Inf")).id == "tf-denormal-flush"
    assert T.match(cat, key("Realdiv gives NaN", "nan-inf", ["Realdiv"], "finite->NaN")).id == "control"
    assert T.match(cat, key("Ceil differs from TensorFlow on NaN/Inf inputs", "nan-inf", ["Ceil"],
                            "special-input")).id == "tf-denormal-flush"
    assert T.match(cat, key("Conv2d gives a finite number where the result is +Inf", "nan-inf", ["Conv2d"],
                            "Inf->finite")).id == "conv-inf-clamp"


def test_artefacts_are_counted_apart_and_not_real(cat: C.Catalogue, tmp_path: Path) -> None:
    failures = [_failure(k, "DCF", op, t) for k, op, t in
                [("f1", "Lrn", "DCF: wrong results from Lrn"), ("f2", "TopKV2", "DCF: wrong results from TopKV2"),
                 ("f3", "Add", "DCF: wrong results from Add")]]
    fps = {"f1": _fp("f1", "DCF", "mismatch", "values", "Lrn"), "f2": _fp("f2", "DCF", "mismatch", "nan", "TopKV2"),
           "f3": _fp("f3", "DCF", "mismatch", "values", "Add")}
    summary = {"models": 10, "failures": failures, "root_causes": [
        _rc("rc-lrn", "wrong-result", ["Lrn"], "Lrn: wrong results", ["f1"]),
        _rc("rc-topk", "nan-inf", ["TopKV2"], "TopKV2 maps NaN to a finite number", ["f2"], detail="NaN->finite"),
        _rc("rc-add", "wrong-result", ["Add"], "Add: wrong results", ["f3"])]}
    models = {"f3": {"nodes": [{"op": "Batchtospacend", "params": {"crops": [[1, 0], [0, 0]]}}, {"op": "Add", "params": {}}]}}
    r = T.analyse(summary, fps, cat, models)
    assert r["reported_keys"] == 3 and r["artefact_keys"] == 1 and r["matched_keys"] == 2 and r["control_keys"] == 0
    assert [k["key"] for k in r["artefacts"]] == ["rc-topk"] and r["artefacts"][0]["defect"] == "tf-topk-nan-order"
    assert r["real_share"] == round(2 / 3, 3) and r["defects_found"] == 2
    by = {d["defect"]: d for d in r["per_defect"]}
    assert by["tf-topk-nan-order"]["artefact"] and by["batchtospace-geometry"]["keys"] == 1
    text = T.render(r, Path("OUT"))
    assert "known artefacts (not real): 1" in text and "NOT real defects" in text and "<- tf-topk-nan-order" in text
    # bundle models: only those the minimiser finished
    for bid, done in (("f3", True), ("f4", False)):
        (tmp_path / "bugs" / bid).mkdir(parents=True)
        (tmp_path / "bugs" / bid / "meta.json").write_text(json.dumps({"minimized": done}))
        (tmp_path / "bugs" / bid / "minimized.json").write_text(json.dumps(models["f3"]))
    assert set(T.bundle_models(tmp_path)) == {"f3"}


def test_rules_first_match_wins_and_fields_combine() -> None:
    r = C.Rule(symptom=("wrong-result",), only_ops=("Resize",), text=("nearest", "bilinear"))
    assert r.matches("wrong-result", ["Resize"], "Resize: wrong results (method=nearest)")
    assert not r.matches("wrong-result", ["Resize", "Add"], "method=nearest")
    assert not r.matches("nan-inf", ["Resize"], "method=nearest")
    assert not C.Rule(mismatch=("shape",)).matches("wrong-result", ["Depthwise"], "", "")  # root causes have none
    assert C.Rule(all_ops=("A", "B")).matches("crash", ["b", "a", "c"], "")


def test_a_parameter_the_key_names_decides_over_its_models_other_parameters() -> None:
    """A GRU key "linear_before_reset=False" whose minimised model also runs in reverse: the
    diagnosis proved the direction unneeded (put back to forward, still wrong), so the key is the
    linear_before_reset defect.  A key's generic words ("output is missing") do not outrank a
    specific defect its model matches."""
    onnx = C.load(BENCH / "catalogue" / "mnn-3.6.1-onnx.yaml")
    model = C.Model.of({"nodes": [{"op": "GRU", "params": {"direction": "reverse", "linear_before_reset": False}}]})
    lbr = T.Key("k", "GRU: wrong results (linear_before_reset=False)", "wrong-result", ["GRU"],
                "GRU: wrong results (linear_before_reset=False) linear_before_reset=False", model=model, frontend="onnx")
    assert T.match(onnx, lbr).id == "gru-linear-before-reset"
    rev = T.Key("k", "GRU: wrong results (direction=reverse)", "wrong-result", ["GRU"],
                "GRU: wrong results (direction=reverse)", model=model, frontend="onnx")
    assert T.match(onnx, rev).id == "gru-reverse"
    missing = T.Key("k", "conversion error with GRU: a model output is missing", "conversion-error", ["GRU"],
                    "conversion error with GRU: a model output is missing", model=model, frontend="onnx")
    assert T.match(onnx, missing).id == "gru-bidirectional-seq1"
