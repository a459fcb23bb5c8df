"""A mixed campaign's case source: case i belongs to front end i mod k, each with its own source.

Each front end keeps its own generator (corpus, coverage, MCTS tree): an ONNX ``Conv`` and a
TensorFlow ``Conv2D`` are different code paths of the engine, so coverage of one says nothing
of the other.  The split is by case index, not by lane or timing: the same seed gives every
front end the same models whatever ``--jobs`` is and however fast each lane runs, and a
resumed campaign regenerates its cases exactly (campaign._replay_feedback).  Each source sees
the global case index (its graphs' ``meta["index"]`` is the case's), so its cases are
``f, f + k, f + 2k, ...``.

The search state (``state.json``) is one entry per front end, ``{"frontends": {name: state}}``;
``state_for`` reads either that or a single front end's state (as written before mixing).
"""

from __future__ import annotations

from typing import Any

from ..graph.ir import Graph
from ..records.case import CaseRecord
from . import CaseSource


class MixedSource:
    def __init__(self, sources: dict[str, CaseSource]) -> None:
        if not sources:
            raise ValueError("a mixed source needs at least one front end")
        self.sources = sources
        self.names = list(sources)  # the order given (--frontend tf,onnx): case i is names[i % k]

    def frontend_of(self, index: int) -> str:
        return self.names[index % len(self.names)]

    # -- CaseSource -------------------------------------------------------------------
    def next_graph(self, index: int) -> Graph:
        return self.sources[self.frontend_of(index)].next_graph(index)

    def feedback(self, index: int, graph: Graph, record: CaseRecord) -> None:
        self.sources[self.frontend_of(index)].feedback(index, graph, record)

    def state(self) -> dict[str, object]:
        return {"frontends": {n: s.state() for n, s in self.sources.items()}}

    def summary(self) -> dict[str, object]:
        """Per front end: its source's summary (coverage metrics), never one merged figure."""
        return {n: s.summary() for n, s in self.sources.items() if hasattr(s, "summary")}


def state_for(data: dict[str, object], frontend: str, mixed: bool) -> dict[str, Any] | None:
    """The search state of ``frontend`` in a state file's ``data`` (None: start it fresh).

    A mixed run's file holds one state per front end: a front end it lacks starts fresh, and
    a single front end's run takes its own entry.  A single front end's file does not say
    which front end it was, so a mixed run cannot place it (ValueError)."""
    if "frontends" in data:
        per = data["frontends"]
        if not isinstance(per, dict):
            raise TypeError("'frontends' is not a mapping")
        return per.get(frontend)
    if mixed:
        raise ValueError("it holds the state of a single front end's run, which does not say which front "
                         "end it was: a mixed run (--frontend tf,onnx) needs a mixed run's state")
    return data
