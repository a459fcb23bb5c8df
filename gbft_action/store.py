"""The results store: ``OUT/cases.jsonl``, kept failing cases, the summary.

Every judged case is appended to ``cases.jsonl`` (and flushed) the moment it is
judged, so a SIGKILL loses only the cases in flight.  A failing case keeps its
directory under ``OUT/cases/<index>-<hash>/`` with the graph, the model files,
inputs, expected and actual outputs, the engine log and ``result.json``.

Layer 4 of ``gbft_action.LAYERS``.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .oracle import ENGINE_FAILURES
from .pipeline import CaseResult
from .records.case import CaseRecord, PlatformRecord, read_cases
from .records.enums import Symptom
from .records.io import write_record
from .records import Status

KEEP = {*ENGINE_FAILURES, Status.TIMEOUT, Status.REF, Status.GEN}

# Kept free on the output disk from the start, and given back when the disk fills: the run's
# summary, search state and known bugs (a few MB after ten minutes) must still fit then.
RESERVE_FILE = ".gbft-reserve"
RESERVE_BYTES = 8 << 20
NO_SPACE = os.strerror(errno.ENOSPC)  # "No space left on device", as a worker reports it


def disk_full(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)


def no_space(res: CaseResult) -> OSError | None:
    """A worker that could not write its model or outputs: the harness's disk is full, which
    is no finding of the engine or the reference."""
    for r in res.every_result():
        if NO_SPACE in r.message or NO_SPACE in (r.log or "")[-4000:]:
            return OSError(errno.ENOSPC, NO_SPACE, str(res.workdir or ""))
    return None


class ResultStore:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.cases_path = out / "cases.jsonl"
        self.cases_dir = out / "cases"
        out.mkdir(parents=True, exist_ok=True)
        self._fh: TextIO | None = None
        self._reserve = out / RESERVE_FILE

    def reserve(self) -> None:
        """Set aside RESERVE_BYTES (written, not sparse: a sparse file reserves nothing)."""
        with open(self._reserve, "wb") as f:
            chunk = bytes(1 << 20)
            for _ in range(RESERVE_BYTES >> 20):
                f.write(chunk)

    def release(self) -> None:
        """Give the reserve back (always before the summary: it is never left in the output)."""
        self._reserve.unlink(missing_ok=True)

    # -- reading ------------------------------------------------------------------
    def load(self) -> list[CaseRecord]:
        """Records so far; a torn last line (killed mid-write) is dropped and cut off."""
        records, good, torn = read_cases(self.cases_path)
        if torn:
            with open(self.cases_path, "r+b") as f:
                f.truncate(good)
        return records

    def write_records(self, records: list[CaseRecord]) -> None:
        """``cases.jsonl`` as exactly these records (gbft merge), in the format of ``append``."""
        self.close()
        tmp = self.out / ".cases.jsonl.tmp"
        tmp.write_text("".join(rec.line() for rec in records), encoding="utf-8")
        os.replace(tmp, self.cases_path)

    # -- writing ------------------------------------------------------------------
    def append(self, res: CaseResult) -> CaseRecord:
        """One line per model; the other platforms' results ride along under "others"."""
        h = res.graph.structure_hash()  # once: every platform's result is of the same model
        case_dir = ""
        if any(r.status in KEEP for r in res.every_result()):
            case_dir = str(self.keep(res, h).relative_to(self.out))
        elif res.workdir is not None:
            shutil.rmtree(res.workdir, ignore_errors=True)
        base = platform_record(res.base, h) if res.base is not None else None
        rec = CaseRecord(**vars(platform_record(res, h)), others=tuple(platform_record(o, h) for o in res.others),
                         base=base, verdict=res.verdict if base is not None else None,
                         case_dir=case_dir)
        if self._fh is None:
            self._fh = open(self.cases_path, "a", encoding="utf-8")
        self._fh.write(rec.line())
        self._fh.flush()
        return rec

    def keep(self, res: CaseResult, h: str) -> Path:
        g = res.graph
        dest = self.cases_dir / f"{res.index:06d}-{h}"
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if res.workdir is not None and res.workdir.exists():
            shutil.move(str(res.workdir), dest)
        dest.mkdir(exist_ok=True)
        (dest / "graph.json").write_text(g.to_json())
        for k, r in enumerate(res.every_result()):
            # The first platform's files keep their plain names; the base build's end in -base,
            # the run at more threads' in -threads.
            tail = f"-{r.build}" if r.build else "" if k == 0 else f"-{r.platform}"
            for kind, arrays in r.arrays.items():
                if arrays and (k == 0 or kind == "actual"):
                    np.savez(dest / f"{kind}{tail}.npz", **arrays)  # type: ignore[arg-type]  # numpy's stub: **arrays may not name allow_pickle
            if r.log or r.status in (*ENGINE_FAILURES, Status.TIMEOUT):
                (dest / f"engine{tail}.log").write_text(r.log or f"(the engine printed nothing; {r.message})\n")
        # The case folder's own account (render shows its diffs): not a record anything reads back.
        result = platform_record(res, h).to_json() | {"diffs": res.diffs}
        if res.others:
            result["others"] = [platform_record(o, h).to_json() | {"diffs": o.diffs} for o in res.others]
        if res.base is not None:
            result["base"] = platform_record(res.base, h).to_json() | {"diffs": res.base.diffs}
        (dest / "result.json").write_text(json.dumps(result, sort_keys=True, default=str))
        return dest

    def write_json(self, name: str, data: Any) -> None:
        write_record(self.out / name, data)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _rounded(x: float | None) -> float | None:
    """An error as recorded: 4 significant digits; an infinite one (a special value on one side
    only) is not a measure and is not written (JSON has no infinity)."""
    return None if x is None or not math.isfinite(x) else float(f"{x:.4g}")


def platform_record(res: CaseResult, h: str) -> PlatformRecord:
    """One platform's result as it is recorded (the graph's hash ``h`` computed once)."""
    g = res.graph
    ended = res.signal is not None or res.exit_code is not None
    return PlatformRecord(
        index=res.index, hash=h, seed=g.seed, status=Status(res.status), stage=res.stage, op=res.op or "",
        node=res.node or "", message=res.message[:2000], timings={k: round(v, 5) for k, v in res.timings.items()},
        n_nodes=len(g.nodes), n_blocks=len(g.meta.get("blocks", [])), platform=res.platform,
        frontend=res.frontend, notes=tuple(res.notes), harness_error=res.harness,
        symptom=Symptom(res.symptom) if res.symptom else None, direction=res.direction,
        crosscheck=res.crosscheck, signal=res.signal, exit_code=res.exit_code,
        error=_rounded(res.error),
        # a crash may be damage an earlier case left
        after=tuple(res.after) if ended else (), fingerprint=res.fingerprint,
        key=res.fingerprint.id if res.fingerprint is not None else "")
