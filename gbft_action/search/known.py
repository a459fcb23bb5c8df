"""Known failures steer generation away from themselves (issue 24 item 5).

A model that fails on a defect the campaign already knows cannot show an unknown one: on
both builds of a pull request it fails the same way, so a regression inside it is
invisible.  MNN fails 46% of random ONNX models, mostly on a handful of defects, so
without steering half of the budget is blind.

What is learned, from each judged model in index order (``observe``): per *trigger* (an
operator, and the operator with one of its discrete parameter values, ``"GridSample"`` and
``"GridSample.padding_mode=reflection"``), how many nodes carried it, and how many of those
were the node a failure was localised to (or, for a failure no operator is known for, any
node of the model).  A trigger is *settled* once ``SETTLE`` failures are on it; its risk is
then its failure share.  A node's risk is its riskiest settled trigger's.

How it steers: the block chooser scores a block down by its operators' settled risk
(``share``), so models are built from other blocks; and (``keep``) a generated model is kept with probability
``prod(1 - STRENGTH * risk(node))``, drawn from a stream of its own; a model not kept is
drawn again.  Like NNSmith's ``filter.py`` it names known false alarms, but it steers
instead of hiding: a known defect's operator still shows up (rarely), and nothing found is
dropped from the reports.

Deterministic: the counts change only through ``observe``, which the campaign calls in
index order, so the same seed, corpus and engine give the same models.  ``to_json`` /
``from_json``: the counts travel in state.json, so ``--state`` starts from what an earlier
run learned.

May import: graph.ir, oracle (statuses) only.
"""

from __future__ import annotations

import random
from typing import Any

from ..graph.ir import Graph, Node
from ..oracle import ENGINE_FAILURES, Status

SETTLE = 3  # failures on a trigger before it steers: one or two may be a fluke of one model
STRENGTH = 0.95  # how hard a settled trigger is avoided: 1 would never show it again
PRIOR = 2.0  # pseudo-count of passing nodes: a trigger failing 3 of 3 times has risk 0.6
FAILING = {str(s) for s in (*ENGINE_FAILURES, Status.TIMEOUT)}


def triggers(n: Node) -> list[str]:
    """The operator, and the operator with each discrete parameter value (enums, booleans,
    small integers: what a defect hinges on, like ``batch_dims=1``; never floats or lists)."""
    out = [n.op]
    for k, v in sorted(n.params.items()):
        if isinstance(v, (str, bool)) or (isinstance(v, int) and -8 <= v <= 8):
            out.append(f"{n.op}.{k}={v}")
    return out


class KnownFailures:
    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self.failed: dict[str, int] = {}
        self.steered = 0  # models drawn again because they carried settled triggers

    def observe(self, g: Graph, record: dict[str, Any]) -> None:
        """Count one judged model: every node's triggers, and the failing node's as failures."""
        block = g.block_nodes() or list(g.nodes)  # adapters the solver inserted are no one's trigger
        for n in block:
            for t in triggers(n):
                self.seen[t] = self.seen.get(t, 0) + 1
        for r in (record, *record.get("others", [])):
            if r.get("status") in FAILING:
                for n in _culprits(g, r, block):
                    for t in triggers(n):
                        self.failed[t] = self.failed.get(t, 0) + 1
                return  # one model, one failure: its other platforms show the same trigger

    def settled_any(self) -> bool:
        return any(f >= SETTLE for f in self.failed.values())

    def risk(self, n: Node) -> float:
        return max(self.share(t) for t in triggers(n))

    def share(self, trigger: str) -> float:
        """A settled trigger's failure share (0 until it is settled)."""
        f = self.failed.get(trigger, 0)
        return f / (self.seen.get(trigger, 0) + PRIOR) if f >= SETTLE else 0.0

    def keep(self, g: Graph, rng: random.Random) -> bool:
        """Whether to run g: with probability prod(1 - STRENGTH * risk) over its nodes."""
        if not self.failed:
            return True  # nothing known: no draw, so an unsteered campaign's streams are untouched
        p = 1.0
        for n in g.block_nodes():
            p *= 1.0 - STRENGTH * self.risk(n)
        return rng.random() < p

    def settled(self) -> dict[str, float]:
        """Settled triggers and their risk, riskiest first (the summary shows them)."""
        rows = {t: round(f / (self.seen.get(t, 0) + PRIOR), 3) for t, f in self.failed.items() if f >= SETTLE}
        return dict(sorted(rows.items(), key=lambda kv: (-kv[1], kv[0])))

    def to_json(self) -> dict[str, Any]:
        return {"seen": dict(sorted(self.seen.items())), "failed": dict(sorted(self.failed.items()))}

    @staticmethod
    def from_json(d: dict[str, Any] | None) -> KnownFailures:
        k = KnownFailures()
        if d:
            k.seen = {str(t): int(v) for t, v in d.get("seen", {}).items()}
            k.failed = {str(t): int(v) for t, v in d.get("failed", {}).items()}
        return k


def _culprits(g: Graph, r: dict[str, Any], block: list[Node]) -> list[Node]:
    """The node a failure was localised to; else every node of its operator; else (a crash no
    operator was named for) every node, so that an operator crashing whenever present still
    stands out by its share."""
    ids = {n.id for n in g.nodes}
    if r.get("node") in ids:
        return [g.node(r["node"])]
    named = [n for n in block if n.op == r.get("op")]
    return named or block
