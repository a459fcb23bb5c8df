"""What a merged ``state.json`` keeps of each shard's own search: ``ShardSearch``.

The rest of state.json is the search module's (coverage, the combined MCTS tree, the chooser);
its parts are read by their own ``from_json`` there (``search.coverage.Coverage``...)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .io import Fields, RecordError

STATE_FILE = "state.json"  # a campaign's search state (coverage, MCTS), read again by --state and merge


@dataclass(frozen=True)
class ShardSearch:
    """One shard's search: its MCTS tree and graph-model arms (as the search writes them), the
    models it generated and discarded, its graph-level coverage means over its ``models``."""

    mcts: dict[str, object] | None = None
    graph_arms: list[dict[str, object]] | None = None
    generated: int = 0
    discarded: int = 0
    graph: Mapping[str, float] = field(default_factory=dict)
    models: int = 0

    def to_json(self) -> dict[str, object]:
        return {"mcts": self.mcts, "graph_arms": self.graph_arms, "generated": self.generated,
                "discarded": self.discarded, "graph": dict(self.graph), "models": self.models}

    def rank(self) -> tuple[int, str]:
        """Of one shard's states in several inputs, the one that got furthest (then any, fixed)."""
        return self.generated, json.dumps(self.to_json(), sort_keys=True)

    @staticmethod
    def from_json(d: Any, where: str = "shard search state") -> ShardSearch:
        f = Fields(d, where)
        arms = f.d.get("graph_arms")
        if arms is not None and not (isinstance(arms, list) and all(isinstance(a, Mapping) for a in arms)):
            raise RecordError(f"{where}: 'graph_arms' must be a list of objects")
        return ShardSearch(f.mapping("mcts"), [dict(a) for a in arms] if arms is not None else None,
                           f.int("generated"), f.int("discarded"), f.float_map("graph"),
                           f.int("models"))
