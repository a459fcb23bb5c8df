"""What the host knows of ONNX Runtime as an engine under test: its package and repro stage
(never imports onnxruntime: the host reads it).

Its failures are Python exceptions whose first line says what went wrong (the generic
reading), so there are no log patterns here.
"""

from __future__ import annotations

from .base import EngineKnowledge, Package


# The adapter's optimisation levels (engines/onnxruntime.py, GBFT_ORT_LEVEL; "disable" is the
# reference's own): the repro names them ORT_DISABLE_ALL and ORT_ENABLE_<LEVEL>.
LEVELS = ("disable", "basic", "extended", "all")


class OnnxRuntimeKnowledge(EngineKnowledge):
    name = "onnxruntime"
    package = Package(pip="onnxruntime")
    repro_template = "engine_onnxruntime.py.j2"

    setting_vars = {"level": ("GBFT_ORT_LEVEL", LEVELS)}
