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


def test_every_entry_realises_as_a_valid_single_operator_model(cat: C.Catalogue) -> None:
    assert 15 <= len(cat.entries) <= 40
    for e in cat.entries:
        g = C.build_graph(e)
        assert Graph.from_json(g.to_json()).to_json() == g.to_json(), e.id  # checked and canonical
        assert [n.op for n in g.nodes] == [e.op] and g.nodes[0].params == e.params, e.id
        assert [t.shape for t in g.inputs.values()] == list(e.inputs) and g.outputs == ["n0"], e.id
        assert all(d >= 1 for d in g.nodes[0].out.shape), e.id
        if e.values == "special":
            xs = C.special_inputs(e, g)
            assert {k: x.shape for k, x in xs.items()} == {k: t.shape for k, t in g.inputs.items()}, e.id
            assert any(not np.isfinite(x).all() or (x == 0).any() or (np.abs(x) < 1e-30).any() or (x > 80).any()
                       for x in xs.values()), f"{e.id}: a special entry without a special value"


def test_catalogue_covers_its_defects_with_controls(cat: C.Catalogue) -> None:
    used = {e.defect for e in cat.entries}
    assert {d.id for d in cat.defects} == used  # every defect has an entry, every entry a defect
    controls = [e for e in cat.entries if cat.defect(e.defect).control]
    assert len(controls) >= 4 and all(e.expect["status"] == "DCP" for e in controls)
    assert all(e.verified and e.behaviour for e in cat.entries)


def test_a_malformed_catalogue_is_refused(tmp_path: Path) -> None:
    good = C.CATALOGUE.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.replace("defect: lrn-alpha\n", "defect: no-such-defect\n", 1))
    with pytest.raises(ValueError, match="unknown defect"):
        C.load(bad)
    bad.write_text(good.replace("symptom: [wrong-result, precision], ops: [Lrn]", "symptom: [wrong], ops: [Lrn]"))
    with pytest.raises(ValueError, match="unknown symptoms"):
        C.load(bad)


def test_build_graph_refuses_a_model_the_spec_would_adapt() -> None:
    e = C.Entry("x", "control", "Lrn", {"depth_radius": 1, "bias": 1.0, "alpha": 1.0, "beta": 0.5}, ((4, 4),),
                {"status": "DCP"}, "", "")
    with pytest.raises(C.GenError):
        C.build_graph(e)


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
    ("a9", "DCF", "mismatch", "values", "Depthwise", "DCF: wrong results from Depthwise", "", "conv-explicit-pad"),
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
    assert [k["key"] for k in r["unmatched"]] == ["b4", "b3"]  # most cases first
    text = T.render(r, cat, Path("OUT"))
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
        _rc("rc-dw", "wrong-result", ["Depthwise"], "Depthwise: wrong results", ["a8", "a9"]),  # two defects
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
    assert by["conv-explicit-pad"]["keys"] == 1 and by["depthwise-multiplier"]["keys"] == 0  # merged away
    assert [k["key"] for k in r["controls"]] == ["rc-concat"] and r["unmatched"] == []
    assert r["matched_keys"] == 9 and r["defects_found"] == 9 and r["keys_per_defect"] == round(10 / 9, 2)
    assert r["over_merged"] == [{"key": "rc-dw", "title": "Depthwise: wrong results", "symptom": "wrong-result",
                                 "ops": ["Depthwise"], "cases": 1, "fingerprints": 2, "defect": "conv-explicit-pad",
                                 "defects": ["conv-explicit-pad", "depthwise-multiplier"]}]
    assert r["as_fingerprints"]["keys"] == len(BEFORE) and r["as_fingerprints"]["defects_found"] == 10
    text = T.render(r, cat, Path("OUT"))
    assert "over-merged root causes (fingerprints of several defects): 1" in text and "rc-dw" in text


def test_rules_first_match_wins_and_fields_combine() -> None:
    r = C.Rule(symptom=("wrong-result",), only_ops=("Resize",), text=("nearest", "bilinear"))
    assert r.matches("wrong-result", ["Resize"], "Resize: wrong results (method=nearest)")
    assert not r.matches("wrong-result", ["Resize", "Add"], "method=nearest")
    assert not r.matches("nan-inf", ["Resize"], "method=nearest")
    assert not C.Rule(mismatch=("shape",)).matches("wrong-result", ["Depthwise"], "", "")  # root causes have none
    assert C.Rule(all_ops=("A", "B")).matches("crash", ["b", "a", "c"], "")
