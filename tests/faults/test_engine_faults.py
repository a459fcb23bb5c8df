"""The fault suite (issue 15): engines that misbehave in ways a real one may, each a finding or a
clear error, never a harness that hangs, raises or runs out of memory.  Real TensorFlow and the
real MNN, wrapped by the fakes in tests/fake_engines.py."""

from __future__ import annotations

import time

import pytest

from gbft_action.records import Status
from gbft_action.pipeline import Lane, LaneConfig
from gbft_action.records.config import Timeouts

from ..conftest import relu_sigmoid

pytestmark = pytest.mark.slow


def _run(tmp_path, engine: str, n: int = 1, calls: dict | None = None, timeouts: Timeouts | None = None, **kw):
    timeouts = timeouts or Timeouts(convert=4.0, infer=4.0)
    lane = Lane(LaneConfig(f"fake_engines:{engine}", tmp_path, timeouts=timeouts, **kw), 0)
    lane.start()
    try:
        return [lane.run(i, relu_sigmoid(), 60) for i in range(n)]
    finally:
        if calls is not None:
            calls.update(lane.engs["x86_64"].calls)
        lane.stop()


def test_an_engine_writing_100_mb_to_stderr_is_judged_and_its_log_kept_short(tmp_path, fake_engines_path):
    res, = _run(tmp_path, "NoisyStderr")
    assert res.status == Status.DCP and len(res.log) <= 8000


def test_nan_everywhere_is_a_wrong_result_of_a_guarded_model(tmp_path, fake_engines_path):
    res, = _run(tmp_path, "NaNEverywhere")
    assert res.status == Status.DCF and res.mismatch == "nan" and res.direction == "finite->NaN"
    assert res.symptom == "wrong-result"  # a NaN made from finite inputs: garbage, not NaN semantics


def test_a_probe_far_slower_than_the_models_inference_is_given_up_and_the_case_judged(tmp_path, fake_engines_path):
    """A localisation probe gets a bound from the model's own inference time (2 s at least),
    not the 30-s inference limit: one such probe once held a lane, and two cores, for 28 s."""
    t0 = time.monotonic()
    res, = _run(tmp_path, "SlowProbe", timeouts=Timeouts(convert=30.0, infer=30.0), cross_reference=False)
    assert res.status == Status.DCF and res.mismatch == "nan" and not res.localised
    assert time.monotonic() - t0 < 20


def test_wrong_shapes_are_a_shape_mismatch(tmp_path, fake_engines_path):
    res, = _run(tmp_path, "WrongShapes")
    assert res.status == Status.DCF and res.mismatch == "shape"


def test_a_garbage_artifact_is_an_inference_failure(tmp_path, fake_engines_path):
    calls: dict = {}
    res, = _run(tmp_path, "GarbageArtifact", calls=calls)
    assert res.status == Status.IF and res.stage == "infer"
    # Tried again on a fresh worker, which failed the same way: the model's own failure.
    assert calls["infer"] == 2 and not res.notes


def test_a_worker_an_earlier_model_damaged_is_replaced_and_the_case_judged_on_a_fresh_one(tmp_path,
                                                                                          fake_engines_path):
    first, second, third = _run(tmp_path, "DamagedByItsFirstModel", n=3)
    assert first.status == Status.DCP and not first.notes
    for res in (second, third):  # each broke its worker's Python for the next model
        assert res.status == Status.DCP, res.message
        assert any("damage earlier models left" in n and "isinstance" in n for n in res.notes), res.notes


def test_an_engine_exiting_0_without_outputs_is_an_inference_failure(tmp_path, fake_engines_path):
    res, = _run(tmp_path, "ExitWithoutOutputs")
    assert res.status == Status.IF and res.exit_code == 0 and res.signal is None


def test_an_engine_that_hangs_when_restarted_times_the_cases_out_and_the_run_goes_on(tmp_path, fake_engines_path,
                                                                                      monkeypatch):
    monkeypatch.setenv("GBFT_FAKE_MARKER", str(tmp_path / "marker"))
    t0 = time.monotonic()
    crash, hung, again = _run(tmp_path / "w", "HangOnRestart", n=3)
    assert crash.status == Status.MCF and crash.signal == 11
    # The restart's start-up is bounded by the stage's limit, and is the case's finding.
    assert hung.status == again.status == Status.TIMEOUT and hung.stage == "convert"
    assert time.monotonic() - t0 < 60
