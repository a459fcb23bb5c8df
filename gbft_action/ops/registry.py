"""Operator registries: which spec table a corpus draws its operators from.

Two front ends share the generator and the solver: ``tf`` (``ops.specs.SPECS``,
NHWC, the TensorFlow reference) and ``onnx`` (``ops.onnx_specs.ONNX_SPECS``,
NCHW, the ONNX Runtime reference).  Their operator names clash (Add, Concat,
Slice...) with other semantics, so a corpus names its registry (``frontend``)
and everything that looks a spec up goes through it.  A registry also carries
the value-range rules of its operators (``ops.ranges``) and the names of the
adapters the solver inserts, which every registry must define.

Framework-free.  May import: ops.specs, ops.ranges, ops.onnx_specs, ops.onnx_ranges, ops.recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from . import ranges
from .specs import ADAPTERS, SPECS, Spec

FRONTENDS = ("tf", "onnx")


@dataclass(frozen=True)
class Registry:
    frontend: str
    specs: dict[str, Spec]
    rules: dict[str, ranges.Rule]
    adapters: tuple[str, ...] = ADAPTERS
    # The hinge adapter an operator's first input may get, by operator and element type
    # (ops.onnx_specs.hinge_kind); TensorFlow's registry has none.
    hinge: Callable[[str, str], str | None] = field(default=lambda op, dtype: None, compare=False)

    def __post_init__(self) -> None:
        missing = [a for a in self.adapters if a not in self.specs]
        if missing:  # the solver would fail on the first model needing one
            raise ValueError(f"registry {self.frontend!r} lacks the adapters {missing}")


@lru_cache(maxsize=None)
def registry(frontend: str = "tf") -> Registry:
    """The registry of ``frontend`` (one of FRONTENDS); ValueError for any other name."""
    if frontend == "tf":
        return Registry("tf", SPECS, ranges.RULES)
    if frontend == "onnx":
        from .onnx_ranges import ONNX_RULES  # imported on demand: the TF path never loads them
        from .onnx_specs import ONNX_SPECS, hinge_kind
        from .recorded import recorded_specs

        # Operators with no hand-written spec are known from their recorded instances.
        return Registry("onnx", {**recorded_specs(skip=frozenset(ONNX_SPECS)), **ONNX_SPECS}, ONNX_RULES,
                        hinge=hinge_kind)
    raise ValueError(f"unknown frontend {frontend!r} (known: {', '.join(FRONTENDS)})")


TF = registry("tf")
