"""The fuzz loop: generate, run in lanes, judge, record, within a time budget.

Cases are generated in index order in this thread (so generation is
deterministic) and run on ``jobs`` lanes; results are recorded in index order
through a reorder window, so ``cases.jsonl`` is always a prefix of the
campaign and ``--resume`` continues at the next index.  New cases stop when the
budget is near; anything still running at budget + grace is abandoned.

With several front ends (``--frontend tf,onnx``) case i is the i mod k-th front end's: each
has its own generator (search.mixed) and lanes of its own, and is counted apart in the summary.

With a base build every model also runs on it, and the campaign ends with the
pull request's verdict (``bugs.triage``): within the reserve, its new fingerprints
are confirmed first (then the fixed and the changed ones), before anything is
minimised.

Then every failure of the run is diagnosed (``rerun.diagnose``: minimised, its
operator re-run alone) and the fingerprints are merged into root causes
(``bugs.rootcause``), each with the policy of its symptom class (``policy``).
The reserve grows with the distinct failures met, so that each is diagnosed.

With ``shard`` (I, N) the campaign is part I of N of one campaign: the source draws its case
seeds from shard I's residue class (``search.case_seed``), so shards never share a model;
``merge`` makes their outputs one, with the same ``summarize``.
"""

from __future__ import annotations

import hashlib
import shutil
import signal
import threading
import uuid
import time
from collections import Counter, deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from queue import Queue
from typing import Any, Callable

from . import __version__
from .corpus import Corpus, load_corpus
from .frontends import FRONTENDS, LEGACY_OPSET, Frontend, parse_frontends
from .graph.generate import GenOptions
from .graph.ir import Graph
from .graph.solver import GenError
from .records.enums import Policy, Stop, StopReason, Symptom, Verdict
from .records.bundle import EngineInfo
from .records.campaign import CampaignIdentity, CampaignRecord, Session, campaign_identity
from .records.config import Config
from .records.case import CaseRecord, PlatformRecord
from .records.engine_coverage import EngineCoverage
from .records.summary import Diagnosis, Summary
from .records.state import STATE_FILE
from .summarize import SummaryInputs, TriageInputs, first_records, fp_of, frontend_counts, local_of, summarize_all
from .pipeline import CaseResult, Lane, LaneConfig
from .search import CaseSource
from .search.guided import GuidedSource
from .search.learned import Guide, Learned
from .search.mixed import MixedSource, state_for
from .search.opsets import OpsetSource
from .bugs import triage
from .bugs.bundle import BugBook, Found
from .rerun.diagnose import diagnose
from .policy import policy_for
from .rerun.replay import confirm_bug
from .engines.coverage import Blocks, build_shim, place, preload_env
from .knowledge.registry import knowledge_of
from .platforms import parse_platforms
from .platforms import resolve as resolve_platforms
from .statefile import corrupt, read_state
from .store import ResultStore, disk_full, no_space
from .workers.supervisor import WorkerClosed
from .records import Fingerprint, RecordError, Status

GRACE_S = 5.0  # in-flight cases may run this long past the budget before being abandoned
HARNESS_WORDS = 300  # a harness error's stop reason is cut to this many characters


# Results of case i reach the generator just before case i + LAG is generated,
# whatever the number of lanes: a fixed lag keeps guided generation deterministic
# while up to LAG cases are in flight.
LAG = 8
DIAG_ESTIMATE_S = 3.0  # seconds per diagnosis (minimise + isolate) until one was measured (2.5 s mean, qemu)
FREQUENT = 5  # cases: a fingerprint seen this often is diagnosed before the rarer ones
MAX_RESERVE = 0.5  # the reserve never takes more of the budget than this


def identity_of(cfg: Config) -> CampaignIdentity:
    """What must match for a resumed campaign to be the same campaign: the configuration's part of
    it, with the digests of the files it names (corpora, state, the learned chooser's guide)."""
    state = Path(cfg.state) / STATE_FILE if cfg.state else None
    shas = [_corpus_sha(c) for c in cfg.corpora().values()]
    # One front end: its corpus's hash, as before mixing; several: a hash of theirs, in order.
    corpus_sha = shas[0] if len(shas) == 1 else hashlib.sha256(",".join(shas).encode()).hexdigest()
    return campaign_identity(cfg, corpus_sha, _sha(str(state)) if state else "",
                             Guide.digest(cfg.guide) if cfg.chooser == "learned" else None)


def corpus_of(cfg: Config, frontend: str) -> Corpus:
    """Front end ``frontend``'s corpus, at the campaign's main opset when it writes ONNX."""
    fe, path = FRONTENDS[frontend], cfg.corpora()[frontend]
    c = load_corpus(path, cfg.opset if fe.reference == "onnx" else LEGACY_OPSET)
    if c.frontend != fe.reference:  # ONNX graphs for TensorFlow: every model a GEN
        raise ValueError(f"corpus {path} is for the {c.frontend} front end, not "
                         f"{fe.name} (give --corpus of that front end, or none for its default)")
    return c


def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _corpus_sha(path: str) -> str:
    """The corpus file's hash; with the one it extends (corpus ``extends``) when it extends one:
    a changed base corpus generates other models, so it is another campaign."""
    own = _sha(path)
    base = load_corpus(path).raw.get("extends_file", "")
    return own if not base else hashlib.sha256((own + _sha(base)).encode()).hexdigest()


def cut_short(summary: Summary) -> str:
    """Why the run stopped before its budget on a failure of its own ("" when it did not): a full
    output disk, a harness error.  Its summary covers what was judged; the entry points err."""
    stop = summary.stop_reason
    return str(stop) if stop is not None and stop.cut_short else ""


def disk_filled(summary: Summary) -> bool:
    """Whether the run stopped because its output disk filled (its summary covers what was judged)."""
    return summary.stop_reason is not None and summary.stop_reason.reason is StopReason.DISK_FULL


class StopState:
    """The campaign's one stop state.  ``why`` it stops: the loop's own reason (budget,
    max-models), which the reserve's work may clear to go on, or one from outside the loop (a
    signal, a caller, a full disk, a harness error), after which the summary is written from what
    was judged, at once; the first outside reason wins.  ``hard``: the cases in flight are
    abandoned too.  ``event`` is what the loop waits on."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.why: Stop | None = None
        self.outside = False
        self.hard = False

    def from_outside(self, stop: Stop, hard: bool = False, first: bool = True) -> None:
        """An outside stop; ``first=False``: it replaces any earlier reason (a failure of ours
        says why the summary is short, whatever asked to stop before)."""
        if not self.outside or not first:
            self.why = stop
        self.outside = True
        self.hard = self.hard or hard
        self.event.set()

    def by_loop(self, reason: StopReason) -> None:
        """The loop's own stop (budget, max-models): confirming and minimising follow."""
        self.why = self.why or Stop(reason)
        self.event.set()

    def go_on(self, why: Stop | None = None) -> None:
        """The loop may run again (the reserve's work, more models), with ``why`` for now; not
        after an outside stop (a signal between the loop's check and here still stops it)."""
        if self.outside:
            return
        self.event.clear()
        self.why = why


class Campaign:
    def __init__(self, cfg: Config, source: CaseSource | None = None,
                 progress: Callable[[dict[str, object]], None] | None = None) -> None:
        self.cfg = cfg
        self.frontends: tuple[Frontend, ...] = parse_frontends(cfg.frontend)
        self.frontend = self.frontends[0]
        self.mixed = len(self.frontends) > 1
        self.corpora: dict[str, Corpus] = self._load_corpora()
        self.corpus = self.corpora[self.frontend.name]
        opts = GenOptions.of(cfg)
        # The learned chooser's predictor and policies (ONNX Runtime sessions), loaded once.
        self.guide = Guide.load(cfg.guide) if cfg.chooser == "learned" and source is None else None
        self.source = source or self._make_source(opts)
        self.store = ResultStore(cfg.out)
        self.bugs = BugBook(cfg.out, cfg.state)
        self.progress = progress
        self.records: list[CaseRecord] = []
        self.engine_info = EngineInfo()
        self._pending: deque[tuple[int, Graph, CaseRecord]] = deque()  # results owed to the generator
        self.stopping = StopState()
        self._lanes: list[Lane] = []
        self.platform_info: dict[str, EngineInfo] = {}  # per platform: what its worker said of itself
        # Checked before anything runs: a bad platform or arm root is a usage error.
        self.platforms = resolve_platforms(cfg.platforms or parse_platforms(""), cfg.arm_root, cfg.out / ".work")
        if cfg.base is not None and (len(self.platforms) > 1 or self.platforms[0].prefix):
            raise ValueError("a base build runs on this machine only: use it with one native platform")
        self.shim = self._coverage_shim()
        self.sessions: list[Session] = []
        self.minimized: dict[str, Diagnosis] = {}
        self.confirmed: dict[str, tuple[Verdict, str]] = {}  # fingerprint -> (verdict, how)
        self._candidates = triage.Candidates()  # what confirmation will replay (_confirm_tail)
        self._rounds: list[float] = []  # wall time of each confirmation round so far
        self._groups: set[tuple[str, str, str]] = set()  # local keys of reportable failures met
        self._diagnosed: set[tuple[str, str, str]] = set()  # ... and those diagnosed
        self.base_info = EngineInfo()  # what the base build's worker said of itself
        self.run_id = uuid.uuid4().hex[:16]  # one per session: a report of this output is idempotent

    def _coverage_shim(self) -> Path | None:
        """The engine-coverage runtime the engine workers preload (None: coverage is off)."""
        if not self.cfg.engine_coverage:
            return None
        if len(self.platforms) > 1 or self.platforms[0].prefix:
            raise ValueError("--engine-coverage: on this machine's platform only (an emulator has its own loader)")
        return build_shim(self.cfg.out / ".work")

    def _engine_coverage(self) -> dict[str, object]:
        """The engine's blocks the lanes' models ran, joined with a resumed output's, written to
        engine-coverage.json; summary.json's ``coverage.engine`` ({}: coverage is off)."""
        if self.shim is None:
            return {}
        blocks = Blocks()
        for lane in self._lanes:
            blocks.add(lane.blocks.by_object)
        know = knowledge_of(self.cfg.engine, self.engine_info.engine)
        placed = place(blocks, know.module_of)
        this = EngineCoverage({m: {o: tuple(sorted(v)) for o, v in objs.items()} for m, objs in placed.items()})
        try:  # a resumed output's blocks; a corrupt file is replaced by what this run saw
            before = EngineCoverage.read(self.cfg.out)
        except RecordError:
            before = None
        ec = EngineCoverage.union([this, *([before] if before else [])], len(self.records))
        ec.write(self.cfg.out)
        return {"engine": ec.summary()}

    def _load_corpora(self) -> dict[str, Corpus]:
        return {fe.name: corpus_of(self.cfg, fe.name) for fe in self.frontends}

    def _make_source(self, opts: GenOptions) -> CaseSource:
        """One guided source per front end (its own corpus, coverage and MCTS tree); a mixed
        campaign deals the cases out among them (search.mixed)."""
        data = self._saved_state()
        sources: dict[str, CaseSource] = {}
        for fe in self.frontends:
            src = self._guided(fe, opts)
            if data is not None:
                self._load_state(src, data, fe.name)
            sources[fe.name] = src
        return MixedSource(sources) if self.mixed else sources[self.frontend.name]

    def _guided(self, fe: Frontend, opts: GenOptions) -> GuidedSource | OpsetSource:
        """Front end ``fe``'s source: one guided source, or for an ONNX front end writing several
        opsets one per opset (search.opsets), each older one probing only the operators its
        main one does not place."""
        def guided(corpus: Corpus, probe_only: frozenset[str] | None = None) -> GuidedSource:
            learned = Learned.of(self.guide, fe.name) if self.guide is not None else None
            return GuidedSource(corpus, opts, self.cfg.seed, self.cfg.chooser, self.cfg.mutations,
                                shard=self.cfg.shard, probe_only=probe_only, learned=learned)
        main = self.corpora[fe.name]
        if fe.reference != "onnx" or len(self.cfg.opsets) == 1:
            return guided(main)
        path = self.cfg.corpora()[fe.name]
        older = {o: guided(c, frozenset(c.specs) - frozenset(main.specs))
                 for o in self.cfg.opsets[1:] for c in [load_corpus(path, o, placeable_only=True)]}
        return OpsetSource({self.cfg.opset: guided(main), **older})

    def _saved_state(self) -> dict[str, object] | None:
        if not self.cfg.state:
            return None
        path = Path(self.cfg.state) / STATE_FILE
        if not path.exists():
            raise ValueError(f"--state {self.cfg.state}: no {STATE_FILE} there")
        return read_state(path, "search state (coverage, MCTS)")

    def _load_state(self, src: GuidedSource | OpsetSource, data: dict[str, object], frontend: str) -> None:
        path = Path(self.cfg.state) / STATE_FILE
        try:
            mine = state_for(data, frontend, self.mixed)
        except ValueError as e:  # a readable file of the wrong kind: a usage error, not a corrupt one
            raise ValueError(f"--state {self.cfg.state}: {e}") from None
        except TypeError as e:
            raise corrupt(path, "search state (coverage, MCTS)", f"{type(e).__name__}: {e}") from None
        if isinstance(mine, dict) and isinstance(mine.get("opsets"), dict) and isinstance(src, GuidedSource):
            mine = mine["opsets"].get(str(self.cfg.opset))  # one opset of a campaign of several (search.opsets)
        try:
            if mine is not None:  # None: a mixed state without this front end, which starts fresh
                src.load_state(mine)
        except (KeyError, TypeError, ValueError) as e:
            raise corrupt(path, "search state (coverage, MCTS)", f"{type(e).__name__}: {e}") from None

    def frontend_of(self, index: int) -> Frontend:
        """The front end of case ``index``: by index, so the split is the same whatever the lanes do."""
        return self.frontends[index % len(self.frontends)]

    # -- public -------------------------------------------------------------------
    def request_stop(self, reason: str = "stopped", hard: bool = False) -> None:
        """Stop starting cases; ``hard`` also abandons the cases in flight (a cancelled job)."""
        self.stopping.from_outside(Stop(StopReason.OUTSIDE, reason), hard)
        if hard:
            # From a thread of its own: this may run in a signal handler, on the main
            # thread, while that thread is inside a worker's start (which close waits for).
            threading.Thread(target=self._close_lanes, name="gbft-cancel", daemon=True).start()

    def worker_time(self) -> dict[str, dict[str, tuple[int, float, float]]]:
        """Calls, wall seconds the lanes waited for their workers and the CPU seconds the workers
        spent on them, by worker kind and op ("start": spawning a worker up to its hello): where
        the time went (bench/throughput.py)."""
        out: dict[str, dict[str, tuple[int, float, float]]] = {}
        for lane in self._lanes:
            for kind, workers in lane.workers().items():
                ops = out.setdefault(kind, {})
                for w in workers:
                    for op, sec in w.spent.items():
                        n, t, c = ops.get(op, (0, 0.0, 0.0))
                        ops[op] = (n + w.calls[op], t + sec, c + w.cpu[op])
        return out

    def _close_lanes(self) -> None:
        for lane in list(self._lanes):
            lane.close()

    def run(self) -> Summary:
        t0 = time.monotonic()
        deadline = t0 + self.cfg.budget
        self.store.reserve()  # a full disk at the start is an OSError for the entry point
        self._check_resume()
        self.records = self.store.load()
        self.bugs.resume(self.records)
        self._groups.update(local_of(r) for rec in self.records for r in rec.failures())
        self._replay_feedback()
        try:
            self._fuzz_and_minimize(self._start_lanes(deadline), deadline)
        except WorkerClosed:  # cancelled while a worker was starting
            if not self.stopping.hard:
                raise
        except OSError as e:
            if not disk_full(e):
                raise
            # Stop where the disk filled: what was judged is kept and summarised, nothing is
            # minimised (every bundle would need room), and the entry point says why.
            self.stopping.from_outside(Stop(StopReason.DISK_FULL, str(e.filename or self.cfg.out)), first=False)
        except GenError as e:
            # The generator could not build a case (a solver bug, every attempt of one index):
            # what was judged is kept and summarised, and the entry point errs.
            words = HARNESS_WORDS - len(StopReason.HARNESS_ERROR.value) - 2
            self.stopping.from_outside(Stop(StopReason.HARNESS_ERROR, f"the generator: {e}"[:words]), first=False)
        finally:
            for lane in self._lanes:
                lane.stop()
            self.store.close()
            self.store.release()
        return self._finish(time.monotonic() - t0)

    def _fuzz_and_minimize(self, lanes: list[Lane], deadline: float) -> None:
        share = self.cfg.budget * self.cfg.minimize_share
        # With a base build, a tail of the budget confirms what the last models found (_confirm
        # stops GRACE_S before its deadline, so the tail holds that too).
        tail = 0.1 * self.cfg.budget + GRACE_S if self.cfg.base is not None else 0.0
        # The tail too: with minimising off the reserve is nothing, and a loop run to the deadline
        # would leave every new failure unchecked (never blamed: a green check over a regression).
        self._loop(lanes, lambda: deadline - max(self._reserve(share), tail), deadline)
        why = self.stopping.why
        if self.stopping.outside:  # a signal: the summary from what was judged, at once
            return
        self.stopping.go_on(why)
        budget = why is not None and why.reason is StopReason.BUDGET
        # The reserve the loop kept (with --max-models: at most that much from now).
        end = deadline - tail if budget else \
            min(deadline, time.monotonic() + self._reserve(share) + GRACE_S)
        self._confirm(lanes, end)
        self._diagnose(lanes, end)
        if budget and not self.stopping.outside:  # only the reserve was reached
            self._more_models(lanes, deadline, tail)

    def _more_models(self, lanes: list[Lane], deadline: float, tail: float) -> None:
        """Time the reserve did not need goes to more models, then to what they found, for as
        long as models still fit: each loop keeps only what confirming (and diagnosing) its
        candidates takes, not the whole tail, so a run with nothing new uses its budget."""
        def done() -> int:
            return len(self.records) + len(self.confirmed) + len(self.minimized)

        while not self.stopping.outside:
            self.stopping.go_on()
            before = done()
            self._loop(lanes, lambda: deadline - self._reserve(self._confirm_tail(tail)), deadline)
            if self.stopping.outside:
                return
            self.stopping.go_on(self.stopping.why)  # the loop's reason stays: not a stop
            self._confirm(lanes, deadline)
            self._diagnose(lanes, deadline)
            if done() == before or deadline - time.monotonic() <= GRACE_S:
                return  # nothing more fitted: the rest is the grace

    # -- setup ----------------------------------------------------------------------
    def _check_resume(self) -> None:
        path = self.cfg.out / "campaign.json"
        ident = identity_of(self.cfg)
        if path.exists():
            old = CampaignRecord.read(self.cfg.out)
            if old.identity != ident:
                raise ValueError(f"{self.cfg.out} holds another campaign (it differs in "
                                 f"{', '.join(old.identity.differs(ident))}); "
                                 f"use a new --out or the same seed/blocks/graph/engine/corpus")
            self.sessions = list(old.sessions)
        self._write_campaign()

    def _write_campaign(self) -> None:
        CampaignRecord(identity_of(self.cfg), self.cfg, tuple(self.sessions), __version__).write(self.cfg.out)

    def _replay_feedback(self) -> None:
        """Rebuild the source's learned state from the recorded cases (resume).

        Generation and feedback are interleaved exactly as in the live loop:
        the result of case i is fed back before case i + LAG is generated.
        """
        for rec in self.records:
            i = rec.index
            self._feed_until(i - LAG)
            g = self.source.next_graph(i)
            if g.structure_hash() != rec.hash:
                raise RuntimeError(f"resume: case {i} regenerates as {g.structure_hash()}, "
                                   f"recorded {rec.hash}: the generator is not deterministic")
            self._pending.append((i, g, rec))
            self._candidates.note(rec)

    def _feed_until(self, upto: int) -> None:
        """Give the generator every recorded result with index <= upto, in order."""
        while self._pending and self._pending[0][0] <= upto:
            i, g, rec = self._pending.popleft()
            self.source.feedback(i, g, rec)

    def _start_lanes(self, deadline: float) -> list[Lane]:
        env = dict(self.cfg.engine_env)
        lcfg = LaneConfig.of(self.cfg, self.platforms, self.frontend, preload_env(self.shim, env) if self.shim else env)
        # A lane serves one front end (its reference worker judges that format): a mixed run
        # deals its lanes out among the front ends, at least one each.
        k = len(self.frontends)
        lanes = [Lane(replace(lcfg, frontend=self.frontends[i % k]), i) for i in range(max(1, self.cfg.jobs, k))]
        self._lanes = lanes
        if self.stopping.hard:  # cancelled before the lanes existed: close them here
            self._close_lanes()
        with ThreadPoolExecutor(len(lanes)) as ex:
            list(ex.map(lambda ln: ln.start(), lanes))
        # What each platform's worker said of itself; a label names a single platform in reports.
        label = self.cfg.platform_label if len(self.platforms) == 1 else ""
        self.platform_info = {name: replace(info, platform=label or name) for name, info in lanes[0].hellos().items()}
        self.engine_info = next(iter(self.platform_info.values()))
        if self.cfg.platform_label:
            self.engine_info = replace(self.engine_info, machine=self.cfg.platform_label)
        if lanes[0].base is not None:
            b = EngineInfo.of_hello(lanes[0].base.hello)
            self.base_info = EngineInfo(b.engine, b.version, b.machine)
        return lanes

    def _reserve(self, share: float) -> float:
        """Seconds kept at the end for confirming and diagnosing: the configured share, or more
        (up to MAX_RESERVE of the budget) when this run has met more distinct failures (local
        keys) than the share can diagnose, at the measured seconds per diagnosis."""
        if self.cfg.minimize_share <= 0:
            return share
        return reserve(share, self.cfg.budget, list(self.minimized.values()), len(self._groups - self._diagnosed))

    def _diagnose(self, lanes: list[Lane], deadline: float) -> None:
        """Minimise and key this run's fingerprints within the reserve (Diagnoser)."""
        if self.cfg.minimize_share <= 0:
            return
        Diagnoser(self.records, self.bugs, self.cfg.minimize_limit, self.cfg.symptom_policy, self.minimized,
                  self._diagnosed, lambda: self.stopping.outside).run(lanes, deadline)

    def _confirm(self, lanes: list[Lane], deadline: float) -> None:
        """Confirmation before blame: each new fingerprint, most frequent first, is replayed on
        fresh workers of both builds; then, with what remains, the fixed and the changed ones.
        Each gets a fair share of what is left, but never less than its replays need: with
        more candidates than time, the most frequent are decided and the rest stay
        'unchecked', never blamed (nor called fixed)."""
        if self.cfg.base is None:
            return
        verdicts = triage.aggregate(self.records)
        for kinds in ((v,) for v in triage.CONFIRMED):
            todo = [f for f in triage.candidates(verdicts, kinds) if f not in self.confirmed]
            for k, fid in enumerate(todo):
                left = deadline - time.monotonic() - GRACE_S
                need = triage.rounds_needed(verdicts[fid], self.cfg.confirm_rounds) * self._round_estimate() * 1.5
                if left < min(need, 1.0) or self.stopping.outside:
                    return
                share = min(left, max(need, left / (len(todo) - k)))
                lane = lane_for(lanes, str(verdicts[fid].fingerprint.get("frontend", "")))
                self.confirmed[fid] = self._confirm_one(lane, verdicts[fid], time.monotonic() + share)

    def _confirm_tail(self, cap: float) -> float:
        """Seconds confirming the candidates met so far will take (at most ``cap``), with the
        grace _confirm keeps: every candidate at full rounds, so never less than it needs.
        Nothing to confirm keeps nothing: the loop runs to the deadline, as without a base."""
        return confirm_tail(len(self._candidates.keys() - self.confirmed.keys()), cap, self.cfg.confirm_rounds,
                            self._round_estimate())

    def _round_estimate(self) -> float:
        """Seconds one confirmation round takes (fresh workers of both builds, one model)."""
        recent = self._rounds[-20:]
        return sum(recent) / len(recent) if recent else 1.0

    def _confirm_one(self, lane: Lane, bv: triage.BugVerdict, until: float) -> tuple[Verdict, str]:
        """Replays of the model of a case that earned the verdict (a new one: a case where the
        base build passed), as it ran: a minimised model may have drifted to one where the base
        build fails too, and would then confirm nothing about the case."""
        case = bv.case_dirs.get(bv.verdict.value) or bv.case_dir
        model = Graph.from_json((self.cfg.out / case / "graph.json").read_text())
        return confirm_bug(lane, model, Fingerprint.from_json(bv.fingerprint), bv.verdict, until,
                           triage.rounds_needed(bv, self.cfg.confirm_rounds), self._rounds)

    # -- loop -----------------------------------------------------------------------
    def _loop(self, lanes: list[Lane], deadline: Callable[[], float], hard_deadline: float) -> None:
        """Start cases until ``deadline()``; cases in flight may run to ``hard_deadline`` + grace."""
        # Per front end: its free lanes and its own threads, so a case waiting for a busy
        # TensorFlow lane never holds a thread an idle ONNX lane could use.
        free: dict[str, Queue[Lane]] = {}
        for ln in lanes:
            free.setdefault(ln.cfg.frontend.name, Queue()).put(ln)
        window: deque[Future[CaseResult]] = deque()
        index = len(self.records)
        est = 0.05  # running estimate of one case's wall time on one lane

        def task(i: int, g: Graph) -> CaseResult:
            fe = self.frontend_of(i).name
            lane = free[fe].get()
            try:
                res = lane.run(i, g, hard_deadline + GRACE_S - time.monotonic())
            finally:
                free[fe].put(lane)
            # Named only in a mixed campaign: a single front end's records stay as they were.
            return replace(res, frontend=fe) if self.mixed else res

        with ExitStack() as stack:
            pools = {fe: stack.enter_context(ThreadPoolExecutor(q.qsize())) for fe, q in free.items()}
            while not self.stopping.event.is_set():
                if self.cfg.max_models and index >= self.cfg.max_models:
                    self.stopping.by_loop(StopReason.MAX_MODELS)
                    break
                if time.monotonic() + est > deadline():
                    self.stopping.by_loop(StopReason.BUDGET)
                    break
                while (window and window[0].done()) or len(window) >= LAG:
                    est = self._record(window.popleft().result(), est)
                self._feed_until(index - LAG)
                g = self.source.next_graph(index)
                window.append(pools[self.frontend_of(index).name].submit(task, index, g))
                index += 1
            while window:
                est = self._record(window.popleft().result(), est)

    def _record(self, res: CaseResult, est: float) -> float:
        if res.aborted or self.stopping.hard:  # killed under it by a hard stop: not a result
            if res.workdir is not None:
                shutil.rmtree(res.workdir, ignore_errors=True)
            return est
        full = no_space(res)
        if full is not None:
            raise full
        rec = self.store.append(res)
        self.records.append(rec)
        for r in rec.failures():  # a bundle's worker description only for what it records
            engine = self.platform_info.get(r.platform, self.engine_info)
            self.bugs.observe(r, rec.case_dir, res.graph, Found.of_engine(engine, self.cfg.seed, self.cfg.tolerance))
        self._pending.append((res.index, res.graph, rec))
        self._candidates.note(rec)
        self._groups.update(local_of(r) for r in rec.failures()
                            if policy_for(r.symptom_text, self.cfg.symptom_policy) is Policy.REPORT)
        if self.progress:
            self.progress(self.counts())
        spent = sum(res.timings.values())
        return 0.9 * est + 0.1 * spent

    # -- results --------------------------------------------------------------------
    def counts(self) -> dict[str, object]:
        by = Counter(r.status.value for r in self.records)
        return {"models": len(self.records), "by_status": {s.value: by.get(s.value, 0) for s in Status}}

    def _finish(self, elapsed: float) -> Summary:
        session_models = len(self.records) - sum(s.models for s in self.sessions)
        self.sessions.append(Session(round(elapsed, 3), session_models, self.stopping.why))
        self._feed_until(len(self.records))  # the state saved below has seen every result
        self.bugs.save()
        done = summarize_all(SummaryInputs(
            records=self.records, sessions=self.sessions, cfg=self.cfg, engine=self.engine_info,
            platform_info=self.platform_info, book=self.bugs,
            new_ids=[f for f in self.bugs.new_ids() if not self.bugs.flaky(f)],
            run_id=self.run_id, minimized=self.minimized, bugs_dir=str(self.cfg.out / "bugs"),
            triage=self._triage_inputs(), **self._coverage()))
        done.write(self.cfg.out, self.bugs)
        summary = done.summary
        self.store.write_json(STATE_FILE, self.source.state())
        self._write_campaign()
        return summary

    def _coverage(self) -> dict[str, Any]:
        """Coverage, per front end in a mixed campaign (an ONNX operator is not the TensorFlow one)."""
        if self.mixed:  # engine coverage: engine-coverage.json only (the summary's is per front end)
            self._engine_coverage()
            cov = self.source.summary() if isinstance(self.source, MixedSource) else {}
            return {"frontends": frontend_counts(self.records, [fe.name for fe in self.frontends], cov)}
        cov = self.source.summary() if hasattr(self.source, "summary") else {}
        engine = self._engine_coverage()
        return {"coverage": {**cov, **engine}} if cov or engine else {}

    def _triage_inputs(self) -> TriageInputs | None:
        if self.cfg.base is None:
            return None
        return TriageInputs(self.cfg.out, self.confirmed, replace(self.base_info, source=self.cfg.base.source))

def lane_for(lanes: list[Lane], frontend: str) -> Lane:
    """A lane of the front end a fingerprint was found through ("": tf): its model replays there."""
    name = frontend or "tf"
    return next((ln for ln in lanes if ln.cfg.frontend.name == name), lanes[0])


@dataclass
class Diagnoser:
    """Who diagnoses what within the reserve, apart from the campaign's loop.

    Minimise and key (rerun.diagnose) this run's fingerprints: those a report would file first,
    one per local key (symptom, operator, direction) first, the smallest models first; then the
    other variants, which may split off a root cause.  The reserve is planned per local key: a
    variant left undiagnosed joins its head's key.  Every lane diagnoses (one fingerprint each at
    a time): a lane is a core's worth of workers, idle otherwise once the fuzz loop has stopped.
    ``minimized`` and ``diagnosed`` are the campaign's own, filled as diagnoses finish."""

    records: list[CaseRecord]
    book: BugBook
    limit: float  # seconds at most per fingerprint
    symptom_policy: dict[str, str]
    minimized: dict[str, Diagnosis]
    diagnosed: set[tuple[str, str, str]]
    stopped: Callable[[], bool] = lambda: False

    def run(self, lanes: list[Lane], deadline: float) -> None:
        firsts = first_records(self.records)
        heads, rest = diagnosis_order(firsts, self.book.seen_this_run, self.symptom_policy)
        # Each pass shares what is left fairly among its own fingerprints (heads first: they
        # decide the keys); then the minimisations a share cut short go on once.
        def unfinished(f: str) -> bool:
            return f in self.minimized and not self.minimized[f].complete
        for group, resume in ((heads, False), (rest, False), ([*heads, *rest], True)):
            todo = [f for f in group if unfinished(f)] if resume else [f for f in group if f not in self.minimized]
            self._all(lanes, firsts, todo, resume, deadline)

    def _all(self, lanes: list[Lane], firsts: dict[str, PlatformRecord], todo: list[str], resume: bool,
             deadline: float) -> None:
        lock = threading.Lock()
        serves = {f: lane_for(lanes, fp_of(firsts[f]).frontend).cfg.frontend.name for f in todo}

        def work(lane: Lane) -> None:
            name = lane.cfg.frontend.name
            peers = sum(1 for ln in lanes if ln.cfg.frontend.name == name)
            while True:
                with lock:  # take the next fingerprint of this lane's front end and its share together
                    left = deadline - time.monotonic() - GRACE_S
                    mine = [f for f in todo if serves[f] == name]
                    if not mine or left < 1 or self.stopped():
                        return
                    # A fair share of what is left (per lane), at least 2 s, at most the limit.
                    share = left if resume else max(2.0, left * peers / len(mine))
                    fid = mine[0]
                    todo.remove(fid)
                self.minimized[fid] = _diagnosed_or_error(lane, self.book, fid, min(self.limit, share, left), resume)
                with lock:
                    self.diagnosed.add(local_of(firsts[fid]))

        if len(lanes) == 1:
            work(lanes[0])
            return
        with ThreadPoolExecutor(len(lanes), thread_name_prefix="diagnose") as pool:
            for f in [pool.submit(work, lane) for lane in lanes]:
                f.result()


def _diagnosed_or_error(lane: Lane, book: BugBook, fid: str, limit: float, resume: bool) -> Diagnosis:
    """diagnose(), or, when the harness itself raised on this fingerprint, its error as the
    diagnosis's stats: one bundle the harness cannot diagnose (numpy's "array is too big" once,
    in an emulated arm64 run) must not take the campaign's judged models and summary with it.
    The error is counted and shown (summary.json's harness_errors) and the key stays the case's."""
    try:
        return diagnose(lane, book, fid, limit, resume)
    except Exception as e:  # noqa: BLE001 - a harness defect on one bundle: counted, not fatal
        import traceback

        return Diagnosis(error=f"diagnosis: {type(e).__name__}: {e}"[:300], trace=traceback.format_exc()[-2000:])


# --------------------------------------------------------------------------- planning
# The budget's plan as functions of what the campaign has seen (tested without a Campaign).


def reserve(share: float, budget: float, diagnoses: list[Diagnosis], undiagnosed: int) -> float:
    """Seconds kept at the end for confirming and diagnosing: ``share``, or more (up to
    MAX_RESERVE of the budget) when more distinct failures (local keys) are ``undiagnosed``
    than the share can diagnose, at the seconds the last ``diagnoses`` took each."""
    recent = [d.seconds for d in diagnoses[-20:]]
    each = sum(recent) / len(recent) if recent else DIAG_ESTIMATE_S
    return max(share, min(MAX_RESERVE * budget, undiagnosed * each))


def confirm_tail(todo: int, cap: float, rounds: int, round_s: float) -> float:
    """Seconds confirming ``todo`` candidates takes (at most ``cap``), with the grace _confirm
    keeps: every candidate at full ``rounds`` of ``round_s``; nothing to confirm keeps nothing."""
    return min(cap, GRACE_S + todo * rounds * round_s * 1.5) if todo else 0.0


def diagnosis_order(firsts: dict[str, PlatformRecord], seen: dict[str, int],
                    overrides: dict[str, str]) -> tuple[list[str], list[str]]:
    """(heads, rest) of the fingerprints ``seen`` (with their case counts): the first of each
    local key, then the others.  Reportable first; of those, the frequent ones first (an
    undiagnosed key seen in dozens of cases heads the report under the wrong operator), then
    the smallest models.  Not hangs: each replay would take the stage limit and overrun."""
    order = sorted((f for f in seen if f in firsts and firsts[f].symptom is not Symptom.TIMEOUT),
                   key=lambda f: (policy_for(firsts[f].symptom_text, overrides) is not Policy.REPORT,
                                  seen[f] < FREQUENT, firsts[f].n_nodes, f))
    met: set[tuple[str, str, str]] = set()
    heads: list[str] = []
    rest: list[str] = []
    for f in order:
        lk = local_of(firsts[f])
        (rest if lk in met else heads).append(f)
        met.add(lk)
    return heads, rest


def install_signal_handlers(c: Campaign) -> None:
    """SIGTERM/SIGINT: stop starting cases, finish the summary."""
    def handler(signum: int, frame: Any) -> None:
        c.request_stop(f"signal {signal.Signals(signum).name}")

    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, handler)
