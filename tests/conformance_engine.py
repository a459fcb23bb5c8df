"""An adapter for the conformance suite: wraps any registered engine's adapter and misbehaves
on the case indices ``FAULTS`` names, the way a broken engine would.

The engine worker imports it by ``conformance_engine:Conformance`` (tests/ on its
PYTHONPATH); ``GBFT_CONFORMANCE_ADAPTER`` names the wrapped adapter (``module:Class``,
the registry's).  Every other case runs the real engine untouched, so a conformance
run judges the engine itself and the harness's handling of each failure kind.
"""

from __future__ import annotations

import importlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np

# case index -> what goes wrong (the index is the name of the case's folder, model.pb's parent)
FAULTS = {901: "segv-convert", 902: "abort-infer", 903: "hang-infer", 904: "wrong-infer"}


class Conformance:
    def __init__(self) -> None:
        module, cls = os.environ["GBFT_CONFORMANCE_ADAPTER"].split(":")
        self.inner = getattr(importlib.import_module(module), cls)()
        self.name: str = self.inner.name
        self.formats: tuple[str, ...] = self.inner.formats
        self.fault = ""

    def version(self) -> str:
        return str(self.inner.version())

    def describe(self) -> dict[str, Any]:
        return self.inner.describe() if hasattr(self.inner, "describe") else {}

    def convert(self, model: Path, fmt: str, workdir: Path) -> Path:
        index = model.parent.name
        self.fault = FAULTS.get(int(index), "") if index.isdigit() else ""
        if self.fault == "segv-convert":
            os.kill(os.getpid(), signal.SIGSEGV)
        return self.inner.convert(model, fmt, workdir)

    def infer(self, artifact: Path, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        if self.fault == "abort-infer":
            os.abort()
        if self.fault == "hang-infer":
            time.sleep(3600)
        result = self.inner.infer(artifact, inputs, outputs)
        if self.fault == "wrong-infer":  # every tensor, probes included: off by far more than any tolerance
            result = {k: (v * 2 + 1).astype(v.dtype) for k, v in result.items()}
        return result
