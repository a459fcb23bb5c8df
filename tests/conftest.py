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
