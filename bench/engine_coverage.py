"""What taking engine coverage costs, and what it shows (issue 38).

    .venv/bin/python bench/engine_coverage.py --build WHEEL [--budget 60] [--seed 7] [--frontend onnx]

WHEEL is an MNN wheel built with ``-fsanitize-coverage=trace-pc -g1`` (the build command with
those ``CFLAGS``/``CXXFLAGS``; see BENCHMARKS.md).  Runs the same seed three times for
``--budget`` seconds each: the pip-installed MNN (no instrumentation), the instrumented build
without taking coverage, and the instrumented build with ``--engine-coverage``.  Prints models
per second and CPU milliseconds per model of each, what taking coverage adds per model, and the
blocks covered with their split over MNN's modules (``gbft coverage``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(out: Path, budget: float, seed: int, frontend: str, extra: list[str]) -> dict:
    cmd = [sys.executable, "-m", "gbft_action.cli", "fuzz", "--engine", "mnn", "--budget", str(budget),
           "--seed", str(seed), "--frontend", frontend, "--minimize-share", "0", "--out", str(out), "--quiet", *extra]
    t0 = time.monotonic()
    before = _children_cpu()
    subprocess.run(cmd, check=False, cwd=ROOT)
    cpu = _children_cpu() - before
    s = json.loads((out / "summary.json").read_text())
    return {"models": s["models"], "wall": time.monotonic() - t0, "cpu": cpu, "summary": s}


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, required=True, help="the instrumented MNN wheel")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--frontend", default="onnx")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gbft-engcov-") as tmp:
        runs = {}
        for name, extra in (("pip MNN", []), ("instrumented", ["--engine-build", str(args.build)]),
                            ("instrumented + coverage", ["--engine-build", str(args.build), "--engine-coverage"])):
            runs[name] = r = run(Path(tmp) / name.replace(" ", "_").replace("+", "and"), args.budget, args.seed,
                                 args.frontend, extra)
            print(f"{name:26s} {r['models']:6d} models  {r['models'] / args.budget:6.1f} models/s  "
                  f"{1000 * r['cpu'] / max(r['models'], 1):6.1f} CPU ms a model")
        base, cov = runs["instrumented"], runs["instrumented + coverage"]
        added = 1000 * (cov["cpu"] / max(cov["models"], 1) - base["cpu"] / max(base["models"], 1))
        print(f"taking coverage adds {added:.1f} CPU ms a model over the instrumented build")
        engine = (cov["summary"].get("coverage") or {}).get("engine", {})
        print(f"blocks covered: {engine.get('blocks', 0)} over {engine.get('models', 0)} models")
        out = Path(tmp) / "instrumented_and_coverage"
        subprocess.run([sys.executable, "-m", "gbft_action.cli", "coverage", str(out)], cwd=ROOT, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
