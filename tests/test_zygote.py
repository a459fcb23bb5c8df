"""Engine workers forked from a fork server (wire.zygote): a restart after a crash costs a
fork, a renewed worker (replays on fresh workers) is a whole new process, and nothing of
either is left after stop()."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from gbft_action.workers.supervisor import StartFailed, Worker, WorkerSpec

MNN = "gbft_action.engines.mnn:MNNEngine"


def _worker(tmp_path: Path, target: str = MNN) -> Worker:
    return Worker(WorkerSpec("engine", target, fork_server=True), tmp_path / "w.log")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(pid, 0): gone once it is no longer running.
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_crashed_worker_is_replaced_by_a_fork_of_the_same_server(tmp_path):
    w = _worker(tmp_path)
    try:
        first = w.start()
        assert w.zygote is not None
        server = w.zygote.proc.pid
        assert _parent(first["pid"]) == server
        child = w.proc
        os.kill(first["pid"], signal.SIGSEGV)
        while w.alive():
            time.sleep(0.01)
        assert child is not None and child.returncode == -signal.SIGSEGV  # the signal comes through the server
        t0 = time.monotonic()
        w.ensure()
        restart = time.monotonic() - t0
        assert w.hello["pid"] != first["pid"] and w.zygote.proc.pid == server
        assert restart < 2.0, f"a restart took {restart:.2f} s: not a fork"
        assert w.call({"op": "hello"}, 10).kind == "ok"
        w.renew()  # a fresh worker for a replay: a whole process, the server kept
        w.ensure()
        assert _parent(w.hello["pid"]) == os.getpid() and w.zygote.proc.pid == server
        w.renew()
        os.kill(server, 0)  # still there for the next crash
        w.ensure()
        pid = w.hello["pid"]
        os.kill(pid, signal.SIGKILL)
        while w.alive():  # the kill lands
            time.sleep(0.01)
        w.ensure()  # after a crash: forked again
        assert _parent(w.hello["pid"]) == server
    finally:
        last = w.hello.get("pid")
        w.stop()
    assert w.zygote is None and _gone(server) and _gone(last)


def test_a_worker_timed_out_is_killed_and_the_next_one_forked(tmp_path):
    w = _worker(tmp_path)
    try:
        w.start()
        server = w.zygote.proc.pid if w.zygote else 0
        r = w.call({"op": "sleep-forever-is-not-an-op"}, 10)
        assert r.kind == "error"  # a Python error stays a reply: the worker lives on
        pid = w.hello["pid"]
        os.kill(pid, signal.SIGSTOP)  # a worker that stops answering
        r = w.call({"op": "hello"}, 0.5)
        assert r.kind == "timeout" and _gone(pid)
        w.ensure()
        assert w.zygote is not None and w.zygote.proc.pid == server
    finally:
        w.stop()


@pytest.mark.parametrize("engine, kind", [("HangOnImport", "timeout"), ("DieOnImport", "crash")])
def test_a_start_up_that_hangs_or_dies_in_the_server_fails_the_start_within_its_limit(tmp_path, fake_engines_path,
                                                                                     engine, kind):
    w = _worker(tmp_path, f"fake_engines:{engine}")
    t0 = time.monotonic()
    with pytest.raises(StartFailed) as e:
        w.start(timeout=3.0)
    assert e.value.result.kind == kind and time.monotonic() - t0 < 3.0 + 5.0
    if kind == "crash":
        assert e.value.result.signal == signal.SIGSEGV
    assert w.zygote is None  # stopped: the next start begins with a new server


@pytest.mark.parametrize("fork", [True, False])
def test_a_start_up_that_raises_names_the_error(tmp_path, fake_engines_path, fork):
    w = Worker(WorkerSpec("engine", "fake_engines:RaiseOnImport", fork_server=fork), tmp_path / "w.log")
    with pytest.raises(StartFailed, match="ImportError: libMNN_fake.so: cannot open"):
        w.start(timeout=30.0)
    assert w.zygote is None and w.proc is None
