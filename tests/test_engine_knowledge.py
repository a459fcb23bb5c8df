"""Engine knowledge: what the host reads from an engine's log, and how it names its package.

The fingerprint ids below were computed from real MNN 3.6.1 bundles (tests/data/mnn_bundles:
each bundle's engine.log and graph.json, and the case's status, stage, message, operator and
signal from its result.json) by the code before the log patterns moved into
``knowledge/mnn.py``; users' issue markers and state files hold them, so they must
not change.  One changed on purpose (see ``test_a_shape_check_failure_is_not_unsupported``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import jinja2
import pytest

from gbft_action.bugs.bundle import TEMPLATES
from gbft_action.records import BundleMeta, EngineInfo, RecordError
from gbft_action.bugs.fingerprint import fingerprint, op_named_in
from gbft_action.bugs.repro import engine_needs, render_repro
from gbft_action.bugs.rootcause import classify
from gbft_action.knowledge.registry import ENGINES, knowledge_of, resolve
from gbft_action.knowledge.builds import BuildError, EngineBuild, build_of_bundle, prepare_build
from gbft_action.knowledge.base import GENERIC, CommandKnowledge, EngineKnowledge, Package
from gbft_action.knowledge.mnn import MNNKnowledge
from gbft_action.graph.ir import Graph
from gbft_action.records import Tolerance

from .conftest import TESTS, render_repro_of

BUNDLES = TESTS / "data" / "mnn_bundles"
MNN = ENGINES["mnn"]
# bundle -> its fingerprint id now; all equal to the bundle's (old) id but one.
PINNED = {
    "1e577ab4506c": "1e577ab4506c",  # unsupported ResizeArea (an error line before the Not Support one)
    "350423457d6d": "350423457d6d",  # unsupported ResizeBicubic
    "07192dd2e21a": "07192dd2e21a",  # missing-output: "Can't find output n18 from the model"
    "4dc7faf9f35e": "4dc7faf9f35e",  # error: "RuntimeError: MNN returned 0 of 1 outputs", op Reshape
    "763438732ce2": "763438732ce2",  # error, op Maximum
    "fd3a19491935": "fd3a19491935",  # SIGABRT, op found through a node name in the log
    "cca0210bed35": "cca0210bed35",  # SIGSEGV, no op
    "49d778ad5b80": "931a100efc32",  # was "unsupported Conv2DBackpropInput": a shape-check failure
}


def _case(name: str) -> tuple[dict, str, Graph]:
    d = BUNDLES / name
    return (json.loads((d / "case.json").read_text()), (d / "engine.log").read_text(),
            Graph.from_json((d / "graph.json").read_text()))


def _fp(name: str, knowledge: EngineKnowledge = MNN):
    c, log, g = _case(name)
    return fingerprint(c["status"], c["stage"], c["message"], log, g, c["op"], c["node"], c["signal"],
                       knowledge=knowledge)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_fingerprint_ids_of_real_mnn_logs_are_pinned(name):
    c, log, g = _case(name)
    assert c["key"] == name  # the id the old code gave it, as the bundle recorded
    assert _fp(name).id == PINNED[name]


@pytest.mark.parametrize("name", sorted(n for n in PINNED if _case(n)[0]["stage"] == "convert"))
def test_a_conversion_failure_reads_the_same_message_and_operator(name):
    c, log, g = _case(name)
    assert MNN.error_line(log) == c["message"]  # what the pipeline recorded from the log
    assert op_named_in(log, g, MNN) == c["op"]


def test_a_shape_check_failure_is_not_unsupported():
    """MNN lists an op under "Not Support" also when its own output-shape check failed on it:
    that op is supported and converted wrongly (a conversion error), not missing."""
    fp = _fp("49d778ad5b80")
    assert (fp.kind, fp.op, fp.code) == ("error", "Conv2DBackpropInput",
                                         "output_shape is not consistent with inferred output shape")
    assert classify("MCF", "convert", message=fp.code, kind=fp.kind) == "conversion-error"
    # An op that is really missing beside it is still the unsupported one.
    _, log, g = _case("49d778ad5b80")
    both = log.replace("Tensorflow::Conv2DBackpropInput", "Tensorflow::Conv2DBackpropInput | Tensorflow::IsNan")
    fp = fingerprint("MCF", "convert", "", both, g, knowledge=MNN)
    assert (fp.kind, fp.op) == ("unsupported", "IsNan")


def test_a_tflite_builtin_without_a_converter_is_unsupported():
    """MNN's TFLite converter asserts ("Check failed: creator ==> NOT_SUPPORTED_OP: [ ARG_MAX ]")
    where its TensorFlow one lists "Not Support": the same finding, an unsupported operator."""
    _, _, g = _case("49d778ad5b80")
    log = "[08:01:37] :337: Check failed: creator ==> NOT_SUPPORTED_OP: [ ARG_MAX ]\nConverted Failed!\n"
    fp = fingerprint("MCF", "convert", "", log, g, knowledge=MNN)
    assert (fp.kind, fp.op, fp.title) == ("unsupported", "ARG_MAX", "MCF: converter does not support ARG_MAX")
    assert fingerprint("MCF", "convert", "", "Check failed: x > 0\n", g, knowledge=MNN).kind == "check"


def test_what_the_runtime_cannot_execute_is_unsupported_not_a_missing_output_each():
    """A converted model the CPU backend has no execution for (MNN 3.6.1's real log lines from
    an ONNX campaign) returns fewer outputs: missing support, one tracking issue, where each
    op was reported alone as "a model output is missing"."""
    _, _, g = _case("49d778ad5b80")
    dropout = "Create execution error : 21\nDon't support type [Dropout]\ncode=2 in onForward, 666\n"
    fp = fingerprint("IF", "infer", "RuntimeError: MNN returned 0 of 1 outputs", dropout, g, op="Dropout", knowledge=MNN)
    assert (fp.kind, fp.op, fp.title) == ("unsupported", "Dropout", "IF: engine does not support Dropout")
    int8 = "CpuBinary: unsupported data type (bits: 8, code: 0)\nCreate execution error : 7\ncode=2 in onForward, 666\n"
    fp = fingerprint("IF", "infer", "RuntimeError: MNN returned 0 of 1 outputs", int8, g, op="Equal", knowledge=MNN)
    assert (fp.kind, fp.op) == ("unsupported", "Equal")
    assert classify("IF", "infer", message=fp.code, kind=fp.kind) == "unsupported"
    # An assertion that states a limit names what is not supported.
    sce = 'Check failed: expr->outputSize() == 1 ==> "MNN SoftmaxCrossEntropyLoss only support 1 output\\n"\n'
    fp = fingerprint("MCF", "convert", "", sce, g, knowledge=MNN)
    assert (fp.kind, fp.op) == ("unsupported", "SoftmaxCrossEntropyLoss")
    assert fingerprint("MCF", "convert", "", "Check failed: x > 0\n", g, knowledge=MNN).kind == "check"
    # "Create execution error" alone names no operator: the caller's guess may be another one.
    unary = "ERROR: Unary Op can not execute\nCreate execution error : 101\ncode=2 in onForward, 666\n"
    fp = fingerprint("IF", "infer", "RuntimeError: MNN returned 0 of 6 outputs", unary, g, op="ReverseSequence", knowledge=MNN)
    assert fp.kind == "error"
    # A shape the runtime cannot compute is no missing support: a defect of its own.
    shape = "Compute Shape Error for n0\ncode=3 in onForward, 666\n"
    fp = fingerprint("IF", "infer", "RuntimeError: MNN returned 0 of 1 outputs", shape, g, op="Pow", knowledge=MNN)
    assert fp.kind == "error" and classify("IF", "infer", message=fp.code, kind=fp.kind) == "conversion-error"


def test_the_generic_engine_reads_no_mnn_patterns():
    c, log, g = _case("1e577ab4506c")
    assert GENERIC.explain("convert", log, c["message"]) is None and GENERIC.op_named(log) == ""
    fp = _fp("1e577ab4506c", GENERIC)
    assert fp.kind == "error" and fp.code == "Can't run session because not resized"
    # "Converted Failed!" is MNN's summary line: only MNN's knowledge knows to skip it.
    assert GENERIC.error_line("Converted Failed!\n") == "Converted Failed!"
    assert MNN.error_line("Converted Failed!\n") == ""
    # Node names are the fuzzer's own, not the engine's: every engine's log is searched for them.
    assert _fp("fd3a19491935", GENERIC).id == PINNED["fd3a19491935"]


def test_the_registry_names_adapters_and_knowledge():
    assert isinstance(MNN, MNNKnowledge) and isinstance(ENGINES["command"], CommandKnowledge)
    for name, known in ENGINES.items():
        assert resolve(name) == known.adapter and ":" in known.adapter and known.name in (name, "")
        assert knowledge_of(name) is known and knowledge_of(known.adapter) is known
    # A module:Class adapter wrapping MNN (the tests' fakes) says "mnn" in its hello.
    assert knowledge_of("fake_engines:AbortOnInfer", reported="mnn") is MNN
    assert knowledge_of("fake_engines:AbortOnInfer") is GENERIC
    assert knowledge_of("elsewhere:Engine", reported="no-such-engine") is GENERIC
    with pytest.raises(ValueError, match="unknown engine"):
        resolve("no-such-engine")


def test_importing_the_registry_imports_no_adapter():
    adapters = "'MNN', '_tools', 'onnxruntime', 'gbft_action.engines.mnn', 'gbft_action.engines.command'"
    code = ("import sys, gbft_action.knowledge.registry, gbft_action.knowledge.builds\n"
            "assert 'numpy' not in sys.modules  # the registry and builds are import-free\n"
            "import gbft_action.engines.adapter, gbft_action.bugs.repro\n"
            f"bad = [m for m in ({adapters}) if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_engine_with_a_pip_package_builds_from_its_wheel(tmp_path):
    """A build folder for a pip-packaged engine must hold its wheel; the error names the package."""
    for name, known in ENGINES.items():
        if known.package.pip:
            with pytest.raises(BuildError, match=f"no {known.package.pip} wheel"):
                prepare_build(name, tmp_path, tmp_path / "venv")
    assert prepare_build("mnn", None, tmp_path / "venv") == EngineBuild("mnn")  # the installed one
    assert prepare_build("x.y:Engine", tmp_path, tmp_path / "venv").source == str(tmp_path)


def test_the_repro_names_the_package_pinned_to_the_version():
    assert engine_needs(EngineInfo("mnn", "3.6.1")) == "MNN (pip install MNN==3.6.1)"
    assert engine_needs(EngineInfo("mnn", "3.6.1; rm -rf /")) == "MNN (pip install MNN)"  # data, not code
    assert engine_needs(EngineInfo("command", "x")) == "the engine build (GBFT_ENGINE_BUILD)"
    assert engine_needs(EngineInfo("elsewhere")) == "the engine"
    assert Package(pip="onnxruntime").needs("1.20.1") == "onnxruntime (pip install onnxruntime==1.20.1)"


def test_an_engine_without_a_repro_stage_gets_a_script_that_says_so(tmp_path):
    """Before an engine has its repro template, its bundles still get a repro.py: one that
    exits 2 ("something else") and says what to fill in, never 1 ("the bug shows")."""
    data = json.loads((TESTS / "data" / "repro" / "mcf-resize-area.json").read_text())
    g = Graph.from_dict(data["graph"])
    meta = {**data["meta"], "id": "1e577ab4506c", "seed": 0, "case_index": 1, "tool_version": "0",
            "engine": {"engine": "newengine", "version": "1.0"}, "platforms": ["x86_64"],
            "tolerance": {"rtol": Tolerance.rtol, "atol": Tolerance.atol, "min_ratio": Tolerance.min_ratio}}
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), keep_trailing_newline=True)
    script = tmp_path / "repro.py"
    script.write_text(render_repro(env, g, BundleMeta.from_json(meta)))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no engine stage for newengine" in p.stdout, p.stdout + p.stderr


def test_engine_settings_reach_the_repro_and_the_replay():
    """MNN's precision mode (GBFT_MNN_PRECISION): the hello says it, the bundle keeps it, the
    repro and a replay run with it; anything else a bundle says there is ignored (data)."""
    meta = EngineInfo.of_hello({"engine": "mnn", "version": "3.6.1", "settings": {"precision": "low"}})
    assert meta.settings == {"precision": "low"} and MNN.settings(meta.settings) == {"precision": "low"}
    assert build_of_bundle(meta).env == {"GBFT_MNN_PRECISION": "low"}
    for bad in ({"precision": "Low()); import os"}, {"threads": "4, thread_num=64"}, {"cores": "4"}):
        assert MNN.settings(bad) == {}
    with pytest.raises(RecordError, match="'settings' must be an object"):
        BundleMeta.from_json({"id": "1e577ab4506c", "fingerprint": {}, "engine": {"engine": "mnn", "settings": "low"}})
    assert build_of_bundle(EngineInfo("mnn")) == EngineBuild("mnn") and GENERIC.settings(meta.settings) == {}

    low = render_repro_of({"engine": meta.to_json()})
    high = render_repro_of({"engine": {"engine": "mnn", "version": "3.6.1"}})
    assert "precision_mode=F.PrecisionMode.Low)" in low and "precision_mode=F.PrecisionMode.High)" in high
    # Besides the mode, only the bound: low precision is judged at float16's.
    drop = lambda text: [x for x in text.replace(".Low)", ".High)").splitlines() if not x.startswith("RTOL")]  # noqa: E731
    assert drop(low) == drop(high) and low != high


def test_a_converter_note_on_an_empty_optional_input_blames_no_node():
    """MNN's ONNX converter notes every optional input left out; the node it names converted
    fine.  A later failure the log names no node for is no failure of that node's operator
    (seen: "Unary Op can not execute" filed under a NegativeLogLikelihoodLoss without weights)."""
    from gbft_action.graph.ir import Node, TensorType

    t = TensorType((3, 5))
    g = Graph({"in0": t}, [Node("n8", "NegativeLogLikelihoodLoss", ["in0"], {"instance": 0}, t, "x"),
                           Node("n9", "Sin", ["n8"], {"instance": 0}, t, "x")], ["n9"], seed=1)
    log = ("[08:54:41] :149: Check it out ==> n8 has empty input, the index is 2\n"
           "Converted Success!\nERROR: Unary Op can not execute\nCreate execution error : 101\n")
    assert op_named_in(log, g, MNN) == ""
    assert op_named_in(log, g, GENERIC) == "NegativeLogLikelihoodLoss"  # the generic engine has no notes
    assert op_named_in(log.replace("Unary Op", "n9 Unary Op"), g, MNN) == "Sin"  # a node named elsewhere still counts


def test_engine_settings_are_parsed_checked_and_reach_the_repro(tmp_path):
    """--engine-settings: each name=value checked against the engine's settings (one line naming
    the bad part); threads and transformer fusion reach the adapter's environment, the bundle
    (only where not the default) and the repro's converter call and session; low precision is
    judged at float16's bound, and the repro says so."""
    assert MNN.parse_settings("precision=low, threads=4,transformer_fuse=on") == {
        "precision": "low", "threads": "4", "transformer_fuse": "on"}
    assert MNN.parse_settings("") == {}
    for bad, words in (("threads=3", "threads takes 1, 4"), ("cores=4", "not a setting of mnn"),
                       ("precision", "not a setting of mnn")):
        with pytest.raises(ValueError, match=words):
            MNN.parse_settings(bad)
    assert MNN.env_for(MNN.parse_settings("threads=4,transformer_fuse=on")) == {
        "GBFT_MNN_THREADS": "4", "GBFT_MNN_TRANSFORMER_FUSE": "on"}
    assert MNN.half_arithmetic({"precision": "low"}) and not MNN.half_arithmetic({"precision": "normal"})
    assert not GENERIC.half_arithmetic({"precision": "low"})

    def repro(settings: dict) -> str:
        return render_repro_of({"engine": {"engine": "mnn", "version": "3.6.1", "settings": settings}})

    plain, tuned = repro({"precision": "high"}), repro({"precision": "low", "threads": "4", "transformer_fuse": "on"})
    assert "thread_num" not in plain and "--transformerFuse" not in plain and "RTOL, ATOL, MIN_RATIO = 0.001," in plain
    assert "thread_num=4)" in tuned and '"--transformerFuse"])' in tuned
    assert "RTOL, ATOL, MIN_RATIO = 0.01, 0.001," in tuned and "float16's bound: the engine computes in float16" in tuned
    script = tmp_path / "repro.py"
    script.write_text(tuned)
    compile(tuned, str(script), "exec")  # the settings leave it valid Python
