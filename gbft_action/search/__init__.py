"""Test-case generation strategies (block choosers and the generation loop).

A ``CaseSource`` turns a case index into a graph.  It may learn from results
(``feedback``), but it must be a pure function of (seed, corpus, options, the
feedback sequence), so that a campaign replays exactly and resumes.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, Protocol

from ..corpus import Corpus
from ..graph.generate import GenOptions, generate
from ..graph.ir import Graph


def case_seed(seed: int, index: int) -> int:
    """A 31-bit seed for case ``index`` of campaign ``seed`` (weights and inputs)."""
    h = hashlib.sha256(f"gbft:{seed}:{index}".encode()).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF


def case_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"gbft:{seed}:{index}")


class CaseSource(Protocol):
    def next_graph(self, index: int) -> Graph: ...

    def feedback(self, index: int, graph: Graph, record: dict[str, Any]) -> None: ...

    def state(self) -> dict[str, Any]: ...


class RandomSource:
    """Random block choice: every node's block is drawn from the whole corpus."""

    def __init__(self, corpus: Corpus, opts: GenOptions, seed: int) -> None:
        self.corpus, self.opts, self.seed = corpus, opts, seed

    def next_graph(self, index: int) -> Graph:
        g = generate(case_rng(self.seed, index), self.corpus, self.opts, case_seed(self.seed, index))
        g.meta["index"] = index
        return g

    def feedback(self, index: int, graph: Graph, record: dict[str, Any]) -> None:
        return None

    def state(self) -> dict[str, Any]:
        return {"chooser": "random"}
