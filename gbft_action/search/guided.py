"""The generation loop of Algorithm 1: choose blocks, mutate, generate, keep if new.

``GuidedSource.next_graph(i)`` returns the i-th test of the campaign: it draws
attempts ``(seed, i, a)`` until one brings new operator-level coverage (line 7)
or ``max_attempts`` is reached; the others are counted as discarded.  With the
``mcts`` chooser the blocks come from the MCTS path and each graph node takes
the admissible block that adds the most coverage (in-/out-degree, edge from its
predecessors, new operator); with ``random`` every node takes a random
admissible block of the whole corpus.  Results arrive later through
``feedback`` (an engine failure is an MCTS success too, and every result teaches
``search.known``, whose settled failures steer block choice and which attempt is kept).  Everything is a
function of the seed, the shard and the order of calls, so a campaign (and each
shard of one) replays exactly; which models a shard may draw at all is fixed by
its case seeds alone (``search.case_seed``), never by what it learned.
"""

from __future__ import annotations

from collections.abc import Mapping
import math
import random
from typing import Any

from ..corpus import Block, Corpus
from ..graph.generate import GRAPH_MODELS, GenOptions, Skeleton, draw_edges, realise
from ..graph.models import NEIGHBOURS
from ..graph.ir import Graph
from ..graph.mutations import ALL, RATES, TSM, Mutation
from ..graph.solver import GenError
from ..oracle import ENGINE_FAILURES  # str statuses: a record's "MCF" matches Status.MCF
from . import case_seed, stream_key
from .coverage import Coverage, graph_level
from .known import KnownFailures
from .mcts import MCTSChooser, TreeNode
from ..ops.onnx_exported import Pattern
from ..ops.recorded import RecordedSpec, by_opset
from ..records.case import CaseRecord
from .probe import SupportMatrix, probe_graph, probes
from .known import PROBE
from .learned import Learned, draw
from ..knobs import CHOOSERS

# Attempts of one model the learned chooser may drop for a negative test value.  Each costs a
# whole attempt (the model is realised before it is valued): with no cap a 60-second campaign ran
# a fifth of the models MCTS did; with two, a 10-minute one on MNN's coverage build half
# (BENCHMARKS.md, session 25), the generator being the bottleneck.
MAX_SKIPS = 1

# A block's score (new structural coverage items, 0 to about 6, plus up to 1 for open shape
# vectors and the MCTS path) loses its settled risk (search.known) times one of these: a
# known defect's operator still young in coverage (YOUNG_SPC) loses nothing (coverage first),
# any other is placed only where nothing else fits.
KNOWN_PENALTY = {"young": 0.0, "known": 6.0}
EXPLORE = 0.1  # the share of attempts that ignore known failures
YOUNG_SPC = 100  # shape/parameter vectors of an operator before steering outweighs its coverage
# Coverage a model may run for though it carries known failures: types and degrees (operator
# pairs, SEC, are nearly always new: 70 operators make 4,900 pairs).
STRUCTURE = ("OTC", "IDC", "ODC")


class GuidedSource:
    def __init__(self, corpus: Corpus, opts: GenOptions, seed: int, chooser: str = "mcts",
                 mutations: bool = True, max_attempts: int = 8, n_maxspc: int | None = None,
                 shard: tuple[int, int] = (1, 1), probe_only: frozenset[str] | None = None,
                 learned: Learned | None = None) -> None:
        if chooser not in CHOOSERS:
            raise ValueError(f"chooser must be one of {', '.join(CHOOSERS)}, got {chooser!r}")
        if (chooser == "learned") != (learned is not None):
            raise ValueError("the learned chooser needs a guide (search.learned.Learned), and only it takes one")
        # search.learned: the policy picks the blocks; models of negative test value are not run.
        self.learned = learned
        self.corpus, self.opts, self.seed = corpus, opts, seed
        self.shard = shard  # search.case_seed: every seed of this shard is in its residue class
        self.chooser_name = chooser
        self.mcts = MCTSChooser(corpus) if chooser == "mcts" else None
        models = GRAPH_MODELS if opts.graph == "both" else (opts.graph,)
        self.arms = GraphArms([(m, k) for m in models for k in NEIGHBOURS]) if chooser == "mcts" else None
        self.mutations: tuple[Mutation, ...] = tuple(
            TSM(opts=opts) if m.name == "TSM" else m for m in ALL) if mutations else ()
        self.max_attempts = max_attempts
        self.coverage = Coverage.from_corpus(corpus, n_maxspc)
        self.discarded = 0
        self.generated = 0
        self.solver_errors = 0  # attempts the solver failed on (a bug of ours; the attempt is lost)
        self._paths: dict[int, list[TreeNode]] = {}
        self._rewarded: set[int] = set()
        self._graph_level: dict[str, float] = {}
        self._kept = 0
        self._base: dict[str, object] = {"mcts": None, "graph_arms": None}  # what load_state loaded (merge)
        self.known = KnownFailures()  # settled failures: models carrying them are drawn again
        # Recorded operators' instances, each alone, are the first cases (search.probe).
        # ``probe_only``: those of these operators alone (search.opsets: an older opset's source).
        self.probes = [p for p in probes(corpus) if probe_only is None or p[0] in probe_only]
        self.support = SupportMatrix()
        self._served = 0  # cases served so far: the probes are the first ones

    @property
    def served(self) -> int:
        """Cases served so far (probes included)."""
        return self._served

    # -- CaseSource -------------------------------------------------------------------
    def next_graph(self, index: int) -> Graph:
        self._served += 1
        if self._served <= len(self.probes):
            return self._probe(index, *self.probes[self._served - 1])
        kept: tuple[Graph, list[TreeNode], int] | None = None  # the latest attempt that may run
        predicted = None  # the learned guide's prediction for the kept attempt
        skips = 0  # attempts not run for their test value
        last = self.max_attempts - 1
        for attempt in range(self.max_attempts):
            key = f"{stream_key(self.seed, index, self.shard)}:{attempt}"
            rng = random.Random(key)
            # A share of attempts places blocks ignoring what is known (drawn apart: rng's models
            # stay the same), so that a known defect's operators still run now and then (when
            # the draw in _steered_away keeps them): a change to them shows.
            steer = self.known.settled_any() and random.Random(f"{key}:explore").random() >= EXPLORE
            try:
                g, path = self._attempt(rng, index, steer)
            except GenError:
                # A solver bug: that attempt is lost, never the campaign (s3l ended at case 1576,
                # its summary unwritten).  Counted, so that it shows.
                self.solver_errors += 1
                if attempt < last or kept is not None:
                    continue
                raise
            self.generated += 1
            if self.learned is not None:
                value, guess = self.learned.worth(g)
                # The patent's step 7: a model of negative test value is not run.  At most
                # MAX_SKIPS a model: each costs a whole attempt, and the engine waits for models.
                if value < 0 and skips < MAX_SKIPS and (attempt < last or kept is not None):
                    self.learned.skipped += 1
                    skips += 1
                    continue
            items = self.coverage.new_items(g)  # once: the arms' gain and the update read the same
            if self._steered_away(g, items, rng) and (attempt < last or kept is not None):
                continue  # not run, so not covered; the latest attempt that may run stands in
            if self.arms:
                self.arms.update(g.meta["model"], g.meta["k"], self._structural_gain(g, items))
            new = self.coverage.add_items(items)
            if self.mcts:
                self.mcts.backpropagate(path, 1.0 if new else 0.0)
            if new:
                self._rewarded.add(index)
            kept = (g, path, attempt)
            if self.learned is not None:
                predicted = guess
            if new or attempt == last:
                break  # the last attempt is kept even without new coverage: every index has a test
            self.discarded += 1
        assert kept is not None
        g, path, attempt = kept
        if self.learned is not None and predicted is not None:
            self.learned.value.ran(predicted)
        g.meta.update(index=index, attempt=attempt)
        self._paths[index] = path
        self._accumulate_graph_level(g)
        self._held(g)
        return g

    def _held(self, g: Graph) -> None:
        """What the summary lists of the models: their operators and element types."""
        self.coverage.operators.update(model_operators(g, self.corpus))
        self.coverage.element_types.update(g.element_types())

    def _probe(self, index: int, op: str, k: int) -> Graph:
        g = probe_graph(self.corpus, op, k, case_seed(self.seed, index, self.shard))
        self.coverage.add_items(self.coverage.new_items(g))
        self._held(g)
        g.meta.update(index=index, attempt=0)
        return g

    def _steered_away(self, g: Graph, items: set[tuple[str, str, Any]], rng: random.Random) -> bool:
        """Whether g carries settled known failures and is not run (search.known).  A model
        bringing new structure (a type, a degree) or anything new for an operator still young
        in coverage (YOUNG_SPC) always runs, unless that operator is where its risk lies; later, pairs, triples and shape or parameter
        vectors are nearly always new, so they earn no pass.  No extra
        attempts: steering chooses among the ones coverage draws anyway."""
        cov = self.coverage
        if any(map(self.known.fails_alone, g.block_nodes())):
            self.known.steered += 1
            return True  # a node proven to fail alone: the model would show only that failure
        # New coverage earns a pass only from an operator that is not the model's risk: a node
        # carrying a settled trigger, exploring its own parameter space, mostly finds the known
        # defect again (a young Conv's every new vector brought back Conv's SAME_LOWER defect).
        risky = {n.op for n in g.nodes if self.known.risk(n) > 0}
        if any((k in STRUCTURE or cov.size("SPC", op) < YOUNG_SPC) and op not in risky for k, op, _ in items) or \
                self.known.keep(g, random.Random(rng.random())):
            return False
        self.known.steered += 1
        return True

    def feedback(self, index: int, graph: Graph, record: CaseRecord) -> None:
        self.known.observe(graph, record)
        if PROBE in graph.meta:
            op, k = graph.meta[PROBE]
            spec = self.corpus.specs[op]
            self.support.note(op, record.status.value, spec.instances[k].describe()
                              if isinstance(spec, RecordedSpec) else "")
        path = self._paths.pop(index, [])
        if self.mcts and record.status in ENGINE_FAILURES and index not in self._rewarded:
            self.mcts.backpropagate(path, 1.0, visit=False)

    def state(self) -> dict[str, Any]:
        st = {"chooser": self.chooser_name, "mutations": bool(self.mutations),
              "coverage": self.coverage.to_json(), "mcts": self.mcts.to_json() if self.mcts else None,
              "graph_arms": self.arms.to_json() if self.arms else None,
              "generated": self.generated, "discarded": self.discarded, "known": self.known.to_json(),
              **({"opset": self.corpus.reg.opset} if self.corpus.frontend == "onnx" else {})}
        if self.shard[1] > 1:  # merging shards subtracts the common start (mcts.combine_trees)
            st["base"] = dict(self._base)
        return st

    def load_state(self, st: Mapping[str, Any]) -> None:
        """Start from a saved state (``--state``): coverage and the MCTS tree."""
        self.coverage = Coverage.from_json(st["coverage"])
        self.known = KnownFailures.from_json(st.get("known"))
        self._base = {"mcts": st.get("mcts") if self.mcts else None,
                      "graph_arms": st.get("graph_arms") if self.arms else None}
        if self.mcts and st.get("mcts"):
            self.mcts.load(st["mcts"])
        if self.arms and st.get("graph_arms"):
            self.arms.load(st["graph_arms"])

    def summary(self) -> dict[str, Any]:
        # ONNX models: how many of their operators are at each operator-set version (ReduceMean-13...)
        versions = by_opset(self.coverage.operators, self.corpus.reg.opset) if self.corpus.frontend == "onnx" else {}
        return {**self.coverage.summary(), **({"operators_by_opset": versions} if versions else {}),
                "graph": dict(self._graph_level), "generated": self.generated,
                "discarded": self.discarded, "steered": self.known.steered, "solver_errors": self.solver_errors,
                "settled_triggers": dict(list(self.known.settled().items())[:20]), "mcts_nodes": self.mcts.size() if self.mcts else 0,
                **({"support": self.support.to_json()} if self.support.rows else {}),
                "graph_arms": self.arms.to_json() if self.arms else None,
                **({"learned": self.learned.summary()} if self.learned else {})}

    # -- one attempt ------------------------------------------------------------------
    def _attempt(self, rng: random.Random, index: int, steer: bool = False) -> tuple[Graph, list[TreeNode]]:
        chosen, path = self.mcts.choose(rng, self.coverage) if self.mcts else ([], [])
        muts = self._select_mutations(rng)
        sk = draw_edges(rng, self.corpus, self.opts, self.arms.pick(rng) if self.arms else None)
        sk.values = self.opts.values_of(case_seed(self.seed, index, self.shard))
        for m, r in muts:
            if m.level == "edges":
                m.apply(rng, sk, self.corpus, r)
        self._assign(rng, sk, chosen, steer)
        for m, r in muts:
            if m.level != "edges":
                m.apply(rng, sk, self.corpus, r)
        # Parameter values known to fail, left out; instances that fail alone always are.
        narrow = self.known.narrow if steer else self.known.narrow_proven
        try:
            g = realise(rng, self.corpus, sk, case_seed(self.seed, index, self.shard), narrow)
        except GenError:
            sk.overrides.clear()
            sk.fixed_params.clear()
            g = realise(rng, self.corpus, sk, case_seed(self.seed, index, self.shard), narrow)
        g.meta["mutations"] = [f"{m.name}:{r}" for m, r in muts]
        g.meta["path"] = [b.name for b in chosen]
        return g, path

    def _select_mutations(self, rng: random.Random) -> list[tuple[Mutation, float]]:
        """The mutation selector: each mutation on with probability 1/2, rate from RATES."""
        return [(m, rng.choice(RATES[1:]) if m.level != "source" else 0.0)
                for m in self.mutations if rng.random() < 0.5]

    def _assign(self, rng: random.Random, sk: Skeleton, chosen: list[Block], steer: bool = False) -> None:
        sk.blocks = []
        on_path = {b.name for b in chosen}
        cov = self.coverage
        # What coverage lacks, once per attempt (it changes only with feedback, between attempts).
        new_type = {op for op in self.corpus.op_types if not cov.seen("OTC", op, 1)}
        score = _Scorer(cov, {op for op in self.corpus.op_types if cov.size("SPC", op) < cov.n_maxspc})
        avoid = {b.name: r for b in self.corpus.blocks if steer and (r := max(map(self.known.op_risk, b.ops))) > 0}
        # Operators whose shape and parameter vectors are still few: coverage outweighs steering.
        young = {op for op in self.corpus.op_types if cov.size("SPC", op) < YOUNG_SPC}
        for j in range(sk.n):
            d_in, d_out = max(1, len(sk.preds(j))), sk.out_degree(j)
            # An operator none of whose recorded instances works alone is not placed (search.probe).
            cands = [b for b in self.corpus.candidates(d_in, d_out) if not any(map(self.known.excluded, b.ops))] \
                or self.corpus.candidates(d_in, d_out)
            if not cands:
                raise GenError(f"no block takes in-degree {d_in} and out-degree {d_out}")
            tails = [self.corpus.block(sk.blocks[p]).tail for p in sk.preds(j)]
            if self.learned is not None:
                placed = [self.corpus.block(b) for b in sk.blocks]
                scores = self.learned.scores(placed, tails, d_in, d_out, cands)
                scores -= [_penalty(young, b, avoid.get(b.name, 0.0)) for b in cands]
                sk.blocks.append(cands[draw(scores, rng.random())].name)
                continue
            if self.mcts is None:
                sk.blocks.append(rng.choice(cands).name)
                continue
            fresh = new_type - set(sk.blocks)
            # The MCTS path breaks ties: coverage first, then the tree's choice; a block whose
            # operator fails on a settled known defect loses by KNOWN_PENALTY (search.known).
            scored = [(x + (0.5 if b.name in on_path else 0) - _penalty(young, b, avoid.get(b.name, 0.0)), b)
                      for x, b in zip(score.scores(cands, d_in, d_out, tails, fresh), cands)]
            best = max(s for s, _ in scored)
            top = [b for s, b in scored if s == best]
            sk.blocks.append(rng.choice(top).name)

    def _structural_gain(self, g: Graph, new: set[tuple[str, str, Any]]) -> float:
        """Coverage gain per block (``new``: g's new coverage items), in units of one SEC pair.

        A shape/parameter vector is worth n_t / n_maxspc of a pair in OLC, and
        only while the operator is under n_maxspc vectors.
        """
        cov = self.coverage
        spc = sum(1 for k, op, _ in new if k == "SPC" and cov.size("SPC", op) < cov.n_maxspc)
        rest = sum(1 for k, _, _ in new if k in ("OTC", "IDC", "ODC", "SEC"))
        return (rest + spc * cov.n_t / cov.n_maxspc) / max(1, len(g.block_nodes()))

    def _accumulate_graph_level(self, g: Graph) -> None:
        self._kept += 1
        for k, v in graph_level(g, self.corpus.op_types).items():
            old = self._graph_level.get(k, 0.0)
            self._graph_level[k] = old + (v - old) / self._kept


def _penalty(young: set[str], b: Block, risk: float) -> float:
    """What a block of settled risk ``risk`` loses: little while one of its operators has few
    shape and parameter vectors covered (``young``), else enough to lose to any block that fits."""
    return risk * KNOWN_PENALTY["young" if young.intersection(b.ops) else "known"]


class _Scorer:
    """New coverage each candidate block would bring at a node, for one attempt's assignment:
    types (``fresh``: not yet covered nor placed in this model), degrees, edges from its
    predecessors (``tails``: their exit operators), and, between equals, operators still
    under n_maxspc shape/parameter vectors (``open_spc``).  Every block of the corpus is
    scored at every node; coverage does not change within an attempt, so what depends on
    it alone is looked up once per degree pair or edge."""

    def __init__(self, cov: Coverage, open_spc: set[str]) -> None:
        self.cov, self.open_spc = cov, open_spc
        self._static: dict[tuple[int, int], list[tuple[int, float, str, tuple[str, ...]]]] = {}
        self._edges: dict[tuple[str, str], int] = {}

    def scores(self, cands: list[Block], d_in: int, d_out: int, tails: list[str], fresh: set[str]) -> list[float]:
        by_head: dict[str, int] = {}
        out = []
        for deg, spc, head, ops in self._per_block(cands, d_in, d_out):
            e = by_head.get(head)
            if e is None:
                e = by_head[head] = sum(self._edge(t, head) for t in tails)
            # Integers first, the shape/parameter share last: the sums the ties are drawn from.
            out.append(((2 * len(fresh.intersection(ops)) if fresh else 0) + deg + e) + spc)
        return out

    def _per_block(self, cands: list[Block], d_in: int, d_out: int) -> list[tuple[int, float, str, tuple[str, ...]]]:
        """Per candidate: its degree coverage (0-2), its share of open operators, head, ops."""
        static = self._static.get((d_in, d_out))
        if static is None:
            cov, static = self.cov, []
            for b in cands:
                # A subgraph's entry operators take one external input each.
                deg = (0 if cov.seen("IDC", b.head, 1 if b.is_subgraph else d_in) else 1) + \
                    (0 if cov.seen("ODC", b.tail, d_out) else 1)
                spc = 0.5 * sum(op in self.open_spc for op in b.ops) / len(b.ops)
                static.append((deg, spc, b.head, b.ops))
            self._static[d_in, d_out] = static
        return static

    def _edge(self, tail: str, head: str) -> int:
        e = self._edges.get((tail, head))
        if e is None:
            e = self._edges[tail, head] = 0 if self.cov.seen("SEC", tail, head) else 1
        return e


class GraphArms:
    """UCB1 over the graph model's settings (model, k in {2, 4, 6}).

    The paper draws k at random.  Which k pays depends on what is left to
    cover: high k makes the many-input, high-out-degree nodes that degree
    coverage needs; k = 2 makes chains of single-input nodes, the only places
    where most operator pairs (SEC) can occur.  What pays changes as coverage
    fills up, so old rewards are discounted by ``gamma`` per update.
    """

    def __init__(self, arms: list[tuple[str, int]], c: float = 0.1, gamma: float = 0.98) -> None:
        self.arms = arms
        self.c, self.gamma = c, gamma
        self.n = {a: 0.0 for a in arms}
        self.total = {a: 0.0 for a in arms}

    def pick(self, rng: random.Random) -> tuple[str, int]:
        untried = [a for a in self.arms if self.n[a] == 0.0]
        if untried:
            return untried[0]
        t = max(sum(self.n.values()), 1.0 + 1e-9)
        score = {a: self.total[a] / self.n[a] + self.c * math.sqrt(math.log(t) / self.n[a]) for a in self.arms}
        best = max(score.values())
        return rng.choice([a for a in self.arms if score[a] >= best - 1e-12])

    def update(self, model: str, k: int, reward: float) -> None:
        a = (model, k)
        if a not in self.n:
            return
        for b in self.arms:
            self.n[b] *= self.gamma
            self.total[b] *= self.gamma
        self.n[a] += 1
        self.total[a] += reward

    def to_json(self) -> list[dict[str, object]]:
        return [{"model": m, "k": k, "n": self.n[(m, k)], "total": self.total[(m, k)]} for m, k in self.arms]

    @staticmethod
    def mean(tables: list[list[dict[str, Any]]]) -> list[dict[str, object]] | None:
        """Shards' tables (``to_json``) as one: each arm's mean.  Arms discount their past, so
        they hold recent rewards, not totals: the mean is what a merged campaign learned."""
        if not tables:
            return None
        rows: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for t in tables:
            for r in t:
                rows.setdefault((r["model"], r["k"]), []).append(r)
        return [{"model": m, "k": k, "n": sum(r["n"] for r in rs) / len(rs),
                 "total": sum(r["total"] for r in rs) / len(rs)} for (m, k), rs in rows.items()]

    def load(self, rows: list[dict[str, Any]]) -> None:
        for r in rows:
            a = (r["model"], r["k"])
            if a in self.n:
                self.n[a], self.total[a] = r["n"], r["total"]


def model_operators(g: Graph, corpus: Corpus) -> set[str]:
    """The framework's operators a model holds: each node's, or every one its recorded
    instance puts in the model (a pattern's loop body and all)."""
    out: set[str] = set()
    for n in g.nodes:
        spec, k = corpus.specs.get(n.op), n.params.get("instance")
        if isinstance(spec, RecordedSpec) and isinstance(k, int) and 0 <= k < len(spec.instances):
            out.update(spec.instances[k].operators(n.op))
        elif isinstance(spec, Pattern):  # an exported form: the operators it writes out
            out.update(spec.operators(n.params, g.tensor_type(n.inputs[0])))
        else:
            out.add(n.op)
    return out
