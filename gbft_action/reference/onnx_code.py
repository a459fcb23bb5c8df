"""An ONNX model as the Python that builds it, for the repro script of an ONNX bug.

The model is emitted from the (minimised) graph by ``onnx_emit`` (never read from a bundle,
a pull request's artifact) and printed one ``helper.make_node(...)`` line per ONNX node,
with its attributes written out; small constants are printed as array literals, larger
ones (weights) travel in one base64 blob the script decodes.  Names become Python string
literals only after the same checks as the TensorFlow code (``tf_code.check_graph``).
"""

from __future__ import annotations

import base64
import io
import math
import re
from dataclasses import dataclass
import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..graph.ir import Graph
from ..frontends import LEGACY_OPSET
from ..ops.registry import registry_of
from . import tf_code
from .onnx_emit import DTYPES, EMITTERS, IR_VERSION, build

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# Elements of a tensor, or an integer parameter (channels, kernel sizes): what a bundle may ask
# a repro to allocate (64 MB of float32).  1 << 20 was below what the generator makes: an
# adapter of 4eb3fdf's seed-3 ONNX campaign exceeded it, and the bundle writer's ValueError
# ended the campaign.
LIMIT = 1 << 24
LITERAL_MAX = 8  # constants of at most this many elements are printed; the rest go in the blob
_TYPE_NAMES: dict[int, str] = {v: f"TensorProto.{onnx.TensorProto.DataType.Name(v)}" for v in DTYPES.values()}


@dataclass
class OnnxSource:
    """What the repro template prints: nodes, initializers and the graph's typed inputs/outputs."""

    nodes: list[str]
    inits: list[str]
    inputs: list[str]
    outputs: list[str]
    blob: str  # base64 npz of the constants too large to print ("" when none)
    opset: int = LEGACY_OPSET
    ir_version: int = IR_VERSION


def check_graph(g: Graph) -> None:
    """Names are identifiers, operators known to the ONNX emitter, and nothing so large that
    emitting it (weights are drawn for real here) would exhaust memory: ValueError names the bad
    part.  A bundle is a pull request's artifact."""
    tf_code.check_graph(g, {*EMITTERS, *registry_of(g).specs}, DTYPES)
    for n in g.nodes:
        # Slice bounds are clamped to the input's dims (the generator writes INT64_MIN for "to
        # the start"), so they size nothing: only the other integers are checked.
        sized = {k: v for k, v in n.params.items() if not (n.op == "Slice" and k in ("starts", "ends"))}
        if n.out.size > LIMIT or any(isinstance(v, int) and abs(v) > LIMIT for v in _ints(sized)):
            raise ValueError(f"graph: node {n.id} is larger than any generated model's")


def _ints(value: object) -> list[object]:
    """Every scalar in params, however nested (pads are lists of pairs)."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in _ints(v)]
    if isinstance(value, list):
        return [x for v in value for x in _ints(v)]
    return [value]


def model_source(g: Graph) -> OnnxSource:
    check_graph(g)
    m = build(g)
    big: dict[str, np.ndarray] = {}
    inits = [_init(t, big) for t in m.graph.initializer]
    return OnnxSource(nodes=[_node(n) for n in m.graph.node], inits=inits,
                      inputs=[_value_info(v) for v in m.graph.input], outputs=[_value_info(v) for v in m.graph.output],
                      blob=_blob(big), opset=m.opset_import[0].version, ir_version=m.ir_version)


def _node(n: onnx.NodeProto) -> str:
    # Attribute names become keyword arguments: some emitters take them from the graph's params
    # (a bundle's, untrusted), so each must be a plain identifier, not code.
    bad = next((a.name for a in n.attribute if not _IDENT.fullmatch(a.name)), None)
    if bad is not None:
        raise ValueError(f"graph: node {n.name[:40]!r} has an attribute name {bad[:40]!r} that is not an identifier")
    attrs = "".join(f", {a.name}={_attr(a)}" for a in n.attribute)
    return f"helper.make_node({n.op_type!r}, {list(n.input)!r}, {list(n.output)!r}, name={n.name!r}{attrs})"


def _attr(a: onnx.AttributeProto) -> str:
    v = helper.get_attribute_value(a)
    if isinstance(v, onnx.GraphProto):  # a pattern's branch or loop body (reference.onnx_patterns)
        return _subgraph(v)
    if isinstance(v, onnx.TensorProto):
        arr = numpy_helper.to_array(v)
        return f"numpy_helper.from_array(np.array({_lit(arr.tolist())}, np.{arr.dtype.name}))"
    if isinstance(v, bytes):
        return repr(v.decode())
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return repr([x.decode() for x in v])
    return _lit(v)


def _subgraph(g: onnx.GraphProto) -> str:
    """A subgraph as the helper call that builds it (its constants are Constant nodes)."""
    if g.initializer:
        raise ValueError(f"graph: subgraph {g.name[:40]!r} has initializers a repro does not print")
    nodes = ", ".join(_node(n) for n in g.node)
    ins, outs = (", ".join(_value_info(v) for v in vs) for vs in (g.input, g.output))
    return f"helper.make_graph([{nodes}], {g.name!r}, [{ins}], [{outs}])"


def _lit(v: object) -> str:
    """A literal Python reads back as the same value: repr, but NaN and the infinities as
    float("...") (their repr is not Python)."""
    if isinstance(v, float) and not math.isfinite(v):
        return f'float("{v}")'
    if isinstance(v, list):
        return "[" + ", ".join(_lit(x) for x in v) + "]"
    return repr(v)


def _init(t: onnx.TensorProto, big: dict[str, np.ndarray]) -> str:
    arr = numpy_helper.to_array(t)
    if arr.size <= LITERAL_MAX:
        value = f"np.array({_lit(arr.tolist())}, np.{arr.dtype.name})"
    else:
        big[t.name] = arr
        value = f"W[{t.name!r}]"
    return f"numpy_helper.from_array({value}, {t.name!r})"


def _value_info(v: onnx.ValueInfoProto) -> str:
    tt = v.type.tensor_type
    shape = [d.dim_param or d.dim_value for d in tt.shape.dim]  # a body's symbolic dimensions stay names
    return f"helper.make_tensor_value_info({v.name!r}, {_TYPE_NAMES[tt.elem_type]}, {shape!r})"


def _blob(arrays: dict[str, np.ndarray]) -> str:
    if not arrays:
        return ""
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub: **arrays may not name allow_pickle
    return base64.b64encode(buf.getvalue()).decode()


def is_onnx(g: Graph) -> bool:
    """Whether a graph is an ONNX front end's (its operators are ONNX specs)."""
    return g.meta.get("frontend") == "onnx"

