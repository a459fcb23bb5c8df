"""NaN/Inf in TensorFlow's outputs, and the guards that keep them out (issue 13).

    .venv/bin/python bench/special_values.py [--models 1000] [--seed 0] [--special-share 0] [--guard-models 200]

Generates ``--models`` models of the default corpus (blocks 1-30, random block
choice) and runs each in TensorFlow in this process: prints the share of models
with a NaN or Inf in an output, and of outputs.  Then counts the guard adapters
(Tanh / Sigmoid) of ``--guard-models`` 10-block models, for random and for MCTS
block choice.  Runs on the commit before the guards too (no special share there:
every model is normal), which gives the "before" figure.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from dataclasses import fields

from gbft_action.reference.tfenv import set_tf_env  # noqa: E402

set_tf_env()  # before TensorFlow loads: the reference worker's kernels

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from gbft_action.corpus import load_corpus  # noqa: E402
from gbft_action.graph.generate import GenOptions  # noqa: E402
from gbft_action.reference.tf_emit import build  # noqa: E402
from gbft_action.reference.worker import draw_inputs, session_config  # noqa: E402
from gbft_action.search import RandomSource  # noqa: E402
from gbft_action.search.guided import GuidedSource  # noqa: E402

GUARDS = ("Tanh", "Sigmoid")


def options(share: float, blocks: tuple[int, int]) -> GenOptions:
    if "special_share" in {f.name for f in fields(GenOptions)}:
        return GenOptions(blocks=blocks, special_share=share)
    return GenOptions(blocks=blocks)  # the commit before: no guards, no special share


def nonfinite(n: int, seed: int, share: float) -> None:
    src = RandomSource(load_corpus(), options(share, (1, 30)), seed)
    ran = bad_models = bad_outputs = outputs = 0
    t0 = time.monotonic()
    for i in range(n):
        g = src.next_graph(i)
        try:
            tg, names = build(g)
            with tf.compat.v1.Session(graph=tg, config=session_config()) as s:
                vals = s.run([names[o] for o in g.outputs], {names[k]: v for k, v in draw_inputs(g).items()})
        except (ValueError, TypeError, tf.errors.OpError):
            continue
        bad = sum(np.asarray(v).dtype.kind == "f" and not np.isfinite(v).all() for v in vals)
        ran, outputs, bad_outputs, bad_models = ran + 1, outputs + len(vals), bad_outputs + bad, bad_models + (bad > 0)
    print(f"{ran} of {n} models ran in {time.monotonic() - t0:.0f} s: {bad_models} ({bad_models / ran:.1%}) with "
          f"NaN/Inf in an output; {bad_outputs} of {outputs} outputs ({bad_outputs / max(outputs, 1):.1%})")


def guard_counts(n: int, seed: int) -> None:
    corpus = load_corpus()
    opts = options(0.0, (10, 10))
    for name, src in (("random", RandomSource(corpus, opts, seed)), ("mcts", GuidedSource(corpus, opts, seed))):
        per_model, ops = [], Counter()
        for i in range(n):
            g = src.next_graph(i)
            gs = [x.op for x in g.nodes if x.role == "adapter" and x.op in GUARDS]
            per_model.append(len(gs))
            ops.update(gs)
        print(f"{name}: guards per 10-block model over {n}: mean {statistics.mean(per_model):.2f}, median "
              f"{statistics.median(per_model):g}, max {max(per_model)}, none in {per_model.count(0)}; {dict(ops)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--special-share", type=float, default=0.0)
    ap.add_argument("--guard-models", type=int, default=200)
    a = ap.parse_args()
    tf.get_logger().setLevel("ERROR")
    nonfinite(a.models, a.seed, a.special_share)
    if a.guard_models:
        guard_counts(a.guard_models, a.seed)


if __name__ == "__main__":
    main()
