"""The command engine end to end: real converter and runner commands (small scripts around
the installed MNN, tests/data/command_engine), a campaign with a base build, bundles that
replay (``gbft replay`` and the bundle's repro.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, TESTS, gbft_cmd

pytestmark = pytest.mark.slow

SCRIPTS = TESTS / "data" / "command_engine"
CONVERTER = f"{sys.executable} {{build}}/convert.py {{model}} {{artifact}}"
RUNNER = f"{sys.executable} {{build}}/run.py {{artifact}} {{inputs}} {{outputs_dir}} {{outputs}}"


def build(d: Path, reject: str = "") -> Path:
    shutil.copytree(SCRIPTS, d)
    if reject:
        (d / "REJECT").write_text(reject)
    return d


def test_command_engine_campaign_with_a_base_build_and_bundles_that_replay(tmp_path):
    # The PR's converter refuses models with Tanh or Sigmoid: a regression the base build has not.
    pr, base, out = build(tmp_path / "pr", "Tanh,Sigmoid"), build(tmp_path / "base"), tmp_path / "out"
    r = subprocess.run([*gbft_cmd(), "fuzz", "--engine", "command", "--engine-build", str(pr), "--base-build",
                        str(base), "--converter-command", CONVERTER, "--runner-command", RUNNER, "--budget", "100",
                        "--max-models", "36", "--blocks", "2-4", "--seed", "4", "--jobs", "2",
                        "--minimize-share", "0.5", "--out", str(out), "--quiet"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["engine"]["name"] == "command" and s["models"] == 36 and s["triage"]["base"]["engine"] == "command"
    rejected = [f for f in s["failures"] if "this build rejects" in f["message"]]
    others = [f for f in s["failures"] if f not in rejected]
    assert rejected and {f["verdict"] for f in rejected} == {"new"}, json.dumps(s["failures"], indent=1)
    assert all(f["verdict"] != "new" for f in others), json.dumps(others, indent=1)  # MNN's own bugs: both builds
    assert s["new_failures"] == sorted(f["key"] for f in rejected)

    bundle = out / "bugs" / rejected[0]["key"]
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["engine"]["commands"]["build"] == str(pr.resolve())
    # The bundle replays through the CLI (same commands, same build) ...
    rp = subprocess.run([*gbft_cmd(), "replay", str(bundle)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert rp.returncode == 1 and ": same" in rp.stdout, rp.stdout + rp.stderr[-2000:]
    # ... and as a maintainer runs it: repro.py, 1 on the PR build, 0 on the base build.
    for folder, want in ((pr, 1), (base, 0)):
        env = {"GBFT_ENGINE_BUILD": str(folder), "PATH": "/usr/bin:/bin"}
        p = subprocess.run([sys.executable, str(bundle / "repro.py")], capture_output=True, text=True,
                           cwd=tmp_path, timeout=180, env=env)
        assert p.returncode == want, f"{folder.name}: {p.stdout[-1500:]}{p.stderr[-1500:]}"
