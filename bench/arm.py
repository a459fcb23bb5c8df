"""Models/s with the engine on native x86, on emulated arm64 (qemu-user), and on both.

    .venv/bin/python bench/arm.py --arm-root DIR [--budget 60] [--seed 1] [--blocks 1-30]

Three campaigns with the same seed and budget (minimisation off, so the whole
budget fuzzes): --platforms x86_64, arm64-qemu, and x86_64,arm64-qemu.  For each
it prints models/s and the engine's convert + infer time per model on each
platform.  Needs root (chroot) and a root from `gbft arm-root DIR`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from gbft_action.campaign import Campaign
from gbft_action.records.config import Config
from gbft_action.cli import parse_range
from gbft_action.records.case import read_cases
from gbft_action.records.summary import Summary


def run(platforms: tuple[str, ...], a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as d:
        cfg = Config(out=Path(d) / "o", engine="mnn", budget=a.budget, seed=a.seed, blocks=a.blocks,
                         minimize_share=0.0, platforms=platforms, arm_root=a.arm_root)
        t0 = time.monotonic()
        s = Campaign(cfg).run()
        wall = time.monotonic() - t0
        recs = read_cases(Path(d) / "o" / "cases.jsonl")[0]
    engine_ms = {}
    for p in platforms:
        mine = [r for rec in recs for r in rec.per_platform() if r.platform == p]
        spent = sum(r.timings.get("convert", 0) + r.timings.get("infer", 0) for r in mine)
        engine_ms[p] = f"{1000 * spent / max(1, len(mine)):.0f} ms/model on {len(mine)} models"
    print(f"{','.join(platforms):22s} models {s.models:5d}  models/s {s.models / wall:5.1f}  "
          f"engine: {'; '.join(f'{k} {v}' for k, v in engine_ms.items())}  "
          f"failures: {s.unique_failures} ({_xpf(s)} XPF cases)")


def _xpf(s: Summary) -> int:
    arm = (s.platforms or {}).get("arm64-qemu")
    return arm.by_status.get("XPF", 0) if arm else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arm-root", required=True)
    ap.add_argument("--budget", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--blocks", type=parse_range, default=(1, 30))
    a = ap.parse_args()
    print(f"budget {a.budget:.0f} s each, seed {a.seed}, blocks {a.blocks[0]}-{a.blocks[1]}, 2 lanes")
    for plats in (("x86_64",), ("arm64-qemu",), ("x86_64", "arm64-qemu")):
        run(plats, a)


if __name__ == "__main__":
    main()
