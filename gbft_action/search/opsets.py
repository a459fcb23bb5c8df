"""An ONNX front end writing at several opsets (``--opset 27,17``): one source per opset.

Users convert models of every opset their exporters wrote: torch.onnx wrote 17 by default for
years, and newer exporters write 18 and later.  Neither opset holds every operator ONNX
Runtime runs: opset 17 lacks the operators added after it, and at 27 ONNX Runtime has no
kernel for the newest versions of nine older ones (RoiAlign, GlobalLpPool, MaxRoiPool and
the random operators).  So a campaign may write most models at its main opset (the first
given) and one in ``OLDER_EVERY`` at one of the others.

Each opset keeps its own generator (corpus, coverage, MCTS tree): its registry places other
operators and other instances.  Which opset writes case i is a function of i alone, as in
``search.mixed``: the same seed gives the same models whatever the lanes do, and a resumed
campaign regenerates its cases exactly.  An older opset probes only the operators its main
opset does not place.  An operator both place is probed at the main opset only, though its
schema version and recorded instances may differ at the older one: probing every older
instance as well would take most of the older opset's share of a ten-minute run.

The search state is ``{"opsets": {"27": state, "17": state}}``; a single opset's state (a
pinned run's) goes to the opset it names, and one written before states named their opset to
the main opset.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

from ..graph.ir import Graph
from ..ops.recorded import counted_versions, versions_at
from ..records.case import CaseRecord
from .guided import GuidedSource
from .probe import SupportMatrix

OLDER_EVERY = 4  # one case in four is written at an older opset


class OpsetSource:
    def __init__(self, sources: dict[int, GuidedSource]) -> None:
        if len(sources) < 2:
            raise ValueError("an opset source mixes two opsets or more")
        self.sources = sources
        self.main, *self.older = list(sources)  # the order given: the first is the main opset

    def opset_of(self, index: int) -> int:
        """The opset case ``index`` is written at: a hash of the index alone (not index mod k,
        which a mixed front end's stride would bias)."""
        h = zlib.crc32(f"opset:{index}".encode())
        if h % OLDER_EVERY:
            return self.main
        return self.older[(h // OLDER_EVERY) % len(self.older)]

    # -- CaseSource -------------------------------------------------------------------
    def next_graph(self, index: int) -> Graph:
        return self.sources[self.opset_of(index)].next_graph(index)

    def feedback(self, index: int, graph: Graph, record: CaseRecord) -> None:
        self.sources[self.opset_of(index)].feedback(index, graph, record)

    def state(self) -> dict[str, object]:
        return {"opsets": {str(o): s.state() for o, s in self.sources.items()}}

    def load_state(self, st: Mapping[str, Any]) -> None:
        per = st.get("opsets")
        if per is None:  # one opset's: the opset it names (written before they were named: the main)
            self.sources.get(st.get("opset"), self.sources[self.main]).load_state(st)  # type: ignore[arg-type]
            return
        if not isinstance(per, dict):
            raise TypeError("'opsets' is not a mapping")
        for o, s in self.sources.items():
            if str(o) in per:  # an opset the saved run did not write starts fresh
                s.load_state(per[str(o)])

    def summary(self) -> dict[str, object]:
        """The main opset's summary (its metrics, MCTS, graph arms), with what the models of
        every opset held together: operators, element types, forms, operators per schema
        version, the support matrix; and per opset its models, operators and OLC."""
        parts = {o: s.summary() for o, s in self.sources.items()}
        out = union_of_opsets(parts, self.main)
        for key in ("generated", "discarded", "steered", "solver_errors"):
            out[key] = sum(int(p.get(key, 0)) for p in parts.values())
        learned = [p["learned"] for p in parts.values() if p.get("learned")]
        if learned:  # the learned chooser's counts over every opset's models (its mean: the main one's)
            out["learned"] = {**out.get("learned", learned[0]),
                              **{k: sum(int(x[k]) for x in learned) for k in ("skipped_negative", "ran")}}
        support = SupportMatrix()
        for s in self.sources.values():
            support.absorb(s.support)
        if support.rows:
            out["support"] = support.to_json()
        out["opsets"] = {str(o): {"models": self.sources[o].served, "operators": len(p.get("operators", ())),
                                  "OLC": p.get("OLC", 0.0)} for o, p in parts.items()}
        return out


def union_of_opsets(per: Mapping[int, Mapping[str, Any]], main: int) -> dict[str, Any]:
    """Coverage summaries of several opsets as one: the ``main`` opset's (its metrics), with the
    operators, element types and forms of all, and how many distinct operators are at each
    schema version (ReduceMean-13 at 17 and ReduceMean-18 at 27 count apart).  A campaign's own
    summary and a merge of its shards both read it so."""
    out = dict(per[main])
    for key in ("operators", "element_types", "forms"):
        out[key] = sorted(set().union(*(c.get(key, ()) for c in per.values())))
    versions = {(op, v) for o, c in per.items() for op, v in versions_at(c.get("operators", ()), o).items()}
    out["operators_by_opset"] = counted_versions(v for _, v in versions)
    return out
