"""Repro scripts as a maintainer meets them: copied from the rendered issue and run as pasted.

Four MNN 3.6.1 bugs (tests/data/repro: wrong results from Lrn, a NaN Softmax gives where
TensorFlow gives 0, a converter that does not support ResizeArea, all minimised; and a
SIGSEGV in a 33-operator model that no smaller model reproduces, 10 of 10 runs here)
go through the renderer; the repro code block of each issue must exit
1 on the pip MNN and 0 on an engine that agrees with TensorFlow (tests/data/fake_mnn, a
fake MNN that runs the frozen graph with TensorFlow itself).
"""

from __future__ import annotations

import json
import shutil
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gbft_action.bugs.repro import STATUS_TEXT
from gbft_action.graph.ir import Graph
from gbft_action.records import Tolerance
from gbft_action.records import BundleMeta
from gbft_action.report.render import Renderer, RunContext

from .conftest import TESTS

pytestmark = pytest.mark.slow
CASES = sorted(p.stem for p in (TESTS / "data" / "repro").glob("*.json"))


def bundle(tmp: Path, name: str, folder: str = "repro") -> tuple[Path, dict]:
    data = json.loads((TESTS / "data" / folder / f"{name}.json").read_text())
    g = Graph.from_dict(data["graph"])
    d = tmp / "bugs" / data["meta"]["fingerprint"]["id"]
    d.mkdir(parents=True)
    meta = {**data["meta"], "id": data["meta"]["fingerprint"]["id"], "seed": 0, "case_index": 1, "tool_version": "0",
            "engine": {"engine": "mnn", "version": "3.6.1", "machine": "x86_64"}, "platforms": ["x86_64"],
            "tolerance": {"rtol": Tolerance.rtol, "atol": Tolerance.atol, "min_ratio": Tolerance.min_ratio},
            "minimized": True, "minimized_size": len(g.nodes), "original_size": len(g.nodes)}
    for f in ("graph.json", "minimized.json"):
        (d / f).write_text(g.to_json())
    (d / "meta.json").write_text(json.dumps(meta))
    return d, meta


def pasted_repro(body: str) -> str:
    """The python block of the issue, as a maintainer copies it."""
    start = body.index("python\n", body.index("<details><summary>repro.py")) + len("python\n")
    fence = body[:start].rstrip("python\n").rsplit("\n", 1)[-1]
    return body[start: body.index("\n" + fence + "\n", start)] + "\n"


@pytest.mark.parametrize("name", CASES)
def test_the_repro_in_the_issue_runs_as_pasted(tmp_path, name):
    d, meta = bundle(tmp_path, name)
    _, body = Renderer().issue(d, BundleMeta.from_json(meta), RunContext())
    script = tmp_path / "repro.py"
    script.write_text(pasted_repro(body))
    lines = len(script.read_text().splitlines())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    (tmp_path / "tmp").mkdir()
    real = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**env, "TMPDIR": str(tmp_path / "tmp")})
    assert real.returncode == 1, f"{name} ({lines} lines) on MNN:\n{real.stdout[-2000:]}{real.stderr[-2000:]}"
    assert not list((tmp_path / "tmp").iterdir())  # the model files went with the check, crash or not
    # The last line says what the bug is in words, not only its status code.
    assert real.stdout.splitlines()[-1] == f"{meta['status']} ({STATUS_TEXT[meta['status']]}): the bug shows"
    fake = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**env, "PYTHONPATH": str(TESTS / "data" / "fake_mnn")})
    assert fake.returncode == 0, f"{name} on an engine that agrees:\n{fake.stdout[-2000:]}{fake.stderr[-2000:]}"
    ops = len(Graph.from_json((d / "minimized.json").read_text()).nodes)
    # The model: a line each; 78 besides (5 run the engine again after a memory error, 1 names
    # two shapes, 2 feed integer inputs as MNN takes them, 1 turns TensorFlow's oneDNN on).
    assert lines <= 78 + max(0, ops - 3), f"{name}: {lines} lines for {ops} operators"


@pytest.mark.parametrize("name", ["dcf-lrn", "mcf-resize-area"])
def test_the_engine_only_repro_needs_no_tensorflow(tmp_path, name):
    """repro_engine.py carries the frozen model and TensorFlow's results: it runs where only the
    engine is installed (here: TensorFlow made unimportable) and says the same as repro.py."""
    import jinja2

    from gbft_action.bugs.bundle import TEMPLATES
    from gbft_action.bugs.repro import ReproData, render_repro

    d, meta = bundle(tmp_path, name)
    g = Graph.from_json((d / "minimized.json").read_text())
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), keep_trailing_newline=True)
    tf_repro = tmp_path / "tf_repro.py"
    tf_repro.write_text(render_repro(env, g, BundleMeta.from_json(meta)))
    # TensorFlow's part of repro.py, run once here, gives the model and data to embed.
    make = ("import importlib.util, sys, numpy as np; s = importlib.util.spec_from_file_location('r', sys.argv[1]); "
            "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); i, e = m.reference(sys.argv[2]); "
            "np.savez(sys.argv[2] + '/inputs.npz', **i); np.savez(sys.argv[2] + '/expected.npz', **e)")
    subprocess.run([sys.executable, "-c", make, str(tf_repro), str(d)], check=True, timeout=300, capture_output=True)
    data = ReproData.from_files(d / "model.pb", d / "inputs.npz", d / "expected.npz")
    assert data is not None and data.small()
    script = tmp_path / "repro_engine.py"
    script.write_text(render_repro(env, g, BundleMeta.from_json(meta), data))
    blocker = tmp_path / "no_tf"
    (blocker / "tensorflow").mkdir(parents=True)
    (blocker / "tensorflow" / "__init__.py").write_text("raise ImportError('no TensorFlow here')\n")
    env_vars = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**env_vars, "PYTHONPATH": str(blocker)})
    assert real.returncode == 1, real.stdout[-2000:] + real.stderr[-2000:]
    assert "import tensorflow" not in script.read_text()


def test_an_onnx_bugs_repro_prints_the_model_and_runs_as_pasted(tmp_path):
    """An ONNX front end's bug (MNN 3.6.1's AveragePool ignores count_include_pad with an end
    pad): the repro builds the model with onnx.helper, a line per node with its attributes,
    runs ONNX Runtime (optimisations off) as the reference and MNN's ONNX converter."""
    d, meta = bundle(tmp_path, "dcf-averagepool", "repro_onnx")
    _, body = Renderer().issue(d, BundleMeta.from_json(meta), RunContext())
    script = tmp_path / "repro.py"
    script.write_text(pasted_repro(body))
    text = script.read_text()
    assert "helper.make_node('AveragePool', ['in0'], ['n0'], name='n0', ceil_mode=1, count_include_pad=1" in text
    assert "import tensorflow" not in text and '"-f", "ONNX"' in text
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert real.returncode == 1, real.stdout[-2000:] + real.stderr[-2000:]
    fake = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**env, "PYTHONPATH": str(TESTS / "data" / "fake_mnn")})
    assert fake.returncode == 0, fake.stdout[-2000:] + fake.stderr[-2000:]


def test_a_pattern_repro_prints_its_branches_and_says_which_shape_each_side_has(tmp_path):
    """MNN 3.6.1's MatMul by a vector squeezes dim 1 ([1, 2, 1] where ONNX gives [1, 1, 2]): the
    pasted repro exits 1 and names both shapes, not "2 of 2 elements differ" with the engine's
    shape.  An If pattern's branches (they read the outer scope) print as helper.make_graph
    calls that ONNX Runtime and MNN's converter take: that repro runs to "the bug does not show"."""
    from gbft_action.graph.ir import Node, TensorType
    from gbft_action.ops.registry import registry
    RECORDED = registry("onnx").specs

    def repro(name: str, op: str, params: dict, t: TensorType, out: TensorType) -> tuple[str, subprocess.CompletedProcess]:
        """The pasted repro of a one-node bundle (its bug a wrong shape) and how it ran on the pip MNN."""
        g = Graph({"in0": t}, [Node("n0", op, ["in0"], params, out, op)], ["n0"], seed=5,
                  meta={"frontend": "onnx", "minimized": True})
        fp = {"code": "shape", "frontend": "onnx", "id": name, "kind": "mismatch", "op": op, "stage": "compare",
              "status": "DCF", "structure": "in-degree 1"}
        meta = {"title": f"[onnx] DCF: wrong results from {op}", "status": "DCF", "stage": "compare",
                "symptom": "wrong-result", "message": f"n0 ({op}) diverges first", "op": op, "node": "n0",
                "fingerprint": fp, "id": name, "seed": 0, "case_index": 1, "tool_version": "0",
                "engine": {"engine": "mnn", "version": "3.6.1", "machine": "x86_64"}, "platforms": ["x86_64"],
                "tolerance": {"rtol": Tolerance.rtol, "atol": Tolerance.atol, "min_ratio": Tolerance.min_ratio},
                "minimized": True, "minimized_size": 1, "original_size": 1}
        d = tmp_path / "bugs" / name
        d.mkdir(parents=True)
        for f in ("graph.json", "minimized.json"):
            (d / f).write_text(g.to_json())
        (d / "meta.json").write_text(json.dumps(meta))
        _, body = Renderer().issue(d, BundleMeta.from_json(meta), RunContext())
        script = tmp_path / f"{name}.py"
        script.write_text(pasted_repro(body))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        return script.read_text(), subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                                  env=env, timeout=300)

    # An operator shown wrong alone is fed the reference's values, integers too: MNN's const
    # refused an int32 array ("numpy type does not match") and the repro ended in exit 2.
    k = next(i for i, inst in enumerate(RECORDED["ReduceL1"].instances) if inst.fed_type.dtype == "int32")
    inst = RECORDED["ReduceL1"].instances[k]
    _, run = repro("abcdef012345", "ReduceL1", {"instance": k}, inst.fed_type, inst.outputs[0])
    assert run.returncode == 0 and "the bug does not show" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    _, run = repro("0123456789ab", "MatMul", {"form": "vector", "n": 2}, TensorType((1, 1, 2, 1)), TensorType((1, 1, 2)))
    assert run.returncode == 1 and "n0: shape [1, 2, 1], expected [1, 1, 2]" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    b = TensorType((2, 3, 4, 5))
    k = next(i for i, inst in enumerate(RECORDED["If"].instances) if inst.case == "pattern relu-or-neg")
    text, run = repro("ba9876543210", "If", {"instance": k}, b, b)
    assert "then_branch=helper.make_graph([helper.make_node('Relu', ['in0'], ['n0_a']" in text
    assert run.returncode == 0 and "n0: 0 of 120 elements differ" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


def test_an_onnxruntime_repro_runs_the_optimised_session_and_says_when_the_bug_does_not_show(tmp_path):
    """The ONNX Runtime engine's repro stage: the same model with ORT's optimisations on.  ORT
    agrees with itself here, so the script must say "does not show" (exit 0), never 1."""
    d, meta = bundle(tmp_path, "dcf-averagepool", "repro_onnx")
    meta["engine"] = {"engine": "onnxruntime", "version": "1.32.0", "settings": {"level": "extended"}}
    (d / "meta.json").write_text(json.dumps(meta))
    _, body = Renderer().issue(d, BundleMeta.from_json(meta), RunContext())
    script = tmp_path / "repro.py"
    script.write_text(pasted_repro(body))
    assert "ORT_ENABLE_EXTENDED" in script.read_text() and "pip install onnxruntime==1.32.0" in script.read_text()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0 and "the bug does not show" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


def _run_pasted(tmp_path: Path, d: Path, meta: dict, mode: str) -> subprocess.CompletedProcess:
    """The issue's repro, as pasted, on the fake MNN in FAKE_MNN_MODE ``mode``."""
    _, body = Renderer().issue(d, BundleMeta.from_json(meta), RunContext())
    script = tmp_path / "repro.py"
    script.write_text(pasted_repro(body))
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
           "PYTHONPATH": str(TESTS / "data" / "fake_mnn"), "FAKE_MNN_MODE": mode,
           "FAKE_MNN_ONCE": str(tmp_path / "aborted-once")}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)


def test_a_missing_output_is_the_bug_showing_not_a_key_error(tmp_path):
    """A conversion that loses an output's name shows at inference: the repro of such a bug
    exits 1 with the outputs it lacks named, where it used to end in a KeyError (exit 2)."""
    d, meta = bundle(tmp_path, "dcf-averagepool", "repro_onnx")
    meta = {**meta, "status": "IF", "fingerprint": {**meta["fingerprint"], "status": "IF", "kind": "missing-output"}}
    (d / "meta.json").write_text(json.dumps(meta))
    run = _run_pasted(tmp_path, d, meta, "no-outputs")
    assert run.returncode == 1 and "the engine gave no value for n0" in run.stdout, run.stdout + run.stderr[-2000:]
    assert "KeyError" not in run.stderr


def test_a_memory_error_shows_by_any_signal_of_its_class(tmp_path):
    """The SIGSEGV bundle killed by SIGABRT this time (heap damage glibc noticed first): the
    bug shows; one out-of-bounds write kills by either from run to run."""
    d, meta = bundle(tmp_path, "crash-segv")
    assert meta["fingerprint"]["code"].startswith("SIGSEGV")
    run = _run_pasted(tmp_path, d, meta, "abort")
    assert "signal 6" in run.stdout and run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]


@pytest.mark.parametrize("symptom, code", [("nondeterministic", 1), ("wrong-result", 2)])
def test_garbage_read_shows_as_a_memory_signal_in_a_fresh_process(tmp_path, symptom, code):
    """A wrong result read from uninitialised memory (root cause: nondeterministic) is an
    out-of-bounds read: garbage in the campaign's warm worker, often a SIGSEGV in the repro's
    fresh process (a Slice of s3g's, every time).  The kill shows the bug; for a plain wrong
    result it is something else (exit 2)."""
    d, meta = bundle(tmp_path, "dcf-lrn")
    meta = {**meta, "root_cause": {"symptom": symptom, "ops": ["Lrn"], "detail": "", "key": "rc-0"}}
    (d / "meta.json").write_text(json.dumps(meta))
    run = _run_pasted(tmp_path, d, meta, "abort")
    assert "signal 6" in run.stdout and run.returncode == code, run.stdout[-2000:] + run.stderr[-2000:]


def test_a_crash_once_is_run_again_for_a_bug_that_is_no_crash(tmp_path):
    """MNN's BatchToSpaceND damages its heap: a wrong-values repro was killed by SIGABRT in one
    fresh process and gave its wrong values in the next.  The repro runs the engine again after
    a memory error, says so, and judges the run that finished (here the fake MNN agrees: 0)."""
    d, meta = bundle(tmp_path, "dcf-lrn")
    run = _run_pasted(tmp_path, d, meta, "abort-once")
    assert "the engine crashed (signal 6)" in run.stdout and "running it again" in run.stdout
    assert run.returncode == 0 and "the bug does not show" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


def test_an_operator_shown_wrong_alone_is_what_the_issue_and_its_repro_show(tmp_path):
    """The minimiser can stop at thirty operators; diagnosis then ran the blamed one alone, on
    inputs drawn as a repro draws them, and it failed so (rerun.diagnose.shown_alone).  The
    issue shows that operator alone: a maintainer reads one node, not the model it came from
    (here a Relu -> Neg model that MNN gets right: a repro of it would exit 0)."""
    from gbft_action.bugs.bundle import ALONE_FILE, BugBook
    from gbft_action.graph.ir import Node, TensorType

    d, meta = bundle(tmp_path, "dcf-averagepool", "repro_onnx")
    pool = Graph.from_json((d / "minimized.json").read_text())
    t = TensorType((1, 3, 4, 4))
    bigger = Graph({"in0": t}, [Node("n0", "Relu", ["in0"], {}, t, "Relu"), Node("n1", "Neg", ["n0"], {}, t, "Neg")],
                   ["n1"], 5, {"frontend": "onnx", "blocks": ["Relu", "Neg"]})
    (d / "minimized.json").write_text(bigger.to_json())
    BugBook(tmp_path).add_alone(meta["id"], pool)
    meta = json.loads((d / "meta.json").read_text())
    assert (d / ALONE_FILE).exists() and meta["alone"] == "AveragePool"
    _, body = Renderer().issue(d, BundleMeta.from_json(meta), RunContext())
    assert "### The operator alone" in body and "the repro runs `AveragePool` alone" in body
    script = tmp_path / "repro.py"
    script.write_text(pasted_repro(body))
    assert "'AveragePool'" in script.read_text() and "'Relu'" not in script.read_text()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert real.returncode == 1, real.stdout[-2000:] + real.stderr[-2000:]
    assert (d / "repro.py").read_text() == script.read_text()  # the bundle's repro is the same script


def test_a_pasted_repro_caps_the_engines_memory_as_the_campaign_does(tmp_path):
    """A runaway engine (a OneHot repro grew MNN to 19 GB) meets the campaign's cap in the
    repro too: an MNN that asks for 8 GiB gets a MemoryError, the reader's machine keeps its memory."""
    d, meta = bundle(tmp_path, "dcf-averagepool", "repro_onnx")
    _, body = Renderer().issue(d, BundleMeta.from_json(meta), RunContext())
    script = tmp_path / "repro.py"
    script.write_text(pasted_repro(body))
    assert "MEMORY, MEM_MB = " in script.read_text() and ", 4096  #" in script.read_text()
    hungry = tmp_path / "hungry"
    shutil.copytree(TESTS / "data" / "fake_mnn", hungry)
    with (hungry / "MNN" / "__init__.py").open("a") as f:
        f.write("\n_HELD = bytearray(8 << 30)  # an engine that reserves 8 GiB\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={**env, "PYTHONPATH": str(hungry)})
    assert "MemoryError" in run.stderr and "the engine failed" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


def test_a_repro_under_a_lower_memory_limit_of_the_readers_keeps_it(tmp_path):
    """A hard limit below the repro's cap (prlimit --as=2G:2G) is kept, not an error the
    verdict would read as the bug."""
    d, meta = bundle(tmp_path, "dcf-averagepool", "repro_onnx")
    _, body = Renderer().issue(d, BundleMeta.from_json(meta), RunContext())
    script = tmp_path / "repro.py"
    script.write_text(pasted_repro(body))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    limit = "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); " \
            "sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')"
    run = subprocess.run([sys.executable, "-c", limit, str(script)], capture_output=True, text=True, timeout=300,
                         env={**env, "PYTHONPATH": str(TESTS / "data" / "fake_mnn")})
    assert run.returncode == 0 and "not allowed" not in run.stderr, run.stdout[-2000:] + run.stderr[-2000:]
