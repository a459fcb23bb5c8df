"""One lane of the pipeline: reference worker + engine worker for one case.

``Lane.run`` takes a generated graph through TensorFlow (expected outputs),
the engine's converter and the engine's inference, and judges it.  Nothing the
engine or TensorFlow does can raise out of here: crashes, hangs and errors all
become a judged ``CaseResult``.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .bugs.fingerprint import Fingerprint, fingerprint, op_named_in
from .engines.adapter import resolve
from .graph.ir import Graph
from .oracle import OutputDiff, Status, Tolerance, compare, judge_outputs
from .workers.arrays import pack, unpack
from .workers.supervisor import CallResult, Worker, WorkerSpec


@dataclass(frozen=True)
class Timeouts:
    reference: float = 60.0
    convert: float = 30.0
    infer: float = 30.0


@dataclass
class CaseResult:
    index: int
    graph: Graph
    status: Status
    stage: str = ""  # generate | reference | convert | infer | compare
    message: str = ""
    op: str = ""  # the failing operator type, when known
    node: str = ""  # the failing node id, when known
    signal: int | None = None
    exit_code: int | None = None
    log: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    diffs: list[dict[str, Any]] = field(default_factory=list)
    arrays: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # inputs/expected/actual
    workdir: Path | None = None
    aborted: bool = False  # cut off by the campaign's deadline: not a result
    notes: list[str] = field(default_factory=list)
    mismatch: str = ""  # DCF: shape | nan | inf | values
    fingerprint: Fingerprint | None = None


@dataclass
class LaneConfig:
    engine: str
    workdir: Path
    timeouts: Timeouts = Timeouts()
    tolerance: Tolerance = Tolerance()
    engine_mem_mb: int = 4096
    engine_prefix: tuple[str, ...] = ()
    engine_python: str = ""
    engine_env: dict[str, str] = field(default_factory=dict)
    # Asked once per engine failure: write model.tflite too?  (TFLite conversion
    # costs ~0.25 s, so the campaign asks for it once per distinct failure.)
    want_tflite: Callable[[CaseResult], bool] = lambda res: False


class Lane:
    def __init__(self, cfg: LaneConfig, lane_id: int) -> None:
        self.cfg = cfg
        logs = cfg.workdir / "logs"
        ref_spec = WorkerSpec("reference")
        eng_spec = WorkerSpec("engine", resolve(cfg.engine), prefix=cfg.engine_prefix,
                              mem_mb=cfg.engine_mem_mb, env=dict(cfg.engine_env))
        if cfg.engine_python:
            eng_spec.python = cfg.engine_python
        self.ref = Worker(ref_spec, logs / f"reference-{lane_id}.log")
        self.eng = Worker(eng_spec, logs / f"engine-{lane_id}.log")
        self.deadline_hit = threading.Event()

    def start(self) -> dict[str, Any]:
        """Start both workers; returns the engine's hello (name, version, machine)."""
        self.ref.start()
        return self.eng.start()

    def stop(self) -> None:
        self.ref.stop()
        self.eng.stop()

    def close(self) -> None:
        """Stop both workers for good: calls in flight and later ones fail at once."""
        self.ref.close()
        self.eng.close()

    # -- one case -----------------------------------------------------------------
    def run(self, index: int, g: Graph, budget_left: float) -> CaseResult:
        d = self.cfg.workdir / "tmp" / f"{index:06d}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        res = CaseResult(index, g, Status.DCP, workdir=d)
        t0 = time.monotonic()
        try:
            self._run(res, budget_left)
            res.fingerprint = fingerprint(str(res.status), res.stage, res.message, res.log, res.graph, res.op,
                                          res.node, res.signal, res.mismatch)
            self._maybe_tflite(res, budget_left - (time.monotonic() - t0))
        except _Aborted:
            res.aborted = True
        return res

    def _stage(self, res: CaseResult, stage: str, w: Worker, msg: dict[str, Any], limit: float,
               left: float) -> CallResult | None:
        """Run one stage with min(stage limit, budget left); None when it failed (res is judged)."""
        if left <= 0:
            raise _Aborted()
        timeout = min(limit, left)
        r = w.call(msg, timeout)
        res.timings[stage] = r.elapsed
        if stage != "reference" and r.log:
            res.log = (res.log + r.log)[-8000:]  # the engine's own words, kept for every outcome
        if r.kind == "timeout" and timeout < limit:
            raise _Aborted()  # the campaign's deadline cut it, not the stage limit
        if r.kind == "ok":
            return r
        if stage == "reference":
            self._reference_failure(res, r)
        else:
            self._engine_failure(res, r, stage, Status.MCF if stage == "convert" else Status.IF)
        return None

    def _run(self, res: CaseResult, budget_left: float) -> None:
        t_start = time.monotonic()

        def left() -> float:
            return budget_left - (time.monotonic() - t_start)

        g, d, to = res.graph, res.workdir, self.cfg.timeouts
        r = self._stage(res, "reference", self.ref, {"op": "build", "graph": g.to_json(), "dir": str(d)},
                        to.reference, left())
        if r is None:
            return
        res.arrays["inputs"] = unpack(r.reply["inputs"])
        res.arrays["expected"] = unpack(r.reply["expected"])
        convert = {"op": "convert", "model": str(d / "model.pb"), "format": "pb", "dir": str(d)}
        if self._stage(res, "convert", self.eng, convert, to.convert, left()) is None:
            return
        infer = {"op": "infer", "inputs": pack(res.arrays["inputs"]), "outputs": list(g.outputs)}
        r = self._stage(res, "infer", self.eng, infer, to.infer, left())
        if r is None:
            return
        res.arrays["actual"] = unpack(r.reply["outputs"])
        self._compare(res, left())

    def _maybe_tflite(self, res: CaseResult, left: float) -> None:
        """Also save the model as TFLite (for the engine's other converter path)."""
        if res.status not in (Status.MCF, Status.IF, Status.DCF) or not self.cfg.want_tflite(res) or left <= 1:
            return
        r = self.ref.call({"op": "tflite", "graph": res.graph.to_json(), "dir": str(res.workdir)}, min(20.0, left))
        res.timings["tflite"] = r.elapsed
        if r.kind != "ok":
            res.notes.append(f"TFLite conversion failed: {r.reply.get('error') or r.crash_summary}")

    # -- judging ------------------------------------------------------------------
    def _reference_failure(self, res: CaseResult, r: CallResult) -> None:
        res.stage = "reference"
        res.log = r.log[-8000:]
        if r.kind == "timeout":
            res.status, res.message = Status.TIMEOUT, "reference timed out"
        elif r.kind == "crash":
            res.status, res.message = Status.REF, f"TensorFlow {r.crash_summary}"
            res.signal, res.exit_code = r.signal, r.exit_code
        elif r.reply.get("kind") == "invalid":
            res.status, res.message = Status.GEN, r.reply.get("error", "")
        else:
            res.status, res.message = Status.REF, r.reply.get("error", "")

    def _engine_failure(self, res: CaseResult, r: CallResult, stage: str, status: Status) -> None:
        res.stage = stage
        if r.kind == "timeout":
            res.status, res.message = Status.TIMEOUT, f"{stage} timed out"
        elif r.kind == "crash":
            res.status, res.message = status, f"engine {r.crash_summary}"
            res.signal, res.exit_code = r.signal, r.exit_code
        else:
            res.status = status
            res.message = error_line(r.log) if stage == "convert" else r.reply.get("error", "")
            res.message = res.message or r.reply.get("error", "")
        res.op = op_named_in(r.log, res.graph)

    def _compare(self, res: CaseResult, left: float) -> None:
        res.stage = "compare"
        g = res.graph
        diffs = judge_outputs(res.arrays["expected"], res.arrays["actual"], list(g.outputs), self.cfg.tolerance)
        res.diffs = [x.to_json() for x in diffs]
        bad = [x for x in diffs if not x.ok]
        if not bad:
            res.status = Status.DCP
            return
        res.status = Status.DCF
        first = self._localise(res, left) or bad[0]
        res.node = first.name
        res.op = g.node(first.name).op
        res.mismatch = mismatch_kind(first)
        res.message = f"{first.name} ({res.op}) diverges first: {first.reason}"

    def _localise(self, res: CaseResult, left: float) -> OutputDiff | None:
        """The first node, in topological order, whose output differs (intermediates exposed)."""
        g = res.graph
        names = [n.id for n in g.nodes]
        r = self.ref.call({"op": "build", "graph": g.to_json(), "dir": str(res.workdir / "probe"),
                           "extra_outputs": names}, min(self.cfg.timeouts.reference, max(left, 0.1)))
        if r.kind != "ok":
            return None
        expected = unpack(r.reply["expected"])
        r = self.eng.call({"op": "probe", "inputs": pack(res.arrays["inputs"]), "outputs": names},
                          min(self.cfg.timeouts.infer, max(left, 0.1)))
        if r.kind != "ok":
            return None
        actual = unpack(r.reply["outputs"])
        for name in names:
            if name in actual and name in expected:
                d = compare(expected[name], actual[name], name, self.cfg.tolerance)
                if not d.ok:
                    return d
        return None


class _Aborted(Exception):
    pass


_ERROR_LINE = re.compile(r"(Not Support|Check failed|Error|error|Can't|Failed|failed|abort|Segmentation)")


def error_line(log: str) -> str:
    """The first line of an engine log that reads like an error."""
    for line in log.splitlines():
        if _ERROR_LINE.search(line) and "Converted Failed" not in line:
            return line.strip()
    return ""


def mismatch_kind(d: OutputDiff) -> str:
    """What kind of disagreement: the shape, NaN/Inf on one side, or the values."""
    if d.reason.startswith("shape") or "missing" in d.reason:
        return "shape"
    worst = d.worst[0] if d.worst else {}
    specials = {str(worst.get("expected")), str(worst.get("actual"))}
    if "nan" in specials:
        return "nan"
    if specials & {"inf", "-inf"}:
        return "inf"
    return "values"
