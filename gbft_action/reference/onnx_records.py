"""Operator records from ONNX's own schemas and node test cases (issue 26, NeuRI's raw material).

``build_records`` reads, offline, what the onnx package ships:

* ``onnx.defs``: per operator, its schema at the opset recorded (one file per opset the generator writes):
  inputs (optional, variadic), attributes with their types and defaults, type constraints;
* ``onnx.backend.test.case.node.collect_testcases()``: valid single-node models with data.

Each test case is an instance: its node, re-targeted to our opset, with one input fed by the
generated graph and the others kept as the recorded constants.  Instances are mutated in the
element type of the fed input (every type its constraint allows among ``TYPES``), and each
candidate goes through the validity oracle: ``onnx.checker`` with strict shape inference, then
ONNX Runtime run on the recorded constants and a drawn value of the fed input, as a generated
graph would feed it.  What passes is written as a versioned JSON file
(``ops/data/onnx_records.json``), read by ``ops.recorded`` at start-up and by a reviewer.

Run by ``gbft onnx-records`` (never during a campaign).
"""

from __future__ import annotations

import copy
import multiprocessing
import warnings
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..ops.ranges import ONNX_DOMAINS
from ..ops.recorded import MAX_CONST_ELEMS, RECORDS_VERSION, TYPES
from ..frontends import LEGACY_OPSET
from ..ops.specs import FLOATS
from .onnx_emit import ir_version
from .onnx_patterns import PATTERNS, Pattern, op_types, parsed

MAX_PER_OP = 16  # instances kept per operator (each test case once before any twice)
_ONNX_TYPE = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "int64": TensorProto.INT64,
              "int32": TensorProto.INT32, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
              "bool": TensorProto.BOOL, "float64": TensorProto.DOUBLE}
_SCHEMA_TYPE = {f"tensor({'float' if k == 'float32' else 'double' if k == 'float64' else k})": k for k in _ONNX_TYPE}


# The opset being recorded: set once by build_records, before its children fork, and read by
# the oracle's model builders (every instance and pattern is checked and run at it).
_AT = {"opset": LEGACY_OPSET}


def build_records(opset: int = LEGACY_OPSET, max_per_op: int = MAX_PER_OP,
                  only: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The records file's content at ``opset``: schemas and valid instances of every
    default-domain operator (of those in ``only``, when given)."""
    from onnx.backend.test.case.node import collect_testcases

    _AT["opset"] = opset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the test cases' own overflow warnings
        cases = collect_testcases(None)
    schemas = {s.name: s for s in _schemas_at(opset) if not only or s.name in only}
    nodes = [(c, c.model.graph.node[0]) for c in cases if c.model is not None and len(c.model.graph.node) == 1
             and c.data_sets]
    nodes = [(c, n) for c, n in nodes if n.domain in ("", "ai.onnx") and n.op_type in schemas]
    strings = _string_values(n for _, n in nodes)
    by_op: dict[str, list[tuple[Any, onnx.NodeProto]]] = defaultdict(list)
    for case, node in nodes:
        by_op[node.op_type].append((case, node))
    instances = {name: _isolated(lambda mutate: _of_op(by_op[name], s, strings[name] if mutate else {}, max_per_op,
                                                       mutate))
                 for name, s in sorted(schemas.items())}
    for pat in PATTERNS:
        if pat.op in instances:
            instances[pat.op] += _isolated(lambda _: [i] if (i := pattern_instance(pat)) is not None else [])
    return {"version": RECORDS_VERSION, "onnx": onnx.__version__, "opset": opset,
            "ops": {name: {"schema": _schema(s), "instances": instances[name]} for name, s in sorted(schemas.items())}}


def _of_op(nodes: list[tuple[Any, onnx.NodeProto]], schema: Any, strings: dict[str, set[str]], limit: int,
           mutate: bool) -> list[dict[str, object]]:
    """One operator's instances from its test cases: the recorded ones, then (``mutate``) mutants."""
    found, grown = [], []  # per test case
    for case, node in nodes:
        recorded, mutated = _variants(case, node, schema, strings, mutate)
        found.append([{**v, "case": case.name} for v in recorded])
        grown.append([{**v, "case": f"{case.name} ({v['mutation']})"} for v in mutated])
    return _kept(found, grown, limit)


def _isolated(build: Callable[[bool], list[dict[str, object]]]) -> list[dict[str, object]]:
    """``build(True)`` in a child process; if a signal kills the child (ONNX Runtime 1.32
    segfaults on a LayerNormalization with axis=0 and no bias, one of NeuRI's mutants),
    ``build(False)``, the recorded instances alone, likewise; nothing if that dies too.  A
    Python error in the builder is this code's bug, not ONNX Runtime's: raised, never read as
    "no instances"."""
    ctx = multiprocessing.get_context("fork")  # the test cases, read once, are the child's too
    for mutate in (True, False):
        here, there = ctx.Pipe(duplex=False)
        child = ctx.Process(target=lambda: there.send(build(mutate)), daemon=True)
        child.start()
        there.close()
        try:
            got = here.recv()
        except EOFError:  # the child died before it answered
            got = None
        child.join()
        if got is not None and child.exitcode == 0:
            return got
        if child.exitcode is not None and child.exitcode > 0:
            raise RuntimeError(f"the records builder failed (exit {child.exitcode}; its traceback is above)")
    return []


def _kept(found: list[list[dict[str, object]]], grown: list[list[dict[str, object]]], limit: int) -> list[dict[str, object]]:
    """The recorded instances, then up to MAX_MUTANTS mutants that are no recorded instance."""
    recorded = _interleaved(found, limit)
    plain = [_bare(i) for i in recorded]
    fresh = [[m for m in ms if _bare(m) not in plain] for ms in grown]
    return recorded + _interleaved(fresh, MAX_MUTANTS)


def _bare(instance: dict[str, object]) -> dict[str, object]:
    """An instance without what names or describes it: two equal bare ones are one instance."""
    return {k: v for k, v in instance.items() if k not in ("case", "mutation", "rule")}


def _string_values(nodes: Iterable[onnx.NodeProto]) -> dict[str, dict[str, set[str]]]:
    """Per operator, per string attribute, the values its test cases use (the enum a schema
    does not list: Resize's modes, Pad's)."""
    out: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for n in nodes:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.STRING:
                out[n.op_type][a.name].add(a.s.decode("utf-8", "replace"))
    return out


def _interleaved(per_case: list[list[dict[str, object]]], limit: int) -> list[dict[str, object]]:
    """Every test case's first variant (float32 where it may be) before any case's second: the
    attributes the test cases cover come before their element types."""
    out: list[dict[str, object]] = []
    for rank in range(max((len(v) for v in per_case), default=0)):
        for variants in per_case:
            if rank < len(variants) and variants[rank] not in out and len(out) < limit:
                out.append(variants[rank])
    return out


def _schemas_at(opset: int) -> list[Any]:
    """Each default-domain operator's schema as of ``opset`` (operators added later are left out)."""
    out = []
    for name in sorted({s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""}):
        try:
            s = onnx.defs.get_schema(name, opset, "")
        except onnx.defs.SchemaError:
            continue
        if not s.deprecated:
            out.append(s)
    return out


def _schema(s: Any) -> dict[str, object]:
    """What a reviewer (and attribute coverage) reads of a schema."""
    def formal(p: Any) -> dict[str, object]:
        return {"name": p.name, "option": p.option.name.lower(), "type": p.type_str}

    return {"since": s.since_version, "inputs": [formal(p) for p in s.inputs],
            "outputs": [formal(p) for p in s.outputs],
            "attributes": {k: {"type": a.type.name.lower(), "required": a.required,
                               "default": _attr_json(a.default_value) if a.default_value.name else None}
                           for k, a in sorted(s.attributes.items())},
            "types": {c.type_param_str: sorted(c.allowed_type_strs) for c in s.type_constraints}}


# --------------------------------------------------------------------------- instances


def _variants(case: Any, node: onnx.NodeProto, schema: Any, strings: dict[str, set[str]],
              mutate: bool = True) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The valid instances of one test case (its fed input in each element type tried), and the
    valid mutants of its first."""
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS, onnx.AttributeProto.SPARSE_TENSOR)
           for a in node.attribute):
        return [], []
    values = dict(zip([i.name for i in case.model.graph.input], case.data_sets[0][0]))
    if not all(isinstance(v, (np.ndarray, np.generic)) for v in values.values()):
        return [], []  # a sequence or optional input: not a tensor a graph could feed
    arrays = [_cropped(np.asarray(values[name])) if name in values else None for name in node.input]
    if any(name and name not in values for name in node.input):
        return [], []  # an input the test case feeds some other way (an initializer): not kept simple
    node, arrays = _retargeted(node, arrays, schema)
    for fed in _feedable(arrays):
        out = [(dtype, inst) for dtype in _fed_types(schema, fed, arrays)
               if (inst := _instance(node, arrays, fed, dtype, schema)) is not None]
        if out:
            dtype = out[0][0]
            grown = [{**inst, "mutation": m.what} for m in (mutants(node, arrays, fed, schema, strings) if mutate else [])
                     if (inst := _instance(m.node, m.arrays, fed, dtype, schema)) is not None]
            return [i for _, i in out], grown
    return [], []


def _retargeted(node: onnx.NodeProto, arrays: list[np.ndarray | None],
                schema: Any) -> tuple[onnx.NodeProto, list[np.ndarray | None]]:
    """A test case written for a later opset, at ours: an input our opset takes as an attribute
    (ReduceL1's axes became an input in opset 18) moved back into the attribute."""
    formal = [p.name for p in schema.inputs]
    extra = [i for i in range(len(formal), len(arrays)) if arrays[i] is not None]
    if len(extra) != 1 or schema.attributes.get("axes") is None or any(a.name == "axes" for a in node.attribute):
        return node, arrays
    axes = arrays[extra[0]]
    assert axes is not None
    if axes.dtype.kind != "i" or axes.ndim != 1 or axes.size == 0:  # no axes: another meaning at our opset
        return node, arrays
    n = copy.deepcopy(node)
    del n.input[len(formal):]
    n.attribute.append(helper.make_attribute("axes", [int(v) for v in axes]))
    return n, arrays[:len(formal)]


# --------------------------------------------------------------------------- NeuRI's mutations

MAX_MUTANTS = 8  # mutated instances kept per operator, beside the recorded ones
_INT = onnx.AttributeProto.INT


@dataclass(frozen=True)
class Mutant:
    """One mutation of a valid instance: what changed, and the node and inputs it makes."""

    what: str
    node: onnx.NodeProto
    arrays: list[np.ndarray | None]


def mutants(node: onnx.NodeProto, arrays: list[np.ndarray | None], fed: int, schema: Any,
            strings: dict[str, set[str]]) -> list[Mutant]:
    """NeuRI's mutations of one valid instance, each one change: an integer attribute to its
    neighbours and to -1 (an axis from the end); a string attribute to another value the
    operator's test cases use (``strings``: name -> values); an optional constant input left
    out.  The validity oracle then says which are instances."""
    out = []
    for a in node.attribute:
        if a.type == _INT:
            out += [Mutant(f"{a.name}={v}", _with_attr(node, a.name, v), arrays) for v in _int_values(a, schema)]
        elif a.type == onnx.AttributeProto.STRING:
            own = a.s.decode("utf-8", "replace")
            out += [Mutant(f"{a.name}={v}", _with_attr(node, a.name, v), arrays)
                    for v in sorted(strings.get(a.name, set()) - {own})]
    for i, p in enumerate(schema.inputs[:len(arrays)]):
        if i != fed and arrays[i] is not None and p.option.name == "Optional":
            n = copy.deepcopy(node)
            n.input[i] = ""
            out.append(Mutant(f"without {p.name}", n, [None if j == i else a for j, a in enumerate(arrays)]))
    return out


# Integer attributes whose value the test case's constants are written for: a loss's
# ignore_index names the label to skip, and moved to -4 it leaves the case's label -5 out of
# range, which ONNX leaves undefined (ONNX Runtime and MNN then differ on one element: two
# root causes a maintainer would close).
PAIRED_WITH_INPUTS = frozenset({"ignore_index"})


def _int_values(a: onnx.AttributeProto, schema: Any) -> list[int]:
    """An integer attribute's mutations.  A flag (0 or 1, its default too) only flips: ONNX
    Runtime reads keepdims=2 as true, but the spec allows 0 and 1 only, and an engine that reads
    it otherwise is not wrong (a report a maintainer closes as "not a bug")."""
    if a.name in PAIRED_WITH_INPUTS:
        return []
    formal = schema.attributes.get(a.name)
    default = helper.get_attribute_value(formal.default_value) if formal is not None and formal.default_value.name else None
    if a.i in (0, 1) and default in (0, 1, None) and "axis" not in a.name:
        return [1 - a.i]
    return [v for v in dict.fromkeys((a.i + 1, a.i - 1, -1)) if v != a.i]


def _with_attr(node: onnx.NodeProto, name: str, value: Any) -> onnx.NodeProto:
    n = copy.deepcopy(node)
    kept = [a for a in n.attribute if a.name != name]
    del n.attribute[:]
    n.attribute.extend([*kept, helper.make_attribute(name, value)])
    return n


def _reshaped(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The shapes a "same" rule is checked at: each dimension one larger, and one (constants
    that index the input, a ScatterND's, pin a dimension from below)."""
    grown = [tuple(d + (k == i) for k, d in enumerate(shape)) for i in range(len(shape))]
    ones = [tuple(1 if k == i else d for k, d in enumerate(shape)) for i in range(len(shape)) if shape[i] > 1]
    return grown + ones


def shape_rule(node: onnx.NodeProto, arrays: list[np.ndarray | None], fed: int, outs: list[dict[str, Any]]) -> str:
    """The relation between the fed input's shape and the first output's (``outs``: the oracle's
    output types at the recorded shape), inferred by running: "same" when the output has the
    input's shape there and with each dimension grown by one or cut to one, all taken by the
    oracle (the constants pin none of them: the operator can be placed on any tensor of that
    rank without an adapter); "" otherwise."""
    x = arrays[fed]
    assert x is not None
    if tuple(outs[0]["shape"]) != x.shape or outs[0]["dtype"] != str(x.dtype):
        return ""
    for shape in _reshaped(x.shape):
        grown = [np.zeros(shape, x.dtype) if i == fed else a for i, a in enumerate(arrays)]
        got = _oracle(node, grown, fed)
        if got is None or tuple(got[0]["shape"]) != tuple(shape):
            return ""
    return "same"


def _cropped(a: np.ndarray) -> np.ndarray:
    """A test case's input too large to feed (Mish's 10000 values) cut to its first 16 along each
    axis, at the opsets after 17: the oracle then says whether the operator takes it.  17's
    records are frozen (old bundles index into them), so they keep the uncut inputs."""
    if _AT["opset"] == LEGACY_OPSET or a.size <= MAX_FED:
        return a
    return a[tuple(slice(0, 16) for _ in a.shape)]


MAX_FED = 4096  # elements of a test case's input a generated tensor may stand for


def _feedable(arrays: list[np.ndarray | None]) -> list[int]:
    """Inputs a generated tensor may stand for: a numeric one, first input first, scalars after
    every tensor of rank 1 or more (a scalar feeds only where nothing else can, and only where
    the output follows it: see _instance), so adding rank-0 tensors kept every earlier
    instance's fed input."""
    ok = [i for i, a in enumerate(arrays) if a is not None and a.dtype.kind in "fiub" and 0 < a.size <= MAX_FED]
    return sorted(ok, key=lambda i: arrays[i].ndim == 0)  # type: ignore[union-attr]


def _fed_types(schema: Any, fed: int, arrays: list[np.ndarray | None]) -> list[str]:
    """The ``TYPES`` input ``fed``'s constraint allows, float32 first, then the recorded type
    (an operator on int64 only), then the others."""
    x = arrays[fed]
    assert x is not None  # the fed input is drawn
    own = str(x.dtype)
    formal = schema.inputs[min(fed, len(schema.inputs) - 1)]
    allowed = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}.get(formal.type_str)
    ok = [t for t in TYPES if allowed is None or any(_SCHEMA_TYPE.get(x) == t for x in allowed)]
    return list(dict.fromkeys([t for t in ("float32", own) if t in ok] + ok))


def _instance(node: onnx.NodeProto, arrays: list[np.ndarray | None], fed: int, dtype: str,
              schema: Any) -> dict[str, object] | None:
    """One instance, if the oracle takes it: ``node`` with input ``fed`` cast to ``dtype``
    (inputs sharing its type parameter too) and fed a drawn value, the rest constants."""
    if dtype not in _ONNX_TYPE or _reference_wrong(node):
        return None
    if node.op_type in ONNX_DOMAINS and dtype not in FLOATS:
        # An integer fed input cannot be guarded into the domain (a U[-1, 1] tensor cast to int
        # is 0, and ReduceLogSum of zeros is -Inf cast to INT_MIN, which the oracle excuses).
        return None
    arrays = _retyped(arrays, fed, dtype, schema)
    if _outside_spec(node, arrays):
        return None
    consts = [a for i, a in enumerate(arrays) if a is not None and i != fed]
    if sum(a.size for a in consts) > MAX_CONST_ELEMS or any(str(a.dtype) not in _ONNX_TYPE for a in consts):
        return None
    outs = _oracle(node, arrays, fed)
    if outs is None:
        return None
    rule = shape_rule(node, arrays, fed, outs)
    if arrays[fed].ndim == 0 and rule != "same":  # type: ignore[union-attr]
        return None  # a scalar that sets the output's size (a zero point, a bin count): a parameter, not data
    return {"attrs": {a.name: _attr_json(a) for a in node.attribute},
            "inputs": [None if a is None else {"dtype": str(a.dtype), "shape": list(a.shape),
                                               "value": None if i == fed else _tensor_json(a)}
                       for i, a in enumerate(arrays)],
            "fed": fed, "outputs": outs, "outputs_named": len(node.output), **({"rule": rule} if rule else {})}


# Instances whose reference is known to be wrong (NNSmith's filter registry): what an engine
# computes there cannot be judged, and a report of it is one a maintainer closes.
# (operator, attribute, value) -> why
REFERENCE_WRONG = {
    ("RoiAlign", "mode", "max"): "ONNX Runtime warns that its max mode sums where it should take the maximum",
}


def _outside_spec(node: onnx.NodeProto, arrays: list[np.ndarray | None]) -> bool:
    """An instance the spec leaves undefined though ONNX Runtime runs it: DequantizeLinear of
    int32 wants no zero point ("supposed to be 0"); retyped from a uint16 case it had 32767,
    which MNN ignores and ONNX Runtime applies."""
    if node.op_type == "DequantizeLinear" and len(arrays) > 2 and arrays[0] is not None and arrays[2] is not None:
        return arrays[0].dtype == np.int32 and bool(np.any(arrays[2]))
    return False


def _reference_wrong(node: onnx.NodeProto) -> bool:
    """Whether one of the node's string or integer attributes has a value REFERENCE_WRONG lists."""
    values = [(a.name, a.s.decode("utf-8", "replace") if a.type == onnx.AttributeProto.STRING else a.i)
              for a in node.attribute if a.type in (onnx.AttributeProto.STRING, _INT)]
    return any((node.op_type, k, v) in REFERENCE_WRONG for k, v in values)


def _retyped(arrays: list[np.ndarray | None], fed: int, dtype: str, schema: Any) -> list[np.ndarray | None]:
    """Input ``fed`` and every input bound to the same type parameter, as ``dtype``."""
    formals = [schema.inputs[min(i, len(schema.inputs) - 1)].type_str for i in range(len(arrays))]
    same = {i for i, t in enumerate(formals) if t == formals[fed]}
    with np.errstate(all="ignore"):  # out-of-range casts: the oracle judges the result
        return [a.astype(dtype) if a is not None and i in same else a for i, a in enumerate(arrays)]


def _oracle(node: onnx.NodeProto, arrays: list[np.ndarray | None], fed: int) -> list[dict[str, Any]] | None:
    """The output types of the node with its fed input drawn, if the checker, strict shape
    inference and ONNX Runtime all take it, two runs agree, and its first output is a tensor of
    ours (a type of TYPES, any rank) whose shape inference knows in advance."""
    try:
        model, first_inferred = _single_node_model(node, arrays, fed)
        x = arrays[fed]
        assert x is not None
        got, again = _run_twice(model, f"x{fed}", np.random.default_rng(0).standard_normal(x.shape).astype(x.dtype))
    except Exception:  # noqa: BLE001 - any rejection: not a valid instance
        return None
    if not all(isinstance(v, np.ndarray) for v in got) or not got:
        return None  # a sequence: no tensor for the next operator
    if not _same(got, again) or _seeded(node, arrays, fed, got):
        return None  # a random operator (Bernoulli, Dropout in training): no reference value to compare with
    if _static_shape(first_inferred) != got[0].shape:
        return None  # a shape the values decide (NonZero, Unique): the solver needs it known
    if not _ours(got[0]):
        return None
    return [{"dtype": str(v.dtype), "shape": list(v.shape)} for v in got]


def _ours(v: np.ndarray) -> bool:
    """A first output the next operator can take: of TYPES, not empty (a scalar too: rank-0
    tensors flow between operators, as in exported models)."""
    return str(v.dtype) in TYPES and v.size > 0


def pattern_instance(p: Pattern) -> dict[str, object] | None:
    """A pattern (reference.onnx_patterns) as an instance of its operator, if the oracle takes
    it: its one input fed, its output types, its shape rule inferred by running it as for a
    node ("same" when it follows any shape of its input's rank), its graph and operators."""
    g = parsed(p.text)
    shape = _static_shape(g.input[0].type)
    outs = _pattern_oracle(g)
    if shape is None or outs is None:
        return None
    same = tuple(outs[0]["shape"]) == shape and outs[0]["dtype"] == "float32" and all(
        (o := _pattern_oracle(_fed_at(g, s))) is not None and tuple(o[0]["shape"]) == s for s in _reshaped(shape))
    return {"attrs": {}, "inputs": [{"dtype": "float32", "shape": list(shape)}], "fed": 0, "outputs": outs,
            "outputs_named": 1, "case": f"pattern {p.name}", "body": p.text, "ops": sorted(op_types(g)),
            **({"rule": "same"} if same else {})}


def _pattern_oracle(g: onnx.GraphProto) -> list[dict[str, Any]] | None:
    """A pattern's output types, if the checker, strict shape inference and ONNX Runtime take
    it, two runs agree and shape inference knows its output's shape."""
    m = _model_at(g)
    try:
        onnx.checker.check_model(m, full_check=True)
        inferred = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)
        shape = _static_shape(g.input[0].type)
        assert shape is not None
        got, again = _run_twice(m, "X", np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    except Exception:  # noqa: BLE001 - any rejection: not a valid instance
        return None
    if not _close(got, again) or _static_shape(inferred.graph.output[0].type) != got[0].shape:
        return None
    if not _ours(got[0]):
        return None
    return [{"dtype": str(got[0].dtype), "shape": list(got[0].shape)}]


def _fed_at(g: onnx.GraphProto, shape: tuple[int, ...]) -> onnx.GraphProto:
    """Pattern ``g`` with its input and output of ``shape`` (strict inference refuses the
    pattern if it gives another)."""
    h = copy.deepcopy(g)
    for t in (h.input[0].type, h.output[0].type):
        for d, v in zip(t.tensor_type.shape.dim, shape):
            d.dim_value = v
    return h


def _close(a: list[Any], b: list[Any]) -> bool:
    """Two runs of a pattern agree well inside the comparison's tolerance (rtol 1e-3): a random
    operator on a narrow range draws other values each run, all of them one number to the
    oracle, and the engine's draws are judged against the reference's."""
    return all(x.shape == y.shape and np.allclose(x, y, rtol=1e-4, atol=1e-6, equal_nan=True) for x, y in zip(a, b))


def _same(a: list[Any], b: list[Any]) -> bool:
    return all(np.array_equal(x, y, equal_nan=x.dtype.kind == "f") for x, y in zip(a, b))


def _seeded(node: onnx.NodeProto, arrays: list[np.ndarray | None], fed: int, got: list[Any]) -> bool:
    """Whether the output hangs on the ``seed`` attribute (an operator that has one): run with
    another seed, a random operator gives other values; each session repeats its own, so two
    runs of one agree (Dropout in training mode did: ONNX Runtime against itself, optimised
    against not, reported it)."""
    kind = onnx.defs.get_schema(node.op_type, _AT["opset"], "").attributes.get("seed")
    if kind is None:
        return False
    was = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "seed"), 0)
    other = copy.deepcopy(node)
    del other.attribute[:]
    other.attribute.extend([a for a in node.attribute if a.name != "seed"])
    other.attribute.append(helper.make_attribute("seed", type(was)(was + 7), attr_type=kind.type.value))  # type: ignore[attr-defined]  # onnx stubs lack enum .value
    model, _ = _single_node_model(other, arrays, fed)
    x = arrays[fed]
    assert x is not None
    return not _same(got, _run_twice(model, f"x{fed}", np.random.default_rng(0).standard_normal(x.shape).astype(x.dtype))[0])


def _single_node_model(node: onnx.NodeProto, arrays: list[np.ndarray | None],
                       fed: int) -> tuple[onnx.ModelProto, onnx.TypeProto]:
    """``node`` alone at our opset: input ``fed`` the graph input x<fed>, the others initializers,
    outputs typed by the schema's inference (checked, strict); and its first output's type."""
    names = [f"x{i}" if a is not None else "" for i, a in enumerate(arrays)]
    outs = [f"y{i}" for i in range(len(node.output))]
    n = copy.deepcopy(node)
    del n.input[:], n.output[:]
    n.input.extend(names)
    n.output.extend(outs)
    inits = [numpy_helper.from_array(a, names[i]) for i, a in enumerate(arrays) if a is not None and i != fed]
    types = {names[i]: helper.make_tensor_type_proto(_ONNX_TYPE[str(a.dtype)], list(a.shape))
             for i, a in enumerate(arrays) if a is not None}
    inferred = onnx.shape_inference.infer_node_outputs(onnx.defs.get_schema(n.op_type, _AT["opset"], ""), n, types,
                                                       {t.name: t for t in inits})
    g = helper.make_graph([n], "rec", [helper.make_value_info(names[fed], types[names[fed]])],
                          [helper.make_value_info(o, inferred[o]) for o in outs], initializer=inits)
    m = _model_at(g)
    onnx.checker.check_model(m, full_check=True)
    return m, inferred[outs[0]]


def _model_at(g: onnx.GraphProto) -> onnx.ModelProto:
    """Graph ``g`` as a model at the opset being recorded."""
    opset = _AT["opset"]
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version(opset)
    return m


def _run_twice(model: onnx.ModelProto, name: str, x: np.ndarray) -> tuple[list[Any], list[Any]]:
    """ONNX Runtime's outputs for input ``name`` = x, twice (a random operator differs)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {name: x}), sess.run(None, {name: x})


def _static_shape(t: onnx.TypeProto) -> tuple[int, ...] | None:
    """The shape inference gives, if every dim is a number."""
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    dims = t.tensor_type.shape.dim
    return tuple(d.dim_value for d in dims) if all(d.HasField("dim_value") for d in dims) else None


# --------------------------------------------------------------------------- JSON forms


def _tensor_json(a: np.ndarray) -> dict[str, object]:
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": np.asarray(a).ravel().tolist()}


def _attr_json(a: onnx.AttributeProto) -> Any:
    """An attribute's value as JSON (a tensor as {"tensor": ...}, bytes as text)."""
    v = helper.get_attribute_value(a)
    if isinstance(v, TensorProto):
        return {"tensor": _tensor_json(numpy_helper.to_array(v))}
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
    return v

