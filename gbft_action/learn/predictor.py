"""The coverage predictor (issue 38, the patent's step 4): a heterogeneous graph network.

The patent's HGCN: one weight matrix per edge type, each node's vector updated from the sum of
its neighbours' along each relation, an activation between layers.  Here that is PyG's
``HeteroConv`` over one node type and the relations of search.features (the input slot an
edge feeds, and the reverse of every edge), each a ``GraphConv`` (its own weights, the node's
own term kept), summed over the relations; the graph's vector is the sum and the mean of its
nodes', and a small network reads per-module coverage off it: log1p(blocks), scaled per
module, so that a module of a hundred blocks counts as much as one of ten thousand.

Trained with PyTorch (the ``learn`` extra), exported to ONNX for the fuzz loop (search.learned
runs it with ONNX Runtime; the pull-request job needs no training framework).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn
from torch_geometric.nn import GraphConv, HeteroConv

from ..records.learned import DatasetRow
from ..search.features import RELATIONS, Encoder, FeatureGraph

NODE = "op"
HIDDEN = 64


class CoverageNet(nn.Module):
    """Node features and one edge-index array per relation -> per-module scaled coverage."""

    def __init__(self, width: int, modules: int, hidden: int = HIDDEN, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Linear(width, hidden)
        self.convs = nn.ModuleList(
            HeteroConv({(NODE, r, NODE): GraphConv(hidden, hidden, aggr="add") for r in RELATIONS}, aggr="sum")
            for _ in range(layers))
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, modules))

    def nodes(self, x: torch.Tensor, edges: Sequence[torch.Tensor]) -> torch.Tensor:
        h = torch.relu(self.embed(x))
        index = {(NODE, r, NODE): e for r, e in zip(RELATIONS, edges)}
        for conv in self.convs:
            # A residual step: a node with no edge of any relation keeps its own vector.
            h = h + torch.relu(conv({NODE: h}, index)[NODE])
        return h

    def read(self, total: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
        """Per-module coverage from the graphs' sums of node vectors and their node counts."""
        return self.head(torch.cat([total / 10.0, total / count.clamp(min=1.0)], dim=1))

    def forward(self, x: torch.Tensor, batch: torch.Tensor, graphs: int, *edges: torch.Tensor) -> torch.Tensor:
        h = self.nodes(x, edges)
        total = torch.zeros(graphs, h.shape[1], dtype=h.dtype).index_add(0, batch, h)
        count = torch.zeros(graphs, 1, dtype=h.dtype).index_add(0, batch, torch.ones(h.shape[0], 1, dtype=h.dtype))
        return self.read(total, count)


class SingleGraph(nn.Module):
    """The network on one model, as ONNX exports it: (x, the relations' edges) -> coverage."""

    def __init__(self, net: CoverageNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor, *edges: torch.Tensor) -> torch.Tensor:
        h = self.net.nodes(x, edges)
        return self.net.read(h.sum(0, keepdim=True), (h[:, :1] * 0 + 1).sum(0, keepdim=True))


@dataclass
class Encoded:
    x: np.ndarray
    edges: list[np.ndarray]
    y: np.ndarray  # per module, scaled
    key: str


def targets(rows: Sequence[DatasetRow]) -> tuple[tuple[str, ...], np.ndarray]:
    """The modules any row ran (sorted) and each one's scale: its largest log1p(blocks)."""
    modules = tuple(sorted({m for r in rows for m in r.modules}))
    scale = np.array([max(math.log1p(r.modules.get(m, 0)) for r in rows) or 1.0 for m in modules], np.float32)
    return modules, scale


def encode(rows: Sequence[DatasetRow], enc: Encoder, modules: Sequence[str], scale: np.ndarray) -> list[Encoded]:
    out = []
    for r in rows:
        g = FeatureGraph.from_json(r.features)
        y = np.array([math.log1p(r.modules.get(m, 0)) for m in modules], np.float32) / scale
        out.append(Encoded(enc.nodes(g), enc.relations(g), y, r.key))
    return out


def held_out(key: str, share: float = 0.2) -> bool:
    """Whether a row is in the test split: by a hash of its key (the same split every time)."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0x100000000 < share


def _batch(items: Sequence[Encoded]) -> tuple[torch.Tensor, torch.Tensor, int, list[torch.Tensor]]:
    xs, batch = [], []
    edges: list[list[np.ndarray]] = [[] for _ in RELATIONS]
    off = 0
    for k, it in enumerate(items):
        xs.append(it.x)
        batch.append(np.full(it.x.shape[0], k, np.int64))
        for r, e in enumerate(it.edges):
            edges[r].append(e + off)
        off += it.x.shape[0]
    return (torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(batch)), len(items),
            [torch.from_numpy(np.concatenate(e, axis=1)) for e in edges])


def train(data: Sequence[Encoded], width: int, modules: int, epochs: int = 60, seed: int = 0,
          batch: int = 64, log: Any = None) -> CoverageNet:
    torch.manual_seed(seed)
    rng = random.Random(seed)
    net = CoverageNet(width, modules)
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    order = list(data)
    for epoch in range(epochs):
        rng.shuffle(order)
        net.train()
        total = 0.0
        for i in range(0, len(order), batch):
            part = order[i:i + batch]
            x, b, n, edges = _batch(part)
            y = torch.from_numpy(np.stack([it.y for it in part]))
            loss = nn.functional.mse_loss(net(x, b, n, *edges), y)
            opt.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            opt.step()
            total += loss.item() * len(part)
        if log is not None and (epoch % 10 == 9 or epoch == epochs - 1):
            log(f"train: epoch {epoch + 1}/{epochs}: loss {total / max(1, len(order)):.4f}")
    net.eval()
    return net


def predict(net: CoverageNet, data: Sequence[Encoded], batch: int = 256) -> np.ndarray:
    out = []
    with torch.no_grad():
        for i in range(0, len(data), batch):
            x, b, n, edges = _batch(data[i:i + batch])
            out.append(net(x, b, n, *edges).numpy())
    return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


def export(net: CoverageNet, width: int, path: Path) -> None:
    """The network on one model as ONNX (opset 18): inputs x [N, F] and one [2, E] int64 array
    per relation (any N and E, none at all included)."""
    one = SingleGraph(net).eval()
    x = torch.zeros(3, width)
    edges = tuple(torch.tensor([[0, 1], [1, 2]], dtype=torch.int64) for _ in RELATIONS)
    names = [f"edges_{r}" for r in RELATIONS]
    axes: dict[str, dict[int, str]] = {"x": {0: "nodes"}, **{n: {1: f"e_{n}"} for n in names}}
    torch.onnx.export(one, (x, *edges), str(path), input_names=["x", *names], output_names=["coverage"],
                      dynamic_axes=axes, opset_version=18, dynamo=False)
