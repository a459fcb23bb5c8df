"""Table III ablation of the GBFT paper, on the real MNN.

    .venv/bin/python bench/ablation.py [--seeds 1,2] [--models 400] [--blocks 5,10,15] [--write]

Five strategies (the paper's rows), N blocks per model, ``--models`` kept models
each, averaged over seeds: operator-level coverage (OLC), distinct failures
(distinct fingerprints), models/s.  ``--write`` replaces
the ablation section of BENCHMARKS.md with the table.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

from gbft_action.campaign import Campaign
from gbft_action.records.config import Config

# (row, graph model, mutations, chooser) as in Table III.
STRATEGIES = [
    ("1 WS+RN, mutations, random", "both", True, "random"),
    ("2 WS, no mutations, MCTS", "ws", False, "mcts"),
    ("3 RN, no mutations, MCTS", "rn", False, "mcts"),
    ("4 WS+RN, no mutations, MCTS", "both", False, "mcts"),
    ("5 WS+RN, mutations, MCTS", "both", True, "mcts"),
]
PAPER_OLC = {  # Table III of the paper, per row and N
    1: {5: 60.2, 10: 69.9, 15: 71.8}, 2: {5: 57.2, 10: 62.9, 15: 64.8}, 3: {5: 57.7, 10: 65.3, 15: 67.3},
    4: {5: 59.2, 10: 65.8, 15: 69.7}, 5: {5: 61.5, 10: 76.4, 15: 81.7},
}
BEGIN, END = "<!-- ablation:begin -->", "<!-- ablation:end -->"


def run_one(n: int, graph: str, mutations: bool, chooser: str, seed: int, models: int) -> tuple[float, int, float]:
    with tempfile.TemporaryDirectory() as d:
        cfg = Config(out=Path(d) / "o", engine="mnn", budget=3600, max_models=models, seed=seed,
                         blocks=(n, n), graph=graph, mutations=mutations, chooser=chooser, jobs=2)
        t0 = time.monotonic()
        s = Campaign(cfg).run()
        wall = time.monotonic() - t0
    return (s.coverage or {})["OLC"], s.unique_failures, s.models / wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--models", type=int, default=400)
    ap.add_argument("--blocks", default="5,10,15")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    seeds = [int(x) for x in a.seeds.split(",")]
    ns = [int(x) for x in a.blocks.split(",")]
    lines = [f"{a.models} models per run, seeds {a.seeds}, real MNN; OLC mean over seeds (paper's in brackets), "
             "distinct failures mean, models/s mean (wall, with worker start-up).", "",
             "| strategy | " + " | ".join(f"N={n} OLC | N={n} distinct | N={n} models/s" for n in ns) + " |",
             "|---|" + "---|---|---|" * len(ns)]
    for row, graph, mut, chooser in STRATEGIES:
        cells = []
        for n in ns:
            runs = [run_one(n, graph, mut, chooser, s, a.models) for s in seeds]
            olc = statistics.mean(r[0] for r in runs)
            paper = PAPER_OLC[int(row[0])][n]
            cells += [f"{100 * olc:.1f}% ({paper}%)", f"{statistics.mean(r[1] for r in runs):.1f}",
                      f"{statistics.mean(r[2] for r in runs):.1f}"]
            print(f"{row} N={n}: OLC {[round(r[0], 3) for r in runs]} distinct {[r[1] for r in runs]}", flush=True)
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print("\n" + table)
    if a.write:
        path = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
        text = path.read_text()
        cmd = f"`.venv/bin/python bench/ablation.py --seeds {a.seeds} --models {a.models} --blocks {a.blocks} --write`"
        block = f"{BEGIN}\nCommand: {cmd}\n\n{table}\n{END}"
        path.write_text(re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S))


if __name__ == "__main__":
    main()
