"""GEN rate of the ONNX front end: random graphs from corpora/onnx-mnn.yaml through the
ONNX checker, strict shape inference and ONNX Runtime (``OnnxReferenceHandler``).

    python bench/onnx_gen.py [--seeds 0-2000] [--blocks 1-30] [--corpus FILE] [--opset N]

Prints built-and-ran / rejected (by kind: checker, invalid, reference) and the first
error of each kind.  Every rejected model is a generator bug (or an ORT limitation).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import Counter

import onnx

from gbft_action.corpus import ONNX_CORPUS, load_corpus
from gbft_action.graph.generate import GenOptions, generate
from gbft_action.frontends import NEWEST_OPSET
from gbft_action.reference import onnx_emit
from gbft_action.reference.onnx_patterns import op_types
from gbft_action.reference.onnx_worker import OnnxReferenceHandler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0-2000")
    ap.add_argument("--blocks", default="1-30")
    ap.add_argument("--corpus", default=str(ONNX_CORPUS))
    ap.add_argument("--opset", type=int, default=NEWEST_OPSET, help="the opset the models are written at (default the newest)")
    a = ap.parse_args()
    s0, s1 = map(int, a.seeds.split("-"))
    opts = GenOptions(blocks=tuple(map(int, a.blocks.split("-"))))  # type: ignore[arg-type]
    corpus, h, d = load_corpus(a.corpus, a.opset), OnnxReferenceHandler(), tempfile.mkdtemp()
    kinds: Counter[str] = Counter()
    first: dict[str, str] = {}
    t0 = time.perf_counter()
    per_model_ops = []
    for seed in range(s0, s1):
        g = generate(random.Random(seed), corpus, opts, seed)
        try:
            model = onnx_emit.build(g)
            per_model_ops.append(op_types(model.graph))
            onnx_emit.check(model)
            r = h.build({"op": "build", "graph": g.to_json(), "dir": d})
            kind, err = ("ok", "") if r["ok"] else (r["kind"], r["error"])
        except Exception as e:  # noqa: BLE001 - counted as the checker's rejection
            kind, err = "checker", f"{type(e).__name__}: {e}"
        kinds[kind] += 1
        first.setdefault(kind, f"seed {seed}: {err[:300]}")
    n = s1 - s0
    print(f"{n} graphs (blocks {a.blocks}) in {time.perf_counter() - t0:.1f} s: built and ran {kinds['ok']}, "
          f"rejected {n - kinds['ok']} (GEN {100 * (n - kinds['ok']) / n:.2f}%)  {dict(kinds)}")
    for k, e in first.items():
        if k != "ok":
            print(f"  {k}: {e}")
    ops = Counter(op for op in per_model_ops for op in op)
    default = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""}
    print(f"ONNX operators in the models (subgraphs' too): {len(ops)}, {len(set(ops) & default)} of the "
          f"{len(default)} in ONNX's default domain; not reached: {', '.join(sorted(default - set(ops)))}")


if __name__ == "__main__":
    main()
