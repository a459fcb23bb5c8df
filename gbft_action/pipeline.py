"""One lane of the pipeline: reference worker + engine worker for one case.

``Lane.run`` takes a generated graph through TensorFlow (expected outputs),
the engine's converter and the engine's inference, and judges it.  Nothing the
engine or TensorFlow does can raise out of here: crashes, hangs and errors all
become a judged ``CaseResult``.

With a base build, every model also runs on it (same inputs, same reference) and
the case gets a verdict against it (``bugs.triage``): the pull request's verdict
comes from the campaign itself, not from replaying bundles afterwards.

"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections import deque
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .bugs.fingerprint import fingerprint, op_named_in
from .bugs.rootcause import classify, wants_second_reference, with_second_reference
from .bugs.triage import case_verdict
from .engines.coverage import Blocks
from .knowledge.registry import knowledge_of, resolve, threads_env
from .knowledge.builds import EngineBuild
from .knowledge.base import EngineKnowledge
from .frontends import DEFAULT_FRONTEND, Frontend
from .graph.ir import Graph
from .oracle import (VIEWS, Bounds, OutputDiff, bounds_for, compare, judge_node, judge_outputs, precision_only, references_disagree, relative_error, undefined_anywhere)
from .wire.arrays import digest, pack, unpack
from .platforms import Platform, host_machine
from .records.bundle import MORE_THREADS, EngineInfo
from .workers.supervisor import CallResult, Worker, WorkerClosed, WorkerSpec
from .records import Fingerprint, Status, Symptom, Tolerance, Verdict
from .records.config import Config, Timeouts


# GBFT_FORK_SERVER=off starts every engine worker whole (A/B benchmarks; an engine that
# cannot be forked after its import).
FORK_SERVER = os.environ.get("GBFT_FORK_SERVER", "on") != "off"


class FrontendError(ValueError):
    """The engine's converter does not read the front end's format (a usage error)."""


@dataclass(frozen=True, eq=False)
class CaseResult:
    """One model's judged result on one platform (or build), as ``Lane.run`` returns it: a record
    nothing changes afterwards (a mixed campaign names its front end with ``replace``).  The lane
    builds it as a ``Draft`` while it judges; equality is identity (arrays have no plain ``==``)."""

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
    timings: Mapping[str, float] = field(default_factory=dict)
    diffs: tuple[Mapping[str, Any], ...] = ()  # oracle.OutputDiff.to_json, one per output
    arrays: Mapping[str, Mapping[str, np.ndarray]] = field(default_factory=dict)  # inputs/expected/actual
    workdir: Path | None = None
    aborted: bool = False  # cut off by the campaign's deadline: not a result
    notes: tuple[str, ...] = ()
    mismatch: str = ""  # DCF: shape | nan | inf | values
    fingerprint: Fingerprint | None = None
    platform: str = ""  # where the engine ran
    others: tuple[CaseResult, ...] = ()  # the same model on the other platforms
    build: str = ""  # "" the build under test, "base" the base build, "threads" it at more threads
    base: CaseResult | None = None  # the same model on the base build (first platform)
    threads: CaseResult | None = None  # the same model at more threads (the thread-count oracle)
    verdict: Verdict | None = None  # against the base build (bugs.triage.case_verdict); None without one
    error: float | None = None  # the worst relative error against the reference (oracle.relative_error)
    symptom: Symptom | None = None  # a failure's class (bugs.rootcause.classify); None for a pass
    direction: str = ""  # nan-inf: which special value went where, e.g. "NaN->finite"
    nondeterministic: bool = False  # a second run (heap perturbed) gave other outputs
    # The second reference (ONNX Runtime on the TF graph) on a wrong result: "" not asked,
    # agrees | disagrees, or "uncheckable: <op>" / "failed: <error>" (no second opinion).
    crosscheck: str = ""
    localised: bool = False  # node is where the outputs first differ (not just a failing output)
    after: tuple[int, ...] = ()  # cases these engine workers ran before this one
    # How the engine call that failed ended: timeout | crash, or its error reply's kind (the
    # exception the worker raised, "convert": the converter made no model, "memory").
    failed_call: str = ""
    frontend: str = ""  # the case's front end in a mixed campaign ("" otherwise: records as before)
    # Reference values of every node from localisation (not kept on disk): diagnosis reads them.
    intermediates: Mapping[str, np.ndarray] = field(default_factory=dict)
    # The harness failed itself on this case (a reference that cannot give intermediates): the
    # judgement stands, but its localisation is missing; the summary counts and shows these.
    harness: str = ""
    # The engine's blocks this model ran (with engine coverage on): the training targets of the
    # coverage predictor (learn.collect).  Not kept on disk.
    engine_blocks: Blocks = field(default_factory=Blocks)

    def per_platform(self) -> list[CaseResult]:
        """The build under test's results, one per platform."""
        return [self, *self.others]

    def every_result(self) -> list[CaseResult]:
        """Every platform's result, then the base build's and the one at more threads."""
        return [*self.per_platform(), *(r for r in (self.base, self.threads) if r is not None)]


@dataclass(eq=False)
class Draft:
    """A case while the lane judges it: CaseResult's fields (documented there), written stage by
    stage; ``freeze`` makes the record that leaves the lane."""

    index: int
    graph: Graph
    status: Status
    stage: str = ""
    message: str = ""
    op: str = ""
    node: str = ""
    signal: int | None = None
    exit_code: int | None = None
    log: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    diffs: list[dict[str, Any]] = field(default_factory=list)
    arrays: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    workdir: Path | None = None
    aborted: bool = False
    notes: list[str] = field(default_factory=list)
    mismatch: str = ""
    fingerprint: Fingerprint | None = None
    platform: str = ""
    others: list[Draft] = field(default_factory=list)
    build: str = ""
    base: Draft | None = None
    threads: Draft | None = None
    verdict: Verdict | None = None
    error: float | None = None
    symptom: Symptom | None = None
    direction: str = ""
    nondeterministic: bool = False
    crosscheck: str = ""
    localised: bool = False
    after: list[int] = field(default_factory=list)
    failed_call: str = ""
    frontend: str = ""
    intermediates: dict[str, np.ndarray] = field(default_factory=dict)
    harness: str = ""
    engine_blocks: Blocks = field(default_factory=Blocks)

    def per_platform(self) -> list[Draft]:
        return [self, *self.others]

    def every_result(self) -> list[Draft]:
        return [*self.per_platform(), *(r for r in (self.base, self.threads) if r is not None)]

    def sibling(self, platform: str, build: str = "") -> Draft:
        """The same model on another platform or build, with this one's inputs and reference
        outputs, not yet run."""
        return Draft(self.index, self.graph, Status.DCP, workdir=self.workdir, platform=platform, build=build,
                     arrays=dict(self.arrays), after=self.after)

    def freeze(self) -> CaseResult:
        """The judged record: its own lists and dicts (the arrays themselves, the intermediates and
        the blocks are shared: the lane never changes a draft it has frozen), the other
        platforms' and builds' drafts frozen with it."""
        plain = {f.name: getattr(self, f.name) for f in fields(self)
                 if f.name not in _COPIED}
        return CaseResult(**plain, timings=dict(self.timings), diffs=tuple(self.diffs), arrays=dict(self.arrays),
                          notes=tuple(self.notes), others=tuple(o.freeze() for o in self.others),
                          base=self.base.freeze() if self.base else None,
                          threads=self.threads.freeze() if self.threads else None, after=tuple(self.after))


# Draft's fields that freeze() converts rather than passes on.
_COPIED = frozenset({"timings", "diffs", "arrays", "notes", "others", "base", "threads", "after"})


# Resident memory an emulator (qemu-user) adds to the engine's own, beyond the engine's cap.
EMULATOR_SLACK_MB = 512

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
    platforms: tuple[Platform, ...] = ()  # where engine workers run; () = natively, as "the host"
    base: EngineBuild | None = None  # the base build, run beside the first platform
    frontend: Frontend = DEFAULT_FRONTEND  # the model format converted and the reference that judges it
    # A wrong result on a TensorFlow graph is asked of ONNX Runtime too (Lane._cross_reference).
    cross_reference: bool = True
    # The work folder is the lane's own (a report's replays): stop() removes it, logs and all.
    scratch: bool = False
    # The thread-count oracle: every model also runs on the first platform with this added to
    # the engine's environment (its knowledge's threads_oracle settings), judged against itself
    # at one thread; {}: off.
    threads_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Absolute: the workers run inside it (see Lane), so a relative path would not reach them.
        self.workdir = Path(self.workdir).resolve()

    @staticmethod
    def of(cfg: Config, platforms: tuple[Platform, ...], frontend: Frontend, engine_env: dict[str, str]) -> LaneConfig:
        """A campaign's lanes: its engine, limits, tolerance, builds and thread oracle, on
        ``platforms`` for ``frontend``, the engine with ``engine_env`` (its settings, and the
        coverage runtime when that is preloaded)."""
        return LaneConfig(cfg.engine, cfg.out / ".work", cfg.timeouts, cfg.tolerance, cfg.engine_mem_mb,
                          engine_python=cfg.engine_python, engine_env=engine_env, platforms=platforms, base=cfg.base,
                          frontend=frontend, threads_env=threads_env(cfg.engine) if cfg.threads_oracle else {})


class Lane:
    """A reference worker and one engine worker per platform; ``eng`` is the first platform's."""

    half_arithmetic = False  # the engine's settings make it compute in float16 (known at start)
    weight_bits = 0  # ... make its converter quantise weights to this many bits (0: none)

    def __init__(self, cfg: LaneConfig, lane_id: int) -> None:
        self.cfg = cfg
        logs = cfg.workdir / "logs"
        # Workers run in the work folder: a file an engine writes to a relative (or, with
        # MNN's heap damage, garbled) path lands there, never in the directory gbft ran from.
        cwd = str(cfg.workdir)
        self.ref = Worker(WorkerSpec("reference", cfg.frontend.reference, cwd=cwd), logs / f"reference-{lane_id}.log")
        # ONNX Runtime as a second reference for TensorFlow's graphs: the ONNX reference worker,
        # started by the first failing case that asks it (passing models never pay for it).
        self.second_ref: Worker | None = None
        if cfg.frontend.reference == "tf" and cfg.cross_reference:
            self.second_ref = Worker(WorkerSpec("reference", "onnx", cwd=cwd), logs / f"reference-onnx-{lane_id}.log")
        # The second reference's answer for the case being run: (case, crosscheck, outputs).
        self._second: tuple[Draft, str, dict[str, np.ndarray] | None] | None = None
        # The reference's intermediates asked for a judged case (diagnosis): (case, values).
        self._values: tuple[CaseResult, Mapping[str, np.ndarray]] | None = None
        self.platforms = {p.name: p for p in (cfg.platforms or (Platform(host_machine()),))}
        pr = EngineBuild(cfg.engine, cfg.engine_python, dict(cfg.engine_env))
        self.engs: dict[str, Worker] = {}
        for k, p in enumerate(self.platforms.values()):
            self.engs[p.name] = self._engine_worker(p, pr, logs / (f"engine-{lane_id}.log" if k == 0 else
                                                                   f"engine-{lane_id}-{p.name}.log"))
        self.primary = next(iter(self.platforms))  # other platforms are cross-checked against it
        self.eng = self.engs[self.primary]
        self.base: Worker | None = None  # the base build's worker, on the first platform
        if cfg.base is not None:
            self.base = self._engine_worker(self.platforms[self.primary], cfg.base, logs / f"engine-{lane_id}-base.log")
        self.threaded: Worker | None = None  # the build under test at more threads, on the first platform
        if cfg.threads_env:
            self.threaded = self._engine_worker(self.platforms[self.primary],
                                                replace(pr, env={**pr.env, **cfg.threads_env}),
                                                logs / f"engine-{lane_id}-threads.log")
        self.deadline_hit = threading.Event()
        self.closed = False
        # The cases the current engine workers ran: heap damage one leaves can crash a later one.
        self.history: deque[int] = deque(maxlen=8)
        self.blocks = Blocks()  # the engine's basic blocks its models ran (with engine coverage on)
        self.info: EngineInfo | None = None  # what the first engine's worker said of itself (start)

    def _engine_worker(self, p: Platform, build: EngineBuild, log: Path) -> Worker:
        # Forked from a fork server (wire.zygote): a restart after a crash costs a fork, not
        # an interpreter and the engine's import (141 ms natively, 1.4 s under qemu: bench/restart.py).
        spec = WorkerSpec("engine", resolve(build.engine), prefix=p.prefix or self.cfg.engine_prefix,
                          mem_mb=self.cfg.engine_mem_mb if p.mem_limit else 0, env=dict(build.env),
                          # No address-space limit under an emulator: its resident memory is watched.
                          rss_mb=0 if p.mem_limit else self.cfg.engine_mem_mb + EMULATOR_SLACK_MB,
                          cwd=str(self.cfg.workdir), pythonpath=p.pythonpath, fork_server=FORK_SERVER)
        spec.python = p.python or build.python or spec.python
        return Worker(spec, log)

    @property
    def knowledge(self) -> EngineKnowledge:
        """How to read the engine's log (a module:Class adapter: as the engine its hello names)."""
        # A lane not started runs its workers as its first call starts them: read their hello then.
        info = self.info or EngineInfo.of_hello(self.eng.hello)
        return knowledge_of(self.cfg.engine, info.engine)

    def _engines(self) -> list[Worker]:
        return [*self.engs.values(), *(w for w in (self.base, self.threaded) if w is not None)]

    def start(self) -> EngineInfo:
        """Start the workers; returns what the first engine's worker says of itself."""
        self.ref.start()
        for w in self._engines():
            w.start()
        # Settings that make the engine compute in float16 (MNN's precision low), as it says them.
        self.info = info = EngineInfo.of_hello(self.eng.hello)
        settings = info.settings
        self.half_arithmetic = self.knowledge.half_arithmetic(settings)
        self.weight_bits = self.knowledge.weight_bits(settings)
        fe, formats = self.cfg.frontend, info.formats
        if formats is not None and fe.format not in formats:  # a usage error, before any model
            raise FrontendError(f"engine {info.engine!r} does not read {fe.name} models "
                                f"(it reads: {', '.join(formats)})")
        return info

    def workers(self) -> dict[str, list[Worker]]:
        """The lane's workers by what they do: reference, second reference, engine (the run at
        more threads among them: engine time), base build."""
        return {"reference": [self.ref], "second reference": [self.second_ref] if self.second_ref else [],
                "engine": [*self.engs.values(), *([self.threaded] if self.threaded else [])],
                "base build": [self.base] if self.base else []}

    def hellos(self) -> dict[str, EngineInfo]:
        """What each platform's engine worker says of itself."""
        return {name: EngineInfo.of_hello(w.hello) for name, w in self.engs.items()}

    def stop(self) -> None:
        self.ref.stop()
        if self.second_ref is not None:
            self.second_ref.stop()
        self.stop_engines()
        if self.cfg.scratch:
            shutil.rmtree(self.cfg.workdir, ignore_errors=True)

    def stop_engines(self) -> None:
        for w in self._engines():
            w.stop()

    def restart_engines(self) -> None:
        """Fresh engine workers (no heap damage carried over), started side by side: whole new
        processes, so that replays on them sample what differs between runs (the address-space
        layout, the heap, seeds), which forks of one server share."""
        for w in self._engines():
            w.renew()
        self.history.clear()
        workers = self._engines()
        threads = [threading.Thread(target=_quietly(w.ensure), daemon=True) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def close(self) -> None:
        """Stop all workers for good: calls in flight and later ones fail at once."""
        self.closed = True
        self.ref.close()
        if self.second_ref is not None:
            self.second_ref.close()
        for w in self._engines():
            w.close()

    # -- one case -----------------------------------------------------------------
    def run(self, index: int, g: Graph, budget_left: float, platforms: list[str] | None = None,
            base: bool = True, inputs: dict[str, np.ndarray] | None = None) -> CaseResult:
        """Judge one model on each platform (all of the lane's, or those named); the first
        platform's result comes back, the others in its ``others``, the base build's (if the
        lane has one and ``base``) in its ``base``, with the case's verdict.  ``inputs``
        replaces the drawn input data (isolation feeds a node the reference's own values)."""
        d = self.cfg.workdir / "tmp" / f"{index:06d}"
        try:
            d.mkdir(parents=True)
        except FileExistsError:  # left by a run that was killed (resume): start it clean
            shutil.rmtree(d)
            d.mkdir()
        names = platforms or list(self.platforms)
        res = Draft(index, g, Status.DCP, workdir=d, platform=names[0], after=list(self.history))
        self._second = None
        self.history.append(index)
        t0 = time.monotonic()

        def left() -> float:
            return budget_left - (time.monotonic() - t0)

        try:
            if self._reference(res, left(), inputs):
                res.others = [res.sibling(n) for n in names[1:]]
                if base and self.base is not None and names[0] == self.primary:
                    res.base = res.sibling(names[0], "base")
                if self.threaded is not None and names[0] == self.primary:
                    res.threads = res.sibling(names[0], "threads")
                for r in res.every_result():
                    self._on_engine(r, left, twin=res if r.build else None)
                self._cross_check(res, left)
                self._cross_threads(res, left)
                self._cross_build(res, left)
            for r in res.every_result():
                r.fingerprint = fingerprint(str(r.status), r.stage, r.message, r.log, g, r.op, r.node, r.signal,
                                            r.mismatch, self.knowledge)
                if r.fingerprint is not None and self.cfg.frontend.name != "tf":
                    r.fingerprint = replace(r.fingerprint, frontend=self.cfg.frontend.name)
                self._symptom(r, res, left)
            if res.base is not None:  # how far each build is from the reference: read by the verdict only
                res.error, res.base.error = self._error(res), self._error(res.base)
                res.verdict = case_verdict(res.fingerprint, res.base.fingerprint, self._outputs_agree(res, res.base))
        except _Aborted:
            res.aborted = True
        if self.closed:  # what the workers said after close() is not about the model
            raise WorkerClosed("lane closed")
        return res.freeze()

    def run_file(self, index: int, model: Path, inputs: dict[str, np.ndarray], outputs: list[str],
                 budget_left: float) -> CaseResult:
        """Convert and run a model that exists already (a package's test model) on the first
        platform, with its own inputs; no reference judges it: its status says only whether
        the engine gave outputs (DCP), failed (MCF, IF) or ran out of time."""
        d = self.cfg.workdir / "tmp" / f"{index:06d}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        shutil.copyfile(model, d / self.cfg.frontend.model)
        g = Graph(inputs={}, nodes=[], outputs=list(outputs))
        res = Draft(index, g, Status.DCP, workdir=d, platform=self.primary, arrays={"inputs": inputs})
        t0 = time.monotonic()
        try:
            self._engine_outputs(res, lambda: budget_left - (time.monotonic() - t0))
        except _Aborted:
            res.aborted = True
        return res.freeze()

    def _stage(self, res: Draft, stage: str, w: Worker, msg: dict[str, Any], limit: float,
               left: float) -> CallResult | None:
        """Run one stage with min(stage limit, budget left); None when it failed (res is judged)."""
        if left <= 0:
            raise _Aborted()
        timeout = min(limit, left)
        r = w.call(msg, timeout)
        res.timings[stage] = r.elapsed
        if stage != "reference" and isinstance(r.reply, dict):  # the engine's code this model ran
            # (engines.coverage), an error reply's too: a converter that refused ran code to refuse.
            self.blocks.add(r.reply.get("blocks"))  # untrusted shape: Blocks.add takes what fits
            res.engine_blocks.add(r.reply.get("blocks"))
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

    def _reference(self, res: Draft, left: float, inputs: dict[str, np.ndarray] | None = None) -> bool:
        """TensorFlow builds the model, draws inputs (or takes ``inputs``), computes the expected outputs."""
        msg: dict[str, object] = {"op": "build", "graph": res.graph.to_json(), "dir": str(res.workdir),
                               "tflite": self.cfg.frontend.format == "tflite"}
        if inputs is not None:
            msg["inputs"] = pack(inputs)
        r = self._stage(res, "reference", self.ref, msg, self.cfg.timeouts.reference, left)
        if r is None:
            return False
        res.arrays["inputs"] = unpack(r.reply["inputs"])
        res.arrays["expected"] = unpack(r.reply["expected"])
        return True

    def _on_engine(self, res: Draft, left: Callable[[], float], twin: Draft | None = None) -> None:
        """Convert and run on one platform (its own folder for what the engine writes), then judge
        (like ``twin``, the build under test's result, when the outputs are the same)."""
        if not self._engine_outputs(res, left) and not self._again_on_a_fresh_worker(res, left):
            return
        if twin is not None and _same_outputs(twin, res):
            _judged_like(res, twin)  # same inputs, same reference, same outputs: the same judgement
            return
        self._compare(res, left())

    def _engine_outputs(self, res: Draft, left: Callable[[], float]) -> bool:
        """Convert and infer; whether the engine gave outputs (else res says how it failed)."""
        w, slow, to = self._worker(res), self.platforms[res.platform].slowdown, self.cfg.timeouts
        d = res.workdir
        assert d is not None
        out = self._engine_dir(res)
        out.mkdir(exist_ok=True)
        fe = self.cfg.frontend
        convert = {"op": "convert", "model": str(d / fe.model), "format": fe.format, "dir": str(out)}
        if self._stage(res, "convert", w, convert, to.convert * slow, left()) is None:
            return False
        infer = {"op": "infer", "inputs": pack(res.arrays["inputs"]), "outputs": list(res.graph.outputs)}
        r = self._stage(res, "infer", w, infer, to.infer * slow, left())
        if r is None:
            return False
        res.arrays["actual"] = unpack(r.reply["outputs"])
        return True

    def _again_on_a_fresh_worker(self, res: Draft, left: Callable[[], float]) -> bool:
        """An engine call that raised (not a crash, a timeout or the converter's own "no model")
        is tried once more on a fresh worker; whether that one gave outputs.

        Heap damage an earlier model did to a worker can break the worker's own Python (in a
        10-minute campaign one lane's worker answered "AttributeError: 'list' object has no
        attribute 'isinstance'" to every later conversion): the error is then the worker's
        state, not this model's.  The fresh worker's answer is the case's; a different one is
        noted.  Without a failure that raised, nothing is retried.
        """
        if res.failed_call in ("", "timeout", "crash", "convert", "memory") or left() <= 0:
            return False
        first = res.message
        self._worker(res).recycle()
        res.status, res.stage, res.message, res.op, res.failed_call = Status.DCP, "", "", "", ""
        ok = self._engine_outputs(res, left)
        said = f"an engine worker that had run earlier models failed this one with {first!r}"
        if ok:
            res.notes.append(f"{said}; a fresh worker ran it: that was damage earlier models left")
        elif res.message != first:
            res.notes.append(f"{said}; a fresh worker failed it otherwise")
        return ok

    def _engine_dir(self, res: Draft) -> Path:
        """Where the engine writes (its converted model) for res: the case folder for the first
        platform, a subfolder per other platform.  With a base build both builds get
        subfolders of one length ("this", "base"): MNN's heap-damage bugs react to the
        length of the paths it handles, and only the build may differ between the two."""
        d = res.workdir
        assert d is not None
        if res.platform != self.primary:
            return d / res.platform
        if self.base is None and self.threaded is None:
            return d
        return d / {"base": "base", "threads": "more"}.get(res.build, "this")

    def _worker(self, res: Draft) -> Worker:
        if res.build == "threads" and self.threaded is not None:
            return self.threaded
        return self.base if res.build == "base" and self.base is not None else self.engs[res.platform]

    def _cross_check(self, first: Draft, left: Callable[[], float]) -> None:
        """Outputs that differ between platforms, where TensorFlow does not tell the platforms apart.

        Each platform is judged against TensorFlow element by element (NaN by IEEE rules),
        so a platform that deviates has its own DCF.  Only when both pass are the platforms
        compared with each other: a difference beyond the tolerance is an XPF.
        """
        for r in first.others:
            d = self._differs(first, r, left)
            if d is not None:
                self._mark(r, d, Status.XPF, f"differs from {first.platform} first")

    def _cross_build(self, res: Draft, left: Callable[[], float]) -> None:
        """The same rule between the base build and the build under test: a difference where
        TensorFlow does not tell the builds apart is an XBF (a behaviour change) of the latter."""
        if res.base is not None:
            d = self._differs(res.base, res, left)
            if d is not None:
                self._mark(res, d, Status.XBF, "differs from the base build")

    def _cross_threads(self, res: Draft, left: Callable[[], float]) -> None:
        """The thread-count oracle, no reference needed: the build under test at more threads
        (res.threads) against itself at one.  Outputs that differ beyond the case's strict bound
        make the case an XTF (a race, or a tiling that reads or sums otherwise): also where the
        reference judged only the run at more threads wrong.  A crash or an error only at more
        threads is the case's failure, said to be at more threads."""
        t = res.threads
        if t is None or res.status != Status.DCP:
            return
        if t.status in (Status.MCF, Status.IF, Status.TIMEOUT):
            res.status, res.stage, res.op, res.node = t.status, t.stage, t.op, t.node
            res.signal, res.exit_code, res.failed_call, res.log = t.signal, t.exit_code, t.failed_call, t.log
            res.message = f"{MORE_THREADS}: {t.message}"
            return
        d = self._differs(t, res, left, judged=False)
        if d is not None:
            self._mark(res, d, Status.XTF, f"differs {MORE_THREADS}")

    def _differs(self, first: Draft, r: Draft, left: Callable[[], float],
                 judged: bool = True) -> OutputDiff | None:
        """The first node where r's outputs differ from first's, where TensorFlow cannot tell
        (``judged``; else wherever they differ)."""
        if "actual" not in first.arrays or "actual" not in r.arrays:
            return None
        # TensorFlow judges every element, NaN ones by IEEE rules: a platform (or build) that
        # deviates has its own DCF.  Only where both pass can they still differ unjudged.
        if judged and not first.status == r.status == Status.DCP:
            return None
        names = list(r.graph.outputs)
        bad = [x for x in judge_outputs(first.arrays["actual"], r.arrays["actual"], names, self._bounds(r.graph).strict)
               if not x.ok]
        if not bad:
            return None
        where, d = self._localise_between(first, r, left())
        # Every node agrees under the node rules (ties, undefined casts): no difference.
        if where == EXCUSED:
            return None
        r.localised = where == FOUND
        return d or bad[0]

    @staticmethod
    def _mark(r: Draft, d: OutputDiff, status: Status, what: str) -> None:
        r.status, r.stage, r.node = status, "compare", d.name
        r.op, r.mismatch, r.direction = r.graph.node(d.name).op, mismatch_kind(d), special_direction(d)
        r.message = f"{r.node} ({r.op}) {what}: {d.reason}"

    def tflite_copy(self, g: Graph, folder: Path, name: str, left: float) -> None:
        """Save g as a TFLite model ``folder/name`` too, for the engine's other converter path
        (a TensorFlow GraphDef only; no file when TFLite cannot express it or time is short).
        Only for a model worth it (a bundle's minimised one): TFLite conversion costs 70 ms or
        more, several models' worth of the loop."""
        if self.cfg.frontend.format == "pb" and left > 1:
            self.ref.call({"op": "tflite", "graph": g.to_json(), "dir": str(folder), "name": name}, min(20.0, left))

    # -- judging ------------------------------------------------------------------
    def _error(self, r: Draft) -> float | None:
        """r's worst relative error against the reference (oracle.relative_error), or None."""
        if "actual" not in r.arrays or "expected" not in r.arrays:
            return None
        return relative_error(r.arrays["expected"], r.arrays["actual"], list(r.graph.outputs),
                              self._bounds(r.graph).strict)

    def _outputs_agree(self, pr: Draft, base: Draft) -> bool:
        """This build fails the model and the base build's outputs agree with its outputs within
        the strict bound: one failure (or one model on the bound's edge), whichever node each
        build's localisation stopped at (bugs.triage.case_verdict)."""
        if pr.fingerprint is None:
            return False
        a, b = pr.arrays.get("actual"), base.arrays.get("actual")
        if a is None or b is None:
            return False
        names = list(pr.graph.outputs)
        if not all(n in b for n in names):
            return False
        return all(d.ok for d in judge_outputs(b, a, names, self._bounds(pr.graph).strict))

    def _bounds(self, g: Graph) -> Bounds:
        """How g's outputs are compared: the campaign's tolerance, widened for a model holding
        float16 or run by an engine set to compute in it (oracle.bounds_for, the one rule; replay
        and the repro apply it too)."""
        return bounds_for(g, self.cfg.tolerance, self.half_arithmetic, self.weight_bits)

    def _reference_failure(self, res: Draft, r: CallResult) -> None:
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

    def _engine_failure(self, res: Draft, r: CallResult, stage: str, status: Status) -> None:
        res.stage, res.failed_call = stage, r.kind if r.kind != "error" else str(r.reply.get("kind", "error"))
        if r.kind == "timeout":
            res.status, res.message = Status.TIMEOUT, f"{stage} timed out"
        elif r.kind == "crash":
            res.status, res.message = status, f"engine {r.crash_summary}"
            res.signal, res.exit_code = r.signal, r.exit_code
        else:
            res.status = status
            res.message = self.knowledge.error_line(r.log) if stage == "convert" else r.reply.get("error", "")
            res.message = res.message or r.reply.get("error", "")
        res.op = op_named_in(r.log, res.graph, self.knowledge)

    def _compare(self, res: Draft, left: float) -> None:
        """Judge res's outputs against the reference's (judge), localising a difference first:
        the worker I/O is here, the judgement is a pure function of what it returns."""
        res.stage = "compare"
        diffs = judge_outputs(res.arrays["expected"], res.arrays["actual"], list(res.graph.outputs),
                              self._bounds(res.graph).strict)
        res.diffs = [x.to_json() for x in diffs]
        bad = [x for x in diffs if not x.ok]
        # The sign of a zero matters where an infinity is at stake (1/-0 = -Inf), and only there.
        where, first = self._localise(res, left, signed_zero=any(mismatch_kind(x) in ("nan", "inf") for x in bad)) \
            if bad else (FAILED, None)
        j = judge(res.graph, diffs, where, first)
        res.status = j.status
        if j.note:
            res.notes.append(j.note)
        if j.status is Status.DCF:
            res.localised, res.node, res.op, res.mismatch, res.direction, res.message = \
                j.localised, j.node, j.op, j.mismatch, j.direction, j.message

    def _probe(self, res: Draft, names: list[str], left: float) -> dict[str, np.ndarray] | None:
        """Intermediate tensors from the engine on res's platform (None if it cannot say)."""
        limit = min(self.cfg.timeouts.infer * self.platforms[res.platform].slowdown, max(left, 0.1))
        r = self._worker(res).call({"op": "probe", "inputs": pack(res.arrays["inputs"]), "outputs": names},
                                   min(limit, _probe_limit(res.timings.get("infer"), len(names))))
        return unpack(r.reply["outputs"]) if r.kind == "ok" else None

    def _localise_between(self, first: Draft, other: Draft, left: float) -> tuple[str, OutputDiff | None]:
        """The first node, in topological order, where two platforms' intermediates differ."""
        names = [n.id for n in first.graph.nodes]
        a = self._probe(first, names, left)
        b = self._probe(other, names, left) if a is not None else None
        if a is None or b is None:
            return FAILED, None
        return _located(first.graph, {**first.arrays["inputs"], **a}, b, self._bounds(first.graph).strict)

    def _localise(self, res: Draft, left: float, signed_zero: bool = False) -> tuple[str, OutputDiff | None]:
        """The first node in topological order whose output differs, with intermediates exposed,
        and how it went (_located); (FAILED, None) when the engine or TensorFlow cannot say (a
        probe that crashes: heap damage)."""
        g = res.graph
        expected = self._draft_values(res, left)
        if expected is None:
            return FAILED, None
        actual = self._probe(res, [n.id for n in g.nodes], left)
        if actual is None:
            return FAILED, None
        return _located(g, expected, actual, self._bounds(g).strict, signed_zero)

    def reference_values(self, res: CaseResult, left: float) -> Mapping[str, np.ndarray] | None:
        """The reference's value of every node (and graph input) of res's model on res's inputs:
        localisation's, or asked once (diagnosis asks again and again for one case)."""
        if res.intermediates:
            return res.intermediates
        if self._values is not None and self._values[0] is res:
            return self._values[1]
        values = self._intermediates(res.graph, res.workdir, res.arrays["inputs"], left)[0]
        if values is not None:  # a failure is asked again, as localisation's is
            self._values = (res, values)
        return values

    def _draft_values(self, res: Draft, left: float) -> dict[str, np.ndarray] | None:
        """reference_values while judging: kept on the draft, and a reference that cannot give
        them is the harness's own failure on the case."""
        if res.intermediates:
            return res.intermediates
        values, complaint = self._intermediates(res.graph, res.workdir, res.arrays["inputs"], left)
        if complaint:
            res.harness = complaint
        if values is not None:
            res.intermediates = values
        return values

    def _intermediates(self, g: Graph, workdir: Path | None, inputs: Mapping[str, np.ndarray],
                       left: float) -> tuple[dict[str, np.ndarray] | None, str]:
        """The reference's values of g's nodes and inputs (None when it cannot give them), and,
        when that is the harness's failure rather than the model's, what went wrong."""
        js, names, limit = g.to_json(), [n.id for n in g.nodes], min(self.cfg.timeouts.reference, max(left, 0.1))
        assert workdir is not None  # a judged case has its folder
        # The reference keeps the model it built last open: this one's, unless another ran since.
        r = self.ref.call({"op": "intermediates", "graph": js, "dir": str(workdir), "names": names,
                           "inputs": digest(dict(inputs))}, limit)
        if r.kind == "error" and r.reply.get("kind") == "stale":
            msg = {"op": "build", "graph": js, "dir": str(workdir / "probe"), "extra_outputs": names,
                   "inputs": pack(dict(inputs))}
            r = self.ref.call(msg, limit)
        complaint = ""
        if r.kind == "error" and r.reply.get("kind") not in ("reference", "invalid"):
            # Not the model's doing: the reference worker cannot answer at all (an operation it
            # lacks, an exception of its own).  Never a quiet "no localisation": ONNX ran a whole
            # campaign so, every key named after the node where a difference surfaced.
            complaint = f"the reference cannot give intermediates: {r.reply.get('error', '')}"[:300]
        if r.kind != "ok":
            return None, complaint
        return {**inputs, **unpack(r.reply["expected"])}, complaint

    # -- symptoms -------------------------------------------------------------------
    def _symptom(self, r: Draft, case: Draft, left: Callable[[], float]) -> None:
        """The symptom class of r (bugs.rootcause); a failing comparison is run once more with
        the heap perturbed: outputs that change read uninitialised memory."""
        against = _compared_with(r, case)
        if r.status in (Status.DCF, Status.XPF, Status.XBF):
            r.nondeterministic = self._changes_on_rerun(r, against, left())
        bounds = self._bounds(r.graph)
        loose = against is not None and "actual" in r.arrays and all(
            precision_only(against[k], r.arrays["actual"][k], bounds.loose, bounds.norm) for k in r.graph.outputs
            if k in against and k in r.arrays["actual"])
        fp = r.fingerprint
        # A NaN or Inf made from finite values in a model kept inside every operator's domain is
        # garbage, a wrong result; NaN/Inf semantics are judged where special values were fed.
        made = r.direction.startswith("finite->") and r.graph.values != "special"
        r.symptom = classify(str(r.status), r.stage, signal=r.signal, message=r.message, log=r.log,
                             kind=fp.kind if fp else "", mismatch="values" if made else r.mismatch,
                             loose_ok=loose and not made, nondeterministic=r.nondeterministic)
        self._cross_reference(r, case, left())

    def _cross_reference(self, r: Draft, case: Draft, left: float) -> None:
        """A wrong result against TensorFlow, asked of ONNX Runtime too (the TF graph as ONNX,
        the same inputs).  Where the two references disagree on the outputs r fails, the
        reference is in question and r is a reference disagreement, not the engine's defect;
        where they agree r's verdict stands.  Only failing results pay, once per case."""
        if self.second_ref is None or not wants_second_reference(str(r.status), r.symptom):
            return
        r.crosscheck, second = self._second_reference(case, left)
        if second is None:
            r.notes.append(f"no second reference ({r.crosscheck}): the verdict rests on TensorFlow alone")
            return
        r.arrays["reference-ort"] = second
        failing = [d["name"] for d in r.diffs if not d.get("ok")]
        bounds = self._bounds(case.graph)
        bad = references_disagree(r.arrays["expected"], second, r.arrays.get("actual", {}), failing,
                                  bounds.strict, bounds.all_loose)
        r.crosscheck = "disagrees" if bad else "agrees"
        r.symptom = with_second_reference(r.symptom, bool(bad))
        if bad:
            r.notes.append(f"reference disagreement: {self._second_name()} differs from TensorFlow on {bad[0].name} "
                           f"({bad[0].reason}); not blamed on the engine")
        else:
            r.notes.append(f"{self._second_name()} agrees with TensorFlow on the failing outputs: the verdict stands")

    def _second_name(self) -> str:
        hello = self.second_ref.hello if self.second_ref is not None else {}
        return f"ONNX Runtime {hello.get('version', '')}".strip()

    def _second_reference(self, case: Draft, left: float) -> tuple[str, dict[str, np.ndarray] | None]:
        """ONNX Runtime's outputs of case's model on its inputs (None: no second opinion, and why)."""
        if self._second is not None and self._second[0] is case:
            return self._second[1], self._second[2]
        assert self.second_ref is not None
        g = case.graph
        msg = {"op": "crosscheck", "graph": g.to_json(), "inputs": pack(case.arrays["inputs"]),
               "outputs": list(g.outputs), "dir": str(case.workdir)}
        r = self.second_ref.call(msg, min(self.cfg.timeouts.reference, max(left, 0.1)))
        case.timings["crosscheck"] = r.elapsed
        got: tuple[str, dict[str, np.ndarray] | None]
        if r.kind != "ok":
            got = (f"failed: {r.reply.get('error') or r.crash_summary}"[:300], None)
        elif not r.reply["checkable"]:
            got = (f"uncheckable: {r.reply['why']}", None)
        else:
            got = ("checkable", unpack(r.reply["outputs"]))
            case.arrays["reference-ort"] = got[1]  # kept with the case (reference-ort.npz): it replays
        self._second = (case, *got)
        return got

    def _changes_on_rerun(self, r: Draft, against: dict[str, np.ndarray] | None, left: float) -> bool:
        """Whether an output that fails its comparison changes when inferred again with the heap
        perturbed.  Only a failing one: a garbage output beside it (another operator's) does
        not make a deterministic wrong answer nondeterministic."""
        if "actual" not in r.arrays or against is None or left <= 1:
            return False
        slow = self.platforms[r.platform].slowdown
        # glibc fills fresh allocations with a pattern (mallopt M_PERTURB) for this call only.
        msg = {"op": "infer", "inputs": pack(r.arrays["inputs"]), "outputs": list(r.graph.outputs), "perturb": 0x5A}
        again = self._worker(r).call(msg, min(self.cfg.timeouts.infer * slow, left))
        if again.kind != "ok":
            return False
        b = unpack(again.reply["outputs"])
        a = r.arrays["actual"]
        if a.keys() != b.keys():
            return False
        changed = [k for k in a if not np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f")]
        shows = _downstream(r.graph, r.node) if r.localised and r.node else set(a)  # where r's difference shows
        tol = self._bounds(r.graph).strict
        return any(k in shows and k in against and not compare(against[k], a[k], k, tol).ok
                   for k in changed)


def _downstream(g: Graph, node: str) -> set[str]:
    """``node`` and every tensor computed from it."""
    users, seen, todo = g.consumers(), {node}, [node]
    while todo:
        for u in users.get(todo.pop(), []):
            if u not in seen:
                seen.add(u)
                todo.append(u)
    return seen


# How localisation went: a node found; every difference excused by the node rules; no node
# differs at all with intermediates exposed (fusion changed); the probe failed.
FOUND, EXCUSED, VANISHED, FAILED = "found", "excused", "vanished", "failed"


@dataclass(frozen=True)
class Judgement:
    """What a model's outputs say, against the reference's: its status and, for a difference,
    where it shows first and what kind it is."""

    status: Status
    node: str = ""
    op: str = ""
    mismatch: str = ""  # mismatch_kind: values, shape, nan, inf, ...
    direction: str = ""  # special_direction: NaN->finite, ...
    message: str = ""
    localised: bool = False  # the node is the first whose intermediate differs, not an output
    note: str = ""


def judge(g: Graph, diffs: list[OutputDiff], where: str = FAILED, first: OutputDiff | None = None) -> Judgement:
    """The judgement of g's compared outputs (oracle.judge_outputs), given how localisation went
    (``where``: _located's FOUND, EXCUSED, VANISHED or FAILED, and the first node's difference)."""
    bad = [x for x in diffs if not x.ok]
    if not bad:
        return Judgement(Status.DCP)
    if where == EXCUSED:
        # Every node agrees under the node rules: the differences are ties (Argmax) or undefined
        # behaviour (casts of NaN/Inf, NaN in TopK), not bugs.
        return Judgement(Status.DCP, note="outputs differ only by ties or undefined behaviour: " + bad[0].reason)
    # Exposing every node changes what the engine fuses: the bug is there, its node unknown.
    note = "not localised: the difference vanishes when intermediates are exposed" if where == VANISHED else ""
    first = first or bad[0]
    op = g.node(first.name).op
    return Judgement(Status.DCF, first.name, op, mismatch_kind(first), special_direction(first),
                     f"{first.name} ({op}) diverges first: {first.reason}", where == FOUND, note)


def _located(g: Graph, a: dict[str, np.ndarray], b: dict[str, np.ndarray], tol: Tolerance,
             signed_zero: bool = False) -> tuple[str, OutputDiff | None]:
    d = _first_difference(g, a, b, tol, signed_zero)
    if d is not None:
        return FOUND, d
    if not _covers(g, a, b):  # the engine did not expose every output: nothing is proven
        return FAILED, None
    # Excused only when the plain comparison does see a difference that the node rules explain.
    plain = any(not compare(a[n.id], b[n.id], n.id, tol).ok for n in g.nodes if n.id in a and n.id in b
                and not (n.op in VIEWS and np.shape(a[n.id]) != np.shape(b[n.id])))
    return (EXCUSED if plain else VANISHED), None


def _covers(g: Graph, a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """Both sides hold every output: "no node differs" then means the outputs agree too."""
    return all(o in a and o in b for o in g.outputs)


def _compared_with(r: Draft, case: Draft) -> dict[str, np.ndarray] | None:
    """What r's outputs were judged against: TensorFlow's, or for an XPF the first platform's, for
    an XBF the base build's and for an XTF the outputs at more threads."""
    if r.status == Status.XPF:
        return case.arrays.get("actual")
    if r.status == Status.XBF and case.base is not None:
        return case.base.arrays.get("actual")
    if r.status == Status.XTF and case.threads is not None:
        return case.threads.arrays.get("actual")
    return r.arrays.get("expected")


def _first_difference(g: Graph, a: dict[str, np.ndarray], b: dict[str, np.ndarray],
                      tol: Tolerance, signed_zero: bool = False) -> OutputDiff | None:
    """The first node whose value in b differs from a (a holds the graph inputs too): judged
    with the node's own inputs from a (ties, undefined behaviour) and, with ``signed_zero``,
    the sign of zero.  A view whose shape differs
    inside the graph is not a difference: an engine may skip it for a tensor no one reads."""
    outputs = set(g.outputs)
    excused: set[str] = set()  # nodes with excused differences, and everything they feed
    for n in g.nodes:
        # Before the check that a holds n: between two platforms a is the first one's probe, and
        # a node that engine fused away must still pass on the taint (a NaN cast to int on arm
        # and on x86, through a fused no-op Cast, was reported as a cross-platform bug).
        if any(i in excused for i in n.inputs):
            excused.add(n.id)  # judged against TensorFlow's own inputs, it would differ again
            continue
        if n.id not in a or n.id not in b:  # fused away: unjudged, but what it leaves undefined taints
            seen = a.get(n.id, b.get(n.id))
            if seen is not None and all(i in a for i in n.inputs) and \
                    undefined_anywhere(n.op, n.params, [a[i] for i in n.inputs], seen):
                excused.add(n.id)
            continue
        x, y = np.asarray(a[n.id]), np.asarray(b[n.id])
        if n.op in VIEWS and n.id not in outputs and x.shape != y.shape and x.size == y.size:
            continue
        d = judge_node(n.op, n.params, [a[i] for i in n.inputs if i in a], x, y, n.id, tol, signed_zero)
        if not d.ok:
            return d
        if compare(x, y, n.id, tol, signed_zero=signed_zero).ratio < d.ratio:  # the rules excused some
            excused.add(n.id)
    return None


def _probe_limit(infer_s: float | None, names: int) -> float:
    """A probe runs the model once, or once per name when the engine fused some away: at most
    ``names + 1`` runs of what its inference took, with room to spare (2 s at least).  Seen
    in benchmark runs: a probe that ran 28 s (the inference limit) on two busy threads while the
    model's inference took milliseconds, starving every other lane; localisation then
    fails, the case is keyed by its output, and the worker is restarted (a fork: cheap)."""
    if infer_s is None:
        return float("inf")
    return max(2.0, 20.0 * infer_s * (names + 1))


class _Aborted(Exception):
    pass


def _same_outputs(a: Draft, b: Draft) -> bool:
    x, y = a.arrays.get("actual"), b.arrays.get("actual")
    return (a.stage == "compare" and x is not None and y is not None and x.keys() == y.keys()
            and all(np.array_equal(x[k], y[k], equal_nan=x[k].dtype.kind == "f") for k in x))


def _judged_like(res: Draft, twin: Draft) -> None:
    """Copy twin's judgement: localising it again (a TensorFlow build and a probe) would cost
    as much as the model itself, and would find the same node."""
    res.stage, res.status, res.node, res.op = twin.stage, twin.status, twin.node, twin.op
    res.mismatch, res.message, res.diffs = twin.mismatch, twin.message, list(twin.diffs)
    res.direction, res.localised = twin.direction, twin.localised
    res.intermediates = twin.intermediates


def _quietly(fn: Callable[[], Any]) -> Callable[[], None]:
    """A start on a thread of its own: a failure shows again at the worker's next call."""
    def run() -> None:
        try:
            fn()
        except (RuntimeError, OSError):
            pass
    return run


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


def special_direction(d: OutputDiff) -> str:
    """For a NaN/Inf mismatch, which special value went where at the worst element
    ("NaN->finite", "finite->Inf", ...); "" otherwise."""
    if mismatch_kind(d) not in ("nan", "inf"):
        return ""
    w = d.worst[0]
    return f"{_special(w.get('expected'))}->{_special(w.get('actual'))}"


def _special(v: Any) -> str:
    # The sign of an infinity is not a separate defect: "gives a finite number for +Inf" and
    # "... for -Inf" are one behaviour of one operator (Inf->Inf is then a sign flip).
    return {"nan": "NaN", "inf": "Inf", "-inf": "Inf"}.get(str(v), "finite")
