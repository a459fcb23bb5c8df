"""Operator registries: which spec table a corpus draws its operators from.

Two front ends share the generator and the solver: ``tf`` (``ops.specs.SPECS``,
NHWC, the TensorFlow reference) and ``onnx`` (``ops.onnx_specs.ONNX_SPECS``,
NCHW, the ONNX Runtime reference).  Their operator names clash (Add, Concat,
Slice...) with other semantics, so a corpus names its registry (``frontend``)
and everything that looks a spec up goes through it.  A registry also carries
the value-range rules of its operators (``ops.ranges``) and the names of the
adapters the solver inserts, which every registry must define.

The ONNX registry is also keyed by the opset the front end writes (``frontends.OPSETS``):
its recorded operators are those of that opset's records, and a node's ``instance`` indexes
them.  A graph names both in its meta (``registry_of``); a graph without an opset was made at
17, before opsets were chosen.

Framework-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from ..graph.ir import Graph
from . import ranges
from ..frontends import LEGACY_OPSET, check_opset
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
    opset: int = LEGACY_OPSET  # the ONNX opset its operators are written at (TensorFlow's: unused)

    def meta(self) -> dict[str, object]:
        """What a graph of this registry's operators says of them in its meta (``registry_of``
        reads it back): nothing for TensorFlow, so its graphs keep their bytes; the front end;
        the opset but 17, as graphs made before opsets were chosen."""
        if self.frontend == "tf":
            return {}
        return {"frontend": self.frontend, **({"opset": self.opset} if self.opset != LEGACY_OPSET else {})}

    def __post_init__(self) -> None:
        missing = [a for a in self.adapters if a not in self.specs]
        if missing:  # the solver would fail on the first model needing one
            raise ValueError(f"registry {self.frontend!r} lacks the adapters {missing}")


def registry(frontend: str = "tf", opset: int = LEGACY_OPSET) -> Registry:
    """The registry of ``frontend`` (one of FRONTENDS) at ``opset`` (ONNX's only); ValueError
    for any other name, RecordsError for an opset the ONNX front end does not write."""
    return _registry(frontend, opset if frontend == "onnx" else LEGACY_OPSET)


def registry_of(g: Graph) -> Registry:
    """The registry graph ``g``'s operators name: its meta's front end and opset."""
    frontend = str(g.meta.get("frontend", "tf"))
    return registry(frontend, opset_of(g)) if frontend == "onnx" else registry(frontend)


def opset_of(g: Graph) -> int:
    """The ONNX opset graph ``g`` is written at (17: made before opsets were chosen); ValueError
    for one the front end does not write (a bundle is a pull request's artifact)."""
    return check_opset(g.meta.get("opset", LEGACY_OPSET), "graph: its opset")


@lru_cache(maxsize=None)
def _registry(frontend: str, opset: int) -> Registry:
    if frontend == "tf":
        return Registry("tf", SPECS, ranges.RULES)
    if frontend == "onnx":
        from .onnx_ranges import ONNX_RULES  # imported on demand: the TF path never loads them
        from .onnx_specs import ONNX_SPECS, hinge_kind
        from .recorded import specs_at

        # Operators with no hand-written spec are known from their recorded instances.
        return Registry("onnx", {**specs_at(opset, skip=frozenset(ONNX_SPECS)), **ONNX_SPECS}, ONNX_RULES,
                        hinge=hinge_kind, opset=opset)
    raise ValueError(f"unknown frontend {frontend!r} (known: {', '.join(FRONTENDS)})")


TF = registry("tf")
