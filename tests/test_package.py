"""The tool as a wheel: ``pip install`` of the built wheel (not an editable install) into a
fresh virtual environment files an issue, templates and the corpus coming from inside the package."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT
from .test_report import fp, make_out, relu_graph

pytestmark = pytest.mark.slow


def test_the_built_wheel_in_a_fresh_venv_renders_an_issue(tmp_path):
    dist, venv, src = tmp_path / "dist", tmp_path / "venv", tmp_path / "src"
    # From a clean copy of the source: a build/ folder left by an earlier build would bring
    # files the package data declaration no longer does.
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info",
                                                             "__pycache__", "gbft-out", ".pytest_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(src)],
                   check=True, timeout=300)
    (wheel,) = dist.glob("gbft_action-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    # The package's own dependencies only (no TensorFlow, no engine): the reporter needs neither.
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(wheel)], check=True, timeout=600)
    out = make_out(tmp_path, [(fp("Lrn"), 2, "wrong values", relu_graph("Lrn"))])
    where = subprocess.run([str(py), "-c", "import gbft_action.bugs.bundle as b, gbft_action.corpus as c; "
                            "print(b.TEMPLATES); print(c.DEFAULT_CORPUS)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert where.returncode == 0, where.stderr[-2000:]
    assert all(str(venv) in line and Path(line).exists() for line in where.stdout.split()), where.stdout
    r = subprocess.run([str(venv / "bin" / "gbft"), "report", "--from", str(out), "--tracker", "files"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    body = (out / "issues" / "0001.md").read_text()
    assert "gbft-fingerprint: " + fp("Lrn").id in body and "tf.nn.local_response_normalization" in body
    assert json.loads((out / "report.json").read_text())["filed"]
    c = subprocess.run([str(venv / "bin" / "gbft"), "corpus", "check", str(where.stdout.split()[1])],
                       capture_output=True, text=True, timeout=60)
    assert c.returncode == 0 and "53 blocks" in c.stdout, c.stdout + c.stderr
