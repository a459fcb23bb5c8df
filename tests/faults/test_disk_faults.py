"""The fault suite (issue 15): a full output disk stops the run with a one-line error and a
valid summary of what was judged; nothing torn, no reserve left behind.  The disk is a real
tmpfs of a few MB (mounting needs root, as CI runs)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from gbft_action.store import RESERVE_BYTES, RESERVE_FILE, ResultStore

from ..conftest import ROOT, gbft_cmd

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root (CI runs as root)")


@pytest.fixture
def small_disk(tmp_path):
    d = tmp_path / "disk"
    d.mkdir()
    # The reserve plus ~3 MB: MNN's failing cases (models, inputs, outputs) fill it in seconds.
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={RESERVE_BYTES + (3 << 20)}", "tmpfs", str(d)], check=True)
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=False)


def test_a_full_output_disk_stops_the_run_with_a_valid_summary(small_disk):
    out = small_disk / "o"
    r = subprocess.run([*gbft_cmd(), "fuzz", "--budget", "120", "--seed", "0", "--out", str(out), "--quiet"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stderr[-2000:]
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no space left on device" in errors[0] and "Traceback" not in r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"].startswith("disk full")
    # Every judged case is in cases.jsonl, and the summary counts exactly those (a line torn by
    # the full disk is not a case: a resume cuts it).
    judged = ResultStore(out).load()
    assert summary["models"] == len(judged) > 0 and summary["elapsed_s"] < 100
    assert not (out / RESERVE_FILE).exists()
    json.loads((out / "known_bugs.json").read_text())


def test_a_disk_too_full_to_start_is_one_error_line(small_disk):
    (small_disk / "filler").write_bytes(bytes(RESERVE_BYTES))  # less than the reserve is left
    r = subprocess.run([*gbft_cmd(), "fuzz", "--budget", "20", "--out", str(small_disk / "o"), "--quiet"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 3 and "No space left on device" in r.stderr and "Traceback" not in r.stderr
