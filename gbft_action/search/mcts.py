"""Monte Carlo Tree Search block chooser (paper III-E, Algorithm 1).

Tree nodes are blocks; a path from the root is the set of blocks a model is
built from.  Selection descends by UCT, ``v/n + e*sqrt(ln N / n)`` with
e = 1/sqrt(2), to at most tc1 levels; a node explored tc2 times is expanded
(at most 3 children per node) with the lowest-coverage operator not on the
path, or a subgraph block containing it; the models built from the path are
the simulation; back-propagation adds the visit and the reward (new coverage
or an engine failure) to every node on the path.
"""

from __future__ import annotations

from collections.abc import Mapping
import math
import random
from dataclasses import dataclass, field
from typing import Any

from ..corpus import Block, Corpus
from .coverage import Coverage

E = 1 / math.sqrt(2)
TC1 = 10  # maximum tree depth
TC2 = 1  # explorations of a node before it is expanded
MAX_CHILDREN = 3
SUBGRAPH_P = 0.3  # chance to expand into a subgraph containing the chosen operator


@dataclass
class TreeNode:
    block: str  # "" for the root
    depth: int
    n: int = 0  # visits
    v: float = 0.0  # successes
    children: list[TreeNode] = field(default_factory=list)

    def potential(self, parent_n: int) -> float:
        if self.n == 0:
            return math.inf
        return self.v / self.n + E * math.sqrt(math.log(max(parent_n, 1)) / self.n)

    def to_json(self) -> dict[str, object]:
        return {"b": self.block, "d": self.depth, "n": self.n, "v": self.v,
                "c": [c.to_json() for c in self.children]}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> TreeNode:
        node = TreeNode(d["b"], d["d"], d["n"], d["v"])
        node.children = [TreeNode.from_json(c) for c in d["c"]]
        return node


class MCTSChooser:
    def __init__(self, corpus: Corpus, tc1: int = TC1, tc2: int = TC2, max_children: int = MAX_CHILDREN) -> None:
        self.corpus = corpus
        self.tc1, self.tc2, self.max_children = tc1, tc2, max_children
        self.root = TreeNode("", 0)

    def choose(self, rng: random.Random, cov: Coverage) -> tuple[list[Block], list[TreeNode]]:
        """Selection + expansion: the blocks on the path, and the path itself."""
        path = [self.root]
        node = self.root
        while node.depth < self.tc1:
            expandable = len(node.children) < self.max_children and (node is self.root or node.n >= self.tc2)
            if expandable:
                child = self._expand(rng, node, path, cov)
                if child is not None:
                    path.append(child)
                    break
            if not node.children:
                break
            node = max(node.children, key=lambda c: (c.potential(node.n), -node.children.index(c)))
            path.append(node)
        return [self.corpus.block(p.block) for p in path[1:]], path

    def _expand(self, rng: random.Random, node: TreeNode, path: list[TreeNode], cov: Coverage) -> TreeNode | None:
        on_path = {op for p in path[1:] for op in self.corpus.block(p.block).ops}
        siblings = {c.block for c in node.children}
        cands = [op for op in self.corpus.op_types if op not in on_path]
        if not cands:
            return None
        olc = {op: cov.olc(op) for op in cands}
        low = min(olc.values())
        op = rng.choice([o for o in cands if olc[o] <= low + 1e-12])
        blocks = [b for b in self.corpus.blocks_with_op(op) if b.name not in siblings]
        if not blocks:
            return None
        subs = [b for b in blocks if b.is_subgraph]
        own = [b for b in blocks if not b.is_subgraph]
        pick = rng.choice(subs) if subs and (not own or rng.random() < SUBGRAPH_P) else rng.choice(own or subs)
        child = TreeNode(pick.name, node.depth + 1)
        node.children.append(child)
        return child

    @staticmethod
    def backpropagate(path: list[TreeNode], reward: float, visit: bool = True) -> None:
        for node in path:
            if visit:
                node.n += 1
            node.v += reward

    def to_json(self) -> dict[str, object]:
        return {"tc1": self.tc1, "tc2": self.tc2, "max_children": self.max_children, "root": self.root.to_json()}

    def load(self, d: Mapping[str, Any]) -> None:
        self.root = TreeNode.from_json(d["root"])

    def size(self) -> int:
        stack, n = [self.root], 0
        while stack:
            node = stack.pop()
            n += 1
            stack.extend(node.children)
        return n


def combine_trees(base: dict[str, Any] | None, trees: list[dict[str, Any]]) -> dict[str, object] | None:
    """One tree from shards' trees (``MCTSChooser.to_json``) that all grew from ``base`` (the
    state they loaded; None: an empty tree): ``base + sum(tree - base)``, node by node, a node
    being its path of blocks.  Every visit of every shard counts once and the base once, so
    a campaign's tree does not double with each nightly merge.  Children keep the base's
    order, then each tree's new ones in the order of ``trees``."""
    if not trees:
        return base
    root = _combine_node(base["root"] if base else None, [t["root"] for t in trees])
    head = base or trees[0]
    return {"tc1": head["tc1"], "tc2": head["tc2"], "max_children": head["max_children"], "root": root}


def _combine_node(base: Mapping[str, Any] | None, nodes: list[dict[str, Any]]) -> dict[str, object]:
    b_n, b_v = (base["n"], base["v"]) if base else (0, 0.0)
    first = base or nodes[0]
    order: dict[str, None] = {}
    for src in ([base] if base else []) + nodes:
        order.update(dict.fromkeys(c["b"] for c in src["c"]))
    kids = []
    for block in order:
        b_child = next((c for c in base["c"] if c["b"] == block), None) if base else None
        mine = [c for nd in nodes for c in nd["c"] if c["b"] == block]
        kids.append(_combine_node(b_child, mine))
    return {"b": first["b"], "d": first["d"], "n": b_n + sum(nd["n"] - b_n for nd in nodes),
            "v": b_v + sum(nd["v"] - b_v for nd in nodes), "c": kids}
