"""The engine-coverage file (``engine-coverage.json``, issue 38): the engine's basic blocks the
campaign's models ran (engines.coverage), per object file as offsets, and their count per
engine module.  The campaign writes it (and reads it back on --resume); ``gbft coverage``
reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .io import Fields, RecordError, read_record, write_record

ENGINE_COVERAGE_FILE = "engine-coverage.json"
ENGINE_COVERAGE_VERSION = 1


@dataclass(frozen=True)
class EngineCoverage:
    blocks: dict[str, tuple[int, ...]] = field(default_factory=dict)  # object file -> sorted offsets
    modules: dict[str, int] = field(default_factory=dict)  # engine module -> blocks
    models: int = 0  # models whose blocks were taken
    version: int = ENGINE_COVERAGE_VERSION

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.blocks.values())

    def summary(self) -> dict[str, Any]:
        """What summary.json's ``coverage.engine`` shows: the counts, not the blocks."""
        return {"blocks": self.total, "modules": dict(self.modules), "models": self.models}

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "models": self.models, "modules": dict(self.modules),
                "blocks": {k: list(v) for k, v in sorted(self.blocks.items())}}

    @staticmethod
    def from_json(d: Any, where: str) -> EngineCoverage:
        f = Fields(d, where)
        blocks, modules = f.d.get("blocks", {}), f.d.get("modules", {})
        if not isinstance(blocks, dict) or not all(isinstance(k, str) and isinstance(v, list) and
                                                   all(type(o) is int for o in v) for k, v in blocks.items()):
            raise RecordError(f"{where}: blocks: expected object file -> list of offsets")
        if not isinstance(modules, dict) or not all(isinstance(k, str) and type(v) is int for k, v in modules.items()):
            raise RecordError(f"{where}: modules: expected module -> count")
        return EngineCoverage({k: tuple(sorted(v)) for k, v in blocks.items()}, dict(modules),
                              f.int("models", 0, 0), f.int("version", ENGINE_COVERAGE_VERSION, 1))

    # -- the one reader and the one writer -------------------------------------------
    @staticmethod
    def read(out: Path) -> EngineCoverage | None:
        """The output's engine coverage; None when the campaign took none."""
        path = out / ENGINE_COVERAGE_FILE
        if not path.exists():
            return None
        return EngineCoverage.from_json(read_record(path, "engine coverage"), str(path))

    def write(self, out: Path) -> None:
        write_record(out / ENGINE_COVERAGE_FILE, self.to_json())
