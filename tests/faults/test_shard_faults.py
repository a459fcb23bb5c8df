"""The fault suite (issue 15): a shard killed half-way merges cleanly.  A real campaign (real
TensorFlow and MNN) is SIGKILLed mid-run; its output is what a matrix job cut short uploads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from gbft_action.records.case import read_cases

from ..conftest import ROOT

pytestmark = pytest.mark.slow


def _gbft(*args: str) -> list[str]:
    return [sys.executable, "-m", "gbft_action.cli", *args]


def test_a_shard_killed_mid_run_merges_with_one_warning_and_reports(tmp_path):
    dead = tmp_path / "dead"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(_gbft("fuzz", "--budget", "60", "--jobs", "1", "--seed", "5", "--blocks", "1-5",
                               "--shard", "2/3", "--out", str(dead), "--quiet"),
                         cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)  # its workers are killed with it, as with a job's runner
    try:
        until = time.monotonic() + 90
        while time.monotonic() < until and len(read_cases(dead / "cases.jsonl")[0]) < 3:
            time.sleep(0.2)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    with open(dead / "cases.jsonl", "ab") as f:  # killed in the middle of a line
        f.write(b'{"hash": "0d4433')
    complete = [r.to_json() for r in read_cases(dead / "cases.jsonl")[0]]
    assert len(complete) >= 3 and not (dead / "summary.json").exists()

    m = tmp_path / "m"
    r = subprocess.run(_gbft("merge", str(dead), "--out", str(m)), cwd=ROOT, env=env, text=True, capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    warnings = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("warning:") and str(dead) in warnings[0]
    merged = [r.to_json() for r in read_cases(m / "cases.jsonl")[0]]
    assert [x["shard_index"] for x in merged] == [x["index"] for x in complete]
    assert all(x["index"] % 3 == 1 for x in merged)  # shard 2 of 3: cases 1, 4, 7, ...
    summary = json.loads((m / "summary.json").read_text())
    assert summary["models"] == len(complete) and summary["shards"]["2/3"]["complete"] is False
    r = subprocess.run(_gbft("report", "--from", str(m), "--tracker", "files"), cwd=ROOT, env=env, text=True,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "merged from 1 shard (2/3 did not finish" in (m / "summary.md").read_text()
