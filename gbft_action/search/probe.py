"""Support probes: every recorded operator instance alone, before any random model (issue 26).

An operator known only from ONNX's test cases (``ops.recorded``) is unknown to the engine too,
until tried: half of them MNN's converter does not take, or crashes on.  Placed at random in
fifteen-operator models, each such operator fails every model it is in, and half the budget
is blind (a 120-s campaign over all of them: 47% MCF, 24% passing).  So a campaign first runs
each instance alone, as an ordinary case (judged, fingerprinted, reported: a one-node repro):

* a failure alone is proof (``search.known``: ``failed_alone``): random models never draw that
  instance again (``narrow_proven``) and never place an operator none of whose instances works
  (``excluded``).  What the probes found is not kept in state.json: a campaign started from an
  earlier one's state (``--state``, often on another build) probes again;
* the outcomes are the support matrix (``SupportMatrix``): per operator, how many of its
  instances convert, run and agree with the reference, in summary.json and the job summary.

Deterministic: the probes are the source's first cases, in operator and instance order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from ..corpus import Corpus
from ..graph.ir import Graph, TensorType
from ..graph.solver import Builder
from ..ops.recorded import RecordedSpec
from .known import PROBE  # graph meta: the (operator, instance) a probe case runs
from ..records import Status



def probes(corpus: Corpus) -> list[tuple[str, int]]:
    """(operator, instance) of every recorded operator the corpus places, in a fixed order."""
    ops = sorted({b.ops[0] for b in corpus.blocks if not b.is_subgraph
                  and isinstance(corpus.specs.get(b.ops[0]), RecordedSpec)})
    return [(op, k) for op in ops for k in range(len(corpus.specs[op].instances))]  # type: ignore[attr-defined]


def probe_graph(corpus: Corpus, op: str, k: int, seed: int) -> Graph:
    """Instance ``k`` of ``op`` alone, fed a float32 input of its fed input's shape (cast as needed)."""
    spec = corpus.specs[op]
    assert isinstance(spec, RecordedSpec)
    # No hinge: a failure alone must be the instance's, not an adapter's (it rules the instance out).
    b = Builder(random.Random(f"probe:{op}:{k}"), seed, reg=corpus.reg, hinges=False)
    x = b.add_input("in0", TensorType(spec.instances[k].fed_type.shape))
    b.add_op(op, [x], block=op, fixed={"instance": k})
    return b.finish({**corpus.reg.meta(), "blocks": [op], PROBE: [op, k]})


@dataclass
class SupportMatrix:
    """Per recorded operator, what its instances did alone: converted, ran, agreed; and what
    sets apart each instance that did not (its attribute values or element type: the support
    a maintainer reads per attribute value, not only per operator)."""

    rows: dict[str, dict[str, Any]] = field(default_factory=dict)

    def note(self, op: str, status: str, what: str = "") -> None:
        if status in (Status.REF.value, Status.GEN.value):
            return  # the reference failed: the engine was not judged
        row = self._row(op)
        row["instances"] += 1
        row["converts"] += status != Status.MCF.value
        row["runs"] += status not in (Status.MCF.value, Status.IF.value, Status.TIMEOUT.value)
        row["agrees"] += status == Status.DCP.value
        text = f"{what or '?'}: {status}"
        if status != Status.DCP.value and len(row["failing"]) < MAX_FAILING and text not in row["failing"]:
            row["failing"].append(text)

    def _row(self, op: str) -> dict[str, Any]:
        return self.rows.setdefault(op, {"instances": 0, "converts": 0, "runs": 0, "agrees": 0, "failing": []})

    def absorb(self, other: SupportMatrix) -> None:
        """Add ``other``'s rows to these (another opset's probes: the same operators, if any, summed)."""
        for op, r in other.rows.items():
            row = self._row(op)
            for k in ("instances", "converts", "runs", "agrees"):
                row[k] += r[k]
            row["failing"] += [f for f in r["failing"] if f not in row["failing"]][:MAX_FAILING - len(row["failing"])]

    def to_json(self) -> dict[str, object]:
        rows = dict(sorted(self.rows.items()))
        return {"operators": len(rows), "agree_all": sum(r["agrees"] == r["instances"] for r in rows.values()),
                "convert_none": sum(r["converts"] == 0 for r in rows.values()), "rows": rows}


MAX_FAILING = 6  # failing instances listed per operator
