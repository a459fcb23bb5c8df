"""End to end on the real MNN wheel and real TensorFlow."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gbft_action.bugs.rootcause import moves_data
from gbft_action.campaign import Campaign
from gbft_action.records.config import Config

from .conftest import ROOT, gbft_cmd

pytestmark = pytest.mark.slow


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]


def same_symptom(symptom: str, rc: dict) -> bool:
    """Whether a failure of ``symptom`` may sit under root cause ``rc`` (summary.json).  Only
    minimising may move a failure to another symptom's root cause, except where the key's own
    rules say the symptoms are one defect: a NaN or Inf that appears at an operator that only
    moves data is its wrong result, and a nondeterministic result shares its operator's id with
    the wrong one."""
    if rc["symptom"] == symptom or rc["minimized"]:
        return True
    if (symptom, rc["symptom"]) == ("nan-inf", "wrong-result"):
        return moves_data(tuple(rc["ops"]), None, "")
    return {symptom, rc["symptom"]} == {"nondeterministic", "wrong-result"}


def test_cli_fuzz_within_budget_and_fast_enough(tmp_path):
    out = tmp_path / "d"
    t0 = time.monotonic()
    p = subprocess.run([*gbft_cmd(), "fuzz", "--engine", "mnn", "--budget", "20", "--seed", "3", "--out", str(out),
                        "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    wall = time.monotonic() - t0
    assert p.returncode == 0, p.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    # The campaign's own clock says whether the overrun was in the run or around it (start-up).
    assert wall < 20 + 10, f"took {wall:.1f} s for a 20 s budget (the campaign: {s['elapsed_s']} s, {s['sessions']})"
    # The reserve grows with the distinct failures met (each is minimised and keyed): up to half.
    assert s["models"] >= 100, f"only {s['models']} models in 20 s"
    # Every failure belongs to exactly one root cause, and the root causes hold nothing else.
    causes = {rc["key"]: rc for rc in s["root_causes"]}
    assert sorted(f for rc in causes.values() for f in rc["fingerprints"]) == sorted(f["key"] for f in s["failures"])
    odd = [(f["symptom"], causes[f["root_cause"]]) for f in s["failures"]
           if not same_symptom(f["symptom"], causes[f["root_cause"]])]
    assert not odd, f"failures under a root cause of another symptom, not minimised: {odd}"
    assert 0 < len(causes) <= s["unique_failures"]
    for rc in causes.values():  # a diagnosed bundle a report shows carries the root cause's key
        meta = json.loads((out / "bugs" / rc["canonical"] / "meta.json").read_text())
        assert meta["root_cause"]["key"] == rc["key"] if rc["minimized"] else "root_cause" not in meta
    # The TFLite copy is of the minimised model only (the loop no longer pays ~70 ms a failure).
    minimised = [b for b in (out / "bugs").iterdir() if (b / "minimized.pb").exists()]
    assert minimised and any((b / "minimized.tflite").stat().st_size > 0 for b in minimised
                             if (b / "minimized.tflite").exists())
    assert not any((out / "cases").glob("*/model.tflite"))
    assert sum(s["by_status"].values()) == s["models"] == len(records(out))
    assert set(s["by_status"]) == {"DCP", "MCF", "IF", "DCF", "REF", "GEN", "TIMEOUT", "XPF", "XBF", "XTF"}
    assert s["engine"]["name"] == "mnn" and s["engine"]["version"].startswith("3.")
    assert s["seed"] == 3 and s["elapsed_s"] <= 30
    assert "unique_failures" in s and s["unique_failures"] == len(s["failures"])
    assert "models" in p.stdout and "summary.json" in p.stdout
    # The console names the root causes, not only the fingerprints.
    assert f"root causes: {len(s['root_causes'])} (" in p.stdout


def test_same_seed_same_models_in_same_order(tmp_path):
    hashes = []
    for run in ("a", "b"):
        cfg = Config(out=tmp_path / run, engine="mnn", budget=120, max_models=50, seed=11, jobs=2,
                         minimize_share=0.0)
        Campaign(cfg).run()
        hashes.append([(r["index"], r["hash"]) for r in records(tmp_path / run)])
    assert len(hashes[0]) == 50
    assert hashes[0] == hashes[1]
    other = Config(out=tmp_path / "c", engine="mnn", budget=120, max_models=5, seed=12, jobs=1,
                       minimize_share=0.0)
    Campaign(other).run()
    assert [h for _, h in hashes[0][:5]] != [r["hash"] for r in records(tmp_path / "c")]


def test_failing_cases_keep_everything_needed_to_replay(tmp_path):
    out = tmp_path / "o"
    Campaign(Config(out=out, engine="mnn", budget=120, max_models=60, seed=3, jobs=2,
                        minimize_share=0.0)).run()
    failing = [r for r in records(out) if r["status"] in ("MCF", "IF", "DCF")]
    assert failing, "seed 3 is known to produce MNN failures in 60 models"
    for r in failing:
        d = out / r["case_dir"]
        assert (d / "graph.json").exists() and (d / "model.pb").stat().st_size > 0
        assert (d / "inputs.npz").exists() and (d / "expected.npz").exists()
        assert json.loads((d / "result.json").read_text())["hash"] == r["hash"]
        if r["status"] == "DCF":
            assert (d / "actual.npz").exists() and r["node"]
    passing = [r for r in records(out) if r["status"] == "DCP"]
    assert passing and all("case_dir" not in r for r in passing)


def test_sigkill_then_resume_continues_the_same_campaign(tmp_path):
    out = tmp_path / "o"
    p = subprocess.Popen([*gbft_cmd(), "fuzz", "--budget", "120", "--seed", "4", "--out", str(out), "--quiet"],
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (out / "cases.jsonl").exists() and len((out / "cases.jsonl").read_text().splitlines()) >= 20:
            break
        time.sleep(0.2)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    before = records(out)
    assert len(before) >= 20
    n = len(before) + 15
    r = subprocess.run([*gbft_cmd(), "fuzz", "--resume", str(out), "--max-models", str(n), "--budget", "60",
                        "--quiet", "--minimize-share", "0"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    after = records(out)
    assert [x["index"] for x in after] == list(range(n))
    assert after[: len(before)] == before
    # The resumed cases are the ones a fresh campaign with this seed generates.
    fresh = tmp_path / "fresh"
    Campaign(Config(out=fresh, engine="mnn", budget=120, max_models=n, seed=4, jobs=2,
                        minimize_share=0.0)).run()
    assert [x["hash"] for x in records(fresh)] == [x["hash"] for x in after]
    s = json.loads((out / "summary.json").read_text())
    assert s["models"] == n and s["stop_reason"] == "max-models reached"


def test_importing_the_package_loads_no_framework():
    code = ("import sys, gbft_action, gbft_action.cli, gbft_action.campaign, gbft_action.pipeline, "
            "gbft_action.engines.adapter, gbft_action.search, gbft_action.oracle\n"
            "bad = [m for m in ('tensorflow', 'MNN', '_tools', '_mnncengine') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
