from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
VENV_BIN = Path(sys.executable).parent


@pytest.fixture
def fake_engines_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let engine workers import tests/fake_engines.py by ``fake_engines:Class``."""
    old = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS), old) if p))


def gbft_cmd() -> list[str]:
    exe = VENV_BIN / "gbft"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "gbft_action.cli"]


def tensorflow_in_process() -> None:
    """Before a test loads TensorFlow into the pytest process: MNN must not be there (the two
    abort together).  A failure, not a skip: a test that imports MNN here (rather than in a
    worker) would otherwise silently turn every later TensorFlow test into a skip."""
    if any(m == "MNN" or m.startswith(("MNN.", "_mnncengine")) for m in sys.modules):
        pytest.fail("MNN was imported into the pytest process by an earlier test; engines run in workers")

