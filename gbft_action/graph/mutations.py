"""The paper's six mutations (III-F) as small passes over a skeleton.

Model level, with rate r in {0, 0.1, 0.2}: GEA adds ceil(|E| r) edges, GER
removes floor(|E| r) edges, BNA duplicates an operator in each subgraph block
with probability r, BNR removes one with probability r.  Source level: TSM
changes the input tensor shape, PM sets one parameter to a random value of its
domain.  Each pass returns whether it changed anything.  Validity is not the
passes' concern: blocks are re-assigned where degrees changed and the solver
re-solves shapes and repairs parameters when the skeleton is realised.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from typing import Callable, Protocol

from ..corpus import Block, Corpus, subgraph_problem
from .generate import GenOptions, Skeleton, corpus_input_shape, max_degrees

RATES = (0.0, 0.1, 0.2)


class Mutation(Protocol):
    @property
    def name(self) -> str: ...  # read-only: the mutations are frozen dataclasses

    @property
    def level(self) -> str: ...  # "edges" (before block assignment) | "blocks" | "source"

    def apply(self, rng: random.Random, sk: Skeleton, corpus: Corpus, r: float) -> bool: ...


@dataclass(frozen=True)
class GEA:
    name: str = "GEA"
    level: str = "edges"

    def apply(self, rng: random.Random, sk: Skeleton, corpus: Corpus, r: float) -> bool:
        want = math.ceil(len(sk.edges) * r)
        max_in, max_out = max_degrees(corpus)
        present = set(sk.edges)
        cands = [(i, j) for i in range(sk.n) for j in range(i + 1, sk.n) if (i, j) not in present]
        rng.shuffle(cands)
        added = 0
        for i, j in cands:
            if added >= want:
                break
            if sk.out_degree(i) < max_out and len(sk.preds(j)) < max_in:
                sk.edges.append((i, j))
                added += 1
        sk.edges.sort()
        return added > 0


@dataclass(frozen=True)
class GER:
    name: str = "GER"
    level: str = "edges"

    def apply(self, rng: random.Random, sk: Skeleton, corpus: Corpus, r: float) -> bool:
        k = math.floor(len(sk.edges) * r)
        if k <= 0:
            return False
        drop = set(rng.sample(sk.edges, k))
        sk.edges = [e for e in sk.edges if e not in drop]
        return True


def _mutate_subgraphs(rng: random.Random, sk: Skeleton, corpus: Corpus, r: float, min_ops: int,
                      surgery: Callable[[Block, int], Block | None]) -> bool:
    """Apply ``surgery`` at a random inner op of each subgraph node, with probability r."""
    changed = False
    for j in range(sk.n):
        b = sk.block_of(corpus, j)
        if not b.is_subgraph or len(b.ops) < min_ops or rng.random() >= r:
            continue
        mutant = surgery(b, rng.randrange(len(b.ops)))
        if mutant is not None and subgraph_problem(mutant, corpus.specs) is None and max(1, len(sk.preds(j))) in mutant.in_degree:
            sk.overrides[j] = mutant
            changed = True
    return changed


@dataclass(frozen=True)
class BNA:
    """Duplicate an inner operator of a subgraph block, in series after itself."""

    name: str = "BNA"
    level: str = "blocks"

    def apply(self, rng: random.Random, sk: Skeleton, corpus: Corpus, r: float) -> bool:
        return _mutate_subgraphs(rng, sk, corpus, r, 2, duplicate_op)


@dataclass(frozen=True)
class BNR:
    """Remove an inner operator (and its edges) from a subgraph block."""

    name: str = "BNR"
    level: str = "blocks"

    def apply(self, rng: random.Random, sk: Skeleton, corpus: Corpus, r: float) -> bool:
        return _mutate_subgraphs(rng, sk, corpus, r, 3, remove_op)


@dataclass(frozen=True)
class TSM:
    name: str = "TSM"
    level: str = "source"
    opts: GenOptions = GenOptions()

    def apply(self, rng: random.Random, sk: Skeleton, corpus: Corpus, r: float) -> bool:
        old = sk.input_shape
        new = list(old)
        axis = rng.randrange(1, len(old))
        new[axis] = corpus_input_shape(rng, corpus, self.opts)[axis]
        sk.input_shape = tuple(new)
        return sk.input_shape != old


@dataclass(frozen=True)
class PM:
    name: str = "PM"
    level: str = "source"

    def apply(self, rng: random.Random, sk: Skeleton, corpus: Corpus, r: float) -> bool:
        j = rng.randrange(sk.n)
        b = sk.block_of(corpus, j)
        i = rng.randrange(len(b.ops))
        doms = {**corpus.specs[b.ops[i]].domains, **b.params[i]}
        if not doms:
            return False
        name = rng.choice(sorted(doms))
        sk.fixed_params.setdefault(f"{j}#{i}", {})[name] = doms[name].draw(rng)
        return True


ALL: tuple[Mutation, ...] = (GEA(), GER(), BNA(), BNR(), TSM(), PM())


# --------------------------------------------------------------------------- subgraph surgery


def duplicate_op(b: Block, i: int) -> Block:
    """Insert a copy of op i right after it: i -> i' -> (old successors of i)."""
    def shift(x: int) -> int:
        return x + 1 if x > i else x

    edges = [(shift(s), shift(d)) if s != i else (i + 1, shift(d)) for s, d in b.inner_edges]
    edges.append((i, i + 1))
    ops = b.ops[: i + 1] + (b.ops[i],) + b.ops[i + 1:]
    params = b.params[: i + 1] + (b.params[i],) + b.params[i + 1:]
    return replace(b, name=f"{b.name}+BNA", ops=ops, inner_edges=tuple(sorted(edges)), params=params)


def remove_op(b: Block, i: int) -> Block | None:
    """Drop op i; its predecessors feed its successors directly."""
    preds = [s for s, d in b.inner_edges if d == i]
    succs = [d for s, d in b.inner_edges if s == i]
    if i == b.exit and len(preds) != 1:
        return None

    def shift(x: int) -> int:
        return x - 1 if x > i else x

    edges = [(s, d) for s, d in b.inner_edges if i not in (s, d)]
    edges += [(p, s) for p in preds for s in succs]
    edges = [(shift(s), shift(d)) for s, d in edges]
    ops = b.ops[:i] + b.ops[i + 1:]
    params = b.params[:i] + b.params[i + 1:]
    n_entries = len({*range(len(ops))} - {d for _, d in edges})
    in_deg = frozenset(d for d in b.in_degree if d <= n_entries) or frozenset({1})
    return replace(b, name=f"{b.name}-BNR", ops=ops, inner_edges=tuple(sorted(edges)), params=params,
                   in_degree=in_deg)
