"""Harness memory over a campaign: the fuzzing process's resident set, sampled while it runs.

    .venv/bin/python bench/memory.py [--budget 600] [--every 10] [-- FUZZ ARGS...]

Runs ``gbft fuzz`` (default: the pip MNN on this machine, seed 0) as a child process and
reads its VmRSS from /proc every ``--every`` seconds.  Only the harness process is measured:
the engine and reference workers are processes of their own, restarted when they grow
(workers.supervisor), and their memory is the engine's and TensorFlow's, not the harness's.
Prints the samples' first (after start-up: the first sample past 30 s), last and largest
values and the growth from the first to the last; issue 15's target is a growth of at most
50 MB over a 10-minute campaign.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARM_S = 30.0  # start-up (TensorFlow, MNN, the corpus) is not growth


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=600)
    ap.add_argument("--every", type=float, default=10)
    ap.add_argument("fuzz", nargs=argparse.REMAINDER, help="extra `gbft fuzz` arguments (after --)")
    a = ap.parse_args()
    extra = [x for x in a.fuzz if x != "--"]
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-m", "gbft_action.cli", "fuzz", "--engine", "mnn", "--budget", str(a.budget),
               "--seed", "0", "--out", str(Path(d) / "o"), "--quiet", *extra]
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        samples: list[tuple[float, float]] = []
        while p.poll() is None:
            mb = rss_mb(p.pid)
            if mb is not None:
                samples.append((time.monotonic() - t0, mb))
            time.sleep(a.every)
    warm = [s for s in samples if s[0] >= WARM_S] or samples
    if not warm:
        sys.exit("no samples: the campaign ended at once")
    first, last, top = warm[0][1], warm[-1][1], max(mb for _, mb in warm)
    print(f"harness RSS over {warm[-1][0]:.0f} s ({len(warm)} samples after {WARM_S:.0f} s): "
          f"first {first:.0f} MB, last {last:.0f} MB, largest {top:.0f} MB, growth {last - first:+.0f} MB")
    # When it grew tells a leak (steady) from a phase (a step, e.g. the diagnosis after the loop).
    minute = [next(mb for t, mb in warm if t >= m) for m in range(60, int(warm[-1][0]) + 1, 60)]
    print("RSS at each minute (MB): " + " ".join(f"{mb:.0f}" for mb in minute))


if __name__ == "__main__":
    main()
