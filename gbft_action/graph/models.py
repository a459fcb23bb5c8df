"""Random graph models of the paper (III-G): Watts-Strogatz and Residual Network.

Both return a DAG over nodes 0..n-1 as a sorted list of edges (i, j), i < j:
data flows from lower to higher index, so node order is a topological order.
"""

from __future__ import annotations

import random

import networkx as nx

Edges = list[tuple[int, int]]

WS_P = 0.5
RN_P = 0.9
NEIGHBOURS = (2, 4, 6)


def watts_strogatz(rng: random.Random, n: int, k: int, p: float = WS_P) -> Edges:
    """WS(k, p) small-world graph, oriented from lower to higher node index."""
    if n < 2:
        return []
    k = min(k, n - 1)
    if k < 2:
        return [(i, i + 1) for i in range(n - 1)]
    g = nx.watts_strogatz_graph(n, k, p, seed=rng.randrange(2**32))
    return sorted({(min(a, b), max(a, b)) for a, b in g.edges() if a != b})


def residual_network(rng: random.Random, n: int, k: int, p: float = RN_P) -> Edges:
    """RN(k, p, n) exactly as the paper defines it.

    Nodes 0..n-1 sit in a line (edges i -> i+1).  For each node i whose
    neighbour count is below k, repeat k - k_current[i] times: pick a node
    j > i with k_current[j] < k (not yet linked to i) and add the edge i -> j
    with probability p.
    """
    edges = {(i, i + 1) for i in range(n - 1)}
    deg = [0] * n
    for a, b in edges:
        deg[a] += 1
        deg[b] += 1
    for i in range(n):
        for _ in range(max(0, k - deg[i])):
            cands = [j for j in range(i + 1, n) if deg[j] < k and (i, j) not in edges]
            if not cands:
                break
            j = rng.choice(cands)
            if rng.random() < p:
                edges.add((i, j))
                deg[i] += 1
                deg[j] += 1
    return sorted(edges)


def make_graph(rng: random.Random, model: str, n: int, k: int | None = None) -> tuple[str, int, Edges]:
    """Build a graph with ``model`` ('ws' or 'rn'); k drawn from {2, 4, 6} unless given."""
    k = k or rng.choice(NEIGHBOURS)
    if model == "ws":
        return model, k, watts_strogatz(rng, n, k)
    if model == "rn":
        return model, k, residual_network(rng, n, k)
    raise ValueError(f"unknown graph model {model!r} (allowed: ws, rn)")


def trim_degrees(rng: random.Random, n: int, edges: Edges, max_in: int, max_out: int) -> Edges:
    """Drop edges so no node exceeds the largest degrees any block allows."""
    kept: Edges = []
    ins = [0] * n
    outs = [0] * n
    order = list(edges)
    rng.shuffle(order)
    # Keep the chain edges (i, i+1) first so the graph stays connected.
    order.sort(key=lambda e: e[1] - e[0] != 1)
    for a, b in order:
        if outs[a] < max_out and ins[b] < max_in:
            kept.append((a, b))
            outs[a] += 1
            ins[b] += 1
    return sorted(kept)
