"""ONNX Runtime as an engine under test (runs in the engine worker only).

The reference for ONNX models is ONNX Runtime with every graph optimisation off
(``reference.onnx_worker``); the engine under test is the same runtime with all of them on
(constant folding, fusions, layout transformations): what it gets wrong there is its
optimisers' bug.  "Conversion" is loading the model into an optimised session; its
failures are the converter failures of this engine.

Intermediate tensors (localisation asks for them by node id) are exposed by adding them
as graph outputs, which keeps the optimisers from fusing them away: a difference that
vanishes when exposed is reported as such by the pipeline.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .adapter import ConvertError

LEVELS = ("disable", "basic", "extended", "all")


class OnnxRuntimeEngine:
    name = "onnxruntime"
    formats = ("onnx",)

    def __init__(self) -> None:
        import onnxruntime as ort

        self.ort = ort
        # GBFT_ORT_LEVEL picks the optimisation level under test (default: all of them).
        self.level = os.environ.get("GBFT_ORT_LEVEL", "all").lower()
        if self.level not in LEVELS:
            raise ValueError(f"GBFT_ORT_LEVEL={self.level!r}: one of {', '.join(LEVELS)}")
        self._sessions: dict[tuple[str, tuple[str, ...]], Any] = {}

    def version(self) -> str:
        return str(self.ort.__version__)

    def describe(self) -> dict[str, dict[str, str]]:
        """The optimisation level, which a repro and a replay must use too (bundles keep it)."""
        return {"settings": {"level": self.level}}

    def convert(self, model: Path, fmt: str, workdir: Path) -> Path:
        if fmt != "onnx":
            raise ConvertError(f"onnxruntime reads ONNX models, not {fmt!r}")
        self._sessions.clear()
        try:
            self._session(model, ())
        except Exception as e:  # noqa: BLE001 - any load failure is this engine's conversion failure
            raise ConvertError(f"{type(e).__name__}: {e}") from None
        return model

    def infer(self, artifact: Path, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        sess = self._session(artifact, tuple(outputs))
        vals = sess.run(list(outputs), {k: np.asarray(v) for k, v in inputs.items()})
        return {name: np.asarray(v) for name, v in zip(outputs, vals)}

    def _session(self, model: Path, outputs: tuple[str, ...]) -> Any:
        key = (str(model), outputs)
        if key not in self._sessions:
            opts = self.ort.SessionOptions()
            opts.graph_optimization_level = {
                "disable": self.ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                "basic": self.ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                "extended": self.ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                "all": self.ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[self.level]
            opts.intra_op_num_threads = opts.inter_op_num_threads = 1
            data = _with_outputs(model, outputs)
            self._sessions[key] = self.ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        return self._sessions[key]


def _with_outputs(model: Path, outputs: tuple[str, ...]) -> bytes:
    """The model's bytes, with ``outputs`` that are not graph outputs added as outputs."""
    import onnx

    m = onnx.load(str(model))
    have = {o.name for o in m.graph.output}
    extra = [o for o in outputs if o not in have]
    if not extra:
        return m.SerializeToString()
    known = {v.name: v for v in [*m.graph.value_info, *m.graph.input]}
    if any(o not in known for o in extra):  # types of intermediates: from shape inference
        m = onnx.shape_inference.infer_shapes(m)
        known = {v.name: v for v in [*m.graph.value_info, *m.graph.input]}
    for o in extra:
        m.graph.output.append(known[o] if o in known else onnx.helper.make_empty_tensor_value_info(o))
    return m.SerializeToString()
