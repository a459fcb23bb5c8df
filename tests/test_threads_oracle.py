"""The thread-count oracle (issue 36): every model also runs at the engine's "more threads"
setting, on a worker of its own, and is judged against itself at one thread; no reference
needed.  Fake engines (tests/fake_engines.py) that are right at one thread and not at more."""

from __future__ import annotations

import pytest

from gbft_action.rerun.replay import replay_threads_env
from gbft_action.records.config import Config
from gbft_action.knowledge.registry import threads_env
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.records import Status
from gbft_action.records.bundle import BundleMeta, EngineInfo
from gbft_action.records.keys import Fingerprint

T = TensorType((1, 4, 4, 2))
GRAPH = Graph({"in0": T}, [Node("n0", "Relu", ["in0"], {}, T, "Relu"), Node("n1", "Sigmoid", ["n0"], {}, T, "Sigmoid")],
              ["n1"], seed=3)
MORE = {"GBFT_MNN_THREADS": "4"}


def _meta(fp: Fingerprint | None, message: str = "") -> BundleMeta:
    assert fp is not None
    return BundleMeta(fp.id, fp, fp.title, Status(fp.status), fp.stage, EngineInfo("mnn"), message=message)


def _run(tmp_path, engine: str, threads: dict[str, str]):  # type: ignore[no-untyped-def]
    from gbft_action.pipeline import Lane, LaneConfig

    lane = Lane(LaneConfig(engine, tmp_path, threads_env=threads), 0)
    lane.start()
    try:
        return lane.run(0, GRAPH, 120)
    finally:
        lane.stop()


@pytest.mark.slow
def test_outputs_that_change_with_the_thread_count_are_an_xtf_localised_without_a_reference(tmp_path, fake_engines_path):
    res = _run(tmp_path / "on", "fake_engines:RacyAtMoreThreads", MORE)
    assert res.status == Status.XTF and res.node == "n0" and res.localised
    assert "differs at more threads" in res.message and res.symptom == "wrong-result"
    assert res.fingerprint is not None and res.fingerprint.title == \
        "XTF: results from Relu change with the thread count (in-degree 1, input ranks [4])"
    assert res.threads is not None and res.threads.status == Status.DCF  # the reference saw it too
    off = _run(tmp_path / "off", "fake_engines:RacyAtMoreThreads", {})
    assert off.status == Status.DCP and off.threads is None  # without the oracle nothing shows


@pytest.mark.slow
def test_a_crash_only_at_more_threads_is_the_cases_and_says_so(tmp_path, fake_engines_path):
    res = _run(tmp_path, "fake_engines:SegfaultAtMoreThreads", MORE)
    assert res.status == Status.IF and res.signal == 11 and res.message.startswith("at more threads: ")
    assert res.symptom == "crash"
    # a replay runs the oracle too, or the crash would read as fixed
    assert replay_threads_env(_meta(res.fingerprint, res.message), "mnn") == MORE


def test_the_oracle_is_the_engines_and_checked_once(tmp_path):
    assert threads_env("mnn") == MORE and threads_env("onnxruntime") == {}
    assert replay_threads_env(_meta(Fingerprint("compare", "XTF", "mismatch", "values", "Relu")), "mnn") == MORE
    assert replay_threads_env(_meta(Fingerprint("compare", "DCF", "mismatch", "values", "Relu")), "mnn") == {}
    with pytest.raises(ValueError, match="engine 'onnxruntime' has no thread setting"):
        Config(tmp_path, engine="onnxruntime", frontend="onnx", threads_oracle=True).validate()
    with pytest.raises(ValueError, match="already runs at the oracle's thread count"):
        Config(tmp_path, engine_env=dict(MORE), threads_oracle=True).validate()
    assert Config(tmp_path, threads_oracle=True).validate().threads_oracle


def test_the_repro_of_a_thread_count_bug_runs_at_more_threads():
    """A bug only the oracle's run showed is run there by its repro too (the bundle's engine
    settings are the one-thread worker's)."""
    from .conftest import render_repro_of

    engine = {"engine": "mnn", "version": "3.6.1", "settings": {"precision": "high"}}
    plain = render_repro_of({"engine": engine})
    crash = render_repro_of({"engine": engine, "message": "at more threads: engine SIGSEGV"})
    assert "thread_num" not in plain and "thread_num=4)" in crash
