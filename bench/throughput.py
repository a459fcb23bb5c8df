"""Throughput of the fuzz loop on the real MNN: models/s and where the time goes.

    .venv/bin/python bench/throughput.py [--budget 30] [--blocks 10-10] [--jobs 2] [--base-build installed|PATH]
                                         [--frontend tf|tflite|onnx|tf,onnx] [--engine mnn|onnxruntime]
                                         [--corpus FILE]   # e.g. gbft_action/corpora/onnx-all.yaml
                                         [--opset 27 | 27,17]

Runs one campaign and splits lane time (wall time summed over lanes) into waiting for
the reference workers (TensorFlow, or ONNX Runtime for ``--frontend onnx``, and the
second reference of failing TensorFlow cases), for the engine workers (convert, infer,
probes of failing cases, reruns), for worker start-up (the first start and restarts
after crashes), and the harness: everything else (generation, judging, IPC, recording).
Every worker call is counted (``Campaign.worker_time``), each op listed.  It also prints
the CPU seconds of the harness process and of the workers: on a machine whose cores are
all busy, CPU, not waiting, decides the rate.  With
``--base-build`` every model also runs on a base build (``installed``: the MNN
the tool runs with; or a wheel or a folder holding one), as a pull-request
verdict does; its convert + infer time is counted as engine time too.  ``--fresh-fs``
writes the campaign on a new ext4 filesystem (needs root and a loop device): runs one
after another on one disk are otherwise slowed by the files the earlier ones deleted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

from gbft_action.campaign import Campaign
from gbft_action.records.config import Config
from gbft_action.cli import parse_range
from gbft_action.knowledge.builds import prepare_build
from gbft_action.frontends import parse_frontends
from gbft_action.frontends import DEFAULT_OPSETS, parse_opsets


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
    ap.add_argument("--corpus", default="", help="the front end's corpus (default: its own)")
    ap.add_argument("--opset", type=parse_opsets, default=DEFAULT_OPSETS,
                    help="the ONNX opsets: one, or a list whose first writes three models in four (default 27,17)")
    ap.add_argument("--fresh-fs", action="store_true",
                    help="write the campaign on a fresh ext4 filesystem (root: a loop device)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, _place(Path(tmp), a.fresh_fs) as d:
        base = None
        if a.base_build:
            path = None if a.base_build == "installed" else Path(a.base_build)
            base = prepare_build("mnn", path, Path(d) / "base-venv")
        cfg = Config(out=Path(d) / "o", engine=a.engine, budget=a.budget, seed=a.seed, blocks=a.blocks,
                         jobs=a.jobs, base=base, minimize_share=a.minimize_share,
                         frontend=",".join(fe.name for fe in a.frontend), corpus=a.corpus, opsets=a.opset)
        cpu0 = _cpu()
        t0 = time.monotonic()
        campaign = Campaign(cfg)
        s = campaign.run()
        wall = time.monotonic() - t0
        cpu = [b - a for a, b in zip(cpu0, _cpu())]
        waited = campaign.worker_time()
    lane_time = wall * max(a.jobs, 1)
    print(f"engine {a.engine}, front end {','.join(fe.name for fe in a.frontend)}, "
          f"blocks {a.blocks[0]}-{a.blocks[1]}, jobs {a.jobs}, budget {a.budget:.0f} s, wall {wall:.1f} s, "
          f"base build: {a.base_build or 'none'}, minimize share {a.minimize_share}")
    print(f"models {s.models}, models/s {s.models / wall:.1f} (wall, including worker start-up)")
    print(_shares(waited, lane_time, s.models))
    for kind, ops in waited.items():
        for op, (n, sec, busy) in sorted(ops.items(), key=lambda kv: -kv[1][1]):
            print(f"  {kind} {op}: {n} calls, {sec:.2f} s ({100 * sec / lane_time:.1f}% of lane time), "
                  f"{1000 * sec / max(n, 1):.1f} ms each, {1000 * busy / max(n, 1):.1f} ms of its CPU")
    print(f"CPU: harness process {cpu[0]:.1f} s ({1000 * cpu[0] / max(s.models, 1):.1f} ms a model, "
          f"{100 * cpu[2] / max(cpu[0], 1e-9):.0f}% of it in the kernel: files, pipes), "
          f"workers {cpu[1]:.1f} s ({1000 * cpu[1] / max(s.models, 1):.1f} ms a model); "
          f"{(cpu[0] + cpu[1]) / wall:.2f} of the machine's cores busy on average")
    print(_ceilings(waited, cpu, wall, s.models, a.jobs, bool(a.base_build)))
    print(f"by status: {dict(s.by_status)}")
    if s.triage:
        print(f"verdicts: {dict(s.triage.counts)}")


def _shares(waited: dict[str, dict[str, tuple[int, float]]], lane_time: float, models: int) -> str:
    """Lane time split into waiting for the reference(s), the engine build(s), worker start-up,
    and the harness (the rest: generation, judging, IPC, recording, bundles)."""
    def total(kinds: tuple[str, ...], start: bool) -> float:
        return sum(sec for k in kinds for op, (_, sec, _) in waited.get(k, {}).items() if (op == "start") == start)
    ref = total(("reference", "second reference"), False)
    eng = total(("engine", "base build"), False)
    start = sum(total((k,), True) for k in waited)
    harness = lane_time - ref - eng - start
    pct = lambda x: f"{100 * x / lane_time:.1f}%"  # noqa: E731
    return (f"time share of lane time: reference {pct(ref)}, engine {pct(eng)}, worker start-up {pct(start)}, "
            f"harness {pct(harness)}\nper model: reference {1000 * ref / max(models, 1):.1f} ms, "
            f"engine {1000 * eng / max(models, 1):.1f} ms, harness {1000 * harness / max(models, 1):.1f} ms")


def _ceilings(waited: dict[str, dict[str, tuple[int, float, float]]], cpu: list[float], wall: float, models: int,
              jobs: int, with_base: bool) -> str:
    """What this machine's cores allow at the CPU a model costs here, whatever the scheduling:
    the rate with every core busy, the engine's own floor (its calls' CPU alone), and the most
    a base build (another engine's calls a model) or, from a --jobs 1 run, more lanes can keep."""
    cores, n = os.cpu_count() or 1, max(models, 1)

    def busy(kinds: tuple[str, ...]) -> float:
        return sum(c for k in kinds for op, (_, _, c) in waited.get(k, {}).items() if op != "start")
    engine, base = busy(("engine",)), busy(("base build",))
    per = lambda x: 1000 * x / n  # noqa: E731 - ms a model
    total = cpu[0] + cpu[1]
    lines = [f"CPU a model: engine calls {per(engine):.1f} ms, base build calls {per(base):.1f} ms, "
             f"reference calls {per(busy(('reference', 'second reference'))):.1f} ms, "
             f"harness {per(cpu[0]):.1f} ms, all {per(total):.1f} ms",
             f"ceiling on {cores} cores all busy: {cores * n / total:.0f} models/s; the engine's calls alone "
             f"allow {cores * n / max(engine, 1e-9):.0f}"]
    if not with_base:
        lines.append(f"a base build (its calls costing the engine's {per(engine):.1f} ms) keeps at most "
                     f"{total / (total + engine):.2f} of this rate")
    if jobs == 1:
        lines.append(f"one lane keeps {total / wall:.2f} cores busy: more lanes can reach at most "
                     f"{cores * wall / total:.2f} times its rate")
    return "\n".join(lines)


@contextlib.contextmanager
def _place(tmp: Path, fresh: bool) -> Iterator[Path]:
    """Where the campaign writes: tmp, or a fresh ext4 filesystem mounted in it (its image in
    /dev/shm).  On a filesystem that deleted many files in the last minutes (an earlier run's
    output, cleaned up), ext4 scans the recently deleted inodes on every create, which cost
    this machine 15 to 20% of the rate; a CI runner's disk is fresh."""
    if not fresh:
        yield tmp
        return
    img, mnt = Path("/dev/shm") / f"gbft-bench-{os.getpid()}.img", tmp / "fs"
    mnt.mkdir()
    try:
        subprocess.run(["truncate", "-s", "3G", str(img)], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True)
        subprocess.run(["mount", "-o", "loop", str(img), str(mnt)], check=True)
        try:
            yield mnt
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
    finally:
        img.unlink(missing_ok=True)


def _cpu() -> tuple[float, float, float]:
    """CPU seconds (user + system) of this process and of its reaped workers, and this
    process's system seconds alone."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime, me.ru_stime


if __name__ == "__main__":
    main()
