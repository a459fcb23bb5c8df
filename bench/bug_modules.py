"""Where MNN's known defects are in its code (issue 38): the catalogue's repros on the coverage build.

    .venv/bin/python bench/bug_modules.py --build WHEEL --data DIR [--catalogue FILE ...]

Runs every catalogue entry that shows a real defect (not the controls, not the harness's
artefacts) on the engine built with coverage and appends its row to the data set in DIR, keyed
``defect:<defect id>:<entry id>`` (learn.collect.collect_graphs).  ``gbft learn train`` reads
those rows for the modules' bug share: a defect counts for the modules where its repro ran
well above the data set's mean (learn.train.defect_modules).  Prints the defects per module.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import catalogue as C  # noqa: E402

from gbft_action.knowledge.builds import prepare_build  # noqa: E402
from gbft_action.learn.collect import CollectConfig, collect_graphs  # noqa: E402
from gbft_action.learn.train import defect_modules  # noqa: E402
from gbft_action.records.learned import DatasetRow  # noqa: E402

CATALOGUES = [ROOT / "bench" / "catalogue" / "mnn-3.6.1-onnx.yaml", ROOT / "bench" / "catalogue" / "mnn-3.6.1.yaml"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, required=True, help="the MNN wheel built with coverage")
    ap.add_argument("--data", type=Path, required=True, help="the data set's folder (gbft learn collect)")
    ap.add_argument("--catalogue", type=Path, action="append", help="catalogue files (default: both of MNN 3.6.1)")
    args = ap.parse_args()
    build = prepare_build("mnn", args.build, args.data.resolve() / ".engine-this")
    for path in args.catalogue or CATALOGUES:
        cat = C.load(path)
        real = {d.id for d in cat.defects if d.real}
        graphs = [(f"defect:{e.defect}:{e.id}", C.build_graph(e)) for e in cat.entries
                  if e.defect in real and not e.settings]
        print(f"{path.name}: {len(graphs)} repros of {len(real)} defects")
        collect_graphs(CollectConfig(args.data, "mnn", build), cat.frontend, graphs)
    rows = list(DatasetRow.read_all(args.data))
    modules = sorted({m for r in rows for m in r.modules})
    for m, n in sorted(defect_modules(rows, modules).items(), key=lambda kv: -kv[1]):
        print(f"{n:5d}  {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
