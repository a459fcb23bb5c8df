"""Alibaba MNN adapter (runs in the engine worker only).

Conversion goes through the compiled extension ``_tools.mnnconvert``: the
Python wrappers ``MNN.tools.*`` import a telemetry module that pip-installs a
logging SDK and phones home, which a CI fuzzer must never do.  ``mnnconvert``
returns True even when conversion fails; failure shows as a missing output file
and "Converted Failed!" in its log, which the supervisor captures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .adapter import ConvertError

FRAMEWORK_FLAG = {"pb": "TF", "tflite": "TFLITE", "onnx": "ONNX"}


class MNNEngine:
    name = "mnn"
    formats = ("pb", "tflite", "onnx")

    def __init__(self) -> None:
        import _tools  # noqa: F401 - MNN's compiled converter; see the module docstring
        import MNN
        import MNN.expr as F

        self._tools, self.MNN, self.F = _tools, MNN, F
        self.precision = os.environ.get("GBFT_MNN_PRECISION", "high").lower()
        self.threads = os.environ.get("GBFT_MNN_THREADS", "1")
        self.transformer_fuse = os.environ.get("GBFT_MNN_TRANSFORMER_FUSE", "off")
        self.weight_bits = os.environ.get("GBFT_MNN_WEIGHT_QUANT_BITS", "off")

    def version(self) -> str:
        return str(self.MNN.version())

    def describe(self) -> dict[str, dict[str, str]]:
        """Settings a repro and a replay must use too (bundles keep them; mnn_knowledge reads
        them): the precision always, the others where they are not the default (one thread, no
        transformer fusion), so bundles of the default setting read as they always did."""
        extra = {k: v for k, v, default in (("threads", self.threads, "1"),
                                            ("transformer_fuse", self.transformer_fuse, "off"),
                                            ("weight_quant_bits", self.weight_bits, "off")) if v != default}
        return {"settings": {"precision": self.precision, **extra}}

    def convert(self, model: Path, fmt: str, workdir: Path) -> Path:
        out = workdir / "model.mnn"
        if out.exists():
            out.unlink()
        argv = ["mnnconvert", "-f", FRAMEWORK_FLAG[fmt], "--modelFile", str(model), "--MNNModel", str(out),
                "--bizCode", "gbft"] + (["--transformerFuse"] if self.transformer_fuse == "on" else []) + \
               (["--weightQuantBits", self.weight_bits] if self.weight_bits != "off" else [])
        self._tools.mnnconvert(argv)
        if not out.exists() or out.stat().st_size == 0:
            raise ConvertError("MNNConvert produced no model (see the converter log)")
        # ONNX models are NCHW: their inputs and outputs are fed and read in that layout.
        self.layout = self.F.NCHW if fmt == "onnx" else self.F.NHWC
        return out

    def _const(self, x: np.ndarray, layout: Any) -> Any:
        """An input as MNN takes it: its converter makes every integer and bool input int32 (an
        int64, uint8 or bool array handed over as it is is refused, or read as garbage), and
        ``const`` wants the type named (float by default).  Isolation feeds an operator the
        reference's own values, integers and bools among them: every such run failed."""
        if x.dtype.kind in "iub":
            return self.F.const(np.ascontiguousarray(x, dtype=np.int32), list(x.shape), layout, self.F.int)
        return self.F.const(np.ascontiguousarray(x, dtype=np.float32), list(x.shape), layout)

    def infer(self, artifact: Path, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        F = self.F
        prec = {"high": F.PrecisionMode.High, "normal": F.PrecisionMode.Normal, "low": F.PrecisionMode.Low}
        names = sorted(inputs)
        net = self.MNN.nn.load_module_from_file(str(artifact), names, outputs, precision_mode=prec[self.precision],
                                                thread_num=int(self.threads))
        layout = getattr(self, "layout", F.NHWC)
        xs = [self._const(inputs[k], layout) for k in names]
        ys = net.forward(xs)
        if len(ys) != len(outputs):  # the repro script checks the same thing
            raise RuntimeError(f"MNN returned {len(ys)} of {len(outputs)} outputs")
        result = {}
        for name, y in zip(outputs, ys):
            if y.data_format == F.NC4HW4:
                y = F.convert(y, layout)
            result[name] = np.array(y.read()).copy()
        return result
