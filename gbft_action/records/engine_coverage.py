"""The engine-coverage file (``engine-coverage.json``, issue 38): the engine's basic blocks the
campaign's models ran (engines.coverage), by engine module, then by object file's name, as
addresses in it.  Kept placed in modules so that shards' files join without the build at hand
(``union``).  The campaign writes it (and reads it back on --resume), ``gbft merge`` joins the
shards', ``gbft coverage`` reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .io import Fields, RecordError, read_record, write_record

ENGINE_COVERAGE_FILE = "engine-coverage.json"
ENGINE_COVERAGE_VERSION = 1
Placed = dict[str, dict[str, tuple[int, ...]]]  # module -> object file's name -> sorted addresses


@dataclass(frozen=True)
class EngineCoverage:
    blocks: Placed = field(default_factory=dict)
    models: int = 0  # models whose blocks were taken
    version: int = ENGINE_COVERAGE_VERSION

    @property
    def modules(self) -> dict[str, int]:
        """Blocks per module, most first."""
        counts = {m: sum(len(v) for v in objs.values()) for m, objs in self.blocks.items()}
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    @property
    def total(self) -> int:
        return sum(self.modules.values())

    def summary(self) -> dict[str, object]:
        """What summary.json's ``coverage.engine`` shows: the counts, not the blocks."""
        return {"blocks": self.total, "modules": self.modules, "models": self.models}

    @staticmethod
    def union(parts: Iterable[EngineCoverage], models: int) -> EngineCoverage:
        """The blocks any of ``parts`` ran (a block counts once), over ``models`` models."""
        joined: dict[str, dict[str, set[int]]] = {}
        for p in parts:
            for m, objs in p.blocks.items():
                for obj, offs in objs.items():
                    joined.setdefault(m, {}).setdefault(obj, set()).update(offs)
        return EngineCoverage({m: {o: tuple(sorted(v)) for o, v in objs.items()} for m, objs in joined.items()}, models)

    def to_json(self) -> dict[str, object]:
        return {"version": self.version, "models": self.models,
                "blocks": {m: {o: list(v) for o, v in sorted(objs.items())} for m, objs in sorted(self.blocks.items())}}

    @staticmethod
    def from_json(d: Any, where: str) -> EngineCoverage:
        f = Fields(d, where)
        blocks = f.d.get("blocks", {})
        ok = isinstance(blocks, dict) and all(
            isinstance(m, str) and isinstance(objs, dict) and all(
                isinstance(o, str) and isinstance(v, list) and all(type(x) is int and x >= 0 for x in v)
                for o, v in objs.items())
            for m, objs in blocks.items())
        if not ok:
            raise RecordError(f"{where}: blocks: expected module -> object file -> list of addresses")
        return EngineCoverage({m: {o: tuple(sorted(v)) for o, v in objs.items()} for m, objs in blocks.items()},
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
