"""What an engine worker's restart after a crash costs: a whole new process, or a fork of the
fork server (wire.zygote).

    .venv/bin/python bench/restart.py [--arm-root DIR] [--restarts 5]

Starts an MNN engine worker each way (natively, and under qemu with ``--arm-root``), kills
it with SIGKILL ``--restarts`` times and times ``Worker.ensure()``, the restart the next
call makes; prints the first start and the median restart.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path

from gbft_action.platforms import Platform, resolve
from gbft_action.workers.supervisor import Worker, WorkerSpec


def restarts(p: Platform, fork: bool, n: int, d: Path) -> tuple[float, float]:
    spec = WorkerSpec("engine", "gbft_action.engines.mnn:MNNEngine", prefix=p.prefix, pythonpath=p.pythonpath,
                      cwd=str(d), fork_server=fork)
    spec.python = p.python or spec.python
    w = Worker(spec, d / f"{p.name}-{fork}.log")
    try:
        t0 = time.monotonic()
        w.start()
        first = time.monotonic() - t0
        times = []
        for _ in range(n):
            os.kill(w.hello["pid"], signal.SIGKILL)
            while w.alive():  # the kill lands
                time.sleep(0.005)
            t0 = time.monotonic()
            w.ensure()
            times.append(time.monotonic() - t0)
    finally:
        w.stop()
    return first, statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arm-root", type=Path)
    ap.add_argument("--restarts", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        plats = [Platform("native")]
        if a.arm_root:
            plats += list(resolve(["arm64-qemu"], a.arm_root, d))
        for p in plats:
            for fork in (False, True):
                first, median = restarts(p, fork, a.restarts, d)
                print(f"{p.name:11s} {'fork server' if fork else 'whole process':13s} first start {first * 1000:7.0f} ms, "
                      f"restart after a crash {median * 1000:7.1f} ms (median of {a.restarts})")


if __name__ == "__main__":
    main()
