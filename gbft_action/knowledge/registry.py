"""The engine registry: each engine's name and what the host knows of it.

One line per engine: its ``EngineKnowledge`` (knowledge/base.py), which names the
adapter's ``module:Class`` (imported by the engine worker only) and says how to read the
engine's log, how its package is named and how its repro script runs it.  The host (the
pipeline, builds, bundles, reports, the action) looks engines up here.
"""

from __future__ import annotations

from .base import GENERIC, CommandKnowledge, EngineKnowledge
from .mnn import MNNKnowledge
from .onnxruntime import OnnxRuntimeKnowledge

# One line per engine: its knowledge (a subclass, or EngineKnowledge for an engine whose log
# has no known patterns) naming its adapter.  tests/test_conformance.py runs every entry.
ENGINES: dict[str, EngineKnowledge] = {
    "mnn": MNNKnowledge("gbft_action.engines.mnn:MNNEngine"),
    "command": CommandKnowledge("gbft_action.engines.command:CommandEngine"),
    "onnxruntime": OnnxRuntimeKnowledge("gbft_action.engines.onnxruntime:OnnxRuntimeEngine"),
}


def resolve(name: str) -> str:
    """Engine name -> ``module:Class`` target for the worker."""
    if name in ENGINES:
        return ENGINES[name].adapter
    if ":" in name:
        return name
    raise ValueError(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))}, or module:Class)")


def threads_env(engine: str) -> dict[str, str]:
    """The environment of the thread-count oracle's second run of ``engine`` ({}: none)."""
    known = knowledge_of(engine)
    return known.env_for(dict(known.threads_oracle))


def knowledge_of(engine: str, reported: str = "") -> EngineKnowledge:
    """What the host knows of ``engine`` (a registry name or ``module:Class``).

    ``reported`` is the name the adapter gave in its hello: an adapter named by
    ``module:Class`` that wraps a registered one (the tests' fakes wrap MNN's) speaks
    that engine's log.  It only selects a registry entry, nothing is imported by it.
    Anything else gets the generic knowledge (no log patterns).
    """
    if engine in ENGINES:
        return ENGINES[engine]
    for known in ENGINES.values():
        if known.adapter == engine:
            return known
    return ENGINES.get(reported, GENERIC)
