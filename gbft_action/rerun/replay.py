"""Replaying, minimising and confirming bundles on a live lane (reference + engine workers)."""

from __future__ import annotations

import itertools
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..knowledge.registry import threads_env
from ..graph.ir import Graph
from ..oracle import judge_outputs, tolerance_for
from ..pipeline import CaseResult, Lane
from ..records.bundle import BundleMeta
from ..records.summary import Diagnosis
from ..bugs.bundle import BugBook
from ..bugs.minimize import minimize
from ..bugs.rootcause import local_key
from ..bugs.triage import BuildOutputs, Round, confirm, round_of
from ..records import Fingerprint, Status, Verdict

# A call the minimiser starts near its time limit may run this much past it, at least
# CALL_MIN_S: never a whole stage timeout (30 s of an engine hang) past the campaign's deadline.
CALL_SLACK_S = 3.0
CALL_MIN_S = 5.0

SAME, DIFFERENT, PASSES = "same", "different", "passes"
# Runs a replay may make in all when a bug that is not a crash comes back as a memory error:
# heap damage (MNN's BatchToSpaceND writes outside its output) kills one fresh process and
# gives wrong values in the next, so one crash does not say the bug is gone or changed.
MEMORY_RUNS = 3
_scratch = itertools.count(10_000_000)  # case indices for replays: their own tmp dirs


@dataclass
class Replay:
    outcome: str  # same | different | passes
    fingerprint: Fingerprint | None
    result: CaseResult
    crashes: tuple[Fingerprint, ...] = ()  # memory errors met on the way (runs made again)


def run_graph(lane: Lane, g: Graph, budget: float = 120.0, fresh: bool = False,
              platforms: list[str] | None = None, base: bool = False, keep: Path | None = None,
              inputs: dict[str, np.ndarray] | None = None) -> CaseResult:
    """Run one model (on the base build too with ``base``); ``fresh`` restarts the engine
    workers first, so that heap damage left by earlier models (MNN has heap-corruption
    bugs) cannot change the verdict.  ``keep`` (a bundle) keeps the frozen model and
    TensorFlow's inputs and outputs as minimized.pb and minimized-*.npz, and the model as
    minimized.tflite (the engine's other converter path).  ``inputs`` replaces the drawn
    input data."""
    t0 = time.monotonic()
    if fresh:
        lane.restart_engines()
    res = lane.run(next(_scratch), g, budget, platforms, base=base, inputs=inputs)
    if res.workdir is not None:
        if keep is not None and (res.workdir / "model.pb").exists() and "expected" in res.arrays:
            shutil.copy2(res.workdir / "model.pb", keep / "minimized.pb")
            for kind in ("inputs", "expected"):
                np.savez(keep / f"minimized-{kind}.npz", **res.arrays[kind])  # type: ignore[arg-type]  # numpy's stub: **arrays may not name allow_pickle
            lane.tflite_copy(g, keep, "minimized.tflite", budget - (time.monotonic() - t0))
        shutil.rmtree(res.workdir, ignore_errors=True)
    return res


def matching(res: CaseResult, target: Fingerprint) -> CaseResult | None:
    """The platform result showing ``target``, if any does."""
    return next((r for r in res.per_platform() if r.fingerprint == target), None)


def local_key_of(r: CaseResult) -> tuple[str, str, str] | None:
    """bugs.rootcause.local_key of one judged result (None for a pass)."""
    if r.fingerprint is None or not r.symptom:
        return None
    return local_key(r.symptom, r.fingerprint, r.direction)


def showing(res: CaseResult, key: tuple[str, str, str]) -> CaseResult | None:
    """The platform result with local key ``key`` (same symptom, operator, direction), if any."""
    return next((r for r in res.per_platform() if local_key_of(r) == key), None)


def bug_platforms(lane: Lane, meta: BundleMeta, cheapest: bool = False) -> list[str] | None:
    """The lane's platforms on which a bundle's bug was seen (None: run them all).

    An XPF needs the first platform too: it is the one the others are compared with.
    ``cheapest``: of a bug seen on several platforms, only the fastest one (native rather than
    emulated): minimising and blaming under qemu cost several times as much and say the same.
    """
    seen = [p for p in lane.platforms if p in meta.platforms]
    if not seen:
        return None
    if meta.fingerprint.status == "XPF":
        if lane.primary not in seen:
            seen.insert(0, lane.primary)
        return seen
    if cheapest:
        return [min(seen, key=lambda p: lane.platforms[p].slowdown)]
    return seen


def bundle_key(meta: BundleMeta) -> tuple[str, str, str] | None:
    """The local key (symptom, operator, direction) a bundle's minimiser keeps; None for older
    bundles without a symptom (their minimiser kept the fingerprint)."""
    return local_key(meta.symptom.value, meta.fingerprint, meta.direction) if meta.symptom else None


def replay(lane: Lane, g: Graph, target: Fingerprint, budget: float = 120.0, fresh: bool = True,
           platforms: list[str] | None = None, key: tuple[str, str, str] | None = None) -> Replay:
    """Run g again: the same bug when a platform shows ``target``, or, with ``key`` (the
    minimised model of a bundle: ``bundle_key``), the local key the minimiser kept.  The
    minimiser may change the structure a fingerprint names (a two-input Minimum becomes a
    one-input one) while keeping the symptom, operator and direction.  A memory error where
    ``target`` is none is run again on fresh workers, up to MEMORY_RUNS runs in all; the
    crashes met stay in ``Replay.crashes``."""
    crashes: list[Fingerprint] = []
    v = _replay_once(lane, g, target, budget, fresh, platforms, key)
    while (v.outcome == DIFFERENT and v.fingerprint is not None and v.fingerprint.memory_error
           and not target.memory_error and len(crashes) + 1 < MEMORY_RUNS):
        crashes.append(v.fingerprint)
        # fresh: the damaged heap died with its worker; the next run starts clean
        v = _replay_once(lane, g, target, budget, True, platforms, key)
    if v.outcome == PASSES and crashes:  # a model the engine crashes on is not fixed
        return Replay(DIFFERENT, crashes[0], v.result, tuple(crashes))
    return Replay(v.outcome, v.fingerprint, v.result, tuple(crashes))


def _replay_once(lane: Lane, g: Graph, target: Fingerprint, budget: float, fresh: bool,
                 platforms: list[str] | None, key: tuple[str, str, str] | None) -> Replay:
    res = run_graph(lane, g, budget, fresh=fresh, platforms=platforms, base=needs_base(target))
    if matching(res, target) is not None or (key is not None and showing(res, key) is not None):
        return Replay(SAME, target, res)
    if res.aborted or res.status in (Status.GEN, Status.REF) or res.stage == "reference":
        # The reference could not judge the model (another front end's lane, a cut replay): that
        # says nothing of the bug, and "passes" would close its issue as fixed.
        return Replay(DIFFERENT, None, res)
    fp = next((r.fingerprint for r in res.per_platform() if r.fingerprint is not None), None)
    return Replay(PASSES if fp is None else DIFFERENT, fp, res)


def replay_threads_env(meta: BundleMeta, engine: str) -> dict[str, str]:
    """The thread-count oracle's environment for a lane that replays ``meta`` ({} for a bug it
    did not find): its bug shows only with that run, and a replay without it would pass and
    close the issue."""
    return threads_env(engine) if meta.needs_threads else {}


def needs_base(target: Fingerprint) -> bool:
    """An XBF only shows with both builds in the run."""
    return target.status == "XBF"


def load_bundle(bundle: Path) -> tuple[BundleMeta, Graph, Graph | None]:
    """A bundle's record, its model and its minimised model (None without one); a ValueError
    (a RecordError naming the file) for a folder that is not a readable bundle."""
    meta = BundleMeta.read(bundle)
    if meta is None:
        raise ValueError(f"{bundle}: not a bug bundle (no meta.json)")
    g = Graph.from_json((bundle / "graph.json").read_text())
    small = Graph.from_json((bundle / "minimized.json").read_text()) if (bundle / "minimized.json").exists() else None
    return meta, g, small


def minimize_bug(lane: Lane, book: BugBook, fid: str, time_limit: float, check_flaky: bool = True,
                 resume: bool = False) -> Diagnosis:
    """Minimise bundle ``fid`` keeping its fingerprint; then (``check_flaky``) check it for flakiness.
    ``resume``: go on from the minimised model (a run cut short by its time limit)."""
    bundle = book.bundle_dir(fid)
    meta, g, small = load_bundle(bundle)  # from the original: minimised is its own start ...
    if resume and small is not None:
        g = small  # ... unless going on
    target = meta.fingerprint
    where = bug_platforms(lane, meta, cheapest=True)
    # No slippage: a candidate counts only with the same symptom, operator and direction (the
    # local key), not merely "some failure"; older bundles without a symptom keep the fingerprint.
    key = bundle_key(meta)

    end = time.monotonic() + time_limit

    def budget() -> float:
        return max(CALL_MIN_S, end + CALL_SLACK_S - time.monotonic())

    def same_bug(h: Graph) -> str | None:
        res = run_graph(lane, h, budget(), platforms=where, base=needs_base(target))
        hit = showing(res, key) if key is not None else matching(res, target)
        return None if hit is None else (hit.node or "-")

    small, node, stats = minimize(g, same_bug, time_limit=time_limit, focus=meta.node)
    for name in ("minimized.pb", "minimized-inputs.npz", "minimized-expected.npz", "minimized.tflite"):
        (bundle / name).unlink(missing_ok=True)
    run_graph(lane, small, budget(), platforms=where, keep=bundle)  # its model and data, for the repro
    book.add_minimized(fid, small, node if node and node != "-" else "", stats)
    if not check_flaky:
        return Diagnosis(stats)
    flaky = is_flaky(lane, small, target, platforms=where)
    book.set_flaky(fid, flaky)
    return Diagnosis(stats, flaky)


def confirm_bug(lane: Lane, model: Graph, target: Fingerprint, verdict: Verdict, until: float,
                rounds: int, durations: list[float] | None = None) -> tuple[Verdict, str]:
    """Replay a model on fresh workers of both builds, ``rounds`` times (bugs.triage.confirm);
    for a fixed fingerprint, the base build is the one that must show it.  Each round's
    wall time is appended to ``durations`` (the campaign plans its shares with them)."""
    tol = tolerance_for(model, lane.cfg.tolerance, lane.half_arithmetic, lane.weight_bits)  # the lane's own bound
    fixed = verdict is Verdict.FIXED

    def one_round(left: float) -> Round:
        t0 = time.monotonic()
        res = run_graph(lane, model, left, fresh=True, base=True)
        if durations is not None:
            durations.append(time.monotonic() - t0)
        if res.aborted or res.base is None:
            return Round(None)
        outs = {"pr": dict(res.arrays.get("actual", {})), "base": dict(res.base.arrays.get("actual", {}))}
        return round_of(target, res.fingerprint, res.base.fingerprint, fixed, outs,
                        alike=res.verdict is Verdict.PRE_EXISTING)

    def same_outputs(a: BuildOutputs, b: BuildOutputs) -> bool:
        if target.status not in ("DCF", "XBF"):  # a crash or an error: its outputs are not the bug
            return True
        return all(set(a[k]) == set(b[k]) and all(d.ok for d in judge_outputs(a[k], b[k], sorted(a[k]), tol))
                   for k in ("pr", "base"))

    return confirm(one_round, verdict, until, rounds, same_outputs)


def is_flaky(lane: Lane, g: Graph, target: Fingerprint, runs: int = 3, platforms: list[str] | None = None) -> bool:
    """Flaky when a replay of the same model does not give the same fingerprint, or gives it
    only after a crash."""
    for _ in range(runs):
        v = replay(lane, g, target, platforms=platforms)
        if v.outcome != SAME or v.crashes:
            return True
    return False
