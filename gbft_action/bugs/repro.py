"""Repro scripts a maintainer can read and run in a minute.

``repro.py``: the (minimised) model as straight-line TensorFlow code, one line per
operator with its parameters written out (``reference.tf_code``), inputs from a
printed seed, the engine through its current API (the template its knowledge names,
``templates/engine_<name>.py.j2``; ``engine_generic.py.j2`` for an engine with none),
the comparison with the tolerance, and the numbers that differ.
``repro_engine.py``: the same check without TensorFlow, the frozen model and
TensorFlow's inputs and outputs embedded (written only when they are small).

Both exit 1 only when the engine shows the bug (wrong numbers for a wrong-result
bug; a failure or crash for a conversion or inference bug), 0 when it does not,
and 2 on anything else, uncaught exceptions included.

The scripts are generated from data (the graph, meta.json), never copied from a
bundle: a bundle may come from a pull request, so every value that reaches the
code is checked or quoted here.
"""

from __future__ import annotations

import base64
import io
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from ..knowledge.registry import knowledge_of
from ..graph.ir import Graph
from ..oracle import HALF_TYPES, tolerance_for, widened_because
from ..records.bundle import BundleMeta, EngineInfo
from ..records.keys import signal_name
from ..reference.inputs import special_values_source
from ..reference.tf_code import HELPERS, check_graph, model_lines
from ..records import Symptom
from ..records.keys import MEMORY_SIGNALS

EMBED_LIMIT = 200_000  # bytes of model and arrays that repro_engine.py may carry
_STATUS = re.compile(r"[A-Z]{2,8}")
# What each status means, in the repro's verdict line and on the issue page: "IF" alone does
# not tell a maintainer that a missing output (titled a conversion error) shows at inference.
STATUS_TEXT = {"MCF": "model conversion failure", "IF": "inference failure", "DCF": "data comparison failure",
               "TIMEOUT": "timeout", "XPF": "cross-platform failure", "XBF": "cross-build failure",
               "XTF": "cross-thread failure"}


@dataclass
class ReproData:
    """The frozen model and TensorFlow's inputs and outputs of the model a repro shows."""

    model_pb: bytes
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]

    def npz_b64(self) -> str:
        buf = io.BytesIO()
        arrays = {**{f"in:{k}": v for k, v in self.inputs.items()}, **{f"out:{k}": v for k, v in self.expected.items()}}
        np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub: **arrays may not name allow_pickle
        return base64.b64encode(buf.getvalue()).decode()

    def small(self) -> bool:
        size = len(self.model_pb) + sum(v.nbytes for v in [*self.inputs.values(), *self.expected.values()])
        return size <= EMBED_LIMIT

    @staticmethod
    def from_files(model: Path, inputs: Path, expected: Path) -> ReproData | None:
        if not (model.exists() and inputs.exists() and expected.exists()):
            return None
        return ReproData(model.read_bytes(), dict(np.load(inputs)), dict(np.load(expected)))


def doc(text: Any, limit: int = 200) -> str:
    """Untrusted text inside a docstring: one line, no quotes or backslashes to break out with."""
    t = " ".join(str(text).split())[:limit]
    return t.replace("\\", "/").replace('"', "'")


def render_repro(env: jinja2.Environment, graph: Graph, meta: BundleMeta, data: ReproData | None = None) -> str:
    """repro.py for ``graph`` (TensorFlow rebuilds it), or with ``data`` the engine-only script."""
    frontend = meta.frontend
    onnx = None
    if frontend == "onnx":  # imported here: onnx is only needed for an ONNX bug's repro
        from ..reference.onnx_code import model_source
        onnx = model_source(graph)  # (it checks the graph)
    else:
        check_graph(graph)
    engine = meta.engine.engine or "mnn"
    if not re.fullmatch(r"[a-z0-9_]+", engine):
        raise ValueError(f"meta.json: engine {engine!r} is not an engine name")
    status = meta.status.value
    commands = {k: repr(v) for k, v in meta.engine.commands.items()}
    known = knowledge_of(engine)
    half_inputs = any(t.dtype in HALF_TYPES for t in graph.inputs.values())  # an operator isolated on float16
    settings = known.settings(meta.engine.settings)
    if meta.needs_threads:  # the thread-count oracle's bug: the repro runs where it showed
        settings = {**settings, **known.threads_oracle}
    half_arithmetic, weight_bits = known.half_arithmetic(settings), known.weight_bits(settings)
    engine_stage = env.get_template(known.repro_template).render(commands=commands, engine_name=engine,
                                                                 settings=settings,
                                                                 frontend=frontend, half_inputs=half_inputs)
    return env.get_template("repro.py.j2").render(
        fp_id=doc(meta.id, 64), title=doc(meta.title), engine_name=engine, engine_version=doc(meta.engine.version, 40),
        platforms=[doc(p, 40) for p in meta.platforms or ["?"]], tool_version=doc(meta.tool_version, 40),
        seed="?" if meta.seed is None else meta.seed, case_index=meta.case_index, seed_value=int(graph.seed),
        outputs=repr(list(graph.outputs)), status=status if _STATUS.fullmatch(status) else "?",
        tol=tolerance_for(graph, meta.tolerance, half_arithmetic, weight_bits),  # the bound the campaign judged it with
        widened=widened_because(graph, half_arithmetic, weight_bits),
        status_text=STATUS_TEXT.get(status, ""),
        signals=_signals(meta), memory=_numbers(MEMORY_SIGNALS), mem_mb=REPRO_MEM_MB,
        engine_pip=doc(engine_needs(meta.engine)), helpers=HELPERS, frontend=frontend, onnx=onnx,
        model=(lines := model_lines(graph) if onnx is None else []),
        weights=any("rng(" in line for line in lines),
        special=graph.values == "special", special_source=special_values_source(),
        inputs=sorted(graph.inputs.items()), engine_stage=engine_stage, embedded=data is not None,
        model_b64=base64.b64encode(data.model_pb).decode() if data else "", data_b64=data.npz_b64() if data else "")


# The engine's memory in a repro, in MiB: the campaign's default cap (--engine-mem-mb;
# pipeline.LaneConfig.engine_mem_mb), so that a pasted repro of a runaway engine exits as the
# campaign saw it instead of growing to the reader's whole memory (a OneHot repro reached 19 GB).
REPRO_MEM_MB = 4096


def engine_needs(engine: EngineInfo) -> str:
    """What a repro needs installed to run the engine a bundle names (its package pinned to the
    version the bug showed on, where it has one)."""
    return knowledge_of(engine.engine).package.needs(engine.version)


def _signals(meta: BundleMeta) -> tuple[int, ...]:
    """The signals that show the bug (() for none): a memory error shows by any of its class
    (SIGSEGV, SIGBUS, SIGABRT from glibc's heap checks), as in root-cause keys, since one
    out-of-bounds write kills by another of them from run to run.  Output read from
    uninitialised memory (an out-of-bounds read) is garbage in a warm worker and often a
    SIGSEGV in the repro's fresh process: the same read, so the memory signals show it too."""
    fp = meta.fingerprint
    name = signal_name(fp.code)
    rc_symptom = meta.root_cause.symptom if meta.root_cause else ""
    if fp.kind == "signal" and name in signal.Signals.__members__:
        names = MEMORY_SIGNALS if name in MEMORY_SIGNALS else (name,)
    elif Symptom.NONDETERMINISTIC in (meta.symptom, rc_symptom):
        names = MEMORY_SIGNALS
    else:
        return ()
    return _numbers(names)


def _numbers(names: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(int(signal.Signals[n]) for n in names)
