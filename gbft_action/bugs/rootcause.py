"""Root causes: what a maintainer calls one defect, and the symptom class it shows.

A fingerprint describes one failing *case* (where it diverged, what the log said);
many fingerprints are variants of one defect.  A root cause is keyed by what is
left after minimisation and isolation:
  - the symptom class (``Symptom``: a wrong result, a NaN/Inf semantics difference,
    precision, a crash, ...), each with its own policy (``bugs.policy``);
  - the operator(s) blamed: the one that is wrong when re-run alone on the
    reference's own inputs, or, when every operator is right alone, the operators of
    the minimised model (a pattern, e.g. a fused view chain);
  - a detail: the NaN/Inf direction, the signal and native frames of a crash, the
    normalised check of a converter error, the salient parameters the minimiser
    could not simplify.
Structure (in-degree, ranks) is information in the bundle, never part of the key.

May import: bugs.fingerprint, graph, ops; nothing that runs an engine.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Any, Callable

from ..graph.ir import Graph, Node
from ..ops.domains import Choice
from ..ops.registry import registry
from ..ops.recorded import RecordedSpec


class Symptom(str, Enum):
    WRONG = "wrong-result"  # wrong on finite inputs with a finite reference
    NAN_INF = "nan-inf"  # NaN or Inf on one side only
    PRECISION = "precision"  # beyond the strict tolerance, within the loose one
    CRASH = "crash"  # a signal that reproduces in a fresh worker
    UNSUPPORTED = "unsupported"  # the converter says it does not support an operator
    CONVERSION = "conversion-error"  # the converter failed or built a wrong model (outputs missing)
    API = "api-error"  # the engine's binding raised
    TIMEOUT = "timeout"  # a stage hung
    NONDETERMINISTIC = "nondeterministic"  # outputs change between runs: uninitialised memory
    HEAP_DAMAGE = "heap-damage"  # a crash that does not reproduce fresh: damage left by earlier models
    TIE = "tie"  # differences explained by ties or undefined behaviour: not a bug
    # TensorFlow and ONNX Runtime disagree on the outputs the engine fails: the reference is in
    # question, not the engine (pipeline.Lane._cross_reference)
    REFERENCE = "reference-disagreement"

    def __str__(self) -> str:
        return self.value


_MISSING_OUTPUT = re.compile(r"Can't find output|returned (?:\d+|N) of (?:\d+|N) outputs|output missing")


def classify(status: str, stage: str, *, signal: int | None = None, message: str = "", log: str = "",
             kind: str = "", mismatch: str = "", loose_ok: bool = False, nondeterministic: bool = False) -> str:
    """The symptom class of one judged result ("" for a pass or a reference problem).

    ``kind`` is the fingerprint's kind (unsupported, check, signal, missing-output, ...);
    ``loose_ok``: every differing output is within the loose bound (oracle.precision_only)."""
    if status in ("DCF", "XPF", "XBF"):
        if nondeterministic:
            return Symptom.NONDETERMINISTIC.value
        if mismatch in ("nan", "inf"):
            return Symptom.NAN_INF.value
        return (Symptom.PRECISION if loose_ok and mismatch == "values" else Symptom.WRONG).value
    if status == "TIMEOUT" and stage in ("convert", "infer"):
        return Symptom.TIMEOUT.value
    if status not in ("MCF", "IF"):
        return ""
    if signal:
        return Symptom.CRASH.value
    if kind == "unsupported":
        return Symptom.UNSUPPORTED.value
    if kind == "missing-output" or _MISSING_OUTPUT.search(message) or status == "MCF":
        # "0 of 1 outputs": the converter dropped or folded an output: a conversion defect.
        return Symptom.CONVERSION.value
    return Symptom.API.value


# The symptoms of a comparison with the reference: a second reference can overturn them.
REFERENCE_JUDGED = (Symptom.WRONG.value, Symptom.NAN_INF.value, Symptom.PRECISION.value)


def wants_second_reference(status: str, symptom: str) -> bool:
    """Whether a result is worth a second reference: a wrong result against the reference
    (DCF).  Crashes and conversion errors need none; an XPF or XBF compares the engine with
    itself, and a nondeterministic output is the engine's whatever the reference says."""
    return status == "DCF" and symptom in REFERENCE_JUDGED


def with_second_reference(symptom: str, disagree: bool) -> str:
    """The symptom once a second reference has run on the failing outputs: where it disagrees
    with the first, the references are in question and the engine is not blamed."""
    return Symptom.REFERENCE.value if disagree else symptom


def same_class(symptom: str) -> str:
    """The symptom a root cause's id is made of.  Garbage read from uninitialised memory is how a
    wrong geometry (an out-of-bounds read) shows on some inputs: one defect with the same
    operator's deterministic wrong values (a Pad of the batch axis gives zeros in constant mode,
    garbage in edge mode)."""
    return Symptom.WRONG.value if symptom == Symptom.NONDETERMINISTIC.value else symptom


SPECIAL_INPUT = "special-input"  # wrong only for NaN/Inf inputs: no special value in either output
_DIRECTION = {
    SPECIAL_INPUT: "differs from the reference on NaN/Inf inputs",
    "NaN->finite": "maps NaN to a finite number", "Inf->finite": "gives a finite number where the result is infinite",
    "finite->NaN": "gives NaN for a finite result", "finite->Inf": "overflows to infinity",
    "NaN->Inf": "gives an infinity for NaN", "Inf->NaN": "gives NaN where the result is infinite",
    "Inf->Inf": "gives an infinity of the wrong sign",
}


@dataclass(frozen=True)
class RootKey:
    symptom: str
    ops: tuple[str, ...]  # the blamed operator, or the minimised model's operators (a pattern)
    detail: str = ""  # nan-inf direction, crash signal/frames, error code, salient parameters
    isolated: bool = False  # the blame was confirmed by re-running the operator alone
    # Not part of the key: the minimised model's operators when the defect shows only in a
    # pattern (every operator right alone); the key names the operator where it shows.
    pattern: tuple[str, ...] = ()
    # The front end (frontends) whose converter showed it: "" for tf, whose keys predate front
    # ends; another front end's Concat is another converter's defect.
    frontend: str = ""

    @property
    def id(self) -> str:
        parts = [same_class(self.symptom), list(self.ops), self.detail] + ([self.frontend] if self.frontend else [])
        raw = json.dumps(parts, separators=(",", ":"))
        return "rc-" + hashlib.sha256(raw.encode()).hexdigest()[:12]

    @property
    def subject(self) -> str:
        if not self.ops and self.pattern:
            return "a pattern (no operator fails alone; e.g. " + " -> ".join(self.pattern) + ")"
        if not self.ops:
            return "an unidentified operator"
        return self.ops[0] if len(self.ops) == 1 else "the pattern " + " -> ".join(self.ops)

    @property
    def title(self) -> str:
        return f"[{self.frontend}] {self._title()}" if self.frontend else self._title()

    def _title(self) -> str:
        s, subj, d = self.symptom, self.subject, self.detail
        if s == Symptom.WRONG.value and len(self.pattern) > 1 and self.pattern[-1] != subj:
            # The model's one addressing operator, blamed for a plan only the whole model shows.
            return f"{subj}: wrong results in " + " -> ".join(self.pattern) + " (each right alone)"
        if s == Symptom.WRONG.value and len(self.pattern) > 1:
            return f"{subj}: wrong results after " + " -> ".join(self.pattern[:-1]) + " (each right alone)"
        if s == Symptom.WRONG.value:
            # Named without proof (isolation was cut short or said nothing): the title says so.
            unproven = "" if self.isolated or len(self.ops) != 1 else "not yet shown wrong alone"
            return f"{subj}: wrong results" + (f" ({', '.join(x for x in (d, unproven) if x)})" if d or unproven else "")
        if s == Symptom.NAN_INF.value:
            return f"{subj} {_DIRECTION.get(d, d)}"
        if s == Symptom.PRECISION.value:
            return f"{subj}: precision beyond 0.1%"
        if s == Symptom.NONDETERMINISTIC.value:
            return f"{subj}: output depends on uninitialised memory"
        if s == Symptom.CRASH.value and not self.ops:
            return f"{d or 'crash'}: no operator crashes alone (damage done earlier in the model)"
        if s == Symptom.CRASH.value:
            return f"{d or 'crash'} with {subj}"
        if s == Symptom.HEAP_DAMAGE.value and d == "wrong results":
            return "wrong results that do not come back on fresh workers (heap state left by earlier models)"
        if s == Symptom.HEAP_DAMAGE.value:
            return f"{d or 'crash'}: heap damage left by an earlier model"
        if s == Symptom.REFERENCE.value:
            return f"{subj}: TensorFlow and ONNX Runtime disagree (a reference question, not an engine defect)"
        if s == Symptom.UNSUPPORTED.value:
            return f"converter does not support {subj}"
        if s == Symptom.CONVERSION.value and not self.ops and self.pattern:
            return f"conversion error: {d} in {subj}"
        if s == Symptom.CONVERSION.value:
            return f"conversion error with {subj}" + (f": {d}" if d else "")
        if s == Symptom.TIMEOUT.value:
            return f"{d or 'a stage'} hangs with {subj}"
        return f"engine error with {subj}" + (f": {d}" if d else "")

    def to_json(self) -> dict[str, Any]:
        d = {**asdict(self), "ops": list(self.ops), "pattern": list(self.pattern), "key": self.id, "title": self.title}
        if not self.frontend:  # tf: stored as before front ends
            del d["frontend"]
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> RootKey:
        return RootKey(d["symptom"], tuple(d.get("ops", ())), d.get("detail", ""), bool(d.get("isolated")),
                       tuple(d.get("pattern", ())), d.get("frontend", ""))


MAX_PATTERN = 4  # a minimised model with more operators than this names no pattern


def local_key(symptom: str, fp: dict[str, Any], direction: str = "") -> tuple[str, str, str]:
    """What a single case says of its root cause before minimisation: the symptom, the operator
    it names, and the NaN/Inf direction or error code.  The minimiser keeps it fixed (no
    slippage to another defect) and the campaign groups fingerprints by it."""
    if symptom == Symptom.NAN_INF.value:
        return symptom, fp.get("op", ""), direction
    if symptom in (Symptom.CRASH.value, Symptom.HEAP_DAMAGE.value):
        return symptom, "" if symptom == Symptom.HEAP_DAMAGE.value else fp.get("op", ""), crash_class(fp.get("code", ""))
    if symptom in (Symptom.WRONG.value, Symptom.PRECISION.value, Symptom.NONDETERMINISTIC.value):
        return symptom, fp.get("op", ""), _shape(fp)
    return symptom, fp.get("op", ""), fp.get("kind", "") + ":" + fp.get("code", "")


def in_pattern(symptom: str, fp: dict[str, Any], small: Graph, node: str, direction: str = "") -> RootKey:
    """Every operator of the minimised model right alone: the defect shows at ``node``'s operator
    only after these producers (a fused chain, a layout one producer leaves): keyed by that
    operator, the pattern kept for the report."""
    # Adapters too: they run in the engine like any operator (a Pad before a Reshape can be the bug).
    ops = tuple(dict.fromkeys(n.op for n in small.nodes))
    # Glue (an adapter, a view) carries a block's value: the block names it, as in an unproven
    # blame, so a Pad after a FusedBatchNorm is the FusedBatchNorm's.
    producer = block_producer(small, node)
    sink = small.node(producer).op
    if symptom == Symptom.NAN_INF.value and moves_data((sink,), small, producer):
        # As in root_key: a NaN that vanishes where data only moves was read from the wrong place
        # (a Slice of Reshape(Concat) reading zeros): the pattern's wrong result, one defect.
        symptom = Symptom.WRONG.value
    # Not isolated: no operator and no chain of two or three was shown wrong alone, so the
    # operator named is where the difference surfaced, a guess a maintainer cannot act on (on
    # ONNX most such keys named a control operator): listed in a tracking issue, not filed.
    return RootKey(symptom, (sink,), direction if symptom == Symptom.NAN_INF.value else _shape(fp), False,
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
    simplest: the ones it could not change without losing the bug (a mode, a padding...)."""
    try:
        n = g.node(node)
    except KeyError:
        return ""
    unproven = set(g.meta.get(UNPROVEN, ()))
    return ", ".join(_param_text(g, n.op, k, n.params[k]) for k in simplest_choices(g, node) if k not in unproven)


def _param_text(g: Graph, op: str, k: str, v: Any) -> str:
    """``k=v``; a recorded operator's instance as what sets it apart (ops.recorded): "instance=7"
    tells a maintainer nothing, "equation=ij,jk->ik, int32 input" does."""
    spec = registry(str(g.meta.get("frontend", "tf"))).specs.get(op)
    if k == "instance" and isinstance(spec, RecordedSpec) and isinstance(v, int) and 0 <= v < len(spec.instances):
        return spec.instances[v].describe() or f"{k}={v}"
    return f"{k}={v}"


# Graph meta: the blamed node's parameters that no valid simpler value could be tried for
# (bugs.diagnose.needed_params): not shown to be needed, so not named in the key.
UNPROVEN = "unproven_params"


def simplest_choices(g: Graph, node: str) -> dict[str, Any]:
    """Node ``node``'s choice parameters that are not at their simplest value: each one's
    simplest value (the first of its domain)."""
    return {k: others[0] for k, others in simpler_choices(g, node).items()}


def simpler_choices(g: Graph, node: str) -> dict[str, list[Any]]:
    """Node ``node``'s choice parameters that are not at their simplest value: the values before
    its own in its domain, simplest first (the simplest may not be valid with the others:
    TensorFlow takes no half-pixel centres with align_corners)."""
    n = g.node(node)
    spec = registry(str(g.meta.get("frontend", "tf"))).specs.get(n.op)
    if spec is None:
        return {}
    out = {}
    for k, dom in sorted(spec.domains.items()):
        if isinstance(dom, Choice) and k in n.params and n.params[k] != dom.values[0]:
            values = list(dom.values)
            out[k] = values[:values.index(n.params[k])] if n.params[k] in values else values[:1]
    return out


def root_key(symptom: str, fp: dict[str, Any], small: Graph | None, blamed: str = "", isolated: bool = False,
             direction: str = "", minimized: bool = True) -> RootKey:
    """The key of a (minimised) failure.  ``blamed``: the node found wrong in isolation ("" when
    every operator was right alone: the key names the minimised model's operators); for an
    unminimised failure the case's own operator stands in.  The fingerprint's front end
    carries over."""
    key = _root_key(symptom, fp, small, blamed, isolated, direction, minimized)
    return replace(key, frontend=str(fp.get("frontend", "")))


def _root_key(symptom: str, fp: dict[str, Any], small: Graph | None, blamed: str, isolated: bool,
              direction: str, minimized: bool) -> RootKey:
    if symptom in (Symptom.HEAP_DAMAGE.value,):
        return RootKey(symptom, (), _signal_only(fp.get("code", "")))
    ops: tuple[str, ...]
    if symptom == Symptom.NONDETERMINISTIC.value and not isolated and suspect(small):
        ops = (suspect(small),)  # not where the garbage showed: where it was read from
    elif blamed and small is not None:
        ops = (small.node(blamed).op,)
    elif minimized and small is not None and len(pattern_ops(small)) <= MAX_PATTERN:
        ops = pattern_ops(small)
    else:  # not minimised far enough to name a pattern: the case's own operator stands in
        ops = (fp["op"],) if fp.get("op") else ()
    if symptom == Symptom.NAN_INF.value and moves_data(ops, small, blamed):
        # An operator that only moves elements cannot make or drop a NaN or an Inf: one that
        # appears or vanishes there was read from the wrong place, the operator's wrong result.
        symptom = Symptom.WRONG.value
    if symptom in (Symptom.WRONG.value, Symptom.PRECISION.value, Symptom.NONDETERMINISTIC.value):
        salient = salient_params(small, blamed) if blamed and minimized and small is not None else ""
        # A parameter value proven needed names the trigger: a reverse GRU's wrong Y shape and
        # its wrong Y_h values are one defect.  Only a key without one splits shape from values.
        return RootKey(symptom, ops, salient or _shape(fp), isolated)
    if symptom == Symptom.NAN_INF.value:
        return RootKey(symptom, ops, direction, isolated)
    if symptom == Symptom.CRASH.value:
        return RootKey(symptom, ops, crash_class(fp.get("code", "")), isolated)
    if symptom == Symptom.TIMEOUT.value:
        return RootKey(symptom, ops, fp.get("stage", ""), isolated)
    if symptom == Symptom.REFERENCE.value:
        return RootKey(symptom, ops, "", isolated)
    if symptom == Symptom.UNSUPPORTED.value:
        return RootKey(symptom, (fp["op"],) if fp.get("op") else ops, "", isolated)
    missing = fp.get("kind") == "missing-output" or _MISSING_OUTPUT.search(fp.get("code", ""))
    code = "a model output is missing" if missing else fp.get("code", "")
    return RootKey(symptom, ops, code[:120], isolated)


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


def _shape(fp: dict[str, Any]) -> str:
    """A wrong shape and wrong values are different defects of one operator (a multiplier
    ignored, a padding misread)."""
    return "wrong shape" if fp.get("kind") == "mismatch" and fp.get("code") == "shape" else ""


MEMORY_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGABRT")


def crash_class(code: str) -> str:
    """A crash's detail: memory errors (SIGSEGV, SIGBUS, and SIGABRT from glibc's heap checks)
    are one class, since one out-of-bounds write shows as any of them from run to run; other
    signals stay apart; native frames, when the log has them, are kept."""
    sig, _, frames = code.partition(" in ")
    cls = "memory error" if sig in MEMORY_SIGNALS else sig
    return cls + (f" in {frames}" if frames else "")


def _signal_only(code: str) -> str:
    return code.split(" in ", 1)[0]


# --------------------------------------------------------------------------- merging

# The verdict of a root cause from its fingerprints': a defect the base build shows is
# pre-existing even if one of its variants was only seen on the PR build.
VERDICT_ORDER = ("pre-existing", "new", "changed", "fixed", "flaky-new", "flaky-fixed", "unchecked")


@dataclass
class RootCause:
    key: RootKey
    policy: str
    fingerprints: list[str]
    canonical: str  # the fingerprint whose bundle shows the root cause (the smallest model)
    count: int = 0
    platforms: list[str] = field(default_factory=list)
    verdict: str = ""
    minimized: bool = False
    # False: every diagnosis of it was cut short before it settled (see Diagnosed.settled); its
    # key names an operator nobody confirmed, so it is listed, not filed (it still counts for
    # the verdict: a regression stays red however far it was diagnosed).
    settled: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key.id, "symptom": self.key.symptom, "policy": self.policy, "title": self.key.title,
                "ops": list(self.key.ops), "detail": self.key.detail, "fingerprints": list(self.fingerprints),
                "canonical": self.canonical, "count": self.count, "platforms": list(self.platforms),
                "verdict": self.verdict, "minimized": self.minimized, "isolated": self.key.isolated,
                "settled": self.settled}

    @property
    def filed(self) -> bool:
        """Whether a report files an issue for it (within its quota)."""
        return self.policy == "report" and self.settled


@dataclass(frozen=True)
class Diagnosed:
    """A fingerprint's key from its minimised model, and that model's size."""

    key: RootKey
    size: int
    # The minimiser finished (the model is 1-minimal) or the blame was confirmed in isolation.
    # Neither: the time ran out on a large model, and its key is the operator where the
    # difference showed, as unproven as before diagnosis (a Realdiv after a wrong BatchToSpaceND).
    settled: bool = True


def assemble(failures: list[dict[str, Any]], diagnosed: dict[str, Diagnosed], policy: Callable[[str], str]) -> list[RootCause]:
    """Merge the summary's failures (key, count, platforms, symptom, local, fingerprint, verdict)
    into root causes.  A fingerprint not diagnosed in time joins a diagnosed one with the
    same local key (symptom, operator, direction); failing that, its own operator keys it."""
    by_local: dict[tuple[str, ...], RootKey] = {}
    for f in sorted(failures, key=lambda f: diagnosed[f["key"]].size if f["key"] in diagnosed else 1 << 30):
        # Only a key of the same symptom is passed on: a variant diagnosed as a tie or as heap
        # damage says nothing of an undiagnosed one (which may be the real defect).
        if f["key"] in diagnosed and diagnosed[f["key"]].key.symptom == f["local"][0]:
            by_local.setdefault(tuple(f["local"]), diagnosed[f["key"]].key)
    causes: dict[str, RootCause] = {}
    for f in failures:
        d = diagnosed.get(f["key"])
        key = d.key if d else by_local.get(tuple(f["local"])) or root_key(
            f["symptom"], f["fingerprint"], None, minimized=False, direction=f["local"][2])
        rc = causes.setdefault(key.id, RootCause(key, policy(key.symptom), [], f["key"]))
        rc.fingerprints.append(f["key"])
        rc.count += int(f.get("count", 1))
        rc.platforms = sorted(set(rc.platforms) | set(f.get("platforms") or []))
        rc.verdict = _worse(rc.verdict, f.get("verdict", ""))
        if d and (not rc.minimized or d.size < diagnosed[rc.canonical].size):
            # The smallest model's key names it (one id can hold two symptoms: nondeterministic
            # and wrong-result; the title is the one the canonical bundle shows).
            rc.canonical, rc.minimized, rc.key = f["key"], True, d.key
    for rc in causes.values():
        rc.settled = not rc.minimized or any(diagnosed[f].settled for f in rc.fingerprints if f in diagnosed)
    return sorted(causes.values(), key=lambda rc: (-rc.count, rc.key.id))


def _worse(a: str, b: str) -> str:
    rank = {v: i for i, v in enumerate(VERDICT_ORDER)}
    if not a or not b:
        return a or b
    return a if rank.get(a, 99) <= rank.get(b, 99) else b
