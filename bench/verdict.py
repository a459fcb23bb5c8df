"""The pull-request verdict with two real engine builds: `gbft action` as GitHub runs it.

    .venv/bin/python bench/verdict.py --pr MNN==3.0.0 --base MNN==3.6.1 [--budget 300] [--seeds 0]

Downloads the two releases from PyPI (``pip download --no-deps``), runs the action
with ``engine-build`` = the PR release and ``base-build`` = the base release under
``fail-on: new``, once per seed, and prints one line per run: exit code, wall time,
models judged, the verdict counts, and the job summary's first line.  Two releases
of one engine are a real base build and a real pull request (an older release as
the PR undoes fixes; the same release as both must blame nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GBFT = [str(Path(sys.executable).parent / "gbft"), "action"]


def wheel(req: str, cache: Path) -> Path:
    d = cache / req.replace("==", "-")
    if not list(d.glob("*.whl")):
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "-d", str(d), req], check=True)
    return d


def run(pr: Path, base: Path, budget: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="gbft-verdict-") as tmp:
        ws = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("INPUT_")}
        env.update({"GITHUB_WORKSPACE": str(ws), "GITHUB_OUTPUT": str(ws / "out.txt"),
                    "GITHUB_STEP_SUMMARY": str(ws / "summary.md"), "GITHUB_REPOSITORY": "alibaba/MNN",
                    "INPUT_ENGINE-BUILD": str(pr), "INPUT_BASE-BUILD": str(base),
                    "INPUT_BUDGET-SECONDS": str(budget), "INPUT_SEED": str(seed), "INPUT_FAIL-ON": "new"})
        t0 = time.monotonic()
        p = subprocess.run(GBFT, env=env, cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - t0
        out = dict(line.split("=", 1) for line in (ws / "out.txt").read_text().splitlines()) \
            if (ws / "out.txt").exists() else {}
        s = json.loads((ws / "gbft-out" / "summary.json").read_text())
        md = (ws / "summary.md").read_text().splitlines() if (ws / "summary.md").exists() else []
        headline = next((ln for ln in md[1:] if ln.strip()), "")
        return {"exit": p.returncode, "wall": wall, "models": s["models"], "failures": s["unique_failures"],
                "counts": (s.get("triage") or {}).get("counts", {}), "outputs": out, "headline": headline,
                "blamed": [(f["key"], f["verdict"], f.get("title", "")) for f in s["failures"] if f.get("verdict") == "new"]
                + [(f["key"], "fixed", f.get("title", "")) for f in (s.get("triage") or {}).get("fixed", [])
                   if f.get("verdict") == "fixed"]
                + [(f["key"], f["verdict"], f.get("title", "")) for f in s["failures"]
                   if f.get("verdict") == "changed"][:5],
                "stderr": p.stderr[-1500:] if p.returncode not in (0, 1) else ""}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pr", required=True, help="pip requirement of the PR build, e.g. MNN==3.0.0")
    ap.add_argument("--base", required=True, help="pip requirement of the base build, e.g. MNN==3.6.1")
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--seeds", default="0", help="comma-separated")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "gbft-wheels")
    a = ap.parse_args()
    pr, base = wheel(a.pr, a.cache), wheel(a.base, a.cache)
    for seed in (int(x) for x in a.seeds.split(",")):
        r = run(pr, base, a.budget, seed)
        c = r["counts"]
        print(f"PR {a.pr} base {a.base} seed {seed}: exit {r['exit']}, {r['wall']:.0f} s, {r['models']} models, "
              f"{r['failures']} fingerprints; " + ", ".join(f"{k} {v}" for k, v in c.items()), flush=True)
        print(f"  outputs: {r['outputs']}")
        print(f"  summary: {r['headline']}")
        for key, verdict, title in r["blamed"]:
            print(f"  {verdict:8s} {key}  {title}")
        if r["stderr"]:
            print(r["stderr"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
