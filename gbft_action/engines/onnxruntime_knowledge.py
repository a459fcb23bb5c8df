"""What the host knows of ONNX Runtime as an engine under test: its package and repro stage.

Its failures are Python exceptions whose first line says what went wrong (the generic
reading), so there are no log patterns here.

May import: the standard library and engines.knowledge (never onnxruntime: the host uses this).
"""

from __future__ import annotations

from typing import Any

from .knowledge import EngineKnowledge, Package


class OnnxRuntimeKnowledge(EngineKnowledge):
    name = "onnxruntime"
    package = Package(pip="onnxruntime")
    repro_template = "engine_onnxruntime.py.j2"

    def settings(self, engine: dict[str, Any]) -> dict[str, str]:
        given = engine.get("settings")
        level = str(given.get("level", "")) if isinstance(given, dict) else ""
        return {"level": level} if level in LEVELS else {}

    def env_for(self, settings: dict[str, str]) -> dict[str, str]:
        return {"GBFT_ORT_LEVEL": settings["level"]} if "level" in settings else {}


# The adapter's optimisation levels (engines/onnxruntime.py, GBFT_ORT_LEVEL; "disable" is the
# reference's own): the repro names them ORT_DISABLE_ALL and ORT_ENABLE_<LEVEL>.
LEVELS = ("disable", "basic", "extended", "all")
