"""Random, MCTS and learned choosers at equal wall time on MNN built with coverage (issue 38, item 5).

    .venv/bin/python bench/coverage.py --build WHEEL [--guide DIR] [--budget 600] [--seeds 211,223,227]
                                       [--frontend onnx] [--out DIR]
    .venv/bin/python bench/coverage.py --out DIR --report      # the figures of runs already made

``--corpus`` takes another block corpus: the ONNX front end's default (onnx-all.yaml) starts
with about 800 probes (each recorded operator alone), the same for every chooser.

Each (seed, chooser) is one ``gbft fuzz --engine mnn --engine-build WHEEL --engine-coverage
--minimize-share 0`` of ``--budget`` seconds, run one after another on an idle machine (the
cost of taking coverage is inside every run alike).  Printed per run and as the mean over seeds:
- engine coverage: the union of blocks the run's models ran, in all, in MNN's converter (its
  modules "converter: ...") and in its CPU backend ("CPU compute", "x86 kernels", "ARM kernels"),
  and per module (``engine-coverage.json``);
- distinct real defects: the run's reported root causes matched to the catalogue (bench/triage.py),
  with those only listed in a tracking issue;
- the time to each defect: when its first case ran, from the case's index (cases run in
  index order at a near-constant rate: index / models x wall time);
- for the learned chooser, the models not run for a negative test value.
NNSmith measures branch coverage of the compiler under test (gcov/llvm-cov); these are basic
blocks of SanitizerCoverage's trace-pc (one per branch target reached, no counts): the same
measure up to blocks without branches.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import triage as T  # noqa: E402

CHOOSERS = ("random", "mcts", "learned")
CONVERTER, CPU = "converter: ", ("CPU compute", "x86 kernels", "ARM kernels")


def run(out: Path, build: Path, chooser: str, seed: int, budget: float, frontend: str, guide: str,
        corpus: str = "") -> None:
    if (out / "summary.json").exists():
        return  # made already (a run interrupted later resumes the table, not the runs)
    cmd = [sys.executable, "-m", "gbft_action.cli", "fuzz", "--engine", "mnn", "--engine-build", str(build),
           "--engine-coverage", "--frontend", frontend, "--chooser", chooser, "--budget", str(budget),
           "--seed", str(seed), "--minimize-share", "0", "--out", str(out), "--quiet",
           *(["--guide", guide] if chooser == "learned" and guide else []), *(["--corpus", corpus] if corpus else [])]
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=ROOT, check=False, stdout=subprocess.DEVNULL)
    (out / "bench-wall.txt").write_text(f"{time.monotonic() - t0:.1f}\n")


def figures(out: Path) -> dict[str, Any]:
    s = json.loads((out / "summary.json").read_text())
    eng = json.loads((out / "engine-coverage.json").read_text())
    modules = {m: sum(len(v) for v in objs.values()) for m, objs in eng["blocks"].items()}
    fps = T.fingerprint_details(out)
    r = T.analyse(s, fps, T.catalogues(s, fps, []), T.bundle_models(out))
    wall = float((out / "bench-wall.txt").read_text()) if (out / "bench-wall.txt").exists() else s.get("elapsed", 0)
    models = max(1, int(s.get("models", 1)))
    first = _first_cases(s, fps)
    learned = (s.get("coverage") or {}).get("learned") or {}
    return {"models": models, "blocks": sum(modules.values()),
            "converter": sum(n for m, n in modules.items() if m.startswith(CONVERTER)),
            "cpu": sum(n for m, n in modules.items() if m in CPU), "modules": modules,
            "defects": r["defects_found"], "defects_with_tracked": r.get("defects_found_with_tracked", r["defects_found"]),
            "time_to_defect": {d: round(i / models * wall, 1) for d, i in sorted(first.items(), key=lambda kv: kv[1])},
            "skipped_negative": learned.get("skipped_negative", 0)}


def _first_cases(s: dict[str, Any], fps: dict[str, Any]) -> dict[str, int]:
    """Per real defect the run reported (a root cause it files, matched as bench/triage.py does),
    the index of its first case."""
    cs = T.Catalogues(T.catalogues(s, fps, []))
    real = {q for q, d in cs.ordered() if d.real}
    first_of = {f["key"]: int(f.get("first_index", 0)) for f in s.get("failures", [])}
    out: dict[str, int] = {}
    for rc in s.get("root_causes", []):
        k = T.root_cause_key(rc, fps)
        cs.assign(k)
        idx = [first_of[f] for f in k.fingerprints if f in first_of]
        if k.policy == "report" and k.defect in real and idx:
            out[k.defect] = min(out.get(k.defect, 1 << 30), min(idx))
    return out


def report(outs: dict[tuple[int, str], Path]) -> None:
    rows = {key: figures(p) for key, p in outs.items() if (p / "summary.json").exists()}
    print(f"{'seed':>5} {'chooser':8} {'models':>7} {'blocks':>7} {'converter':>9} {'CPU':>6} {'defects':>7} "
          f"{'+tracked':>8} {'skipped':>7}")
    for (seed, ch), f in sorted(rows.items()):
        print(f"{seed:5d} {ch:8} {f['models']:7d} {f['blocks']:7d} {f['converter']:9d} {f['cpu']:6d} "
              f"{f['defects']:7d} {f['defects_with_tracked']:8d} {f['skipped_negative']:7d}")
    print("mean over seeds:")
    for ch in CHOOSERS:
        fs = [f for (_, c), f in rows.items() if c == ch]
        if fs:
            mean = {k: sum(f[k] for f in fs) / len(fs) for k in ("models", "blocks", "converter", "cpu", "defects")}
            print(f"  {ch:8} " + "  ".join(f"{k} {v:.1f}" for k, v in mean.items()))
    mods = sorted({m for f in rows.values() for m in f["modules"]})
    print("blocks per module (mean over seeds):")
    print(f"  {'module':24}" + "".join(f"{ch:>10}" for ch in CHOOSERS))
    for m in mods:
        vals = []
        for ch in CHOOSERS:
            fs = [f["modules"].get(m, 0) for (_, c), f in rows.items() if c == ch]
            vals.append(f"{sum(fs) / len(fs):10.0f}" if fs else f"{'-':>10}")
        print(f"  {m:24}" + "".join(vals))
    print("time to each defect (s), by seed and chooser:")
    for (seed, ch), f in sorted(rows.items()):
        print(f"  {seed} {ch}: " + ", ".join(f"{d} {t}" for d, t in f["time_to_defect"].items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, help="the MNN wheel built with coverage")
    ap.add_argument("--guide", default="", help="the learned chooser's guide (default: the shipped one)")
    ap.add_argument("--budget", type=float, default=600.0)
    ap.add_argument("--seeds", default="211,223,227")
    ap.add_argument("--frontend", default="onnx")
    ap.add_argument("--corpus", default="", help="a block corpus (default: the front end's; onnx-mnn.yaml has no "
                                                 "probes, so the chooser decides from the first model)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/gbft-bench-coverage"))
    ap.add_argument("--report", action="store_true", help="only print the figures of the runs in --out")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",") if s]
    outs = {(s, ch): a.out / f"{ch}-{s}" for s in seeds for ch in CHOOSERS}
    if not a.report:
        if a.build is None:
            ap.error("--build is needed to run (or --report to read runs made)")
        for (s, ch), p in outs.items():
            print(f"run: seed {s}, {ch} ...", flush=True)
            run(p, a.build, ch, s, a.budget, a.frontend, a.guide, a.corpus)
    report(outs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
