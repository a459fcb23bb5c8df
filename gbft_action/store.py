"""The results store: ``OUT/cases.jsonl``, kept failing cases, the summary.

Every judged case is appended to ``cases.jsonl`` (and flushed) the moment it is
judged, so a SIGKILL loses only the cases in flight.  A failing case keeps its
directory under ``OUT/cases/<index>-<hash>/`` with the graph, the model files,
inputs, expected and actual outputs, the engine log and ``result.json``.

Layer 4 of ``gbft_action.LAYERS``.  May import: oracle, pipeline (the case record it writes).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from .oracle import ENGINE_FAILURES, Status
from .pipeline import CaseResult
from .records.io import write_record

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


def per_platform(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """A case record and the records of the same model on the other platforms (the build
    under test only: the base build's record, under "base", is not a failure of this run)."""
    return [rec, *rec.get("others", [])]


def read_records(path: Path) -> tuple[list[dict[str, Any]], int, bool]:
    """The whole records of a ``cases.jsonl`` (without changing it): (records, the bytes they
    take, whether a torn line followed them, the trace of a run killed mid-write)."""
    if not path.exists():
        return [], 0, False
    raw = path.read_bytes()
    records, good = [], 0
    for line in raw.splitlines(keepends=True):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break
        if not line.endswith(b"\n"):
            records.pop()
            break
        good += len(line)
    return records, good, good != len(raw)


class ResultStore:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.cases_path = out / "cases.jsonl"
        self.cases_dir = out / "cases"
        out.mkdir(parents=True, exist_ok=True)
        self._fh = None
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
    def load(self) -> list[dict[str, Any]]:
        """Records so far; a torn last line (killed mid-write) is dropped and cut off."""
        records, good, torn = read_records(self.cases_path)
        if torn:
            with open(self.cases_path, "r+b") as f:
                f.truncate(good)
        return records

    def write_records(self, records: list[dict[str, Any]]) -> None:
        """``cases.jsonl`` as exactly these records (gbft merge), in the format of ``append``."""
        self.close()
        tmp = self.out / ".cases.jsonl.tmp"
        tmp.write_text("".join(json.dumps(rec, sort_keys=True) + "\n" for rec in records), encoding="utf-8")
        os.replace(tmp, self.cases_path)

    # -- writing ------------------------------------------------------------------
    def append(self, res: CaseResult) -> dict[str, Any]:
        """One line per model; the other platforms' results ride along under "others"."""
        h = res.graph.structure_hash()  # once: every platform's result is of the same model
        rec = self._record(res, h)
        if res.others:
            rec["others"] = [self._record(o, h) for o in res.others]
        if res.base is not None:
            rec["base"] = self._record(res.base, h)
            rec["verdict"] = res.verdict
        if any(r.status in KEEP for r in res.every_result()):
            rec["case_dir"] = str(self.keep(res, h).relative_to(self.out))
        elif res.workdir is not None:
            shutil.rmtree(res.workdir, ignore_errors=True)
        if self._fh is None:
            self._fh = open(self.cases_path, "a", encoding="utf-8")
        self._fh.write(json.dumps(rec, sort_keys=True) + "\n")
        self._fh.flush()
        return rec

    def _record(self, res: CaseResult, h: str) -> dict[str, Any]:
        g = res.graph
        rec: dict[str, Any] = {
            "index": res.index, "hash": h, "seed": g.seed, "status": str(res.status),
            "stage": res.stage, "op": res.op, "node": res.node, "message": res.message[:2000],
            "timings": {k: round(v, 5) for k, v in res.timings.items()},
            "n_nodes": len(g.nodes), "n_blocks": len(g.meta.get("blocks", [])), "platform": res.platform,
        }
        if res.frontend:
            rec["frontend"] = res.frontend
        if res.notes:
            rec["notes"] = list(res.notes)
        if res.harness:
            rec["harness_error"] = res.harness
        if res.symptom:
            rec["symptom"] = res.symptom
            if res.direction:
                rec["direction"] = res.direction
        if res.crosscheck:
            rec["crosscheck"] = res.crosscheck
        if res.signal is not None or res.exit_code is not None:
            rec["signal"], rec["exit_code"] = res.signal, res.exit_code
            rec["after"] = list(res.after)  # a crash may be damage an earlier case left
        if res.fingerprint is not None:
            rec["fingerprint"] = res.fingerprint.to_json()
            rec["key"] = res.fingerprint.id
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
            # The first platform's files keep their plain names; the base build's end in -base.
            tail = "-base" if r.build else "" if k == 0 else f"-{r.platform}"
            for kind, arrays in r.arrays.items():
                if arrays and (k == 0 or kind == "actual"):
                    np.savez(dest / f"{kind}{tail}.npz", **arrays)
            if r.log or r.status in (*ENGINE_FAILURES, Status.TIMEOUT):
                (dest / f"engine{tail}.log").write_text(r.log or f"(the engine printed nothing; {r.message})\n")
        result = self._record(res, h) | {"diffs": res.diffs}
        if res.others:
            result["others"] = [self._record(o, h) | {"diffs": o.diffs} for o in res.others]
        if res.base is not None:
            result["base"] = self._record(res.base, h) | {"diffs": res.base.diffs}
        (dest / "result.json").write_text(json.dumps(result, sort_keys=True, default=str))
        return dest

    def write_json(self, name: str, data: Any) -> None:
        write_record(self.out / name, data)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
