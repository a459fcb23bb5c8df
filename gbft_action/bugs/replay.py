"""Replaying and minimising bundles on a live lane (reference + engine workers)."""

from __future__ import annotations

import itertools
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..graph.ir import Graph
from ..pipeline import CaseResult, Lane
from .bundle import BugBook
from .fingerprint import Fingerprint
from .minimize import minimize

SAME, DIFFERENT, PASSES = "same", "different", "passes"
_scratch = itertools.count(10_000_000)  # case indices for replays: their own tmp dirs


@dataclass
class Verdict:
    outcome: str  # same | different | passes
    fingerprint: Fingerprint | None
    result: CaseResult


def run_graph(lane: Lane, g: Graph, budget: float = 120.0, fresh: bool = False,
              platforms: list[str] | None = None) -> CaseResult:
    """Run one model; ``fresh`` restarts the engine workers first, so that heap damage
    left by earlier models (MNN has heap-corruption bugs) cannot change the verdict."""
    if fresh:
        lane.stop_engines()
    res = lane.run(next(_scratch), g, budget, platforms)
    if res.workdir is not None:
        shutil.rmtree(res.workdir, ignore_errors=True)
    return res


def matching(res: CaseResult, target: Fingerprint) -> CaseResult | None:
    """The platform result showing ``target``, if any does."""
    return next((r for r in res.per_platform() if r.fingerprint == target), None)


def bug_platforms(lane: Lane, meta: dict[str, Any]) -> list[str] | None:
    """The lane's platforms on which a bundle's bug was seen (None: run them all).

    An XPF needs the first platform too: it is the one the others are compared with.
    """
    seen = [p for p in lane.platforms if p in (meta.get("platforms") or [])]
    if not seen:
        return None
    if meta.get("fingerprint", {}).get("status") == "XPF" and lane.primary not in seen:
        seen.insert(0, lane.primary)
    return seen


def replay(lane: Lane, g: Graph, target: Fingerprint, budget: float = 120.0, fresh: bool = True,
           platforms: list[str] | None = None) -> Verdict:
    res = run_graph(lane, g, budget, fresh=fresh, platforms=platforms)
    if matching(res, target) is not None:
        return Verdict(SAME, target, res)
    fp = next((r.fingerprint for r in res.per_platform() if r.fingerprint is not None), None)
    return Verdict(PASSES if fp is None else DIFFERENT, fp, res)


def load_bundle(bundle: Path) -> tuple[dict[str, Any], Graph, Graph | None]:
    if not (bundle / "meta.json").exists():
        raise ValueError(f"{bundle}: not a bug bundle (no meta.json)")
    meta = json.loads((bundle / "meta.json").read_text())
    g = Graph.from_json((bundle / "graph.json").read_text())
    small = Graph.from_json((bundle / "minimized.json").read_text()) if (bundle / "minimized.json").exists() else None
    return meta, g, small


def minimize_bug(lane: Lane, book: BugBook, fid: str, time_limit: float) -> dict[str, Any]:
    """Minimise bundle ``fid`` keeping its fingerprint; then check it for flakiness."""
    bundle = book.bundle_dir(fid)
    meta, g, _ = load_bundle(bundle)  # always from the original: minimised is its own start
    target = Fingerprint.from_json(meta["fingerprint"])
    where = bug_platforms(lane, meta)

    def same_bug(h: Graph) -> str | None:
        hit = matching(run_graph(lane, h, time_limit + 30, platforms=where), target)
        return None if hit is None else (hit.node or "-")

    small, node, stats = minimize(g, same_bug, time_limit=time_limit)
    book.add_minimized(fid, small, node if node and node != "-" else "", stats)
    flaky = is_flaky(lane, small, target, platforms=where)
    meta = json.loads((bundle / "meta.json").read_text())
    meta["flaky"] = flaky
    (bundle / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return {**stats, "flaky": flaky}


def is_flaky(lane: Lane, g: Graph, target: Fingerprint, runs: int = 3, platforms: list[str] | None = None) -> bool:
    """Flaky when a replay of the same model does not give the same fingerprint."""
    return any(replay(lane, g, target, platforms=platforms).outcome != SAME for _ in range(runs))
