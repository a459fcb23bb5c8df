"""How a cancelled job ends: SIGTERM to `gbft action` at random moments, under CPU load.

    .venv/bin/python bench/cancel.py [--runs 25] [--window 2-12] [--load 2] [--seed 1]

Each run starts the action as GitHub would (INPUT_* variables, a workspace, a
300 s budget, the pip-installed MNN), sends SIGTERM after a random delay drawn
from the window (seconds), and checks what a cancelled job must leave: an exit
within 5 s, summary.json with a "cancelled" stop reason, $GITHUB_OUTPUT whose
models agree with the summary, and no worker process left.  ``--load`` busy-loop
processes share the CPU meanwhile (CI machines are busy).  Prints one line per
run and the count of runs that broke a rule.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GBFT = [str(Path(sys.executable).parent / "gbft"), "action"]


def one(ws: Path, delay: float, seed: int) -> tuple[str, float]:
    """'' when the cancelled run left everything it must; else what was wrong."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INPUT_")}
    env.update({"GITHUB_WORKSPACE": str(ws), "GITHUB_OUTPUT": str(ws / "out.txt"),
                "GITHUB_STEP_SUMMARY": str(ws / "summary.md"), "GITHUB_REPOSITORY": "alibaba/MNN",
                "INPUT_BUDGET-SECONDS": "300", "INPUT_SEED": str(seed), "INPUT_FAIL-ON": "never"})
    p = subprocess.Popen(GBFT, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    took = time.monotonic() - t0
    summary = ws / "gbft-out" / "summary.json"
    if took >= 5 or not summary.exists() or not (ws / "out.txt").exists():
        return f"exit {p.returncode}, no summary or outputs: {err.strip()[-300:]}", took
    s = json.loads(summary.read_text())
    out = dict(line.split("=", 1) for line in (ws / "out.txt").read_text().splitlines())
    if not s["stop_reason"].startswith("cancelled") or out["models"] != str(s["models"]):
        return f"stop reason {s['stop_reason']!r}, models {out['models']} vs {s['models']}", took
    left = subprocess.run(["pgrep", "-f", "gbft_action.workers.serve"], capture_output=True, text=True).stdout
    return (f"workers left: {left.split()}" if left.strip() else ""), took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--window", default="2-12", help="SIGTERM after a random delay in LO-HI seconds")
    ap.add_argument("--load", type=int, default=2, help="busy-loop processes running meanwhile")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    lo, hi = (float(x) for x in a.window.split("-"))
    rng = random.Random(a.seed)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.load)]
    bad = 0
    try:
        for i in range(a.runs):
            delay = rng.uniform(lo, hi)
            with tempfile.TemporaryDirectory() as d:
                why, took = one(Path(d), delay, i)
            bad += bool(why)
            print(f"run {i:2d}: SIGTERM at {delay:4.1f} s, ended {took:.1f} s later  {why or 'ok'}", flush=True)
    finally:
        for h in hogs:
            h.kill()
    print(f"{bad} of {a.runs} cancelled runs broke a rule (window {a.window} s, {a.load} busy loops)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
