"""Minimiser and replay figures on the real MNN.

    .venv/bin/python bench/minimize.py [--budget 120] [--seed 21] [--minimize-all]

Runs ``gbft fuzz`` for the budget (automatic minimisation within its share),
then, with ``--minimize-all``, minimises the bundles the budget left out, and
replays every bundle once.  Prints: bundles, minimised, median and max
minimised size (block operators), how many grew (must be 0), median seconds per
bug, and the share of bundles whose replay gives the same fingerprint.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from gbft_action.bugs.bundle import BugBook
from gbft_action.bugs.fingerprint import Fingerprint
from gbft_action.rerun.replay import load_bundle, minimize_bug, replay
from gbft_action.campaign import Campaign
from gbft_action.records.config import Config
from gbft_action.pipeline import Lane, LaneConfig


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=120)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--minimize-all", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "D"
        Campaign(Config(out=out, engine="mnn", budget=a.budget, seed=a.seed)).run()
        lane = Lane(LaneConfig("mnn", Path(d) / "bench"), 0)
        lane.start()
        book = BugBook(out)
        if a.minimize_all:
            for b in sorted((out / "bugs").iterdir()):
                if not json.loads((b / "meta.json").read_text()).get("minimized"):
                    minimize_bug(lane, book, b.name, 30.0)
        metas, same, same_steady = [], 0, 0
        for b in sorted((out / "bugs").iterdir()):
            meta, g, small = load_bundle(b)
            metas.append(meta)
            v = replay(lane, small or g, Fingerprint.from_json(meta["fingerprint"]))
            same += v.outcome == "same"
            same_steady += v.outcome == "same" and not meta.get("flaky")
            if v.outcome != "same":
                print(f"  {b.name} {'flaky' if meta.get('flaky') else 'steady'}: {meta['title'][:70]} -> "
                      f"{v.fingerprint.title[:70] if v.fingerprint else 'passes'}")
        lane.stop()
    done = [m for m in metas if m.get("minimized")]
    sizes = [m["minimized_size"] for m in done]
    secs = [m["minimize"]["seconds"] for m in done]
    grew = sum(m["minimized_size"] > m["original_size"] for m in metas)
    flaky = sum(bool(m.get("flaky")) for m in metas)
    print(f"budget {a.budget:.0f} s, seed {a.seed}: {len(metas)} bundles, {len(done)} minimised")
    if done:
        print(f"minimised size (block operators): median {statistics.median(sizes)}, max {max(sizes)}; "
              f"original median {statistics.median(m['original_size'] for m in done)}")
        print(f"seconds per bug: median {statistics.median(secs):.2f}, max {max(secs):.2f}")
    print(f"larger than the original: {grew}; sizes: {sorted(sizes)}")
    print(f"kept the original (nothing smaller reproduced): {sum('note' in m['minimize'] for m in done)}")
    print(f"replay gives the same fingerprint: {same}/{len(metas)} ({100 * same / max(1, len(metas)):.1f}%); "
          f"marked flaky: {flaky}; among the {len(metas) - flaky} not marked flaky: {same_steady} "
          f"({100 * same_steady / max(1, len(metas) - flaky):.1f}%)")


if __name__ == "__main__":
    main()
