"""The engine under test cannot take the harness down (real MNN, real workers)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from gbft_action.campaign import Campaign

from gbft_action.records.config import Config
from gbft_action.records.config import Timeouts
from gbft_action.workers.supervisor import Worker, WorkerClosed, WorkerSpec

pytestmark = pytest.mark.slow


def run(out: Path, engine: str, n: int, **kw) -> tuple[dict, list[dict]]:
    cfg = Config(out=out, engine=engine, budget=120, max_models=n, seed=21, blocks=(2, 6), jobs=1,
                     minimize_share=0.0, **kw)
    summary = Campaign(cfg).run().to_json()
    recs = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    return summary, recs


def test_segfault_in_converter_is_a_finding(tmp_path, fake_engines_path):
    summary, recs = run(tmp_path / "o", "fake_engines:SegfaultOnConvert", 24)
    assert summary["models"] == 24 == len(recs)
    crashed = [r for r in recs if r.get("signal") == 11]
    assert crashed, "no model hit the fake converter's segfault"
    assert all(r["status"] == "MCF" and r["stage"] == "convert" for r in crashed)
    assert all("SIGSEGV" in r["message"] for r in crashed)
    # The campaign went on: models after a crash were still judged by the real engine.
    after = [r for r in recs if r["index"] > crashed[0]["index"] and "signal" not in r]
    assert any(r["status"] in ("DCP", "DCF") for r in after)
    assert sum(summary["by_status"].values()) == summary["models"]


def test_abort_in_inference_keeps_log_tail(tmp_path, fake_engines_path):
    _, recs = run(tmp_path / "o", "fake_engines:AbortOnInfer", 18)
    aborted = [r for r in recs if r.get("signal") == 6]
    assert aborted and all(r["status"] == "IF" and r["stage"] == "infer" for r in aborted)
    log = (tmp_path / "o" / aborted[0]["case_dir"] / "engine.log").read_text()
    assert "about to abort" in log


def test_hang_is_a_timeout_and_the_worker_is_replaced(tmp_path, fake_engines_path):
    # 5 s: well above a real inference on a loaded 2-core machine, well below the 30 s default.
    summary, recs = run(tmp_path / "o", "fake_engines:HangOnInfer", 12, timeouts=Timeouts(infer=5.0))
    hung = [r for r in recs if r["status"] == "TIMEOUT"]
    assert hung and all(r["stage"] == "infer" for r in hung)
    assert all(r["timings"]["infer"] < 10 for r in hung)
    assert any(r["status"] == "DCP" for r in recs if r["index"] > hung[0]["index"])
    assert summary["models"] == 12


def test_runaway_memory_is_a_finding(tmp_path, fake_engines_path):
    _, recs = run(tmp_path / "o", "fake_engines:RunawayMemory", 12, engine_mem_mb=3072)
    hogs = [r for r in recs if "MemoryError" in r["message"]]
    assert hogs and all(r["status"] == "IF" for r in hogs)


# -- a cancelled run closes workers from another thread, at any moment -----------------------

def _slow_worker(tmp_path: Path, delay: float) -> Worker:
    """A reference worker whose process sleeps ``delay`` s before it starts serving."""
    spec = WorkerSpec("reference", prefix=("sh", "-c", f'sleep {delay}; exec "$@"', "sh"))
    return Worker(spec, tmp_path / "w.log")


def _close_after(w: Worker, seconds: float) -> threading.Thread:
    t = threading.Thread(target=lambda: (time.sleep(seconds), w.close()))
    t.start()
    return t


def test_close_while_starting_raises_worker_closed_and_leaves_no_process(tmp_path):
    w = _slow_worker(tmp_path, 5)
    t0 = time.monotonic()
    t = _close_after(w, 0.5)
    with pytest.raises(WorkerClosed):
        w.start()
    t.join()
    assert time.monotonic() - t0 < 3 and w.proc is None and not w.alive()
    with pytest.raises(WorkerClosed):  # and it never starts again
        w.start()


def test_close_while_calling_ends_the_call_as_a_crash(tmp_path, fake_engines_path):
    w = Worker(WorkerSpec("engine", "fake_engines:HangOnConvert"), tmp_path / "w.log")
    w.start()
    pid = w.proc.pid
    t = _close_after(w, 0.5)
    t0 = time.monotonic()
    res = w.call({"op": "convert", "model": str(tmp_path / "m.pb"), "format": "pb", "dir": str(tmp_path)}, 60)
    t.join()
    assert res.kind == "crash" and time.monotonic() - t0 < 3
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert w.call({"op": "hello"}, 5).kind == "crash"  # later calls fail at once, nothing restarts
    assert w.proc is None


def test_an_engine_writing_to_a_relative_path_writes_into_the_work_folder(tmp_path, monkeypatch, fake_engines_path):
    from gbft_action.graph.ir import Graph, Node, TensorType
    from gbft_action.records import Status
    from gbft_action.pipeline import Lane, LaneConfig

    monkeypatch.chdir(tmp_path)
    t = TensorType((1, 2, 2, 3))
    g = Graph(inputs={"in0": t}, nodes=[Node("n0", "Relu", ["in0"], {}, t, "Relu", "block", 0)], outputs=["n0"],
              seed=5)
    lane = Lane(LaneConfig("fake_engines:StrayFileOnConvert", Path("work")), 0)  # a relative work folder
    try:
        res = lane.run(0, g, 120)
    finally:
        lane.stop()
    assert res.status == Status.DCP, res.message  # the model's paths still reached the workers
    assert not (tmp_path / "stray.mnn").exists()
    assert (tmp_path / "work" / "stray.mnn").read_bytes() == b"stray"


def test_a_generator_bug_stops_the_run_with_its_summary_written_and_an_error(tmp_path, fake_engines_path, monkeypatch):
    """s3l: a GenError out of the generator ended a campaign with no summary.json.  Now what was
    judged is kept and summarised, the stop reason says why, and the CLI exits with an error."""
    from gbft_action.campaign import cut_short
    from gbft_action.cli import main
    from gbft_action.graph.solver import GenError
    from gbft_action.search.guided import GuidedSource

    real = GuidedSource.next_graph

    def failing(self, index):
        if index >= 14:  # generated ahead of judging (campaign.LAG): the first cases are judged
            raise GenError("ConvTranspose would produce shape (1, 15, 2553, 0)")
        return real(self, index)

    monkeypatch.setattr(GuidedSource, "next_graph", failing)
    out = tmp_path / "o"
    code = main(["fuzz", "--engine", "fake_engines:SegfaultOnConvert", "--budget", "60", "--max-models", "20",
                 "--jobs", "1", "--minimize-share", "0", "--seed", "21", "--out", str(out), "--quiet"])
    summary = json.loads((out / "summary.json").read_text())
    assert code == 3 and summary["stop_reason"].startswith("harness error: the generator: ConvTranspose")
    assert summary["models"] == len((out / "cases.jsonl").read_text().splitlines()) >= 1
    from gbft_action.records import Summary
    assert cut_short(Summary.from_json(summary))


def test_a_worker_over_its_resident_memory_is_killed_and_it_is_a_crash(tmp_path, fake_engines_path):
    """For an emulated platform (no address-space limit under qemu-user) the supervisor watches
    the worker's resident memory: a runaway engine is a finding, never the machine's memory."""
    from gbft_action.workers.supervisor import resident_mb

    w = Worker(WorkerSpec("engine", "fake_engines:RunawayResident", rss_mb=300), tmp_path / "w.log")
    w.start()
    try:
        t0 = time.monotonic()
        res = w.call({"op": "convert", "model": str(tmp_path / "m.pb"), "format": "pb", "dir": str(tmp_path)}, 60)
        assert res.kind == "crash" and res.signal == 9 and "resident memory above 300 MiB" in res.log
        assert time.monotonic() - t0 < 30
    finally:
        w.close()
    assert resident_mb(os.getpid()) > 0 and resident_mb(2 ** 22 + 7) == 0
