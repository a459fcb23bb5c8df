"""Root causes: what a maintainer calls one defect, and the symptom class it shows.

A fingerprint describes one failing *case* (where it diverged, what the log said);
many fingerprints are variants of one defect.  A root cause is keyed by what is
left after minimisation and isolation:
  - the symptom class (``Symptom``: a wrong result, a NaN/Inf semantics difference,
    precision, a crash, ...), each with its own policy (``policy``);
  - the operator(s) blamed: the one that is wrong when re-run alone on the
    reference's own inputs, or, when every operator is right alone, the operators of
    the minimised model (a pattern, e.g. a fused view chain);
  - a detail: the NaN/Inf direction, the signal and native frames of a crash, the
    normalised check of a converter error, the salient parameters the minimiser
    could not simplify.
Structure (in-degree, ranks) is information in the bundle, never part of the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from collections.abc import Sequence
from typing import Any, Callable

from ..graph.ir import Graph, Node, Params
from ..records.enums import Policy, Symptom, Verdict
from ..records.summary import FailureRow, RootCauseRow
from ..records.keys import (  # noqa: F401 - SPECIAL_INPUT, same_class re-exported
    MEMORY_SIGNALS, SPECIAL_INPUT, Fingerprint, RootKey, same_class, signal_name)
from ..ops.domains import Choice
from ..ops.registry import registry_of
from ..ops.recorded import RecordedSpec
from ..ops.specs import Spec


_MISSING_OUTPUT = re.compile(r"Can't find output|returned (?:\d+|N) of (?:\d+|N) outputs|output missing")


def classify(status: str, stage: str, *, signal: int | None = None, message: str = "", log: str = "",
             kind: str = "", mismatch: str = "", loose_ok: bool = False, nondeterministic: bool = False) -> Symptom | None:
    """The symptom class of one judged result (None for a pass or a reference problem).

    ``kind`` is the fingerprint's kind (unsupported, check, signal, missing-output, ...);
    ``loose_ok``: every differing output is within the loose bound (oracle.precision_only)."""
    if status in ("DCF", "XPF", "XBF", "XTF"):
        if nondeterministic:
            return Symptom.NONDETERMINISTIC
        if mismatch in ("nan", "inf"):
            return Symptom.NAN_INF
        return Symptom.PRECISION if loose_ok and mismatch == "values" else Symptom.WRONG
    if status == "TIMEOUT" and stage in ("convert", "infer"):
        return Symptom.TIMEOUT
    if status not in ("MCF", "IF"):
        return None
    if signal:
        return Symptom.CRASH
    if kind == "unsupported":
        return Symptom.UNSUPPORTED
    if kind == "missing-output" or _MISSING_OUTPUT.search(message) or status == "MCF":
        # "0 of 1 outputs": the converter dropped or folded an output: a conversion defect.
        return Symptom.CONVERSION
    return Symptom.API


# The symptoms of a comparison with the reference: a second reference can overturn them.
REFERENCE_JUDGED = (Symptom.WRONG, Symptom.NAN_INF, Symptom.PRECISION)


def wants_second_reference(status: str, symptom: Symptom | None) -> bool:
    """Whether a result is worth a second reference: a wrong result against the reference
    (DCF).  Crashes and conversion errors need none; an XPF or XBF compares the engine with
    itself, and a nondeterministic output is the engine's whatever the reference says."""
    return status == "DCF" and symptom in REFERENCE_JUDGED


def with_second_reference(symptom: Symptom | None, disagree: bool) -> Symptom | None:
    """The symptom once a second reference has run on the failing outputs: where it disagrees
    with the first, the references are in question and the engine is not blamed."""
    return Symptom.REFERENCE if disagree else symptom


MAX_PATTERN = 4  # a minimised model with more operators than this names no pattern


def local_key(symptom: str, fp: Fingerprint, direction: str = "") -> tuple[str, str, str]:
    """What a single case says of its root cause before minimisation: the symptom, the operator
    it names, and the NaN/Inf direction or error code.  The minimiser keeps it fixed (no
    slippage to another defect) and the campaign groups fingerprints by it."""
    if symptom == Symptom.NAN_INF:
        return symptom, fp.op, direction
    if symptom in (Symptom.CRASH, Symptom.HEAP_DAMAGE):
        return symptom, "" if symptom == Symptom.HEAP_DAMAGE else fp.op, crash_class(fp.code)
    if symptom in (Symptom.WRONG, Symptom.PRECISION, Symptom.NONDETERMINISTIC):
        return symptom, fp.op, _shape(fp)
    return symptom, fp.op, fp.kind + ":" + fp.code


def in_pattern(symptom: str, fp: Fingerprint, small: Graph, node: str, direction: str = "") -> RootKey:
    """Every operator of the minimised model right alone: the defect shows at ``node``'s operator
    only after these producers (a fused chain, a layout one producer leaves): keyed by that
    operator, the pattern kept for the report."""
    # Adapters too: they run in the engine like any operator (a Pad before a Reshape can be the bug).
    ops = tuple(dict.fromkeys(n.op for n in small.nodes))
    # Glue (an adapter, a view) carries a block's value: the block names it, as in an unproven
    # blame, so a Pad after a FusedBatchNorm is the FusedBatchNorm's.
    producer = block_producer(small, node)
    sink = small.node(producer).op
    if symptom == Symptom.NAN_INF and moves_data((sink,), small, producer):
        # As in root_key: a NaN that vanishes where data only moves was read from the wrong place
        # (a Slice of Reshape(Concat) reading zeros): the pattern's wrong result, one defect.
        symptom = Symptom.WRONG
    # Not isolated: no operator and no chain of two or three was shown wrong alone, so the
    # operator named is where the difference surfaced, a guess a maintainer cannot act on (on
    # ONNX most such keys named a control operator): listed in a tracking issue, not filed.
    return RootKey(symptom, (sink,), direction if symptom == Symptom.NAN_INF else _shape(fp), False,
                   (*[o for o in ops if o != sink], sink))


def block_producer(g: Graph, node: str) -> str:
    """``node``, or for an adapter (the generator's glue: a Reshape, Slice or Pad fitting one
    block's output to the next one's input) or a view (a Reshape computes nothing) the block
    operator whose output it carries.  An unproven blame names what the model was built from,
    not what the difference passed through: exposing a FusedBatchNorm of a constant as an
    output makes it right, so its wrong value shows first at the Pad, Slice or Reshape after
    it (one key each)."""
    n = g.node(node)
    while _carrier(n) and n.inputs and n.inputs[0] not in g.inputs:
        n = g.node(n.inputs[0])
    return node if _carrier(n) else n.id


def _carrier(n: Node) -> bool:
    return n.role == "adapter" or n.op in VIEW_OPS


def pattern_ops(g: Graph) -> tuple[str, ...]:
    """The block operators of a (minimised) model, in topological order, each once."""
    return tuple(dict.fromkeys(n.op for n in g.block_nodes()))


def salient_params(g: Graph, node: str) -> str:
    """Choice parameters of the blamed node that the minimiser left at a value other than the
    simplest: the ones it could not change without losing the bug (a mode, a padding...).  A
    parameter that names the operator it lowers to (keyed_op) is in the key's operator already."""
    try:
        n = g.node(node)
    except KeyError:
        return ""
    skip = set(g.meta.get(UNPROVEN, ())) | {keyed_op(g, n)[1]}
    failing, right = g.meta.get(FAILING_VALUES) or {}, g.meta.get(RIGHT_VALUES) or {}
    # The values a defect shows with, in the domain's order: the same text from either of them.
    def in_order(k: str) -> list[Any]:
        return [x for x in choice_domain(g, node, k) if x in failing.get(k, ())]
    return ", ".join(_param_text(g, n.op, k, n.params[k], in_order(k), right.get(k, ()))
                     for k in simplest_choices(g, node) if k not in skip)


# Symptoms of a converter's code path, which a unit of operators shares (not NaN semantics,
# precision or support: those are each operator's own).
UNIT_SYMPTOMS = (Symptom.WRONG, Symptom.CONVERSION, Symptom.CRASH, Symptom.API,
                 Symptom.TIMEOUT)


def in_unit(key: RootKey, unit_of: Callable[[str, str], tuple[str, ...]]) -> RootKey:
    """``key`` named by the converter unit its one blamed operator is in (``unit_of(front end,
    operator)``, the engine's knowledge: EngineKnowledge.unit_of): MNN lowers ReduceL1, ReduceL2,
    ReduceLogSum, ReduceLogSumExp and ReduceSumSquare in one transform, and one of its defects
    was keyed four times, once per operator."""
    if len(key.ops) != 1 or key.pattern or key.symptom not in UNIT_SYMPTOMS:
        return key  # a pattern's key names where it shows, not a converter path
    unit = unit_of(key.frontend or "tf", key.ops[0])
    return replace(key, unit=unit) if unit else key


def spec_of(g: Graph, op: str) -> Spec | None:
    """The spec of operator ``op`` in g's front end (None for an operator it has none of)."""
    return registry_of(g).specs.get(op)


def keyed_op(g: Graph, n: Node) -> tuple[str, str]:
    """The operator a root cause names for node ``n``, and the parameter that chose it ("":
    none): the operator the engine converts (ops.specs.Spec.lowers_to)."""
    spec = spec_of(g, n.op)
    lowered = spec.lowers_to(n.params) if spec is not None else None
    return lowered if lowered else (n.op, "")


def _param_text(g: Graph, op: str, k: str, v: Any, failing: Sequence[Any] = (), right: Sequence[Any] = ()) -> str:
    """``k=v`` (``k=v or w`` where the defect shows with each of ``failing``); a recorded
    operator's instance as what sets it apart (ops.recorded): "instance=7" tells a maintainer
    nothing, "equation=ij,jk->ik, int32 input" does; with other instances as wrong, what they
    share and the ``right`` ones lack ("select_last_index=1")."""
    spec = spec_of(g, op)
    if k == "instance" and isinstance(spec, RecordedSpec) and isinstance(v, int) and 0 <= v < len(spec.instances):
        n = len(spec.instances)
        def known(xs: Sequence[Any]) -> list[int]:  # the indices a bundle's meta may name
            return [x for x in xs if isinstance(x, int) and 0 <= x < n]
        if len(known(failing)) > 1 and known(right):
            return spec.distinguishing(known(failing), known(right)) or f"{k}={v}"
        return spec.instances[v].describe() or f"{k}={v}"
    if len(failing) > 1:
        return f"{k}=" + " or ".join(str(x) for x in failing)
    return f"{k}={v}"


# Graph meta: the blamed node's parameters that no valid simpler value could be tried for
# (rerun.diagnose.needed_params): not shown to be needed, so not named in the key.
UNPROVEN = "unproven_params"
# Graph meta: for a parameter the defect needs, every value the node alone is as wrong with
# (rerun.diagnose.failing_values): the key names them all.
FAILING_VALUES = "failing_values"
# Graph meta: ... and the values it was right with (a recorded instance's key: what the failing
# ones share and these lack, ops.recorded.RecordedSpec.distinguishing).
RIGHT_VALUES = "right_values"


def choice_domain(g: Graph, node: str, k: str) -> tuple[Any, ...]:
    """The values node ``node``'s choice parameter ``k`` takes (() for another kind of parameter)."""
    spec = spec_of(g, g.node(node).op)
    dom = spec.domains.get(k) if spec is not None else None
    return tuple(dom.values) if isinstance(dom, Choice) else ()


def simplest_choices(g: Graph, node: str) -> Params:
    """Node ``node``'s choice parameters that are not at their simplest value: each one's
    simplest value (the first of its domain)."""
    return {k: others[0] for k, others in simpler_choices(g, node).items()}


def simpler_choices(g: Graph, node: str) -> dict[str, list[Any]]:
    """Node ``node``'s choice parameters that are not at their simplest value: the values before
    its own in its domain, simplest first (the simplest may not be valid with the others:
    TensorFlow takes no half-pixel centres with align_corners)."""
    n = g.node(node)
    spec = spec_of(g, n.op)
    if spec is None:
        return {}
    out = {}
    for k, dom in sorted(spec.domains.items()):
        if isinstance(dom, Choice) and k in n.params and n.params[k] != dom.values[0]:
            values = list(dom.values)
            out[k] = values[:values.index(n.params[k])] if n.params[k] in values else values[:1]
    return out


def root_key(symptom: str, fp: Fingerprint, small: Graph | None, blamed: str = "", isolated: bool = False,
             direction: str = "", minimized: bool = True) -> RootKey:
    """The key of a (minimised) failure.  ``blamed``: the node found wrong in isolation ("" when
    every operator was right alone: the key names the minimised model's operators); for an
    unminimised failure the case's own operator stands in.  The fingerprint's front end
    carries over."""
    key = _root_key(symptom, fp, small, blamed, isolated, direction, minimized)
    return replace(key, frontend=fp.frontend)


def _root_key(symptom: str, fp: Fingerprint, small: Graph | None, blamed: str, isolated: bool,
              direction: str, minimized: bool) -> RootKey:
    if symptom in (Symptom.HEAP_DAMAGE,):
        return RootKey(symptom, (), signal_name(fp.code))
    ops: tuple[str, ...]
    if symptom == Symptom.NONDETERMINISTIC and not isolated and suspect(small):
        ops = (suspect(small),)  # not where the garbage showed: where it was read from
    elif blamed and small is not None:
        ops = (keyed_op(small, small.node(blamed))[0],)
    elif minimized and small is not None and len(pattern_ops(small)) <= MAX_PATTERN:
        ops = pattern_ops(small)
    else:  # not minimised far enough to name a pattern: the case's own operator stands in
        ops = (fp.op,) if fp.op else ()
    if symptom == Symptom.NAN_INF and moves_data(ops, small, blamed):
        # An operator that only moves elements cannot make or drop a NaN or an Inf: one that
        # appears or vanishes there was read from the wrong place, the operator's wrong result.
        symptom = Symptom.WRONG
    if symptom in (Symptom.WRONG, Symptom.PRECISION, Symptom.NONDETERMINISTIC):
        salient = salient_params(small, blamed) if blamed and minimized and small is not None else ""
        # A parameter value proven needed names the trigger: a reverse GRU's wrong Y shape and
        # its wrong Y_h values are one defect.  Only a key without one splits shape from values.
        return RootKey(symptom, ops, salient or _shape(fp), isolated)
    if symptom == Symptom.NAN_INF:
        return RootKey(symptom, ops, direction, isolated)
    if symptom == Symptom.CRASH:
        return RootKey(symptom, ops, crash_class(fp.code), isolated)
    if symptom == Symptom.TIMEOUT:
        return RootKey(symptom, ops, fp.stage, isolated)
    if symptom == Symptom.REFERENCE:
        return RootKey(symptom, ops, "", isolated)
    if symptom == Symptom.UNSUPPORTED:
        return RootKey(symptom, (fp.op,) if fp.op else ops, "", isolated)
    return RootKey(symptom, ops, error_detail(fp), isolated)


def error_detail(fp: Fingerprint) -> str:
    """What an error key keeps of the engine's words: its message, or "a model output is
    missing" in any of the ways MNN says it; a crash's class."""
    if fp.kind == "signal":  # the class alone: where it crashed differs from the model to one operator
        return crash_class(signal_name(fp.code))
    missing = fp.kind == "missing-output" or _MISSING_OUTPUT.search(fp.code)
    return ("a model output is missing" if missing else fp.code)[:120]


# Operators whose every output element is a copy of an input element (or a constant pad).
DATA_MOVEMENT = frozenset({
    # TensorFlow front end
    "Squeeze", "Reshape", "Expanddims", "Concat", "Slice", "Stridedslice", "Pad", "Tile", "Transpose", "GatherV2",
    "Spacetobatchnd", "Batchtospacend", "Resizenearestneighbor",
    # ONNX front end (Pad in any mode copies or pads with a constant)
    "Unsqueeze", "Flatten", "Expand", "Split", "Gather", "GatherElements", "GatherND", "DepthToSpace",
    "SpaceToDepth", "Identity"})


# Data movement that computes where each element comes from (a window, a stride, a block
# shuffle, an index): not views, which only reinterpret a shape, nor whole-input copies (Concat,
# Split), which read each input in order.
VIEW_OPS = frozenset({"Squeeze", "Reshape", "Expanddims", "Unsqueeze", "Flatten", "Identity"})
ADDRESSING = DATA_MOVEMENT - VIEW_OPS - {"Concat", "Split"}


def suspect(small: Graph | None) -> str:
    """The one operator of a minimised model that computes where to read or write (a gather,
    a pad, a space/batch reshuffle), when no operator fails alone: garbage read, heap damage
    done or a wrong result that only shows in the engine's fused plan come from an address
    computed wrong, so it is the suspect, whichever operator later read the garbage or tripped
    over the damage.  "" when there is none or several."""
    node = suspect_node(small)
    return small.node(node).op if small is not None and node else ""


def suspect_node(small: Graph | None) -> str:
    """The first node of ``suspect``'s operator ("" when there is no single one)."""
    if small is None:
        return ""
    nodes = [n for n in small.block_nodes() if n.op in ADDRESSING]
    return nodes[0].id if len({n.op for n in nodes}) == 1 else ""


def moves_data(ops: tuple[str, ...], small: Graph | None, blamed: str) -> bool:
    """Whether the key's one operator only moves data (Resize only in its nearest mode)."""
    if len(ops) != 1:
        return False
    if ops[0] == "Resize":  # TensorFlow's method, ONNX's mode
        node = small.node(blamed) if blamed and small is not None else None
        return node is not None and "nearest" in (node.params.get("method"), node.params.get("mode"))
    return ops[0] in DATA_MOVEMENT


def _shape(fp: Fingerprint) -> str:
    """A wrong shape and wrong values are different defects of one operator (a multiplier
    ignored, a padding misread)."""
    return "wrong shape" if fp.kind == "mismatch" and fp.code == "shape" else ""


def crash_class(code: str) -> str:
    """A crash's detail: memory errors (SIGSEGV, SIGBUS, and SIGABRT from glibc's heap checks)
    are one class, since one out-of-bounds write shows as any of them from run to run; other
    signals stay apart; native frames, when the log has them, are kept."""
    sig, _, frames = code.partition(" in ")
    cls = "memory error" if sig in MEMORY_SIGNALS else sig
    return cls + (f" in {frames}" if frames else "")


# --------------------------------------------------------------------------- merging

# The verdict of a root cause from its fingerprints': new when any of them is (models the base
# build passes fail now, confirmed), whatever else the defect holds; a known defect is no place
# for a regression to hide (bugs.triage.fingerprint_verdict).
VERDICT_ORDER = (Verdict.NEW, Verdict.PRE_EXISTING, Verdict.CHANGED, Verdict.FIXED, Verdict.FLAKY_NEW,
                 Verdict.FLAKY_FIXED, Verdict.UNCHECKED)


@dataclass
class RootCause:
    key: RootKey
    policy: Policy
    fingerprints: list[str]
    canonical: str  # the fingerprint whose bundle shows the root cause (the smallest model)
    count: int = 0
    platforms: list[str] = field(default_factory=list)
    verdict: Verdict | None = None
    minimized: bool = False
    # False: every diagnosis of it was cut short before it settled (see Diagnosed.settled); its
    # key names an operator nobody confirmed, so it is listed, not filed (it still counts for
    # the verdict: a regression stays red however far it was diagnosed).
    settled: bool = True

    def to_json(self) -> dict[str, object]:
        return {"key": self.key.id, "symptom": self.key.symptom, "policy": self.policy, "title": self.key.title,
                "ops": list(self.key.ops), "detail": self.key.detail, "fingerprints": list(self.fingerprints),
                "canonical": self.canonical, "count": self.count, "platforms": list(self.platforms),
                "verdict": self.verdict or "", "minimized": self.minimized, "isolated": self.key.isolated,
                "settled": self.settled}

    def to_row(self) -> RootCauseRow:
        """The summary's row of it (records.summary)."""
        k = self.key
        return RootCauseRow(k.id, k.symptom, tuple(self.fingerprints), self.canonical, self.policy, self.count,
                            k.title, k.ops, k.detail, tuple(self.platforms), self.verdict,
                            self.minimized, k.isolated,
                            self.settled)

    @property
    def filed(self) -> bool:
        """Whether a report files an issue for it (within its quota)."""
        return self.policy is Policy.REPORT and self.settled


@dataclass(frozen=True)
class Diagnosed:
    """A fingerprint's key from its minimised model, and that model's size."""

    key: RootKey
    size: int
    # The minimiser finished (the model is 1-minimal) or the blame was confirmed in isolation.
    # Neither: the time ran out on a large model, and its key is the operator where the
    # difference showed, as unproven as before diagnosis (a Realdiv after a wrong BatchToSpaceND).
    settled: bool = True


@dataclass(frozen=True)
class Sighting:
    """What assemble needs of one fingerprint: the summary's row of it (count, platforms,
    symptom, verdict), its local key (symptom, operator, direction) and the fingerprint."""

    row: FailureRow
    local: tuple[str, str, str]
    fingerprint: Fingerprint

    @property
    def key(self) -> str:
        return self.row.key


def assemble(failures: list[Sighting], diagnosed: dict[str, Diagnosed], policy: Callable[[str], Policy]) -> list[RootCause]:
    """Merge the summary's failures into root causes.  A fingerprint not diagnosed in time
    joins a diagnosed one with the same local key (symptom, operator, direction); failing
    that, its own operator keys it."""
    owners = _crashers(diagnosed)
    diagnosed = {fid: replace(d, key=_owned(d.key, owners)) for fid, d in diagnosed.items()}
    by_local: dict[tuple[str, ...], RootKey] = {}
    for f in sorted(failures, key=lambda f: diagnosed[f.key].size if f.key in diagnosed else 1 << 30):
        # Only a key of the same symptom is passed on: a variant diagnosed as a tie or as heap
        # damage says nothing of an undiagnosed one (which may be the real defect).
        if f.key in diagnosed and diagnosed[f.key].key.symptom == f.local[0]:
            by_local.setdefault(f.local, diagnosed[f.key].key)
    causes: dict[str, RootCause] = {}
    for f in failures:
        d = diagnosed.get(f.key)
        key = d.key if d else by_local.get(f.local) or root_key(
            f.row.symptom, f.fingerprint, None, minimized=False, direction=f.local[2])
        rc = causes.setdefault(key.id, RootCause(key, policy(key.symptom), [], f.key))
        rc.fingerprints.append(f.key)
        rc.count += f.row.count
        rc.platforms = sorted(set(rc.platforms) | set(f.row.platforms))
        rc.verdict = _worse(rc.verdict, f.row.verdict)
        if d and (not rc.minimized or d.size < diagnosed[rc.canonical].size):
            # The smallest model's key names it (one id can hold two symptoms: nondeterministic
            # and wrong-result; the title is the one the canonical bundle shows).
            rc.canonical, rc.minimized, rc.key = f.key, True, d.key
    merged = list(causes.values())
    # A plain key joins its conditioned one after the chains joined it (_merge_into_members hosts
    # them on plain keys only).
    for merge in (_merge_covered, _merge_into_members, _merge_plain, _merge_region_chains, _merge_chain_heads):
        merged = merge(merged, diagnosed)
    for rc in merged:
        rc.settled = not rc.minimized or any(diagnosed[f].settled for f in rc.fingerprints if f in diagnosed)
    return sorted(merged, key=lambda rc: (-rc.count, rc.key.id))


def _merge_covered(causes: list[RootCause], diagnosed: dict[str, Diagnosed]) -> list[RootCause]:
    """Root causes of one operator whose condition a broader one's covers, merged into it.
    The values and parameters a diagnosis finds failing depend on its model: one Conv keyed
    "auto_pad=SAME_LOWER" and another "auto_pad=SAME_UPPER or SAME_LOWER" are one defect (s3o), and
    so are LSTM "input_forget=True" and "init=True, input_forget=True" (onnx 606)."""
    kept: list[RootCause] = []
    for rc in sorted(causes, key=lambda rc: (_breadth(rc.key), rc.key.id)):  # broadest first
        hosts = [k for k in kept if _covers(k.key, rc.key)]
        if len(hosts) == 1:
            _absorb(hosts[0], rc, diagnosed)
        else:  # none; or two ("keepdims=0" and "select_last_index=1"): it may show either defect
            kept.append(rc)
    return kept


def _merge_plain(causes: list[RootCause], diagnosed: dict[str, Diagnosed]) -> list[RootCause]:
    """A key with no condition (its model's sweep found none that makes it pass), merged into the
    one conditioned key left of its operator: seed 919 keyed TopK beside "TopK (largest=False)"
    and DequantizeLinear beside "DequantizeLinear (int8 input)", each one defect.  With two
    conditioned keys left ("Resize (mode=nearest)", "Resize (mode=cubic)") it could be either
    defect and stays apart; the conditioned key names the defect."""
    kept: list[RootCause] = []
    for rc in causes:
        hosts = [] if rc.key.detail else [h for h in causes if _param_values(h.key.detail) is not None
                                          and _same_place(h.key, rc.key)]
        if len(hosts) == 1:
            _absorb(hosts[0], rc, diagnosed)
        else:
            kept.append(rc)
    return kept


def _absorb(host: RootCause, rc: RootCause, diagnosed: dict[str, Diagnosed]) -> None:
    """``rc``'s fingerprints and counts join ``host``, whose key names the defect."""
    host.fingerprints += rc.fingerprints
    host.count += rc.count
    host.platforms = sorted(set(host.platforms) | set(rc.platforms))
    host.verdict = _worse(host.verdict, rc.verdict)
    if rc.minimized and (not host.minimized or diagnosed[rc.canonical].size < diagnosed[host.canonical].size):
        host.canonical, host.minimized = rc.canonical, True  # the smallest model shows it; the host's key names it


def _merge_into_members(causes: list[RootCause], diagnosed: dict[str, Diagnosed]) -> list[RootCause]:
    """Keys that name no operator of their own, merged into the one operator this run showed
    failing alone the same way, with no parameter condition:

    - a chain shown wrong (each operator right alone) holding that operator and one that computes:
      MNN's BatchToSpaceND with crops reads from the wrong places, and which consumer exposes it
      depends on the layout, not on another defect (tfa37: "Pad -> Batchtospacend -> Deconv2d",
      tfa41: "Batchtospacend -> Depthwise", beside "Batchtospacend").  A chain that only moves
      data is a region MNN's geometry merges, a defect of the merge: a Concat fed by a Reshape of
      a 1-D Pad loses an element where the Pad alone is right (s3o; ONNX catalogue);
    - an error no operator gives alone with the operator's very message: the converter drops an
      output it folds away, an identity Cast alone or a Conv2d -> Reshape (tfa37).
    Two such operators: no proof which, the key stays."""
    singles = {_single(rc.key): rc for rc in causes
               if rc.key.isolated and len(rc.key.ops) == 1 and _param_values(rc.key.detail) is None}
    kept: list[RootCause] = []
    for rc in causes:
        host = _member_host(rc.key, singles)
        if host is None:
            kept.append(rc)
        else:
            _absorb(host, rc, diagnosed)
    return kept


def _merge_region_chains(causes: list[RootCause], diagnosed: dict[str, Diagnosed]) -> list[RootCause]:
    """Chains shown wrong that only move data through a view (a Reshape): one defect, MNN's
    merge of their regions into one copy that loses one, whichever chain shows it (every run:
    "Pad -> Reshape -> Concat" beside "Concat -> Reshape -> Slice", on TensorFlow and ONNX
    models alike).  The largest names it; a chain without a view (BatchToSpaceND -> Concat) is
    not a merge of views and stays apart."""
    return _merge_chains_by(causes, diagnosed, lambda k: "region" if _moves_only(k.ops)
                            and any(op in VIEW_OPS for op in k.ops) else None)


def _moves_only(ops: tuple[str, ...]) -> bool:
    return all(op in DATA_MOVEMENT for op in ops)


def _merge_chain_heads(causes: list[RootCause], diagnosed: dict[str, Diagnosed]) -> list[RootCause]:
    """Chains of three or more shown wrong that differ only in their last operator: one defect of
    the head, which its consumer only exposes.  A FusedBatchNorm of a Fill is skipped (its
    output right only when it is a model output): seed 59 keyed "Fill -> Fusedbatchnorm ->"
    Reshape, Resizebilinear and Fusedbatchnorm apart.  The largest names it."""
    return _merge_chains_by(causes, diagnosed, lambda k: k.ops[:-1] if len(k.ops) >= 3 else None)


def _merge_chains_by(causes: list[RootCause], diagnosed: dict[str, Diagnosed],
                     group: Callable[[RootKey], object | None]) -> list[RootCause]:
    """Isolated chains of one symptom class, detail and front end that ``group`` puts together
    (None: none), merged into the largest."""
    kept: list[RootCause] = []
    hosts: dict[tuple[object, ...], RootCause] = {}
    for rc in sorted(causes, key=lambda rc: (-rc.count, rc.key.id)):
        k = rc.key
        g = group(k) if k.isolated and len(k.ops) > 1 else None
        where = (g, same_class(k.symptom), k.detail, k.frontend)
        if g is not None and where in hosts:
            _absorb(hosts[where], rc, diagnosed)
            continue
        if g is not None:
            hosts[where] = rc
        kept.append(rc)
    return kept


def _single(k: RootKey, op: str = "") -> tuple[str, str, str, str]:
    return same_class(k.symptom), k.detail, k.frontend, op or k.ops[0]


def _member_host(k: RootKey, singles: dict[tuple[str, str, str, str], RootCause]) -> RootCause | None:
    if k.isolated and len(k.ops) > 1 and not _moves_only(k.ops):
        found = [h for h in (singles.get(_single(k, op)) for op in k.ops) if h is not None]
    elif not k.ops and k.symptom in _ERRORS:
        found = [h for s, h in singles.items() if s[:3] == _single(k, "-")[:3]]
    else:
        return None
    hosts = {h.key.id: h for h in found}  # one operator twice in a chain is one host
    return found[0] if len(hosts) == 1 else None


# Errors a message identifies: a pattern of them with an operator's message is that operator's.
_ERRORS = (Symptom.CONVERSION, Symptom.API)


def _param_values(detail: str) -> dict[str, frozenset[str]] | None:
    """A key's detail as parameter -> the values it fails with ("auto_pad=SAME_UPPER or
    SAME_LOWER"; "int64 input" as input=int64); None for any other detail (a shape, a direction)."""
    out = {}
    for part in detail.split(", ") if detail else ():
        k, eq, v = part.partition("=")
        typed = re.fullmatch(r"([a-z]+[0-9]*) input", part)  # a recorded instance's input type (ops.recorded)
        if typed:
            k, eq, v = "input", "=", typed.group(1)
        if not eq or not k.isidentifier():
            return None
        out[k] = frozenset(v.split(" or "))
    return out or None


def _breadth(key: RootKey) -> tuple[int, int]:
    """How broad a key's condition is, broadest first: fewest parameters named, then most values."""
    params = _param_values(key.detail) or {}
    return len(params), -sum(len(v) for v in params.values())


def _covers(a: RootKey, b: RootKey) -> bool:
    """Whether key ``a`` names the same operator (or converter unit) as ``b`` with a broader
    condition: every parameter ``a`` names, ``b`` names too, with values among ``a``'s.  Every
    case of ``b`` is then a case of ``a``: ArgMin keyed "select_last_index=1" and again
    "axis=1, keepdims=0, select_last_index=1" (its model's other attributes happened to matter to
    the sweep) are one defect, as "auto_pad=SAME_LOWER" is one with "auto_pad=SAME_UPPER or SAME_LOWER"."""
    if not _same_place(a, b):
        return False
    pa, pb = _param_values(a.detail), _param_values(b.detail)
    return pa is not None and pb is not None and pa != pb and all(k in pb and pa[k] >= pb[k] for k in pa)


def _same_place(a: RootKey, b: RootKey) -> bool:
    """Whether two keys name one symptom of one operator (or converter unit), alike isolated."""
    return (a.symptom, a.unit or a.ops, a.isolated, a.pattern, a.frontend) == \
        (b.symptom, b.unit or b.ops, b.isolated, b.pattern, b.frontend)


def _crashers(diagnosed: dict[str, Diagnosed]) -> dict[tuple[str, str], RootKey]:
    """(crash class, operator) -> the key of an operator this run showed crashing alone so or,
    failing that, saw crashing so on fresh workers (a heap overflow rarely kills alone: whether
    it does depends on the heap's layout; tfa37 and tfa41 both keyed "memory error with
    Batchtospacend" unisolated beside damage done by a Batchtospacend)."""
    crashes = [d.key for d in diagnosed.values() if d.key.symptom == Symptom.CRASH and len(d.key.ops) == 1]
    out: dict[tuple[str, str], RootKey] = {}
    for k in sorted(crashes, key=lambda k: (not k.isolated, k.id)):  # shown alone first
        out.setdefault((k.detail, k.ops[0]), k)
    return out


def _owned(key: RootKey, owners: dict[tuple[str, str], RootKey]) -> RootKey:
    """A crash no operator gives alone (damage done earlier in the model) is the crash of the one
    operator of its model this run showed crashing alone the same way: one out-of-bounds write
    kills at once in one model and later in another.  Two such operators: no proof which."""
    if key.symptom != Symptom.CRASH or key.ops:
        return key
    hits = {owners[(key.detail, op)] for op in key.pattern if (key.detail, op) in owners}
    return hits.pop() if len(hits) == 1 else key


def _worse(a: Verdict | None, b: Verdict | None) -> Verdict | None:
    if a is None or b is None:
        return a or b
    return a if VERDICT_ORDER.index(a) <= VERDICT_ORDER.index(b) else b
