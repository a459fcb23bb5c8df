from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
VENV_BIN = Path(sys.executable).parent


@pytest.fixture
def fake_engines_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let engine workers import tests/fake_engines.py by ``fake_engines:Class``."""
    old = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS), old) if p))


def relu_sigmoid(seed: int = 3):  # type: ignore[no-untyped-def]
    """A two-node model any engine runs: Relu -> Sigmoid on (1, 4, 4, 2)."""
    from gbft_action.graph.ir import Graph, Node, TensorType

    t = TensorType((1, 4, 4, 2))
    return Graph({"in0": t}, [Node("n0", "Relu", ["in0"], {}, t, "Relu"), Node("n1", "Sigmoid", ["n0"], {}, t, "Sigmoid")],
                 ["n1"], seed=seed)


@pytest.fixture
def nan_lane(tmp_path: Path, fake_engines_path: None):  # type: ignore[no-untyped-def]
    """A started lane whose engine answers NaN everywhere (a wrong result on every model);
    no second reference."""
    from gbft_action.pipeline import Lane, LaneConfig

    lane = Lane(LaneConfig("fake_engines:NaNEverywhere", tmp_path / "nan-lane", cross_reference=False), 0)
    lane.start()
    try:
        yield lane
    finally:
        lane.stop()


def gbft_cmd() -> list[str]:
    exe = VENV_BIN / "gbft"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "gbft_action.cli"]


def tensorflow_in_process() -> None:
    """Before a test loads TensorFlow into the pytest process: MNN must not be there (the two
    abort together).  A failure, not a skip: a test that imports MNN here (rather than in a
    worker) would otherwise silently turn every later TensorFlow test into a skip."""
    if any(m == "MNN" or m.startswith(("MNN.", "_mnncengine")) for m in sys.modules):
        pytest.fail("MNN was imported into the pytest process by an earlier test; engines run in workers")
    from gbft_action.reference.tfenv import set_tf_env

    set_tf_env()  # the reference worker's kernels (a no-op once TensorFlow is loaded)



def case_meta(fp, symptom: str = "", direction: str = "", platforms: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    """The bundle record of a case (what a bundle of its failure would hold), for tests that
    call the diagnosis or replay on a lane's result."""
    from gbft_action.records import BundleMeta, EngineInfo, Status, Symptom

    return BundleMeta(fp.id, fp, fp.title, Status(fp.status), fp.stage, EngineInfo(),
                      symptom=Symptom(symptom) if symptom else None, direction=direction, platforms=tuple(platforms))


def render_repro_of(meta_changes: dict, case: str = "mcf-resize-area") -> str:
    """The repro.py of a recorded case (tests/data/repro) with ``meta_changes`` over its bundle
    record (an engine with settings, a message...)."""
    import json

    import jinja2

    from gbft_action.bugs.bundle import TEMPLATES
    from gbft_action.bugs.repro import render_repro
    from gbft_action.graph.ir import Graph
    from gbft_action.records import Tolerance
    from gbft_action.records import BundleMeta

    data = json.loads((TESTS / "data" / "repro" / f"{case}.json").read_text())
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), keep_trailing_newline=True)
    base = {**data["meta"], "id": "1e577ab4506c", "seed": 0, "case_index": 1, "tool_version": "0",
            "platforms": ["x86_64"],
            "tolerance": {"rtol": Tolerance.rtol, "atol": Tolerance.atol, "min_ratio": Tolerance.min_ratio}}
    return render_repro(env, Graph.from_dict(data["graph"]), BundleMeta.from_json({**base, **meta_changes}))
