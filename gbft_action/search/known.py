"""Known failures steer generation away from themselves (issue 24 item 5).

A model that fails on a defect the campaign already knows cannot show an unknown one: on
both builds of a pull request it fails the same way, so a regression inside it is
invisible.  MNN fails 46% of random ONNX models, mostly on a handful of defects, so
without steering half of the budget is blind.

What is learned, from each judged model in index order (``observe``): per *trigger* (an
operator, and the operator with one of its discrete parameter values, ``"GridSample"`` and
``"GridSample.padding_mode=reflection"``), how many nodes carried it, and how many of those
were the node a failure was localised to; for failures no operator is named for (a
converter crash), how much more often models carrying it failed so than models at large.
A trigger is *settled* once ``SETTLE`` failures are on it; its risk is then that share.
A node's risk is its riskiest settled trigger's.

How it steers: the block chooser scores a block down by its operators' settled risk
(``op_risk``), so models are built from other blocks; the solver draws each node's parameters
from domains without the settled risky values (``narrow``), so an operator that fails only
with one value (MatMul by a 1-D operand) keeps its place; and (``keep``) a generated model is
kept with probability ``1 - STRENGTH * max(risk(node))``, drawn from a stream of its own; a
model not kept gives way to the case's next attempt (search.guided: no extra draws).  Like NNSmith's ``filter.py`` it names known false alarms, but it steers
instead of hiding: a known defect's operator still shows up (rarely), and nothing found is
dropped from the reports.

Deterministic: the counts change only through ``observe``, which the campaign calls in
index order, so the same seed, corpus and engine give the same models.  ``to_json`` /
``from_json``: the counts travel in state.json, so ``--state`` starts from what an earlier
run learned.
"""

from __future__ import annotations

from collections.abc import Mapping
import random
from typing import Any

from ..graph.ir import Graph, Node
from ..ops.domains import Choice, Domain
from ..oracle import ENGINE_FAILURES
from ..records.case import CaseRecord, PlatformRecord
from ..records import Status

PROBE = "probe"  # graph meta of a probe case (search.probe): one operator alone

SETTLE = 3  # failures on a trigger before it steers: one or two may be a fluke of one model
STRENGTH = 0.9  # how hard a settled trigger is avoided: 1 would never show it again
FULL_RISK = 0.25  # a settled share from which a trigger is avoided as hard as one that always fails
PRIOR = 2.0  # pseudo-count of passing nodes: a trigger failing 3 of 3 times has a share of 0.6
FAILING = {*ENGINE_FAILURES, Status.TIMEOUT}


def triggers(n: Node) -> list[str]:
    """The operator, and the operator with each discrete parameter value (enums, booleans,
    small integers: what a defect hinges on, like ``batch_dims=1``; never floats or lists)."""
    return [n.op] + [f"{n.op}.{k}={v}" for k, v in sorted(n.params.items()) if _discrete(k, v)]


def _discrete(k: str, v: Any) -> bool:
    """A parameter value that may be a trigger: an enum, a boolean, a small integer, or a
    recorded operator's instance (ops.recorded: each is its own attributes and types)."""
    return isinstance(v, (str, bool)) or (isinstance(v, int) and (-8 <= v <= 8 or k == "instance"))


class KnownFailures:
    def __init__(self) -> None:
        self.seen: dict[str, int] = {}  # nodes carrying the trigger
        self.failed: dict[str, int] = {}  # ... that a failure was localised to
        self.models = 0
        self.present: dict[str, int] = {}  # models carrying the trigger
        self.anonymous: dict[str, int] = {}  # ... that failed with no operator named (a crash)
        self.anonymous_total = 0
        self.steered = 0  # attempts not run because they carried settled triggers
        self._settled_ops: set[str] | None = None
        self._any: bool | None = None
        # Recorded operators' instances run alone this campaign (search.probe): per operator,
        # the instances probed and those that failed.  Proof, not a share: a failing instance
        # is never drawn again, an operator none of whose instances works never placed.  Not
        # in the state file: the next campaign (another build) probes again.
        self.probed: dict[str, set[int]] = {}
        self.failed_alone: dict[str, set[int]] = {}

    def observe(self, g: Graph, record: CaseRecord) -> None:
        """Count one judged model: its nodes' triggers, the failing node's as failures; a probe
        (one recorded instance alone) as what it proves."""
        if PROBE in g.meta:
            self._observe_probe(str(g.meta[PROBE][0]), int(g.meta[PROBE][1]), record)
            return
        self._settled_ops = self._any = None
        block = g.block_nodes() or list(g.nodes)  # adapters the solver inserted are no one's trigger
        mine = {t for n in block for t in triggers(n)}
        self.models += 1
        for n in block:
            for t in triggers(n):
                self.seen[t] = self.seen.get(t, 0) + 1
        for t in mine:
            self.present[t] = self.present.get(t, 0) + 1
        failing = next((r for r in record.per_platform() if r.status in FAILING), None)
        if failing is None:
            return  # one model, one failure: its other platforms show the same trigger
        culprits = _culprits(g, failing, block)
        if culprits:
            for t in {t for n in culprits for t in triggers(n)}:
                self.failed[t] = self.failed.get(t, 0) + 1
            return
        # No operator named: every trigger of the model was there; only those present in such
        # failures more often than in models at large (LSTM crashing the converter whenever it
        # is in a model) stand out (``share``), not the operators that are simply common.
        self.anonymous_total += 1
        for t in mine:
            self.anonymous[t] = self.anonymous.get(t, 0) + 1

    def _observe_probe(self, op: str, k: int, record: CaseRecord) -> None:
        self.probed.setdefault(op, set()).add(k)
        if any(r.status in FAILING for r in record.per_platform()):
            self.failed_alone.setdefault(op, set()).add(k)

    def excluded(self, op: str) -> bool:
        """Whether every probed instance of ``op`` failed alone: placing it only fails models."""
        return bool(self.probed.get(op)) and self.failed_alone.get(op, set()) >= self.probed[op]

    def fails_alone(self, n: Node) -> bool:
        """Whether node n is a recorded instance (or operator) proven to fail alone."""
        return self.excluded(n.op) or n.params.get("instance") in self.failed_alone.get(n.op, ())

    def settled_any(self) -> bool:
        """Whether any trigger has settled (read for every attempt: cached until observe)."""
        if self._any is None:
            self._any = any(f >= SETTLE for f in (*self.failed.values(), *self.anonymous.values()))
        return self._any

    def risk(self, n: Node) -> float:
        """How hard to steer away from n, 0 to 1: its riskiest settled trigger's share, as a
        share of FULL_RISK (a quarter of its nodes failing is as good as all: MNN's Less fails
        only where both operands are negative, and stayed in 4% of the models at its plain
        share).  Where some parameter value of n's operator has settled, the parameter values
        tell (a GridSample with padding zeros is not the reflection one that fails); else
        the operator does."""
        params = triggers(n)[1:]
        shares = [self.share(t) for t in params] if params and n.op in self._by_params() else [self.share(n.op)]
        return min(1.0, max(shares, default=0.0) / FULL_RISK)

    def _by_params(self) -> set[str]:
        """Operators with a settled parameter-value trigger (cached until the next observe)."""
        if self._settled_ops is None:
            self._settled_ops = {t.split(".", 1)[0] for t in {*self.failed, *self.anonymous}
                                 if "." in t and self.share(t) > 0}
        return self._settled_ops

    def op_risk(self, op: str) -> float:
        """An operator's settled share whatever its parameters (the block chooser's view: the
        parameters are drawn later)."""
        return self.share(op)

    def share(self, trigger: str) -> float:
        """A settled trigger's failure share (0 until it is settled): of its nodes, the share a
        failure was localised to; of its models, how much more often than any model it failed
        with no operator named."""
        f, a = self.failed.get(trigger, 0), self.anonymous.get(trigger, 0)
        located = f / (self.seen.get(trigger, 0) + PRIOR) if f >= SETTLE else 0.0
        lift = a / (self.present.get(trigger, 0) + PRIOR) - self.anonymous_total / max(1, self.models) \
            if a >= SETTLE else 0.0
        return max(located, lift)

    def narrow(self, op: str, doms: dict[str, Domain], rng: random.Random) -> dict[str, Domain]:
        """``op``'s parameter domains with each settled risky value of a choice left out, with
        probability STRENGTH times its risk (drawn from ``rng``): the generator still places the
        operator, with the values that are not known to fail.  Without it an operator young in
        coverage (steering kept it rare, so its shape vectors stayed few) came back in bulk and
        with it its failing value: twenty MatMul nodes a model, one of them a 1-D operand, and
        two bursts of 400 models in a row failing on the known "0 of N outputs" defect.  A
        choice never loses every value."""
        doms = self.narrow_proven(op, doms)
        if op not in self._by_params():
            return doms
        out = dict(doms)
        for k, d in sorted(doms.items()):
            if not isinstance(d, Choice):
                continue
            left = tuple(v for v in d.values if not (self._trigger_risk(op, k, v) > 0
                                                    and rng.random() < STRENGTH * self._trigger_risk(op, k, v)))
            if left and left != d.values:
                out[k] = Choice(left)
        return out

    def narrow_proven(self, op: str, doms: dict[str, Domain], rng: random.Random | None = None) -> dict[str, Domain]:
        """``op``'s domains without the instances proven to fail alone (every draw, steered or
        not: exploring them finds only the failure its probe reported)."""
        bad = self.failed_alone.get(op)
        d = doms.get("instance")
        if not bad or not isinstance(d, Choice):
            return doms
        left = tuple(v for v in d.values if v not in bad)
        return {**doms, "instance": Choice(left)} if left else doms

    def _trigger_risk(self, op: str, k: str, v: Any) -> float:
        if not _discrete(k, v):
            return 0.0  # not a trigger (triggers)
        return min(1.0, self.share(f"{op}.{k}={v}") / FULL_RISK)

    def keep(self, g: Graph, rng: random.Random) -> bool:
        """Whether to run g: with probability 1 - STRENGTH * (its riskiest node's risk).  Not a
        product over nodes: an operator that fails on some parameters (Conv, a quarter of the
        time) is in most models, and a product would reject nearly every model."""
        if not self.failed:
            return True  # nothing known: no draw, so an unsteered campaign's streams are untouched
        worst = max((self.risk(n) for n in g.block_nodes()), default=0.0)
        return rng.random() >= STRENGTH * worst

    def settled(self) -> dict[str, float]:
        """Settled triggers and their risk, riskiest first (the summary shows them)."""
        rows = {t: round(self.share(t), 3) for t in {*self.failed, *self.anonymous}}
        return dict(sorted(((t, v) for t, v in rows.items() if v > 0), key=lambda kv: (-kv[1], kv[0])))

    def to_json(self) -> dict[str, object]:
        return {name: (dict(sorted(v.items())) if isinstance(v, dict) else v) for name, v in self._counts().items()}

    def _counts(self) -> dict[str, object]:
        return {"seen": self.seen, "failed": self.failed, "models": self.models, "present": self.present,
                "anonymous": self.anonymous, "anonymous_total": self.anonymous_total}

    @staticmethod
    def from_json(d: Mapping[str, Any] | None) -> KnownFailures:
        k = KnownFailures()
        d = d or {}
        for name in ("seen", "failed", "present", "anonymous"):
            setattr(k, name, {str(t): int(v) for t, v in d.get(name, {}).items()})
        k.models, k.anonymous_total = int(d.get("models", 0)), int(d.get("anonymous_total", 0))
        return k


def _culprits(g: Graph, r: PlatformRecord, block: list[Node]) -> list[Node]:
    """The node a failure was localised to; else the nodes of the operator it names; else
    none (a crash no operator was named for)."""
    if r.node in {n.id for n in g.nodes}:
        return [g.node(r.node)]
    return [n for n in block if n.op == r.op]
