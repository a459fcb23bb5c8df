"""Per-model cost of the TensorFlow reference: building the graph, the session, the first run.

    .venv/bin/python bench/reference_build.py [--models 200] [--blocks 10-10] [--seed 1]

For random graphs of the default TF corpus, times each step of the reference worker's
``build`` on both paths: ``direct`` (reference/graphdef: GraphDef from the IR,
imported) and ``op-layer`` (reference/tf_emit through TensorFlow's Python op layer),
and prints the medians in ms.  "build" is the tf.Graph and the model.pb bytes
(``worker.materialise``), "session" creating it, "run" the first run fetching the outputs;
"worker" is the reference worker's whole ``build`` message (also drawing the inputs,
writing model.pb, packing the reply), as the fuzz loop sends it: through the op layer
and a session, or direct, which the worker runs eagerly (``reference.eager``).  The
"eager" line is the direct GraphDef run node by node: "build" the lowering, "run" the
evaluation, measured first, before any eager kernel is cached (kernels are cached
across models, so a long campaign pays less).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from gbft_action.reference.tfenv import set_tf_env  # noqa: E402

set_tf_env()  # before TensorFlow loads: the reference worker's kernels

import tensorflow as tf  # noqa: E402

from gbft_action.cli import parse_range  # noqa: E402
from gbft_action.corpus import load_corpus  # noqa: E402
from gbft_action.graph.generate import GenOptions  # noqa: E402
from gbft_action.reference.eager import Evaluator  # noqa: E402
from gbft_action.reference.graphdef import lower, lowered  # noqa: E402
from gbft_action.reference.inputs import draw_inputs  # noqa: E402
from gbft_action.reference.worker import ReferenceHandler, materialise, session_config  # noqa: E402
from gbft_action.search import RandomSource  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--blocks", type=parse_range, default=(10, 10))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    src = RandomSource(load_corpus(), GenOptions(blocks=a.blocks), a.seed)
    graphs = [src.next_graph(i) for i in range(a.models)]
    direct = sum(lower(g) is not None for g in graphs)
    print(f"{a.models} models of {a.blocks[0]}-{a.blocks[1]} blocks, median "
          f"{statistics.median(len(g.nodes) for g in graphs):.0f} IR nodes; direct path for {direct}")
    # First, while no eager kernel is cached (the worker's direct pass below caches them).
    cold: dict[str, list[float]] = {"build": [], "run": []}
    for g in graphs:
        t0 = time.perf_counter()
        b = lowered(g)
        b.gd.SerializeToString()  # model.pb
        t1 = time.perf_counter()
        try:
            Evaluator(b.gd, b.consts, draw_inputs(g)).values(list(g.outputs))
        except tf.errors.OpError:
            pass
        cold["build"].append(1000 * (t1 - t0))
        cold["run"].append(1000 * (time.perf_counter() - t1))
    for label, flag in (("op-layer", False), ("direct", True)):
        t: dict[str, list[float]] = {"build": [], "session": [], "run": []}
        for g in graphs:
            t0 = time.perf_counter()
            try:
                tg, names, _, _ = materialise(g, flag, [*g.inputs, *g.outputs])
            except (ValueError, TypeError):
                continue
            t1 = time.perf_counter()
            s = tf.compat.v1.Session(graph=tg, config=session_config())
            t2 = time.perf_counter()
            try:
                s.run([names[o] for o in g.outputs], {names[k]: v for k, v in draw_inputs(g).items()})
            except tf.errors.OpError:
                pass
            t3 = time.perf_counter()
            s.close()
            for k, v in zip(t, (t1 - t0, t2 - t1, t3 - t2)):
                t[k].append(1000 * v)
        h, work = ReferenceHandler(), []
        with tempfile.TemporaryDirectory() as d:
            for i, g in enumerate(graphs):
                t0 = time.perf_counter()
                h.handle({"op": "build", "graph": g.to_json(), "dir": f"{d}/{i}", "direct": flag})
                work.append(1000 * (time.perf_counter() - t0))
        t["worker"] = work
        _print(label, t)
    _print("eager", cold)


def _print(label: str, t: dict[str, list[float]]) -> None:
    print(f"{label:9s} " + ", ".join(f"{k} {statistics.median(v):.2f} ms" for k, v in t.items())
              + f" (median of {len(t['build'])})")


if __name__ == "__main__":
    main()
