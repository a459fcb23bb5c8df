"""The engine interface, its registry, and the worker-side handler.

An engine adapter runs inside an engine worker process; the host never imports
it.  The registry (knowledge/registry.py, re-exported here) maps a name to the engine's
``EngineKnowledge`` (what the host knows of it, import-free), which names the adapter as a
``module:Class`` string, so that importing ``gbft_action`` imports no engine.
``--engine module:Class`` names any adapter directly (the tests use this for engines that
crash on purpose).
"""

from __future__ import annotations

from collections.abc import Mapping
import contextlib
import ctypes
import os
import time
from pathlib import Path
from typing import Any, Iterator, Protocol, runtime_checkable

import numpy as np

from ..wire.arrays import pack, unpack
from .coverage import SHIM_ENV, BlockReader
from ..knowledge.registry import ENGINES, knowledge_of, resolve  # noqa: F401 - the registry, as it was found here


class ConvertError(RuntimeError):
    """The engine's converter rejected the model (its log says why)."""


@runtime_checkable
class EngineAdapter(Protocol):
    name: str
    #: model formats the converter reads, in order of preference ("pb", "tflite")
    formats: tuple[str, ...]

    def version(self) -> str: ...

    def convert(self, model: Path, fmt: str, workdir: Path) -> Path:
        """Convert ``model`` into the engine's format; raise ConvertError."""

    def infer(self, artifact: Path, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        """Run the converted model; return every requested output."""


class EngineHandler:
    """Worker side: keeps the converted artifact between convert and infer."""

    def __init__(self, adapter: EngineAdapter) -> None:
        self.adapter = adapter
        self.artifact: Path | None = None
        # Engine coverage (engines.coverage): the preloaded shim's blocks, taken after each call.
        shim = os.environ.get(SHIM_ENV, "")
        self.blocks = BlockReader(shim) if shim else None

    def hello(self) -> dict[str, object]:
        if self.blocks is not None:  # what importing and starting the engine ran is no model's
            self.blocks.take()
        # An adapter may say more of itself (the command engine: its commands, for bundles).
        extra = self.adapter.describe() if hasattr(self.adapter, "describe") else {}
        return {**extra, "engine": self.adapter.name, "version": self.adapter.version(),
                "formats": list(self.adapter.formats)}

    def handle(self, msg: dict[str, object]) -> dict[str, object]:
        try:
            reply = self._handle(msg)
        except Exception as e:
            if self.blocks is not None:  # what it ran before it raised: the blocks ride on the error
                e.blocks = self.blocks.take()  # type: ignore[attr-defined]
            raise
        if self.blocks is not None:  # what this call ran of the engine's code (its worker may die next)
            reply["blocks"] = self.blocks.take()
        return reply

    def _handle(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        op = msg["op"]
        t0 = time.perf_counter()
        if op == "convert":
            self.artifact = None
            try:
                self.artifact = self.adapter.convert(Path(msg["model"]), msg.get("format", "pb"), Path(msg["dir"]))
            except ConvertError as e:
                return {"ok": False, "kind": "convert", "error": str(e)}
            return {"ok": True, "artifact": str(self.artifact), "t": time.perf_counter() - t0}
        if op == "infer":
            if self.artifact is None:
                raise RuntimeError("infer before a successful convert")
            with _perturbed_heap(int(msg.get("perturb", 0))):
                outs = self.adapter.infer(self.artifact, unpack(msg["inputs"]), list(msg["outputs"]))
            return {"ok": True, "outputs": pack(outs), "t": time.perf_counter() - t0}
        if op == "probe":
            return {"ok": True, "outputs": pack(self._probe(unpack(msg["inputs"]), list(msg["outputs"])))}
        raise ValueError(f"unknown op {op!r}")

    def _probe(self, inputs: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
        """Every requested intermediate tensor the converted model still has.

        Converters fuse and rename; asking for a tensor that is gone fails the
        whole call, so fall back to one name at a time and skip the missing.
        """
        assert self.artifact is not None
        try:
            return self.adapter.infer(self.artifact, inputs, names)
        except Exception:  # noqa: BLE001 - some name is gone; find which
            pass
        found = {}
        for name in names:
            try:
                found.update(self.adapter.infer(self.artifact, inputs, [name]))
            except Exception:  # noqa: BLE001
                continue
        return found


@contextlib.contextmanager
def _perturbed_heap(byte: int) -> Iterator[None]:
    """glibc's M_PERTURB for one call: fresh allocations hold ~byte, freed ones byte, so an
    output that reads uninitialised memory changes (engine-neutral: any adapter, any glibc)."""
    mallopt = None
    if byte:
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):  # not glibc: the check is skipped
            mallopt = None
    if mallopt is not None:
        mallopt(M_PERTURB, byte)
    try:
        yield
    finally:
        if mallopt is not None:
            mallopt(M_PERTURB, 0)


M_PERTURB = -6  # glibc malloc.h
