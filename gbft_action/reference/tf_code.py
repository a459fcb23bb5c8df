"""The model as TensorFlow source code: one line per operator, parameters written out.

A repro script must show the model in ten seconds.  ``model_lines`` turns an IR
graph into straight-line TensorFlow calls, the same calls in the same order as
``tf_emit`` makes, so the script builds the very GraphDef the fuzzer ran (a test
checks this byte for byte on random graphs).  Weights are not pasted: each node
draws them from ``rng("<node id>")``, the fuzzer's own generator seeded by the
graph seed and the node id, whose two lines the script carries.

Host side: imports no TensorFlow.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Collection

from ..graph.ir import Graph, Node, Params
from . import registrar

# The helpers a script needs for the lines below (SEED is the graph's seed).
HELPERS = '''def rng(node):  # the fuzzer's weights: one generator per node, seeded by the graph seed and the node id
    return np.random.default_rng([SEED & 0xFFFFFFFF, zlib.crc32(node.encode())])

def U(r, shape, lo=-1.0, hi=1.0):
    return r.uniform(lo, hi, size=shape).astype(np.float32)'''

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
Code = Callable[[Graph, Node, list[str]], list[str]]
CODE: dict[str, Code] = {}

UNARY = {"Ceil": "tf.math.ceil", "Exp": "tf.math.exp", "Relu": "tf.nn.relu", "Relu6": "tf.nn.relu6",
         "Rsqrt": "tf.math.rsqrt", "Selu": "tf.nn.selu", "Sigmoid": "tf.math.sigmoid", "Sqrt": "tf.math.sqrt",
         "Square": "tf.math.square", "Tanh": "tf.math.tanh"}
BINARY = {"Add": "tf.math.add", "Sub": "tf.math.subtract", "Mul": "tf.math.multiply",
          "Maximum": "tf.math.maximum", "Minimum": "tf.math.minimum", "Greater": "tf.math.greater"}
REDUCE = {"Reducemax": "tf.math.reduce_max", "Reducemean": "tf.math.reduce_mean",
          "Reduceprod": "tf.math.reduce_prod", "Reducesum": "tf.math.reduce_sum"}
RESIZE = {"bilinear": "ResizeBilinear", "nearest": "ResizeNearestNeighbor", "bicubic": "ResizeBicubic",
          "area": "ResizeArea"}
DTYPES = {"float32": "tf.float32", "int32": "tf.int32", "int64": "tf.int64", "bool": "tf.bool"}


code = registrar(CODE)


def check_graph(g: Graph, ops: Collection[str] = (), dtypes: Collection[str] = ()) -> None:
    """Names become Python identifiers and parameters Python literals: a graph from a bundle
    (a pull request's artifact) must not be able to write code.  ValueError names the bad part.
    ``ops``/``dtypes``: what the code printer knows (default: this TensorFlow one's)."""
    for name in [*g.inputs, *(n.id for n in g.nodes), *g.outputs, *(i for n in g.nodes for i in n.inputs)]:
        if not _IDENT.fullmatch(name):
            raise ValueError(f"graph: {name[:40]!r} is not a tensor name")
    for n in g.nodes:
        if n.op not in (ops or CODE):
            raise ValueError(f"graph: node {n.id} has unknown operator {n.op[:40]!r}")
    for t in [*g.inputs.values(), *(n.out for n in g.nodes)]:
        if t.dtype not in (dtypes or DTYPES):
            raise ValueError(f"graph: unknown dtype {t.dtype[:20]!r}")


def model_lines(g: Graph) -> list[str]:
    """``in0 = tf1.placeholder(...)`` per input, then one statement (or a few) per node."""
    check_graph(g)
    lines = [f'{k} = tf1.placeholder({DTYPES[t.dtype]}, {list(t.shape)}, name="{k}")' for k, t in g.inputs.items()]
    for n in g.nodes:
        lines += CODE[n.op](g, n, list(n.inputs))
    return lines


def _call(n: Node, fn: str, *args: Any, **kw: Any) -> list[str]:
    parts = [str(a) for a in args] + [f"{k}={_lit(v)}" for k, v in kw.items()] + [f'name="{n.id}"']
    return [f"{n.id} = {fn}({', '.join(parts)})"]


def _lit(v: Any) -> str:
    """A parameter as Python source (strings quoted, everything else as written)."""
    return str(v) if isinstance(v, Raw) else repr(v)


class Raw(str):
    """Source text that _lit must not quote (a variable, a dtype, an expression)."""

    def __repr__(self) -> str:
        return str(self)


def _w(n: Node, shape: list[int], lo: str = "") -> str:
    return f'tf.constant(U(rng("{n.id}"), {shape}{lo}))'


def _padding(p: Params) -> Any:
    if p["padding"] == "EXPLICIT":
        a, b, c, d = p["pads"]
        return [[0, 0], [a, b], [c, d], [0, 0]]
    return p["padding"]


# --------------------------------------------------------------------------- element-wise

@code(*UNARY)
def _unary(g: Graph, n: Node, xs: list[str]) -> list[str]:
    return _call(n, UNARY[n.op], xs[0])


def _constant_shape(g: Graph, n: Node, xs: list[str]) -> list[int]:
    """A one-input binary operator's constant operand: the full shape, a scalar or a channel vector."""
    shape = list(g.tensor_type(xs[0]).shape)
    return {"same": shape, "scalar": [], "channel": shape[-1:]}[n.params["operand"]]


@code(*BINARY)
def _binary(g: Graph, n: Node, xs: list[str]) -> list[str]:
    b = xs[1] if len(xs) == 2 else _w(n, _constant_shape(g, n, xs))
    return _call(n, BINARY[n.op], xs[0], b)


@code("Realdiv")
def _realdiv(g: Graph, n: Node, xs: list[str]) -> list[str]:
    if len(xs) == 2:
        return _call(n, "tf.raw_ops.RealDiv", x=Raw(xs[0]), y=Raw(xs[1]))
    shape = _constant_shape(g, n, xs)
    # tf_emit.divisor, never near zero: a magnitude from U[0.5, 1], then the sign of a U[-1, 1] draw
    return [f'r = rng("{n.id}")', *_call(n, "tf.raw_ops.RealDiv", x=Raw(xs[0]),
                                         y=Raw(f"tf.constant(np.copysign(U(r, {shape}, 0.5, 1.0), U(r, {shape})))"))]


@code("Biasadd")
def _bias_add(g: Graph, n: Node, xs: list[str]) -> list[str]:
    return _call(n, "tf.nn.bias_add", xs[0], _w(n, [g.tensor_type(xs[0]).shape[-1]]))


@code("Cast")
def _cast(g: Graph, n: Node, xs: list[str]) -> list[str]:
    return _call(n, "tf.raw_ops.Cast", x=Raw(xs[0]), DstT=Raw(DTYPES[n.params["to"]]))


@code("Fill")
def _fill(g: Graph, n: Node, xs: list[str]) -> list[str]:
    return _call(n, "tf.fill", f'tf.shape({xs[0]}, name="{n.id}_shape")', f"np.float32({n.params['value']!r})")


# --------------------------------------------------------------------------- convolution & pooling

@code("Conv2d")
def _conv2d(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p, cin = n.params, g.tensor_type(xs[0]).shape[-1]
    return _call(n, "tf.nn.conv2d", xs[0], _w(n, [p["kh"], p["kw"], cin, p["out_ch"]]), strides=p["stride"],
                 padding=_padding(p), dilations=p["dilation"])


@code("Depthwise")
def _depthwise(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p, cin = n.params, g.tensor_type(xs[0]).shape[-1]
    s, d, explicit = p["stride"], p["dilation"], p["padding"] == "EXPLICIT"
    return _call(n, "tf.raw_ops.DepthwiseConv2dNative", input=Raw(xs[0]),
                 filter=Raw(_w(n, [p["kh"], p["kw"], cin, p["multiplier"]])), strides=[1, s, s, 1],
                 padding="EXPLICIT" if explicit else p["padding"],
                 explicit_paddings=sum(_padding(p), []) if explicit else [], dilations=[1, d, d, 1])


@code("Deconv2d")
def _deconv2d(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p, cin = n.params, g.tensor_type(xs[0]).shape[-1]
    return _call(n, "tf.nn.conv2d_transpose", xs[0], _w(n, [p["kh"], p["kw"], p["out_ch"], cin]),
                 list(n.out.shape), strides=p["stride"], padding=p["padding"])


@code("Avgpooling", "Maxpooling")
def _pool(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p = n.params
    fn = "tf.nn.avg_pool2d" if n.op == "Avgpooling" else "tf.nn.max_pool2d"
    return _call(n, fn, xs[0], ksize=[p["kh"], p["kw"]], strides=p["stride"], padding=p["padding"])


@code("Fusedbatchnorm")
def _fused_bn(g: Graph, n: Node, xs: list[str]) -> list[str]:
    c = g.tensor_type(xs[0]).shape[-1]
    # scale, offset, mean, then a (positive) variance, drawn in that order
    return [f'r = rng("{n.id}")',
            f"{n.id} = tf1.nn.fused_batch_norm({xs[0]}, *(tf.constant(U(r, [{c}])) for _ in range(3)), "
            f"tf.constant(U(r, [{c}], 0.1, 1.0)), epsilon={n.params['epsilon']!r}, is_training=False, "
            f'name="{n.id}")[0]']


@code("Lrn")
def _lrn(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p = n.params
    return _call(n, "tf.nn.local_response_normalization", xs[0], depth_radius=p["depth_radius"], bias=p["bias"],
                 alpha=p["alpha"], beta=p["beta"])


# --------------------------------------------------------------------------- shape & layout

@code("Concat")
def _concat(g: Graph, n: Node, xs: list[str]) -> list[str]:
    if len(xs) == 1:  # as tf_emit: tf.concat of one tensor would name its op "n3/n3"
        return _call(n, "tf.identity", xs[0])
    return _call(n, "tf.concat", f"[{', '.join(xs)}]", axis=n.params["axis"])


def _simple(fn: str, *keys: str, kw: tuple[str, ...] = ()) -> Code:
    def make(g: Graph, n: Node, xs: list[str]) -> list[str]:
        return _call(n, fn, xs[0], *(_lit(n.params[k]) for k in keys), **{k: n.params[k] for k in kw})
    return make


CODE.update({
    "Reshape": _simple("tf.reshape", "shape"), "Slice": _simple("tf.slice", "begin", "size"),
    "Pad": _simple("tf.pad", "pads"), "Expanddims": _simple("tf.expand_dims", "axis"),
    "Transpose": _simple("tf.transpose", "perm"), "Tile": _simple("tf.tile", "multiples"),
})


@code("Stridedslice")
def _strided_slice(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p = n.params
    return _call(n, "tf.strided_slice", xs[0], p["begin"], p["end"], p["strides"], begin_mask=p["begin_mask"],
                 end_mask=p["end_mask"])


@code("Squeeze")
def _squeeze(g: Graph, n: Node, xs: list[str]) -> list[str]:
    return _call(n, "tf.raw_ops.Squeeze", input=Raw(xs[0]), axis=n.params["axes"])


@code("Shape")
def _shape(g: Graph, n: Node, xs: list[str]) -> list[str]:
    return _call(n, "tf.shape", xs[0], out_type=Raw("tf.int32"))


@code("GatherV2")
def _gather(g: Graph, n: Node, xs: list[str]) -> list[str]:
    return _call(n, "tf.gather", xs[0], f"np.array({n.params['indices']!r}, np.int32)", axis=n.params["axis"])


@code("Spacetobatchnd")
def _space_to_batch(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p = n.params
    return _call(n, "tf.raw_ops.SpaceToBatchND", input=Raw(xs[0]), block_shape=[p["bh"], p["bw"]],
                 paddings=p["pads"])


@code("Batchtospacend")
def _batch_to_space(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p = n.params
    return _call(n, "tf.raw_ops.BatchToSpaceND", input=Raw(xs[0]), block_shape=[p["bh"], p["bw"]],
                 crops=p["crops"])


# --------------------------------------------------------------------------- reductions & selection

@code(*REDUCE)
def _reduce(g: Graph, n: Node, xs: list[str]) -> list[str]:
    return _call(n, REDUCE[n.op], xs[0], axis=n.params["axes"], keepdims=n.params["keepdims"])


@code("Argmax")
def _argmax(g: Graph, n: Node, xs: list[str]) -> list[str]:
    return _call(n, "tf.math.argmax", xs[0], axis=n.params["axis"], output_type=Raw(DTYPES[n.params["output_type"]]))


@code("Softmax")
def _softmax(g: Graph, n: Node, xs: list[str]) -> list[str]:
    return _call(n, "tf.nn.softmax", xs[0], axis=n.params["axis"])


@code("TopKV2")
def _topk(g: Graph, n: Node, xs: list[str]) -> list[str]:
    line = _call(n, "tf.math.top_k", xs[0], k=n.params["k"], sorted=True)[0]
    return [line + ".values"]


# --------------------------------------------------------------------------- image

@code("Resizebilinear", "Resizenearestneighbor")
def _resize_v1(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p = n.params
    fn = "tf1.image.resize_bilinear" if n.op == "Resizebilinear" else "tf1.image.resize_nearest_neighbor"
    return _call(n, fn, xs[0], [p["h"], p["w"]], align_corners=p["align_corners"],
                 half_pixel_centers=p["half_pixel_centers"])


@code("Resize")
def _resize(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p = n.params
    kw = {} if p["method"] == "area" else {"half_pixel_centers": True}
    return _call(n, f"tf.raw_ops.{RESIZE[p['method']]}", images=Raw(xs[0]), size=[p["h"], p["w"]], **kw)


@code("Cropandresize")
def _crop_and_resize(g: Graph, n: Node, xs: list[str]) -> list[str]:
    p = n.params
    return [f'r = rng("{n.id}")',
            f"y0, x0 = r.uniform(0.0, 0.5, size=(2, {p['boxes']!r}))",
            f"y1, x1 = r.uniform(0.5, 1.0, size=(2, {p['boxes']!r}))",
            *_call(n, "tf.image.crop_and_resize", xs[0], "np.stack([y0, x0, y1, x1], axis=1).astype(np.float32)",
                   f"np.zeros([{p['boxes']!r}], np.int32)", [p["crop_h"], p["crop_w"]], method=p["method"])]
