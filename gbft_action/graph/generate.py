"""Input mutator, generation half (paper III-G, Algorithm 1 lines 16-18).

A random graph (WS or RN) gives the data flows; each node gets a block whose
allowed in- and out-degrees match the node's; subgraph blocks are expanded into
their inner operators; the solver makes shapes and parameters valid.  A share of
the cases (``special_share``) feeds special values (NaN, Inf, -0, zero divisors)
on purpose; the others are guarded so that no such value arises by accident.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..records.config import Config
from ..corpus import Block, Corpus
from .ir import Graph, TensorType
from .models import make_graph, trim_degrees
from .solver import Builder, GenError, Narrow

GRAPH_MODELS = ("ws", "rn")


@dataclass(frozen=True)
class GenOptions:
    blocks: tuple[int, int] = (1, 30)  # number of graph nodes (blocks) per model
    graph: str = "both"  # ws | rn | both
    height: tuple[int, int] = (1, 16)
    width: tuple[int, int] = (1, 16)
    channels: tuple[int, int] = (1, 8)
    special_share: float = 0.1  # share of models whose inputs hold special values (Graph.values)

    @staticmethod
    def of(cfg: Config) -> GenOptions:
        """A campaign's options (its configuration's blocks, graph and special share), checked."""
        opts = GenOptions(blocks=cfg.blocks, graph=cfg.graph, special_share=cfg.special_share)
        opts.validate()
        return opts

    def validate(self) -> None:
        lo, hi = self.blocks
        if not 1 <= lo <= hi:
            raise ValueError(f"blocks must be MIN-MAX with 1 <= MIN <= MAX, got {lo}-{hi}")
        if self.graph not in (*GRAPH_MODELS, "both"):
            raise ValueError(f"graph must be one of ws, rn, both; got {self.graph!r}")
        if not 0.0 <= self.special_share <= 1.0:
            raise ValueError(f"special share must be within 0..1, got {self.special_share!r}")

    def values_of(self, seed: int) -> str:
        """What the inputs of the case of this seed hold (draw_values at this share)."""
        return draw_values(seed, self.special_share)


@dataclass
class Skeleton:
    """The block-level graph before realisation: what mutations work on."""

    model: str
    k: int
    n: int
    edges: list[tuple[int, int]]
    blocks: list[str] = field(default_factory=list)
    input_shape: tuple[int, ...] = ()
    # Mutants: subgraph blocks changed by BNA/BNR (by node), parameter values
    # fixed by PM (by "node#inner-op"); the solver repairs them like any draw.
    overrides: dict[int, Block] = field(default_factory=dict)
    fixed_params: dict[str, dict[str, object]] = field(default_factory=dict)
    values: str = "normal"  # Graph.values: mutations keep it, realise passes it on

    def block_of(self, corpus: Corpus, j: int) -> Block:
        return self.overrides.get(j) or corpus.block(self.blocks[j])

    def preds(self, j: int) -> list[int]:
        return [a for a, b in self.edges if b == j]

    def out_degree(self, j: int) -> int:
        return sum(1 for a, _ in self.edges if a == j)


def draw_skeleton(rng: random.Random, corpus: Corpus, opts: GenOptions,
                  chosen: list[Block] | None = None) -> Skeleton:
    sk = draw_edges(rng, corpus, opts)
    sk.blocks = [assign_block(rng, corpus, chosen, sk, j).name for j in range(sk.n)]
    return sk


def draw_edges(rng: random.Random, corpus: Corpus, opts: GenOptions,
               arm: tuple[str, int] | None = None) -> Skeleton:
    """The data-flow graph and input shape only; blocks are assigned later.

    ``arm`` fixes the graph model and k (guided generation picks them);
    otherwise both are drawn as the paper does.
    """
    n = rng.randint(*opts.blocks)
    model = rng.choice(GRAPH_MODELS) if opts.graph == "both" else opts.graph
    if arm is not None:
        model = arm[0]
    model, k, edges = make_graph(rng, model, n, arm[1] if arm else None)
    edges = trim_degrees(rng, n, edges, *max_degrees(corpus))
    sk = Skeleton(model, k, n, edges)
    sk.input_shape = corpus_input_shape(rng, corpus, opts)
    return sk


def max_degrees(corpus: Corpus) -> tuple[int, int]:
    return (max(max(b.in_degree) for b in corpus.blocks), max(max(b.out_degree) for b in corpus.blocks))


def draw_input_shape(rng: random.Random, opts: GenOptions) -> tuple[int, ...]:
    return (1, rng.randint(*opts.height), rng.randint(*opts.width), rng.randint(*opts.channels))


def corpus_input_shape(rng: random.Random, corpus: Corpus, opts: GenOptions) -> tuple[int, ...]:
    """``draw_input_shape`` laid out as the corpus's front end wants: NHWC for TF, NCHW for ONNX
    (as exported models are; the same draws, so the same rng stream)."""
    b, h, w, c = draw_input_shape(rng, opts)
    return (b, c, h, w) if corpus.frontend == "onnx" else (b, h, w, c)


def assign_block(rng: random.Random, corpus: Corpus, chosen: list[Block] | None,
                 sk: Skeleton, j: int) -> Block:
    """A block whose degree sets admit node j's, preferring the chosen blocks."""
    d_in = max(1, len(sk.preds(j)))
    d_out = sk.out_degree(j)
    for pool in (chosen or [], corpus.blocks):
        cands = [b for b in pool if d_in in b.in_degree and d_out in b.out_degree]
        if cands:
            return rng.choice(cands)
    raise GenError(f"no block in the corpus takes in-degree {d_in} and out-degree {d_out}")


def draw_values(seed: int, share: float) -> str:
    """"special" for ``share`` of the cases, from the case seed alone.

    A stream of its own: every attempt at a case gets the same flag, and no
    other draw of the generator moves.
    """
    return "special" if random.Random(f"gbft-values:{seed}").random() < share else "normal"


def realise(rng: random.Random, corpus: Corpus, sk: Skeleton, seed: int, narrow: Narrow | None = None) -> Graph:
    """Turn a skeleton into a valid IR graph (shapes and parameters solved; ``narrow``: the
    parameter domains steering leaves each node)."""
    b = Builder(rng, seed, sk.values, corpus.reg, narrow)
    x = b.add_input("in0", TensorType(sk.input_shape))
    out: list[str] = []
    for j in range(sk.n):
        inputs = [out[p] for p in sk.preds(j)] or [x]
        out.append(_place_block(b, sk.block_of(corpus, j), inputs, j, sk.fixed_params))
    meta = {"model": sk.model, "k": sk.k, "n": sk.n, "edges": [list(e) for e in sk.edges], "blocks": list(sk.blocks)}
    meta.update(corpus.reg.meta())
    if sk.overrides:
        meta["mutant_blocks"] = {str(j): {"ops": list(bl.ops), "inner_edges": [list(e) for e in bl.inner_edges]}
                                 for j, bl in sorted(sk.overrides.items())}
    return b.finish(meta)


def _place_block(b: Builder, block: Block, inputs: list[str], j: int,
                 fixed: dict[str, dict[str, object]]) -> str:
    if not block.is_subgraph:
        return b.add_op(block.ops[0], inputs, block.params[0], block=block.name, gnode=j,
                        fixed=fixed.get(f"{j}#0"))
    inner: dict[int, str] = {}
    entries = block.entries
    for i, op in enumerate(block.ops):
        if i in entries:
            ins = [inputs[entries.index(i) % len(inputs)]]
        else:
            ins = [inner[p] for p in block.inner_preds(i)]
        inner[i] = b.add_op(op, ins, block.params[i], block=f"{block.name}#{i}", gnode=j,
                            fixed=fixed.get(f"{j}#{i}"))
    return inner[block.exit]


def generate(rng: random.Random, corpus: Corpus, opts: GenOptions, seed: int,
             chosen: list[Block] | None = None) -> Graph:
    sk = draw_skeleton(rng, corpus, opts, chosen)
    sk.values = draw_values(seed, opts.special_share)
    return realise(rng, corpus, sk, seed)
