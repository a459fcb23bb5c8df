"""Engine coverage (issue 38): which of the engine's own code the models ran.

An engine built with ``-fsanitize-coverage=trace-pc`` (gcc or clang; clang's trace-pc-guard
too) calls ``__sanitizer_cov_trace_pc`` on every basic block.  The callback is the shim
(``data/coverage_shim.c``), built here with the machine's C compiler and preloaded into the
engine worker (``LD_PRELOAD``).  After each request the worker takes the blocks seen since
the last one (``BlockReader.take``): each as its object file and the address in it, which
stay the same from worker to worker whatever the address layout.  The host keeps the union
(``Blocks``) and places it in the engine's modules from its source folders (``place``,
through ``addr2line`` on the object's line tables: build with ``-g1`` at least), by rules the
engine's knowledge holds (``EngineKnowledge.source_modules``).

A build without the instrumentation never calls the shim: the worker then reports no blocks,
and the summary says so.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

SHIM_SOURCE = Path(__file__).parent / "data" / "coverage_shim.c"
SHIM_ENV = "GBFT_COVERAGE_SHIM"  # the worker's preloaded shim, when coverage is taken
UNATTRIBUTED = "other"  # a block no rule places (or an object without line tables)


class CoverageError(ValueError):
    """Engine coverage cannot be taken here (no C compiler, a shim that does not build)."""


def build_shim(work: Path) -> Path:
    """The shim as a shared object under ``work`` (built once per source text)."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        raise CoverageError("engine coverage needs a C compiler to build its runtime (cc or gcc on PATH)")
    tag = hashlib.sha256(SHIM_SOURCE.read_bytes()).hexdigest()[:12]
    out = (work / f"gbft-coverage-{tag}.so").resolve()  # the workers run in folders of their own
    if any(c in str(out) for c in " :"):  # LD_PRELOAD splits on both
        raise CoverageError(f"engine coverage: the output folder's path {str(work)!r} holds a space or a colon")
    if not out.exists():
        work.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        r = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(SHIM_SOURCE)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise CoverageError(f"the coverage runtime did not build: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
        os.replace(tmp, out)
    return out


def preload_env(shim: Path, env: Mapping[str, str]) -> dict[str, str]:
    """A worker environment that preloads ``shim`` (kept ahead of any preload already there)."""
    pre = " ".join(x for x in (str(shim), env.get("LD_PRELOAD", "")) if x)
    return {**env, "LD_PRELOAD": pre, SHIM_ENV: str(shim)}


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    base: int  # where the object's file offset 0 is mapped: pc - base is the address addr2line reads
    path: str


def _mappings() -> list[Region]:
    """This process's executable mappings of files (from /proc/self/maps), sorted, each with its
    object's load base.  Not pc - start + file offset: lld and mold place the code one page
    away from its file offset, and addr2line reads addresses, not offsets."""
    rows = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].startswith("/"):
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                rows.append((lo, hi, int(parts[2], 16), "x" in parts[1], parts[5].strip()))
    base: dict[str, int] = {}
    for lo, _, off, _, path in rows:
        if off == 0:
            base[path] = min(base.get(path, lo), lo)
    return sorted((Region(lo, hi, base.get(path, lo - off), path) for lo, hi, off, x, path in rows if x),
                  key=lambda m: m.start)


class BlockReader:
    """Worker side: the blocks the engine ran since the last take, per object file."""

    def __init__(self, shim: str) -> None:
        self.lib = ctypes.CDLL(shim)  # preloaded already: the same handle, the same set
        self.lib.gbft_cov_take.restype = ctypes.c_uint32
        self.lib.gbft_cov_capacity.restype = ctypes.c_uint32
        self.buf = (ctypes.c_size_t * int(self.lib.gbft_cov_capacity()))()  # one take never overflows it
        self.maps: list[Region] = []

    def take(self) -> dict[str, list[int]]:
        pcs = sorted(set(self.buf[:int(self.lib.gbft_cov_take(self.buf))]))
        out = self._place(pcs)
        if sum(map(len, out.values())) < len(pcs):  # a library loaded since the maps were read
            self.maps = _mappings()
            out = self._place(pcs)
        return out

    def _place(self, pcs: list[int]) -> dict[str, list[int]]:
        """Sorted PCs as object file -> addresses in it; a PC in no file mapping (a JIT's
        buffer) is not the engine's code and is left out."""
        out: dict[str, list[int]] = {}
        i = 0
        for m in self.maps:  # both sorted: one walk places every PC
            while i < len(pcs) and pcs[i] < m.start:
                i += 1
            while i < len(pcs) and pcs[i] < m.end:
                out.setdefault(m.path, []).append(pcs[i] - m.base)
                i += 1
        return out


@dataclass
class Blocks:
    """Host side: the union of the blocks the workers reported, per object file."""

    by_object: dict[str, set[int]] = field(default_factory=dict)

    def add(self, reported: object) -> int:
        """Join a worker's report, or a file's (data: only object file -> lists of whole,
        non-negative addresses are taken); returns how many blocks were new."""
        new = 0
        for obj, offsets in reported.items() if isinstance(reported, Mapping) else ():
            if not isinstance(obj, str) or not isinstance(offsets, (list, tuple, set)):
                continue
            have = self.by_object.setdefault(obj, set())
            before = len(have)
            have.update(o for o in offsets if type(o) is int and o >= 0)
            new += len(have) - before
        return new

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.by_object.values())


def place(blocks: Blocks, module_of: Callable[[str], str],
          lines: Callable[[str, list[int]], list[str]] | None = None) -> dict[str, dict[str, set[int]]]:
    """The blocks by engine module, then by object file's name (its folder is where this run
    unpacked the build: shards of one build name it alike): each block's source file (``lines``,
    addr2line by default) placed by ``module_of`` (a path -> module; "" for none: UNATTRIBUTED)."""
    lines = lines or source_files
    out: dict[str, dict[str, set[int]]] = {}
    for obj, offsets in sorted(blocks.by_object.items()):
        ordered = sorted(offsets)
        for off, path in zip(ordered, lines(obj, ordered)):
            out.setdefault(module_of(path) or UNATTRIBUTED, {}).setdefault(os.path.basename(obj), set()).add(off)
    return out


def source_files(obj: str, offsets: list[int]) -> list[str]:
    """The source file of each offset in ``obj`` ("" where its line tables say nothing), by
    binutils' addr2line, one process for all of them.  A block inlined from a header (the C++
    library's templates, a flatbuffers accessor) counts for the function it was inlined into:
    the last frame of ``-i``, not the header's line."""
    tool = shutil.which("addr2line")
    if tool is None or not offsets or not os.path.exists(obj):
        return [""] * len(offsets)
    try:
        r = subprocess.run([tool, "-a", "-i", "-e", obj], input="\n".join(hex(o) for o in offsets),
                           capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired):  # the run's summary must not wait on it
        return [""] * len(offsets)
    files: list[str] = []
    for line in r.stdout.splitlines():
        if line.startswith("0x"):
            files.append("")  # a new address: its frames follow, outermost last
        elif files:
            f = line.rsplit(":", 1)[0]
            files[-1] = "" if f in ("??", "") else f
    return files[:len(offsets)] + [""] * (len(offsets) - len(files))


class ModulePlacer:
    """Blocks counted per engine module, one model at a time (the coverage predictor's
    training targets): each address is placed once (``place``'s rules, addr2line run only on
    the addresses not yet placed), then looked up."""

    def __init__(self, module_of: Callable[[str], str],
                 lines: Callable[[str, list[int]], list[str]] | None = None) -> None:
        self.module_of, self.lines = module_of, lines or source_files
        self._known: dict[str, dict[int, str]] = {}

    def counts(self, blocks: Blocks) -> dict[str, int]:
        out: dict[str, int] = {}
        for obj, offsets in blocks.by_object.items():
            known = self._known.setdefault(obj, {})
            fresh = sorted(o for o in offsets if o not in known)
            for off, path in zip(fresh, self.lines(obj, fresh) if fresh else []):
                known[off] = self.module_of(path) or UNATTRIBUTED
            for off in offsets:
                m = known.get(off, UNATTRIBUTED)
                out[m] = out.get(m, 0) + 1
        return dict(sorted(out.items()))
