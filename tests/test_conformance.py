"""One conformance suite that every registered engine passes (as Hypothesis runs its
provider conformance tests on every backend).

Parametrised over the registry (``knowledge.registry.ENGINES``): an engine added there is
tested here with no change to this file, unless it needs configuration (``SETUP``: settings,
the front end its converter reads) or its package is not installed (skipped, saying which).  Each engine runs through the real
pipeline, a ``Lane`` with TensorFlow's worker and the engine's, and its adapter wrapped
by ``tests/conformance_engine.py``, which crashes, hangs or lies on chosen cases:

  a known-good model passes (DCP);
  a crash in conversion (SIGSEGV) is an MCF with its signal, one in inference (SIGABRT)
  an IF with its signal, and the next model runs on a fresh worker;
  a hang is a TIMEOUT of its stage, within the stage limit;
  wrong outputs are a DCF;
  no state leaks between cases: a model run twice in one worker, and again after another
  model, gives identical outputs;
  the worker's hello names the engine and a non-empty version.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Iterator

import numpy as np
import pytest

from gbft_action.knowledge.registry import ENGINES, resolve
from gbft_action.frontends import DEFAULT_FRONTEND, FRONTENDS, Frontend
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.records import Status
from gbft_action.pipeline import CaseResult, Lane, LaneConfig
from gbft_action.records.config import Timeouts
from gbft_action.workers.supervisor import Worker, WorkerSpec

from .conftest import TESTS

pytestmark = pytest.mark.slow  # starts TensorFlow and engine workers

HANG_LIMIT = 3.0  # the inference stage limit: the hang must end within it


@dataclass(frozen=True)
class Setup:
    """What an engine needs to run here beyond being installed."""

    env: dict[str, str] = field(default_factory=dict)  # for its adapter
    requires: tuple[str, ...] = ()  # distributions it needs besides its own package
    frontend: Frontend = DEFAULT_FRONTEND  # the model format its converter reads


_SCRIPTS = TESTS / "data" / "command_engine"  # a converter and a runner around the installed MNN
SETUP: dict[str, Setup] = {
    "command": Setup({"GBFT_CONVERTER_COMMAND": f"{sys.executable} {{build}}/convert.py {{model}} {{artifact}}",
                      "GBFT_RUNNER_COMMAND": f"{sys.executable} {{build}}/run.py {{artifact}} {{inputs}} "
                                             "{outputs_dir} {outputs}",
                      "GBFT_ENGINE_BUILD": str(_SCRIPTS), "GBFT_ENGINE_VERSION": "test-scripts"}, ("MNN",)),
    "onnxruntime": Setup(frontend=FRONTENDS["onnx"]),
}

T = TensorType((1, 4, 4, 3))


def _model(frontend: Frontend, seed: int, *ops: tuple[str, list[str]]) -> Graph:
    nodes = [Node(f"n{k}", op, ins, {}, T, op) for k, (op, ins) in enumerate(ops)]
    meta = {} if frontend is DEFAULT_FRONTEND else {"frontend": frontend.name}
    return Graph({"in0": T, "in1": T}, nodes, [nodes[-1].id], seed=seed, meta=meta)


def _good(frontend: Frontend) -> tuple[Graph, Graph]:
    """Two small models every engine should get right (elementwise ops every front end has,
    float32, one output)."""
    return (_model(frontend, 11, ("Add", ["in0", "in1"]), ("Relu", ["n0"]), ("Tanh", ["n1"])),
            _model(frontend, 12, ("Mul", ["in0", "in1"]), ("Sigmoid", ["n0"]), ("Sub", ["n1", "in0"])))


@dataclass
class Conformer:
    """One engine's lane and its two good models."""

    name: str
    lane: Lane
    a: Graph
    b: Graph


def _missing(name: str) -> str:
    """Why ``name`` cannot run here ("" when it can): a distribution it needs is not installed."""
    own = ENGINES[name].package.pip
    for dist in (*([own] if own else []), *SETUP.get(name, Setup()).requires):
        try:
            version(dist)
        except PackageNotFoundError:
            return f"engine {name!r} needs {dist}, which is not installed"
    return ""


def _env(name: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
    return {**SETUP.get(name, Setup()).env, "GBFT_CONFORMANCE_ADAPTER": resolve(name), "PYTHONPATH": path}


@pytest.fixture(scope="module", params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Conformer]:
    name = request.param
    if why := _missing(name):
        pytest.skip(why)
    fe = SETUP.get(name, Setup()).frontend
    cfg = LaneConfig("conformance_engine:Conformance", tmp_path_factory.mktemp(f"conf-{name}"),
                     timeouts=Timeouts(reference=60.0, convert=20.0, infer=HANG_LIMIT), engine_env=_env(name),
                     frontend=fe)
    lane = Lane(cfg, 0)
    try:
        lane.start()
        yield Conformer(name, lane, *_good(fe))
    finally:
        lane.stop()


def _run(lane: Lane, index: int, g: Graph) -> CaseResult:
    return lane.run(index, g, budget_left=60.0, base=False)


def _passes(lane: Lane, index: int, g: Graph) -> CaseResult:
    res = _run(lane, index, g)
    assert res.status == Status.DCP, f"{res.status} at {res.stage}: {res.message}\n{res.log[-1500:]}"
    return res


def test_hello_names_the_engine_and_its_version(engine, tmp_path):
    name, lane = engine.name, engine.lane
    # The registered adapter itself, unwrapped: what a campaign's hello would say.
    w = Worker(WorkerSpec("engine", resolve(name), env=SETUP.get(name, Setup()).env), tmp_path / "w.log")
    try:
        hello = w.start()
    finally:
        w.stop()
    assert hello["engine"] == name and str(hello["version"]).strip()
    assert lane.hellos()[lane.primary].engine == name  # the wrapper passes it on
    assert lane.knowledge is ENGINES[name]  # so its log is read with its knowledge


def test_a_known_good_model_passes(engine):
    lane = engine.lane
    res = _passes(lane, 1, engine.a)
    assert res.fingerprint is None and set(res.arrays["actual"]) == set(engine.a.outputs)


def test_no_state_leaks_between_cases(engine):
    lane = engine.lane
    pid = lane.eng.proc.pid if lane.eng.proc else None
    first = _passes(lane, 2, engine.a)
    again = _passes(lane, 3, engine.a)  # the same model twice in one worker
    _passes(lane, 4, engine.b)
    after = _passes(lane, 5, engine.a)  # and after another model
    assert lane.eng.proc is not None and lane.eng.proc.pid == pid, "the worker was replaced: not one worker"
    for other in (again, after):
        for k in ("inputs", "actual"):
            a, b = first.arrays[k], other.arrays[k]
            assert a.keys() == b.keys() and all(np.array_equal(a[x], b[x]) for x in a), k


def test_a_crash_in_conversion_is_an_mcf_with_its_signal(engine):
    lane = engine.lane
    res = _run(lane, 901, engine.a)
    assert (res.status, res.stage, res.signal) == (Status.MCF, "convert", signal.SIGSEGV), res.message
    assert res.fingerprint is not None and res.fingerprint.code.startswith("SIGSEGV")
    _passes(lane, 6, engine.a)  # the worker is replaced


def test_a_crash_in_inference_is_an_if_with_its_signal(engine):
    lane = engine.lane
    res = _run(lane, 902, engine.a)
    assert (res.status, res.stage, res.signal) == (Status.IF, "infer", signal.SIGABRT), res.message
    assert res.fingerprint is not None and res.fingerprint.code.startswith("SIGABRT")
    _passes(lane, 7, engine.b)


def test_a_hang_is_a_timeout_of_its_stage(engine):
    lane = engine.lane
    t0 = time.monotonic()
    res = _run(lane, 903, engine.a)
    assert (res.status, res.stage) == (Status.TIMEOUT, "infer"), res.message
    assert res.timings["infer"] < HANG_LIMIT + 2.0 and time.monotonic() - t0 < 30
    assert res.fingerprint is not None and res.fingerprint.kind == "timeout"
    _passes(lane, 8, engine.a)


def test_wrong_outputs_are_a_dcf(engine):
    lane = engine.lane
    res = _run(lane, 904, engine.b)
    assert (res.status, res.stage) == (Status.DCF, "compare"), f"{res.status}: {res.message}"
    assert res.fingerprint is not None and res.fingerprint.kind == "mismatch"
    assert res.fingerprint.op in {n.op for n in engine.b.nodes}  # localised onto an operator of the model


def test_an_engine_whose_package_is_missing_is_skipped_saying_so(monkeypatch):
    from gbft_action.knowledge.base import EngineKnowledge, Package

    class Absent(EngineKnowledge):
        package = Package(pip="gbft-no-such-engine")

    monkeypatch.setitem(ENGINES, "absent", Absent("absent.adapter:Engine"))
    assert _missing("absent") == "engine 'absent' needs gbft-no-such-engine, which is not installed"
    assert _missing("mnn") == "" and resolve("absent") == "absent.adapter:Engine"
