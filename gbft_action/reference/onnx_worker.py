"""ONNX reference handler: ONNX Runtime as the reference for ONNX models.

The same message contract as ``reference.worker.ReferenceHandler``: ``build``
writes ``model.onnx`` in msg["dir"], runs it on the inputs ``draw_inputs(g)``
draws (or msg["inputs"]) and replies with the expected outputs of
``g.outputs`` and msg["extra_outputs"] (intermediates for localisation: graph
outputs of the model that runs, never of the model written).  ONNX Runtime
runs with every graph optimisation off and one thread each way, so it computes
the graph as written (a fused kernel is an engine of its own).

A model ONNX Runtime refuses to load (INVALID_GRAPH, INVALID_ARGUMENT, a failed
load or type/shape check) is ``invalid`` (status GEN); a failure while running
is ``reference`` (status REF).  No TensorFlow: ONNX workers start faster without it.

``intermediates`` gives every named node's value of the model last built, on the inputs it
ran (the same contract as the TensorFlow handler's): ONNX Runtime runs that model once more
with the named tensors as graph outputs.  ``stale`` when msg names another model; the
caller then builds it again with ``extra_outputs``.  Localisation and isolation read these
values; without them every ONNX key would name the node where a difference surfaced.

``crosscheck`` serves the TensorFlow front end: the TF-IR graph in msg["graph"] as ONNX
(``reference.tf_as_onnx``), run on msg["inputs"]; the reply says whether the graph could
be translated (``checkable``, and ``why`` not) and gives ``outputs`` (msg["outputs"]).
"""

from __future__ import annotations

from collections.abc import Mapping
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from ..graph.ir import Graph
from ..wire.arrays import digest, pack, unpack
from .inputs import draw_inputs
from .onnx_emit import build
from .tf_as_onnx import translate

# ORT's status codes for a model it will not take (onnxruntime/core/common/status.h names)
INVALID_MARKERS = ("INVALID_GRAPH", "INVALID_ARGUMENT", "INVALID_PROTOBUF", "NOT_IMPLEMENTED", "NO_MODEL",
                   "Fail", "FAIL")


def session_options() -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4  # fatal only: the errors come back in the exception, the log would repeat them
    return so


def make_session(model_bytes: bytes) -> ort.InferenceSession:
    return ort.InferenceSession(model_bytes, sess_options=session_options(), providers=["CPUExecutionProvider"])


class OnnxReferenceHandler:
    def __init__(self) -> None:
        # The last model built: (its folder, its graph JSON, its inputs), for ``intermediates``.
        self.kept: tuple[str, str, dict[str, Any]] | None = None

    def hello(self) -> dict[str, Any]:
        return {"framework": "onnxruntime", "version": ort.__version__}

    def handle(self, msg: dict[str, object]) -> dict[str, object]:
        if msg["op"] == "build":
            return self.build(msg)
        if msg["op"] == "crosscheck":
            return self.crosscheck(msg)
        if msg["op"] == "intermediates":
            return self.intermediates(msg)
        raise ValueError(f"unknown op {msg['op']!r}")

    def build(self, msg: Mapping[str, Any]) -> dict[str, object]:
        g = Graph.from_json(msg["graph"])
        outdir = Path(msg["dir"])
        outdir.mkdir(parents=True, exist_ok=True)
        extra = [t for t in msg.get("extra_outputs", []) if t not in g.outputs]
        fetch = list(g.outputs) + extra
        t0 = time.perf_counter()
        try:
            model = build(g)
            data = model.SerializeToString()
            (outdir / "model.onnx").write_bytes(data)
            run_bytes = build(g, extra).SerializeToString() if extra else data
        except (ValueError, TypeError, KeyError) as e:
            return _invalid(e)
        # Given inputs: isolation runs one node on the values the full model gave it.
        inputs = unpack(msg["inputs"]) if "inputs" in msg else draw_inputs(g)
        try:
            sess = make_session(run_bytes)
        except Exception as e:  # noqa: BLE001 - ORT raises its own classes per status code
            return _invalid(e) if _is_invalid(e) else _reference(e)
        t1 = time.perf_counter()
        try:
            vals = sess.run(fetch, {k: np.asarray(v) for k, v in inputs.items()})
        except Exception as e:  # noqa: BLE001
            return _reference(e)
        wrong = _type_mismatch(g, fetch, vals)
        if wrong:  # ORT only warns when a declared shape is wrong: the IR (the solver) was
            return {"ok": False, "kind": "invalid", "error": wrong}
        self.kept = (str(outdir), msg["graph"], inputs)
        return {"ok": True, "inputs": pack(inputs), "expected": pack(dict(zip(fetch, vals))),
                "t_build": t1 - t0, "t_run": time.perf_counter() - t1}


    def intermediates(self, msg: Mapping[str, Any]) -> dict[str, object]:
        """Every named node's value of the model last built, if ``msg`` names it (its folder,
        graph and inputs' digest); else ``stale``."""
        if self.kept is None or self.kept[:2] != (msg["dir"], msg["graph"]) or digest(self.kept[2]) != msg["inputs"]:
            return {"ok": False, "kind": "stale", "error": "not the model last built"}
        g, inputs = Graph.from_json(msg["graph"]), self.kept[2]
        names = [n for n in msg["names"] if n not in g.inputs]
        try:
            sess = make_session(build(g, names).SerializeToString())
            vals = sess.run(names, {k: np.asarray(v) for k, v in inputs.items()})
        except Exception as e:  # noqa: BLE001 - ORT raises its own classes per status code
            return _reference(e)
        return {"ok": True, "expected": pack(dict(zip(names, vals)))}

    def crosscheck(self, msg: Mapping[str, Any]) -> dict[str, object]:
        """TensorFlow's graph run by ONNX Runtime: the second opinion on a failing case."""
        g = Graph.from_json(msg["graph"])
        names = list(msg["outputs"])
        model, why = translate(g, [n for n in names if n not in g.outputs])
        if model is None:
            return {"ok": True, "checkable": False, "why": why}
        data = model.SerializeToString()
        if msg.get("dir"):  # kept beside the case: the bundle shows what the second reference ran
            Path(msg["dir"]).mkdir(parents=True, exist_ok=True)
            (Path(msg["dir"]) / "model-reference.onnx").write_bytes(data)
        inputs = unpack(msg["inputs"])
        try:
            vals = make_session(data).run(names, {k: np.asarray(v) for k, v in inputs.items()})
        except Exception as e:  # noqa: BLE001 - the translation's fault or ORT's: no second opinion
            return _reference(e)
        return {"ok": True, "checkable": True, "outputs": pack(dict(zip(names, vals)))}


def _type_mismatch(g: Graph, names: list[str], vals: list[Any]) -> str:
    """Why a computed tensor differs from its IR type (shape or dtype), or ""."""
    for name, v in zip(names, vals):
        t = g.tensor_type(name)
        if tuple(v.shape) != t.shape or str(v.dtype) != t.dtype:
            return f"tensor {name}: ONNX Runtime computed {v.dtype}{list(v.shape)}, the IR says {t.dtype}{list(t.shape)}"
    return ""


def _is_invalid(e: Exception) -> bool:
    """A load-time failure that says the model is ill-formed (the generator's fault)."""
    name = type(e).__name__
    text = str(e)
    return name in ("InvalidGraph", "InvalidArgument", "InvalidProtobuf", "Fail", "NotImplemented") or \
        any(m in text for m in INVALID_MARKERS)


def _invalid(e: Exception) -> dict[str, object]:
    return {"ok": False, "kind": "invalid", "error": f"{type(e).__name__}: {e}".strip()}


def _reference(e: Exception) -> dict[str, object]:
    return {"ok": False, "kind": "reference", "error": f"{type(e).__name__}: {e}".strip()}
