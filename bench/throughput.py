"""Throughput of the fuzz loop on the real MNN: models/s and where the time goes.

    .venv/bin/python bench/throughput.py [--budget 30] [--blocks 10-10] [--jobs 2] [--base-build installed|PATH]
                                         [--frontend tf|tflite|onnx|tf,onnx] [--engine mnn|onnxruntime]

Runs one campaign and splits wall time into the reference (TensorFlow, or ONNX Runtime
for ``--frontend onnx``; the reference worker),
the engine (convert + infer) and the harness (everything else: generation,
judging, IPC, recording).  Shares are of lane time (summed over lanes).  With
``--base-build`` every model also runs on a base build (``installed``: the MNN
the tool runs with; or a wheel or a folder holding one), as a pull-request
verdict does; its convert + infer time is counted as engine time too.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from gbft_action.campaign import Campaign, FuzzConfig
from gbft_action.cli import parse_range
from gbft_action.engines.builds import prepare_build
from gbft_action.frontends import parse_frontends


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=30)
    ap.add_argument("--blocks", type=parse_range, default=(10, 10))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--base-build", default="", help="installed, or an MNN wheel / folder holding one")
    ap.add_argument("--minimize-share", type=float, default=0.35,
                    help="0: the fuzz loop only (no minimisation or confirmation reserve)")
    ap.add_argument("--frontend", type=parse_frontends, default=parse_frontends("tf"),
                    help="one front end, or a comma list (a mixed campaign)")
    ap.add_argument("--engine", default="mnn")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        base = None
        if a.base_build:
            path = None if a.base_build == "installed" else Path(a.base_build)
            base = prepare_build("mnn", path, Path(d) / "base-venv")
        cfg = FuzzConfig(out=Path(d) / "o", engine=a.engine, budget=a.budget, seed=a.seed, blocks=a.blocks,
                         jobs=a.jobs, base=base, minimize_share=a.minimize_share,
                         frontend=",".join(fe.name for fe in a.frontend))
        t0 = time.monotonic()
        s = Campaign(cfg).run()
        wall = time.monotonic() - t0
        recs = [json.loads(x) for x in (Path(d) / "o" / "cases.jsonl").read_text().splitlines()]
    ref = sum(r["timings"].get("reference", 0) for r in recs)
    eng = sum(x["timings"].get("convert", 0) + x["timings"].get("infer", 0)
              for r in recs for x in (r, r.get("base", {"timings": {}})))
    tfl = sum(r["timings"].get("tflite", 0) for r in recs)  # TFLite copies of first-of-a-kind failures
    cross = sum(r["timings"].get("crosscheck", 0) for r in recs)  # ONNX Runtime on failing TF cases
    ref += tfl + cross
    lane_time = wall * a.jobs
    print(f"engine {a.engine}, front end {','.join(fe.name for fe in a.frontend)}, "
          f"blocks {a.blocks[0]}-{a.blocks[1]}, jobs {a.jobs}, budget {a.budget:.0f} s, wall {wall:.1f} s, "
          f"base build: {a.base_build or 'none'}, minimize share {a.minimize_share}")
    print(f"models {s['models']}, models/s {s['models'] / wall:.1f} (wall, including worker start-up)")
    print(f"time share of lane time: reference {100 * ref / lane_time:.1f}%, engine {100 * eng / lane_time:.1f}%, "
          f"harness {100 * (lane_time - ref - eng) / lane_time:.1f}%")
    print(f"of which TFLite conversion of {sum(1 for r in recs if 'tflite' in r['timings'])} failing models: "
          f"{100 * tfl / lane_time:.1f}%; ONNX Runtime cross-checks of failing TF cases: {100 * cross / lane_time:.1f}%")
    print(f"per model: reference {1000 * ref / len(recs):.1f} ms, engine {1000 * eng / len(recs):.1f} ms")
    print(f"by status: {s['by_status']}")
    if s.get("triage"):
        print(f"verdicts: {s['triage']['counts']}")


if __name__ == "__main__":
    main()
