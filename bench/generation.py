"""Cost of guided generation alone, and a digest of what it generated.

    .venv/bin/python bench/generation.py [--models 600] [--blocks 10-10] [--seed 0] [--corpus PATH]

Runs the campaign's generator (``GuidedSource``: MCTS, mutations, coverage) for N models
in one process, with feedback arriving a few models late as in the fuzz loop (every third
model, by its hash, an engine failure), and prints the milliseconds a model and a digest
of every graph and the source's summary.  A change meant to make generation faster must
leave the digest as it was: same seed, same models.
"""

from __future__ import annotations

import argparse
import hashlib
import time

from gbft_action.cli import parse_range
from gbft_action.corpus import load_corpus
from gbft_action.graph.generate import GenOptions
from gbft_action.graph.ir import Graph
from gbft_action.search.guided import GuidedSource
from gbft_action.records.case import CaseRecord

LAG = 4  # results reach the generator this many models late


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=600)
    ap.add_argument("--blocks", type=parse_range, default=(10, 10))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", default="", help="a block corpus (default: the TensorFlow one), e.g. the ONNX one")
    a = ap.parse_args()
    src = GuidedSource(load_corpus(a.corpus) if a.corpus else load_corpus(), GenOptions(blocks=a.blocks), a.seed)
    digest = hashlib.sha256()
    pending: list[tuple[int, Graph]] = []
    spent = 0.0
    for i in range(a.models):
        t0 = time.perf_counter()
        g = src.next_graph(i)
        spent += time.perf_counter() - t0
        digest.update(g.to_json().encode())
        pending.append((i, g))
        if len(pending) > LAG:
            j, gj = pending.pop(0)
            failed = int(gj.structure_hash(), 16) % 3 == 0
            src.feedback(j, gj, CaseRecord.from_json({"status": "DCF" if failed else "DCP"}))
    digest.update(repr(sorted(src.summary().items())).encode())
    print(f"{a.models} models of {a.blocks[0]}-{a.blocks[1]} blocks, seed {a.seed}: "
          f"{1000 * spent / a.models:.2f} ms a model, digest {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
