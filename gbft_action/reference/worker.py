"""Reference handler: runs inside the reference worker process (imports TF).

``build``: IR JSON -> GraphDef ``model.pb`` (constants inline) in the case directory, inputs
drawn from U[-1, 1] (with special values in a "special" graph; ``reference.inputs``),
expected outputs.  A model TensorFlow rejects (shape or argument errors) is
``invalid`` (status GEN); any other TensorFlow failure is ``reference`` (status
REF).  ``tflite``: write the model as TFLite (``model.tflite``, or the ``name`` given).

The GraphDef comes straight from the IR (``reference.graphdef``: NodeDefs from a
table) and runs in TensorFlow's eager runtime, node by node (``reference.eager``: the
same kernels as a session, cached across models; the same values but for the rounding
of some Conv2D geometries); a
graph with an operator that table does not lower exactly is built through TensorFlow's
Python op layer (``reference.tf_emit``) and runs in a session, as does a TFLite build
(its converter takes a session).  Both give the same GraphDef
(``tests/test_graphdef.py``).  Fuzzing, minimisation, isolation and localisation
(every node's tensor ``<id>:0`` fetched) all come through ``build``, except that a
failing case's localisation first asks ``intermediates`` of the model just built (its
values, or its session, are kept until the next build); a message with
``"direct": false`` forces the op layer, and so does ``GBFT_TF_GRAPHDEF=op-layer``
in the worker's environment (tests and benchmarks compare the two).
"""

from __future__ import annotations

from collections.abc import Mapping
import os
import time
from pathlib import Path
from typing import Any

from .tfenv import set_tf_env  # noqa: E402  (before TensorFlow loads)

set_tf_env()

import tensorflow as tf  # noqa: E402

from ..graph.ir import Graph  # noqa: E402
from ..wire.arrays import digest, pack, unpack  # noqa: E402
from . import eager  # noqa: E402
from .inputs import draw_inputs  # noqa: E402  (numpy only: the repro script draws the same)
from .graphdef import load, lower, lowered  # noqa: E402
from .tf_emit import build, tf1  # noqa: E402


# The path a build message without "direct" takes: the op layer only on request (A/B benchmarks).
DIRECT = os.environ.get("GBFT_TF_GRAPHDEF", "direct") != "op-layer"
# Eager values equal a session's only with one thread per op (see reference.eager).
EAGER = eager.single_threaded()


def session_config() -> Any:
    cfg = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    # Grappler rewrites the graph before running it; the reference must run
    # the graph as written (and grappler has crashed on valid random graphs).
    cfg.graph_options.rewrite_options.disable_meta_optimizer = True
    return cfg


class _Kept:
    """The last model built, with what computes its values (its eager evaluator, or its session
    still open): a failing case's localisation asks for every node's value of the very model
    and inputs just run, and gets them without a second GraphDef, import and session
    (``intermediates``)."""

    def __init__(self, where: str, graph: str, inputs: dict[str, Any], run: SessionRunner | EagerRunner) -> None:
        self.where, self.graph, self.inputs, self.run = where, graph, inputs, run

    def holds(self, msg: dict[str, Any]) -> bool:
        """Whether msg asks about this model: its folder, graph and inputs (their digest: taken
        only when asked, not for every model built)."""
        return (self.where, self.graph) == (msg["dir"], msg["graph"]) and digest(self.inputs) == msg["inputs"]


class SessionRunner:
    """A built model's values by IR tensor name, in a session (op layer, TFLite)."""

    def __init__(self, tg: Any, names: dict[str, str], inputs: Mapping[str, Any]) -> None:
        self.tg, self.names, self.inputs = tg, names, inputs
        self.session = tf1.Session(graph=tg, config=session_config())

    def values(self, fetch: list[str]) -> list[Any]:
        self.tg._add_new_tf_operations(compute_devices=False)  # noqa: SLF001 - ops load did not wrap
        return self.session.run([self.names[t] for t in fetch], {self.names[x]: v for x, v in self.inputs.items()})

    def has(self, name: str) -> bool:
        return name in self.names

    def close(self) -> None:
        self.session.close()


class EagerRunner:
    """A built model's values by IR tensor name, node by node (``reference.eager``)."""

    def __init__(self, ev: eager.Evaluator) -> None:
        self.ev = ev

    def values(self, fetch: list[str]) -> list[Any]:
        return self.ev.values(fetch)

    def has(self, name: str) -> bool:
        return name in self.ev.by_name

    def close(self) -> None:
        pass


class ReferenceHandler:
    def __init__(self) -> None:
        self.kept: _Kept | None = None

    def hello(self) -> dict[str, object]:
        return {"framework": "tensorflow", "version": tf.__version__}

    def handle(self, msg: dict[str, object]) -> dict[str, object]:
        if msg["op"] == "build":
            return self.build(msg)
        if msg["op"] == "intermediates":
            return self.intermediates(msg)
        if msg["op"] == "tflite":
            return self.tflite(msg)
        raise ValueError(f"unknown op {msg['op']!r}")

    def intermediates(self, msg: dict[str, Any]) -> dict[str, object]:
        """Every node's value of the model last built, if ``msg`` names it (its folder, graph and
        inputs' digest); else ``stale`` (the caller builds it again with ``extra_outputs``)."""
        k = self.kept
        if k is None or not k.holds(msg):
            return {"ok": False, "kind": "stale", "error": "not the model last built"}
        fetch = [n for n in msg["names"] if k.run.has(n)]
        try:
            vals = k.run.values(fetch)
        except tf.errors.OpError as e:
            return {"ok": False, "kind": "reference", "error": f"{type(e).__name__}: {e.message}"}
        return {"ok": True, "expected": pack(dict(zip(fetch, vals)))}

    def build(self, msg: dict[str, Any]) -> dict[str, Any]:
        g = Graph.from_json(msg["graph"])
        outdir = Path(msg["dir"])
        outdir.mkdir(parents=True, exist_ok=True)
        fetch = list(g.outputs) + [t for t in msg.get("extra_outputs", []) if t not in g.outputs]
        direct, tflite = msg.get("direct", DIRECT), msg.get("tflite")
        t0 = time.perf_counter()
        try:
            b = lowered(g) if direct and EAGER and not tflite else None
            if b is None:
                # The TFLite converter walks the whole graph; a session only what it feeds and fetches.
                tg, names, pb, path = materialise(g, direct, None if tflite else [*g.inputs, *fetch])
            else:
                pb, path = b.gd.SerializeToString(), "direct"
        except (ValueError, TypeError, tf.errors.InvalidArgumentError) as e:
            return _invalid(e)
        (outdir / "model.pb").write_bytes(pb)
        # Given inputs: isolation runs one node on the values the full model gave it.
        inputs = unpack(msg["inputs"]) if "inputs" in msg else draw_inputs(g)
        t1 = time.perf_counter()
        self._forget()
        run = EagerRunner(eager.Evaluator(b.gd, b.consts, inputs)) if b is not None else SessionRunner(tg, names, inputs)
        try:
            vals = run.values(fetch)
        except tf.errors.InvalidArgumentError as e:
            run.close()
            return _invalid(e)
        except tf.errors.OpError as e:
            run.close()
            return {"ok": False, "kind": "reference", "error": f"{type(e).__name__}: {e.message}"}
        self.kept = _Kept(str(outdir), msg["graph"], inputs, run)
        if tflite:  # the tflite front end: the engine converts this file instead
            try:
                _write_tflite(tg, names, g, outdir)
            except Exception as e:  # noqa: BLE001 - TFLite cannot express the model: not this front end's
                return _invalid(e, "TFLite conversion")
        return {"ok": True, "inputs": pack(inputs), "expected": pack(dict(zip(fetch, vals))),
                "t_build": t1 - t0, "t_run": time.perf_counter() - t1, "graphdef": path,
                "runner": "eager" if b is not None else "session"}

    def _forget(self) -> None:
        if self.kept is not None:
            self.kept.run.close()
            self.kept = None

    def tflite(self, msg: Mapping[str, Any]) -> dict[str, object]:
        g = Graph.from_json(msg["graph"])
        tg, names, _, _ = materialise(g, msg.get("direct", DIRECT))
        return {"ok": True, "path": str(_write_tflite(tg, names, g, Path(msg["dir"]), msg.get("name", "model.tflite")))}


def materialise(g: Graph, direct: bool = True, used: list[str] | None = None,
                ) -> tuple[Any, dict[str, str], bytes, str]:
    """g as a tf.Graph, the map tensor name -> TF tensor name, the ``model.pb`` bytes, and
    which path made them ("direct" or "op-layer").

    Direct: the GraphDef is built from the IR and loaded (no op layer), with Python
    operations for the ``used`` tensors only (all when None: the TFLite converter walks
    the graph); ``None`` from ``lower`` (an operator it does not cover) or
    ``direct=False`` take tf_emit's path.
    """
    gd = lower(g) if direct else None
    if gd is None:
        tg, names = build(g)
        return tg, names, tg.as_graph_def().SerializeToString(), "op-layer"
    tg = load(gd, used)  # shape inference runs here: a model TensorFlow rejects raises ValueError
    names = {k: f"{k}:0" for k in [*g.inputs, *(n.id for n in g.nodes)]}
    return tg, names, gd.SerializeToString(), "direct"


def _write_tflite(tg: Any, names: dict[str, str], g: Graph, outdir: Path, name: str = "model.tflite") -> Path:
    with tf1.Session(graph=tg, config=session_config()) as s:
        ins = [tg.get_tensor_by_name(names[k]) for k in sorted(g.inputs)]
        outs = [tg.get_tensor_by_name(names[o]) for o in g.outputs]
        data = tf1.lite.TFLiteConverter.from_session(s, ins, outs).convert()
    path = outdir / name
    path.write_bytes(data)
    return path


def _invalid(e: Exception, what: str = "") -> dict[str, object]:
    text = getattr(e, "message", None) or str(e)
    if what:  # the TFLite converter's errors run to pages: the first line says which operator
        text = f"{what}: {text.strip().splitlines()[0] if text.strip() else ''}"
    return {"ok": False, "kind": "invalid", "error": f"{type(e).__name__}: {text}".strip()}
