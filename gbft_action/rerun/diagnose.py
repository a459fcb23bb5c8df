"""From a fingerprint to its root cause, on a live lane: minimise, replay, blame in isolation.

``diagnose`` minimises a bundle (keeping its symptom, operator and direction: no
slippage), runs the minimised model again to get TensorFlow's value of every node,
and then re-runs the failing operator alone, in the reference and the engine, on
those values (``blame``).  Wrong alone: the operator is blamed, with only the choice
parameters it is wrong with (``needed_params``: each one put back to its simplest value
and run alone again).  Right alone: its nearest producers are tried the same way; if
every one is right alone (and exact: no tie, no approximation to amplify) the defect
lives in a pattern: the smallest chain of two or three of them that is wrong on its own
(``failing_window``) is the key, else the key names the minimised model's operators.  A crash is
replayed on fresh workers first: one that does not come back was heap damage left by
earlier models, not a defect of this model.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from ..graph.ir import Graph, Node
from ..ops.domains import FloatRange
from ..ops.recorded import RecordedSpec
from ..ops.registry import registry_of
from ..oracle import DISCONTINUOUS
from ..pipeline import CaseResult, Lane
from ..bugs.bundle import BugBook
from ..records.bundle import BundleMeta
from ..records.keys import Fingerprint
from ..records.summary import Diagnosis
from .replay import bug_platforms, load_bundle, minimize_bug, needs_base, run_graph, showing
from ..bugs.rootcause import (block_producer, crash_class, error_detail, in_pattern, local_key,
                        FAILING_VALUES, RIGHT_VALUES, UNPROVEN, choice_domain, in_unit, root_key, simpler_choices, spec_of,
                        suspect, suspect_node)
from ..records import SPECIAL_INPUT, RootKey, Status, Symptom, same_class

MAX_CANDIDATES = 12  # the failing node and its producers, nearest first, tried alone
MAX_UNLOCALISED = 12  # without a localised node: every node, in topological order
MAX_DOWNSTREAM = 6  # then the nodes the localised one feeds, nearest first (a probe artefact)
REPLAY_S = 5.0  # the fresh replay of the minimised model gets at least this (an aborted one says nothing)
# Keying gets at least this after the minimiser, whatever the share: a key from blame in
# isolation merges variants, a minimised model without it is keyed by where the bug showed
# (a dozen keys for one BatchToSpaceND defect, each named after a downstream operator).
KEY_MIN_S = 4.0
DCF_LIKE = (Status.DCF, Status.XPF, Status.XBF, Status.XTF)


@dataclass
class Blame:
    node: str = ""  # wrong alone; "" when every candidate was right alone
    symptom: str = ""  # the symptom of the operator alone (more precise than in the model)
    direction: str = ""
    special_inputs: bool = False  # the blamed node's inputs hold NaN or Inf
    tried: list[str] = field(default_factory=list)
    # A candidate whose run alone said nothing (cut short, rejected by the converter, a bool
    # input the binding cannot take) or a walk cut by the deadline: "right alone" is unproven.
    inconclusive: bool = False
    # How the blamed node alone differs (oracle.mismatch_kind: shape, values...): the case's
    # own mismatch was at its output, maybe on another branch.
    mismatch: str = ""
    # The largest relative error of a candidate that was right alone: above float32 rounding it
    # is an approximation (a fast exp, a reordered sum) that the model then amplified.
    max_error: float = 0.0
    # The difference vanished with the intermediates exposed (localisation found no node): the
    # walk went over every node, not over the failing node's producers.
    unlocalised: bool = False
    # Every operator right alone: the smallest chain of them wrong on its own (node ids), if any.
    window: list[str] = field(default_factory=list)


def single_node(g: Graph, node_id: str) -> tuple[Graph, dict[str, str]]:
    """Node ``node_id`` alone: each distinct input tensor becomes a graph input (in0, in1, ...).
    Same id, parameters and seed: its constants (weights) are drawn exactly as in the model.
    Returns the graph and, per new input, the tensor of g it stands for."""
    return sub_graph(g, [node_id])


def sub_graph(g: Graph, ids: list[str]) -> tuple[Graph, dict[str, str]]:
    """Nodes ``ids`` of g (in g's order) alone, the last one's tensor the output: each distinct
    tensor they read from outside becomes a graph input (in0, in1, ...), as in single_node."""
    keep = [n for n in g.nodes if n.id in set(ids)]
    inside = {n.id for n in keep}
    sources = list(dict.fromkeys(x for n in keep for x in n.inputs if x not in inside))
    names = {src: f"in{i}" for i, src in enumerate(sources)}
    nodes = [Node(n.id, n.op, [names.get(x, x) for x in n.inputs], dict(n.params), n.out, n.block or n.op, "block",
                  n.gnode) for n in keep]
    meta: dict[str, object] = {"isolated": ids[0] if len(ids) == 1 else list(ids), "blocks": [n.op for n in keep]}
    meta.update(registry_of(g).meta())  # an ONNX node stays an ONNX node of its opset
    g1 = Graph({names[x]: g.tensor_type(x) for x in sources}, nodes, [keep[-1].id], g.seed, meta, values=g.values)
    return g1, {names[x]: x for x in sources}


MAX_WINDOW = 3  # operators in the largest chain tried on its own when each is right alone


def chains(g: Graph, size: int) -> list[list[str]]:
    """Every chain of ``size`` nodes of g, each feeding the next, ordered by its last node."""
    return [c for n in g.nodes for c in _ending(g, n.id, size)]


def _ending(g: Graph, node: str, size: int) -> list[list[str]]:
    if size == 1:
        return [[node]]
    producers = dict.fromkeys(x for x in g.node(node).inputs if x not in g.inputs)
    return [[*c, node] for p in producers for c in _ending(g, p, size - 1)]


def failing_window(lane: Lane, res: CaseResult, where: list[str] | None, until: float) -> list[str]:
    """The smallest chain of res's operators (two, then three) that gives wrong results on its
    own, fed the reference's values of its inputs; [] when none does.  Each operator was right
    alone: the defect lives in how the engine joins some of them (a Pad after a Reshape), and
    the key names that chain, wherever in the model the difference then showed (a pattern's
    keys were named after a dozen different sinks)."""
    values = lane.reference_values(res, until - time.monotonic())
    if values is None:
        return []
    for size in range(2, MAX_WINDOW + 1):
        for chain in chains(res.graph, size):
            if time.monotonic() > until:
                return []
            iso = run_alone(lane, res.graph, chain, values, where, until)
            if iso is not None and any(r.status in DCF_LIKE and r.symptom == Symptom.WRONG
                                       for r in iso.per_platform()):
                return chain
    return []


def candidates(g: Graph, node: str, limit: int = MAX_CANDIDATES) -> list[str]:
    """The failing node, then its producers nearest first (breadth-first over inputs)."""
    out: list[str] = []
    queue = [node]
    while queue and len(out) < limit:
        x = queue.pop(0)
        if x in out or x in g.inputs:
            continue
        out.append(x)
        queue.extend(g.node(x).inputs)
    return out


def downstream(g: Graph, node: str, limit: int = MAX_DOWNSTREAM) -> list[str]:
    """The nodes ``node`` feeds, nearest first (breadth-first over consumers), tried after its
    producers.  The probe reads intermediates of one converted model, and a converter that
    fuses a view into the next operator, or lets it share that operator's buffer, shows the
    view "diverging first" with its successor's values: MNN's Tanh turns NaN into 1, yet a
    Reshape two nodes before it was localised, right alone like its producers, and 146 cases
    were keyed "Reshape: wrong results after ... Tanh ... (each right alone)"."""
    users = g.consumers()
    out: list[str] = []
    queue = list(users.get(node, []))
    while queue and len(out) < limit:
        x = queue.pop(0)
        if x not in out:
            out.append(x)
            queue.extend(users.get(x, []))
    return out


def _suspects(res: CaseResult, node: str) -> list[str]:
    """The localised node and its producers, what it feeds, then each failing output and its
    producers: a probe can point at a node on another branch than the one that is wrong (a
    GatherElements output wrong, and a Tanh on a branch beside it "diverging first")."""
    g = res.graph
    failing = [d["name"] for d in res.diffs if not d.get("ok", True) and d.get("name") in g.outputs]
    order = [*candidates(g, node), *downstream(g, node), *(c for o in failing for c in candidates(g, o, MAX_DOWNSTREAM))]
    return list(dict.fromkeys(order))


def blame(lane: Lane, res: CaseResult, node: str, where: list[str] | None, until: float) -> Blame:
    """Re-run ``node`` (then its producers, then what it feeds) alone on the reference's values
    of its inputs.  When
    localisation could not say where the outputs first differ (the probe crashed, or the
    difference vanished with intermediates exposed), ``node`` is only the failing output:
    every node is tried, first to last."""
    b = Blame()
    values = lane.reference_values(res, until - time.monotonic())
    if values is None:
        return b
    order = _suspects(res, node) if res.localised else [n.id for n in res.graph.nodes][:MAX_UNLOCALISED]
    for c in order:
        if time.monotonic() > until:
            b.inconclusive = True
            break
        iso = run_alone(lane, res.graph, c, values, where, until)
        if iso is None:
            b.inconclusive = True
            continue
        b.tried.append(c)
        hit = next((r for r in iso.per_platform() if r.status in DCF_LIKE), None)
        if hit is not None:
            b.node, b.symptom, b.direction, b.mismatch = c, hit.symptom or "", hit.direction, hit.mismatch
            b.special_inputs = any(_special(values[src]) for src in res.graph.node(c).inputs if src in values)
            return b
        if iso.aborted or any(r.status != Status.DCP for r in iso.per_platform()):
            b.inconclusive = True
        b.max_error = max([b.max_error, *(relative_error(r) for r in iso.per_platform())])
    return b


def needed_params(lane: Lane, res: CaseResult, node: str, symptom: str, where: list[str] | None,
                  until: float) -> Graph:
    """res's model with each choice parameter of ``node`` (found wrong alone) put back to its
    simplest valid value where the node, run alone so, is still wrong (``symptom``): the key
    then names only the parameters the defect needs.  The minimiser leaves others where it had
    no time or no luck (one Less defect was keyed four ways, by the form of its second operand)."""
    g = res.graph
    values = lane.reference_values(res, until - time.monotonic())
    if values is None:
        return g
    unproven, failing, right = [], {}, {}
    for k, simpler in simpler_choices(g, node).items():
        said = None
        for v in simpler:
            if time.monotonic() > until:
                return g
            said, trial = still_wrong_redrawn(lane, _with_param(g, node, k, v), node, values, where, until, symptom)
            if said is not None:  # the simplest value the reference takes decides
                g = trial if said else g  # as wrong without it: the defect does not hinge on k
                break
        if said is None:  # no simpler value is valid with the others (align_corners, half-pixel)
            unproven.append(k)
        elif not said:  # needed: which of its other values are as wrong names the defect
            failing[k], right[k] = failing_values(lane, g, node, k, values, where, until, symptom, known_right=v)
    swept = [k for k, x in failing.items() if len(x) > 1]
    meta = {**g.meta, **({UNPROVEN: unproven} if unproven else {}),
            **({FAILING_VALUES: {k: failing[k] for k in swept}, RIGHT_VALUES: {k: right[k] for k in swept}}
               if swept else {})}
    return replace(g, meta=meta) if meta != g.meta else g


# A parameter with more values than this is not swept (a recorded operator's instance index).
MAX_SWEPT = 8


def failing_values(lane: Lane, g: Graph, node: str, k: str, values: Mapping[str, np.ndarray], where: list[str] | None,
                   until: float, symptom: str, known_right: Any) -> tuple[list[Any], list[Any]]:
    """The values of ``node``'s parameter ``k`` (needed by its defect) with which the node alone
    is as wrong, its own first, then in its domain's order: "nearest_mode=ceil" and
    "nearest_mode=round_prefer_ceil" are one defect (MNN reads both as floor) when each fails
    with the other's value too, and the key names both.  And those it is right with,
    ``known_right`` first.  A recorded operator's instance is swept over its nearest
    neighbours (RecordedSpec.neighbours): what the failing ones share and the right ones lack
    names the defect (one ArgMin defect was keyed four ways, by every attribute of each)."""
    own = g.node(node).params[k]
    spec = spec_of(g, g.node(node).op)
    if k == "instance" and isinstance(spec, RecordedSpec) and isinstance(own, int):
        domain = sorted(spec.neighbours(own, MAX_SWEPT))
    else:
        domain = list(choice_domain(g, node, k))
        if len(domain) > MAX_SWEPT:
            return [own], [known_right]
    wrong, right = [own], [known_right]
    for v in domain:
        if v in (own, known_right) or time.monotonic() > until:
            continue
        said = still_wrong_redrawn(lane, _with_param(g, node, k, v), node, values, where, until, symptom)[0]
        if said:
            wrong.append(v)
        elif said is False:
            right.append(v)
    return wrong, right


# Other draws of a trial's constants (its graph seed) before calling a parameter value right.
REDRAWS = 2


def still_wrong_redrawn(lane: Lane, trial: Graph, node: str, values: Mapping[str, np.ndarray], where: list[str] | None,
                        until: float, symptom: str) -> tuple[bool | None, Graph]:
    """Whether ``node`` alone in ``trial`` is still wrong (rerun.diagnose._still_wrong), and the
    trial that said so.  Right with one draw of its constants and real-valued parameters is
    tried with REDRAWS others: a value-dependent defect is not a parameter's when the simpler
    form only drew a positive constant (s3n keyed "Less (operand=scalar)" beside "Less"), or a
    constant-mode Pad padded with the 0 MNN writes (pad-batch keyed with and without mode=edge)."""
    said = _still_wrong(run_alone(lane, trial, node, values, where, until), symptom)
    for j in range(1, REDRAWS + 1):
        if said is not False or time.monotonic() > until:
            break
        again = _redrawn(trial, node, j)
        if _still_wrong(run_alone(lane, again, node, values, where, until), symptom):
            return True, again
    return said, trial


def _still_wrong(iso: CaseResult | None, symptom: str) -> bool | None:
    """Whether an operator run alone is still wrong in ``symptom``'s class (garbage and wrong
    values alike: True), or right (False).  None when the run says nothing about this defect:
    cut short, a model the reference rejects (a value not valid with the node's other
    parameters), or another failure (a converter that takes no exclude_outside=1)."""
    if iso is None or iso.aborted:
        return None
    runs = iso.per_platform()
    if any(r.status in DCF_LIKE and same_class(r.symptom or "") == same_class(symptom) for r in runs):
        return True
    return False if runs and all(r.status == Status.DCP for r in runs) else None


def _redrawn(g: Graph, node: str, j: int) -> Graph:
    """g with another draw (``j``) of its constants (the graph seed) and of ``node``'s real-valued
    parameters (a Pad's value, a LeakyRelu's alpha): nothing that changes a shape or a choice."""
    spec = spec_of(g, g.node(node).op)
    rng = random.Random(g.seed + j)
    for k, dom in sorted(spec.domains.items()) if spec is not None else ():
        if isinstance(dom, FloatRange) and k in g.node(node).params:
            g = _with_param(g, node, k, dom.draw(rng))
    return replace(g, seed=g.seed + j)


def _with_param(g: Graph, node: str, k: str, v: Any) -> Graph:
    nodes = [replace(n, params={**n.params, k: v}) if n.id == node else n for n in g.nodes]
    return Graph(dict(g.inputs), nodes, list(g.outputs), g.seed, dict(g.meta), values=g.values)


def relative_error(r: CaseResult) -> float:
    """max |actual - expected| / |expected| over the finite outputs of a passing run."""
    worst = 0.0
    for k, e in r.arrays.get("expected", {}).items():
        a = r.arrays.get("actual", {}).get(k)
        if a is None or np.asarray(e).dtype.kind != "f" or np.shape(a) != np.shape(e):
            continue
        e64, a64 = np.asarray(e, np.float64), np.asarray(a, np.float64)
        ok = np.isfinite(e64) & np.isfinite(a64) & (e64 != 0)
        if ok.any():
            worst = max(worst, float((np.abs(a64[ok] - e64[ok]) / np.abs(e64[ok])).max()))
    return worst


# Relative error float32 arithmetic itself makes in one operator (a few ulps); above it, an
# operator approximates.
ROUNDING = 1e-6


def diagnose(lane: Lane, book: BugBook, fid: str, time_limit: float, resume: bool = False) -> Diagnosis:
    """Minimise bundle ``fid`` (``resume``: on from its minimised model), then key it
    (bugs.rootcause); the key goes into its meta.json as "root_cause".  Returns the
    minimiser's stats with the key."""
    until = time.monotonic() + time_limit
    meta0, _, _ = load_bundle(book.bundle_dir(fid))
    stats = minimize_bug(lane, book, fid, max(1.0, 0.7 * time_limit), check_flaky=False, resume=resume)
    meta, _, small = load_bundle(book.bundle_dir(fid))
    assert small is not None
    key, alone = _key(lane, meta, small, max(until, time.monotonic() + KEY_MIN_S))
    key = replace(key, frontend=meta.fingerprint.frontend)  # keys made without root_key too
    key = in_unit(key, lane.knowledge.unit_of)
    book.set_root_cause(fid, key)
    if alone is not None:
        book.add_alone(fid, alone)
    return replace(stats, root_cause=key.id, symptom_was=_symptom(meta0),
                   wall=round(time.monotonic() - until + time_limit, 2))  # minimising and isolating


def _symptom(meta: BundleMeta) -> str:
    return meta.symptom.value if meta.symptom else ""


def _key(lane: Lane, meta: BundleMeta, small: Graph, until: float) -> tuple[RootKey, Graph | None]:
    """The root key of the minimised model ``small``, and the blamed operator alone when it
    shows the bug so (the model the repro then shows)."""
    symptom, fp = _symptom(meta), meta.fingerprint
    where = bug_platforms(lane, meta, cheapest=True)
    if symptom in ALONE:
        key, node = _key_alone(lane, symptom, fp, small, where, until)
    elif symptom in (Symptom.WRONG, Symptom.NAN_INF, Symptom.PRECISION,
                     Symptom.NONDETERMINISTIC):
        key, small, node = _key_wrong(lane, meta, small, where, until)
    else:
        return root_key(symptom, fp, small), None
    return key, (shown_alone(lane, small, node, key.symptom, where, until) if node and key.isolated else None)


def _key_wrong(lane: Lane, meta: BundleMeta, small: Graph, where: list[str] | None,
               until: float) -> tuple[RootKey, Graph, str]:
    """The key of a wrong value, the model it was made from (its blamed node's parameters put
    back to their simplest where the defect does not need them) and the node shown wrong alone
    ("" for none)."""
    symptom, fp, direction = _symptom(meta), meta.fingerprint, meta.direction
    # On fresh workers: heap damage left by the models before would move the first difference.
    res = run_graph(lane, small, max(REPLAY_S, until - time.monotonic()), fresh=True, platforms=where,
                    base=needs_base(meta.fingerprint))
    try:
        if res.aborted or "expected" not in res.arrays:  # the replay said nothing: keep the case's key
            return root_key(symptom, fp, small, direction=direction, minimized=False), small, ""
        hit = showing(res, local_key(symptom, fp, direction)) or next(
            (r for r in res.per_platform() if r.status in DCF_LIKE and r.op == fp.op), None)
        if hit is None:
            # The minimised model showed it on the used workers, not on fresh ones: it depends on
            # the heap state earlier models left (garbage read, damage done), like a crash that
            # does not come back; the operator where it showed is not the culprit.
            return RootKey(Symptom.HEAP_DAMAGE, (), "wrong results", False,
                           tuple(n.op for n in small.nodes)[:8]), small, ""
        if hit.node not in {n.id for n in small.nodes}:
            return root_key(symptom, fp, small, direction=direction, minimized=False), small, ""
        node = hit.node
        b = blame(lane, hit, node, where, until)
        if b.node:
            small = needed_params(lane, hit, b.node, b.symptom, where, until)
        elif _a_pattern(symptom, small, node, b):
            b.window = failing_window(lane, hit, where, until)
        if not hit.localised:
            # A right-alone walk over guessed nodes proves no tie; over every node of the model
            # it proves that no operator is wrong alone, nothing less.
            b.unlocalised = True
            b.inconclusive = b.inconclusive or set(b.tried) != {n.id for n in small.nodes}
    finally:
        if res.workdir is not None:
            shutil.rmtree(res.workdir, ignore_errors=True)
    return _from_blame(symptom, fp, small, node, b, direction), small, b.node


# Failures that are not wrong values: blamed on the first operator that fails alone the same way.
ALONE = (Symptom.CRASH, Symptom.CONVERSION, Symptom.API, Symptom.TIMEOUT)


def _key_alone(lane: Lane, symptom: str, fp: Fingerprint, small: Graph, where: list[str] | None,
               until: float) -> tuple[RootKey, str]:
    """A crash is attributed only if it comes back on fresh workers (every platform it was seen
    on): one that does not was heap damage left by earlier models.  Then each operator of the
    minimised model runs alone (fresh workers for a crash) on TensorFlow's values of its
    inputs: the first that fails the same way is blamed, not the one running when glibc
    noticed the damage; if none does, the key names the minimised model's operators."""
    res = run_graph(lane, small, max(REPLAY_S, until - time.monotonic()), fresh=True, platforms=where)
    try:
        if res.aborted:  # cut short: it says nothing about heap damage
            return root_key(symptom, fp, small), ""
        back = any(r.symptom == symptom for r in res.per_platform())
        if symptom == Symptom.CRASH and not back:
            return root_key(Symptom.HEAP_DAMAGE, fp, small), ""
        node = _first_failing_alone(lane, res, symptom, where, until, fp) if back else ""
    finally:
        if res.workdir is not None:
            shutil.rmtree(res.workdir, ignore_errors=True)
    pattern = tuple(n.op for n in small.nodes)[:8]
    if symptom == Symptom.CRASH and not node:
        # No operator crashes alone: the one running when it crashed only tripped over damage
        # (an out-of-bounds write earlier), keyed by the one operator that computes addresses,
        # if the model has one; else one root cause for these, the models listed in it.
        culprit = suspect(small)
        return RootKey(symptom, (culprit,) if culprit else (), crash_class(fp.code), False, pattern), ""
    if not node and len(small.block_nodes()) > 1:
        # No operator fails alone: a converter rewrite of the pattern (a fusion losing an output
        # name); keyed by what the engine said, the minimised patterns listed in the report.
        key = root_key(symptom, fp, small, blamed="", minimized=False)
        return RootKey(symptom, (), key.detail, False, pattern), ""
    return root_key(symptom, fp, small, blamed=node, isolated=bool(node)), node


def _first_failing_alone(lane: Lane, res: CaseResult, symptom: str, where: list[str] | None, until: float,
                         fp: Fingerprint | None = None) -> str:
    """The first node (topological order) that fails alone as the model did ("" for none): the
    same symptom and, given the model's fingerprint ``fp``, the same error (message, crash
    class).  A GRU whose converter drops an output alone is not the SoftmaxCrossEntropyLoss
    before it that MNN refuses ("only support N outputs"): all16 keyed that refusal by the GRU.
    Every node, until the deadline: a walk cut at twelve missed the LSTM, fourteenth in a
    minimised model, that crashes MNN's converter alone, and keyed its crash by a guess.  A node
    the same as one already run alone (operator, parameters, input types) is not run again."""
    if "inputs" not in res.arrays:
        return ""
    values = lane.reference_values(res, until - time.monotonic())
    if values is None:
        return ""
    g, tried = res.graph, set()
    for n in g.nodes:
        same = (n.op, json.dumps(n.params, sort_keys=True, default=str), tuple(g.tensor_type(x) for x in n.inputs))
        if same in tried:
            continue
        tried.add(same)
        if time.monotonic() > until:
            break
        iso = run_alone(lane, g, n.id, values, where, until, fresh=symptom == Symptom.CRASH)
        if iso is not None and any(_fails_so(r, symptom, fp) for r in iso.per_platform()):
            return n.id
    return ""


def _fails_so(r: CaseResult, symptom: str, fp: Fingerprint | None) -> bool:
    if r.symptom != symptom:
        return False
    if fp is None or r.fingerprint is None or symptom == Symptom.TIMEOUT:
        return True  # nothing more to compare (a timeout has no words)
    return error_detail(r.fingerprint) == error_detail(fp)


def shown_alone(lane: Lane, g: Graph, node: str, symptom: str, where: list[str] | None,
                until: float) -> Graph | None:
    """Node ``node`` of g alone, its inputs drawn from the model's seed as a repro draws them,
    when it shows ``symptom`` (its class) so on fresh workers: the model a repro shows, one
    operator where the minimiser stopped at thirty.  None when the model is that operator
    already, or the bug needs the values upstream operators made."""
    if len(g.nodes) <= 1 or until - time.monotonic() < 1.0:
        return None
    g1, _ = single_node(g, node)
    res = run_graph(lane, g1, until - time.monotonic(), fresh=True, platforms=where)
    if res.aborted:
        return None
    shows = _still_wrong(res, symptom) or any(r.symptom == symptom for r in res.per_platform())
    return g1 if shows else None


def run_alone(lane: Lane, g: Graph, node: str | list[str], values: Mapping[str, np.ndarray], where: list[str] | None,
              until: float, fresh: bool = False) -> CaseResult | None:
    """Node ``node`` of g (or the chain of nodes ``node``) run alone on ``values`` (the
    reference's, of g's tensors); None when the reference gave no value for one of its inputs."""
    g1, feeds = sub_graph(g, [node] if isinstance(node, str) else node)
    if any(src not in values for src in feeds.values()):
        return None
    return run_graph(lane, g1, max(1.0, until - time.monotonic()), fresh=fresh, platforms=where,
                     inputs={k: values[src] for k, src in feeds.items()})


def step_upstream(g: Graph, node: str) -> str:
    """The nearest node at or above ``node`` whose operator is a step function (oracle.DISCONTINUOUS),
    producers first, breadth first; "" for none."""
    seen, todo = set(), [node]
    while todo:
        x = todo.pop(0)
        if x in seen or x in g.inputs:
            continue
        seen.add(x)
        if g.node(x).op in DISCONTINUOUS:
            return x
        todo += g.node(x).inputs
    return ""


def _a_pattern(symptom: str, small: Graph, node: str, b: Blame) -> bool:
    """Whether isolation proved every operator right alone and exact (no tie at a discontinuous
    operator, no approximation to amplify): a wrong result of how the engine joins them."""
    # Not on special values (NaN semantics, not a join) nor through a step function (a tie:
    # the engine's in-tolerance input crossed a boundary inside the chain).
    return (symptom == Symptom.WRONG and bool(b.tried) and not b.inconclusive and b.max_error <= ROUNDING
            and small.values != "special" and not any(n.op in DISCONTINUOUS for n in small.nodes))


# Operators whose whole meaning is what they say of NaN or Inf: a wrong answer on special
# inputs is a wrong result there, not a NaN-semantics difference.
NAN_SEMANTICS = frozenset({"IsNaN", "IsInf"})


def _from_blame(symptom: str, fp: Fingerprint, small: Graph, node: str, b: Blame, direction: str) -> RootKey:
    if b.node:
        # The operator alone tells the class: a NaN made upstream and dropped here is nan-inf,
        # and so is a different answer for NaN/Inf inputs (a comparison's bool output).
        s, d = b.symptom or symptom, b.direction or direction
        if s in (Symptom.WRONG, Symptom.PRECISION) and b.special_inputs \
                and small.node(b.node).op not in NAN_SEMANTICS:
            s, d = Symptom.NAN_INF, SPECIAL_INPUT
        alone = replace(fp, code=b.mismatch) if b.mismatch and fp.kind == "mismatch" else fp
        return root_key(s, alone, small, blamed=b.node, isolated=True, direction=d)
    if b.window:  # the smallest chain wrong on its own is the defect, wherever it then showed
        return RootKey(symptom, tuple(small.node(x).op for x in b.window), "", True)
    if not b.tried or b.inconclusive:  # isolation proved nothing: the case's own operator stands in
        return root_key(symptom, fp, small, blamed=block_producer(small, node), direction=direction)
    if b.unlocalised:
        # Every operator right alone, and the model right with its intermediates exposed: the
        # engine's plan for the whole model is wrong (a fused layout), not an amplified
        # approximation (that would show exposed too) nor a tie (no node was localised).
        culprit = suspect_node(small)
        # Only one that feeds the failing operator: one further up is as likely an innocent
        # bystander of a pattern (a Tile before a FusedBatchNorm of a constant).
        if culprit in {block_producer(small, x) for x in small.node(node).inputs if x not in small.inputs}:
            return replace(root_key(symptom, fp, small, blamed=culprit, direction=direction),
                           pattern=tuple(dict.fromkeys(n.op for n in small.nodes)))
        return in_pattern(symptom, fp, small, node, direction)
    step = step_upstream(small, node)
    if step:
        # Every operator right alone on the reference's own inputs, and a step function at or
        # above the failing node: the engine's slightly different (in-tolerance) input crossed
        # its boundary (a comparison, a ceiling, an argmax), and what follows carried the jump
        # down: a tie, not a bug of the operator where it showed.
        return RootKey(Symptom.TIE, (small.node(step).op,), "", True)
    if symptom == Symptom.WRONG and b.max_error > ROUNDING:
        # Every operator is right alone but some approximate beyond float32 rounding: the model
        # amplified an approximation (cancellation after a fast exp): precision, not a defect of
        # the operator where it showed.
        return in_pattern(Symptom.PRECISION, fp, small, node)
    return in_pattern(symptom, fp, small, node, direction)


def _special(v: np.ndarray) -> bool:
    a = np.asarray(v)
    return a.dtype.kind == "f" and not bool(np.isfinite(a).all())
