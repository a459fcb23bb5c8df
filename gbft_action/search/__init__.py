"""Test-case generation strategies (block choosers and the generation loop).

A ``CaseSource`` turns a case index into a graph.  It may learn from results
(``feedback``), but it must be a pure function of (seed, corpus, options, the
feedback sequence), so that a campaign replays exactly and resumes.

Shards (``--shard I/N``) split one campaign into N disjoint parts.  Disjointness
is by construction, not by luck: a model's graph hash covers its case seed
(``Graph.structure_hash`` hashes everything but ``meta``, and ``seed`` fixes
its weights and inputs), and shard I draws every case seed from the residue
class ``seed % N == I - 1`` (``case_seed``).  So two models of different shards
always differ in their seed field, hence in what their hash covers, whatever
blocks, edges or parameters the generator chose: the guided search (MCTS,
coverage, graph arms) may steer each shard anywhere, even to the same
structure, and the hashes still differ (up to a collision of the 64-bit hash
prefix, about n^2 / 2^65 for n models: 3e-8 for a million).  Per-shard random
streams alone would not do: two shards whose learned state converges (a small
block range, a small corpus) can draw the same graph, and a hash dedupe cannot
help across machines that never talk to each other.  Each shard's draws are
also keyed by the shard, so shards differ in structure too (diversity, not
needed for disjointness).  Shard 1/1 is the unsharded campaign, seed for seed.

Layer 2 of ``gbft_action.LAYERS``.
"""

from __future__ import annotations

import hashlib
import random
from typing import Protocol

from ..corpus import Corpus
from ..graph.generate import GenOptions, generate
from ..graph.ir import Graph
from ..records.case import CaseRecord


SEED_MASK = 0x7FFFFFFF  # case seeds are 31-bit (TensorFlow and NumPy take them as they are)


def stream_key(seed: int, index: int, shard: tuple[int, int] = (1, 1)) -> str:
    """The key of case ``index``'s random draws; unsharded keys are those of before shards."""
    return f"gbft:{seed}:{index}" if shard[1] == 1 else f"gbft:{seed}:shard{shard[0]}of{shard[1]}:{index}"


def case_seed(seed: int, index: int, shard: tuple[int, int] = (1, 1)) -> int:
    """A 31-bit seed for case ``index`` of campaign ``seed`` (weights and inputs); in shard
    (I, N) always ``== I - 1 (mod N)``: the residue class that keeps shards disjoint."""
    h = hashlib.sha256(stream_key(seed, index, shard).encode()).digest()
    s = int.from_bytes(h[:4], "little") & SEED_MASK
    i, n = shard
    if n == 1:
        return s
    s = s - s % n + (i - 1)
    return s if s <= SEED_MASK else s - n  # still in the class, and 31-bit


def shard_of_seed(seed: int, n: int) -> int:
    """The shard (1-based) of N that can draw case seed ``seed``."""
    return seed % n + 1


def case_rng(seed: int, index: int, shard: tuple[int, int] = (1, 1)) -> random.Random:
    return random.Random(stream_key(seed, index, shard))


class CaseSource(Protocol):
    def next_graph(self, index: int) -> Graph: ...

    def feedback(self, index: int, graph: Graph, record: CaseRecord) -> None: ...

    def state(self) -> dict[str, object]: ...


class RandomSource:
    """Random block choice: every node's block is drawn from the whole corpus."""

    def __init__(self, corpus: Corpus, opts: GenOptions, seed: int, shard: tuple[int, int] = (1, 1)) -> None:
        self.corpus, self.opts, self.seed, self.shard = corpus, opts, seed, shard

    def next_graph(self, index: int) -> Graph:
        g = generate(case_rng(self.seed, index, self.shard), self.corpus, self.opts,
                     case_seed(self.seed, index, self.shard))
        g.meta["index"] = index
        return g

    def feedback(self, index: int, graph: Graph, record: CaseRecord) -> None:
        return None

    def state(self) -> dict[str, object]:
        return {"chooser": "random"}
