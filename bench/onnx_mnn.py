"""Which ONNX blocks MNN's ONNX converter takes: a probe of the ONNX corpus (issue 14).

For every block of corpora/onnx-mnn.yaml, a few small graphs built around it are
written as ONNX and run in ONNX Runtime (the reference); then MNN converts each
(``_tools.mnnconvert -f ONNX``), loads it with the Module API and runs it, in a
child process (MNN can crash: the child is restarted after the failing model).
Prints, per block: converted / loaded-and-ran / agreed (rtol 1e-3, atol 1e-4),
and the first error of each kind.

    python bench/onnx_mnn.py [--per-block 4] [--out DIR] [--per-child 1]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

CHILD = r'''
import json, sys, os
import numpy as np
import _tools, MNN
import MNN.expr as F
jobs = json.load(open(sys.argv[1]))
start, count = int(sys.argv[2]), int(sys.argv[4])
out = open(sys.argv[3], "a")
for i, job in enumerate(jobs[start:start + count], start):
    d = job["dir"]
    mnn = os.path.join(d, "model.mnn")
    res = {"i": i}
    log = os.path.join(d, "convert.log")
    out.write(json.dumps({"i": i, "stage": "start", "at": "convert"}) + "\n"); out.flush()
    fd = os.dup(1); os.dup2(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    try:
        _tools.mnnconvert(["mnnconvert", "-f", "ONNX", "--modelFile", os.path.join(d, "model.onnx"),
                           "--MNNModel", mnn, "--bizCode", "gbft"])
    finally:
        os.dup2(fd, 1)
    if not os.path.exists(mnn) or os.path.getsize(mnn) == 0:
        tail = open(log, errors="replace").read()[-600:]
        res.update(stage="convert", error=tail)
    else:
        out.write(json.dumps({"i": i, "stage": "start", "at": "infer"}) + "\n"); out.flush()
        try:
            data = np.load(os.path.join(d, "io.npz"))
            net = MNN.nn.load_module_from_file(mnn, ["in0"], job["outputs"])
            x = data["in0"]
            ys = net.forward([F.const(x, list(x.shape), F.NCHW)])
            ok = True
            for name, y in zip(job["outputs"], ys):
                if y.data_format == F.NC4HW4:
                    y = F.convert(y, F.NCHW)
                got = np.array(y.read()).copy()
                want = data[name]
                if got.shape != want.shape or not np.allclose(got.astype(np.float64), want.astype(np.float64),
                                                              rtol=1e-3, atol=1e-4, equal_nan=True):
                    ok = False
                    res["detail"] = f"{name}: shape {got.shape} vs {want.shape}"
            res.update(stage="done", agree=ok)
        except Exception as e:
            res.update(stage="infer", error=f"{type(e).__name__}: {e}"[:600])
    out.write(json.dumps(res) + "\n"); out.flush()
'''


def build_jobs(per_block: int, root: Path) -> list[dict]:
    from gbft_action.corpus import ONNX_CORPUS, load_corpus
    from gbft_action.graph.generate import GenOptions, generate
    from gbft_action.reference.onnx_worker import OnnxReferenceHandler
    from gbft_action.wire.arrays import unpack

    corpus = load_corpus(ONNX_CORPUS)
    h = OnnxReferenceHandler()
    jobs = []
    for b in corpus.blocks:
        lo = 3 if min(b.in_degree) > 1 else 1
        for k in range(per_block):
            seed = 1000 * len(jobs) + k
            g = generate(random.Random(seed), corpus, GenOptions(blocks=(lo, lo + 1), special_share=0.0), seed,
                         chosen=[b])
            d = root / f"{b.name}-{k}"
            r = h.build({"op": "build", "graph": g.to_json(), "dir": str(d)})
            if not r["ok"]:
                print("reference failed", b.name, r["error"][:200])
                continue
            arrays = {**unpack(r["inputs"]), **unpack(r["expected"])}
            np.savez(d / "io.npz", **arrays)
            (d / "graph.json").write_text(g.to_json())
            jobs.append({"block": b.name, "dir": str(d), "outputs": g.outputs,
                         "ops": sorted({n.op for n in g.nodes})})
    return jobs


def run_children(jobs: list[dict], root: Path, per_child: int) -> dict[int, dict]:
    """Jobs in children of ``per_child`` models each (1: a fresh process per model, so a crash is
    blamed on its own model and not on heap damage an earlier one left)."""
    jf, child, results = root / "jobs.json", root / "child.py", root / "results.jsonl"
    jf.write_text(json.dumps(jobs))
    child.write_text(CHILD)
    results.write_text("")
    start = 0
    while start < len(jobs):
        p = subprocess.run([sys.executable, str(child), str(jf), str(start), str(results), str(per_child)],
                           capture_output=True, text=True, timeout=600)
        lines = [json.loads(x) for x in results.read_text().splitlines()]
        last = lines[-1] if lines else {"i": start - 1, "stage": "done"}
        if last.get("stage") == "start":  # the child died on this model
            with results.open("a") as f:
                f.write(json.dumps({"i": last["i"], "stage": f"crash-in-{last['at']}",
                                    "error": f"exit {p.returncode}: " + (p.stderr or "")[-300:]}) + "\n")
            start = last["i"] + 1
        else:
            start += per_child
    return {r["i"]: r for r in map(json.loads, results.read_text().splitlines()) if r.get("stage") != "start"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-block", type=int, default=4)
    ap.add_argument("--out", default="")
    ap.add_argument("--per-child", type=int, default=1, help="models per MNN process (1: fresh each)")
    a = ap.parse_args()
    root = Path(a.out or tempfile.mkdtemp(prefix="onnx-mnn-"))
    jobs = build_jobs(a.per_block, root)
    res = run_children(jobs, root, a.per_child)
    per: dict[str, dict] = defaultdict(lambda: {"n": 0, "converted": 0, "ran": 0, "agree": 0, "errors": []})
    for i, job in enumerate(jobs):
        r = res.get(i, {"stage": "missing"})
        s = per[job["block"]]
        s["n"] += 1
        s["converted"] += r["stage"] in ("infer", "done", "crash-in-infer")
        s["ran"] += r["stage"] == "done"
        s["agree"] += bool(r.get("agree"))
        if r["stage"] != "done" or not r.get("agree"):
            s["errors"].append(f"{r['stage']}: {(r.get('error') or r.get('detail') or '').strip()[-300:]} "
                               f"[{job['dir']}]")
    print(f"{'block':22} n conv ran agree")
    for name, s in per.items():
        print(f"{name:22} {s['n']} {s['converted']:4} {s['ran']:3} {s['agree']:5}")
    print()
    for name, s in per.items():
        for e in s["errors"][:2]:
            print(f"{name}: {e}")
    print(f"models under {root}")


if __name__ == "__main__":
    main()
