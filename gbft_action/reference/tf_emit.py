"""TensorFlow materialiser: IR graph -> tf.Graph (graph mode, constants inline).

Imported only inside the reference worker process.  Every node becomes TF ops
whose *last* op carries the node id as its name, so ``<id>:0`` is the node's
tensor in the GraphDef and engines that keep TF names (MNN does) can expose it.
Weights come from a generator seeded by (graph seed, node id): the same IR
always yields the same model bytes.

This is the definition of the TensorFlow model of an IR graph.  The reference worker
builds the same GraphDef faster without the op layer (``reference.graphdef``, checked
against this module NodeDef for NodeDef) and comes here for what that does not lower;
the repro script's code (``tf_code``) matches this module byte for byte.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tensorflow as tf

from ..graph.ir import Graph, Node
from . import registrar
from .weights import divisor, uniform, weights_rng  # noqa: F401  (re-exported: older imports)

tf1 = tf.compat.v1
DTYPES = {"float32": tf.float32, "int32": tf.int32, "int64": tf.int64, "bool": tf.bool}

Emitter = Callable[[list[Any], dict[str, object], Node, np.random.Generator], Any]
EMITTERS: dict[str, Emitter] = {}


emits = registrar(EMITTERS)


def build(g: Graph) -> tuple[tf.Graph, dict[str, str]]:
    """Build ``g``; returns the tf.Graph and a map tensor name -> TF tensor name."""
    tg = tf.Graph()
    names: dict[str, str] = {}
    with tg.as_default():
        tensors: dict[str, Any] = {}
        for name, t in g.inputs.items():
            tensors[name] = tf1.placeholder(DTYPES[t.dtype], list(t.shape), name=name)
        for node in g.nodes:
            xs = [tensors[i] for i in node.inputs]
            y = EMITTERS[node.op](xs, node.params, node, weights_rng(g.seed, node.id))
            if y.op.name != node.id:
                raise RuntimeError(f"emitter for {node.op} named its op {y.op.name!r}, not {node.id!r}")
            tensors[node.id] = y
        names = {k: v.name for k, v in tensors.items()}
    return tg, names


# --------------------------------------------------------------------------- element-wise


UNARY = {
    "Ceil": tf.math.ceil, "Exp": tf.math.exp, "Relu": tf.nn.relu, "Relu6": tf.nn.relu6,
    "Rsqrt": tf.math.rsqrt, "Selu": tf.nn.selu, "Sigmoid": tf.math.sigmoid, "Sqrt": tf.math.sqrt,
    "Square": tf.math.square, "Tanh": tf.math.tanh,
}
BINARY = {
    "Add": tf.math.add, "Sub": tf.math.subtract, "Mul": tf.math.multiply, "Realdiv": tf.math.truediv,
    "Maximum": tf.math.maximum, "Minimum": tf.math.minimum, "Greater": tf.math.greater,
}


@emits(*UNARY)
def _unary(xs, p, node, rng):
    return UNARY[node.op](xs[0], name=node.id)


@emits(*BINARY)
def _binary(xs, p, node, rng):
    a = xs[0]
    if len(xs) == 2:
        b = xs[1]
    else:
        shape = {"same": a.shape.as_list(), "scalar": [], "channel": a.shape.as_list()[-1:]}[p["operand"]]
        b = tf.constant(divisor(rng, shape) if node.op == "Realdiv" else uniform(rng, shape))
    if node.op == "Realdiv":
        return tf.raw_ops.RealDiv(x=a, y=b, name=node.id)
    return BINARY[node.op](a, b, name=node.id)


@emits("Biasadd")
def _bias_add(xs, p, node, rng):
    return tf.nn.bias_add(xs[0], tf.constant(uniform(rng, [xs[0].shape[-1]])), name=node.id)


@emits("Cast")
def _cast(xs, p, node, rng):
    # raw Cast: tf.cast returns its input unchanged when the dtype already matches.
    return tf.raw_ops.Cast(x=xs[0], DstT=DTYPES[p["to"]], name=node.id)


@emits("Fill")
def _fill(xs, p, node, rng):
    return tf.fill(tf.shape(xs[0], name=node.id + "_shape"), np.float32(p["value"]), name=node.id)


# --------------------------------------------------------------------------- convolution & pooling


def _padding(p):
    if p["padding"] == "EXPLICIT":
        a, b, c, d = p["pads"]
        return [[0, 0], [a, b], [c, d], [0, 0]]
    return p["padding"]


@emits("Conv2d")
def _conv2d(xs, p, node, rng):
    cin = xs[0].shape[-1]
    w = tf.constant(uniform(rng, [p["kh"], p["kw"], cin, p["out_ch"]]))
    return tf.nn.conv2d(xs[0], w, strides=p["stride"], padding=_padding(p), dilations=p["dilation"], name=node.id)


@emits("Depthwise")
def _depthwise(xs, p, node, rng):
    cin = xs[0].shape[-1]
    w = tf.constant(uniform(rng, [p["kh"], p["kw"], cin, p["multiplier"]]))
    s, d = p["stride"], p["dilation"]
    explicit = p["padding"] == "EXPLICIT"
    return tf.raw_ops.DepthwiseConv2dNative(
        input=xs[0], filter=w, strides=[1, s, s, 1], padding="EXPLICIT" if explicit else p["padding"],
        explicit_paddings=sum(_padding(p), []) if explicit else [], dilations=[1, d, d, 1], name=node.id)


@emits("Deconv2d")
def _deconv2d(xs, p, node, rng):
    n, h, w, cin = xs[0].shape.as_list()
    out = node.out.shape
    f = tf.constant(uniform(rng, [p["kh"], p["kw"], p["out_ch"], cin]))
    return tf.nn.conv2d_transpose(xs[0], f, list(out), strides=p["stride"], padding=p["padding"], name=node.id)


@emits("Avgpooling", "Maxpooling")
def _pool(xs, p, node, rng):
    fn = tf.nn.avg_pool2d if node.op == "Avgpooling" else tf.nn.max_pool2d
    return fn(xs[0], ksize=[p["kh"], p["kw"]], strides=p["stride"], padding=p["padding"], name=node.id)


@emits("Fusedbatchnorm")
def _fused_bn(xs, p, node, rng):
    c = xs[0].shape[-1]
    scale, offset, mean = (tf.constant(uniform(rng, [c])) for _ in range(3))
    var = tf.constant(uniform(rng, [c], 0.1, 1.0))  # a variance is positive
    y, *_ = tf1.nn.fused_batch_norm(xs[0], scale, offset, mean, var, epsilon=p["epsilon"],
                                    is_training=False, name=node.id)
    return y


@emits("Lrn")
def _lrn(xs, p, node, rng):
    return tf.nn.local_response_normalization(xs[0], depth_radius=p["depth_radius"], bias=p["bias"],
                                              alpha=p["alpha"], beta=p["beta"], name=node.id)


# --------------------------------------------------------------------------- shape & layout


@emits("Concat")
def _concat(xs, p, node, rng):
    if len(xs) == 1:  # tf.concat of one tensor is an identity inside a name scope: "n3/n3"
        return tf.identity(xs[0], name=node.id)
    return tf.concat(xs, axis=p["axis"], name=node.id)


@emits("Reshape")
def _reshape(xs, p, node, rng):
    return tf.reshape(xs[0], p["shape"], name=node.id)


@emits("Slice")
def _slice(xs, p, node, rng):
    return tf.slice(xs[0], p["begin"], p["size"], name=node.id)


@emits("Pad")
def _pad(xs, p, node, rng):
    return tf.pad(xs[0], p["pads"], name=node.id)


@emits("Stridedslice")
def _strided_slice(xs, p, node, rng):
    return tf.strided_slice(xs[0], p["begin"], p["end"], p["strides"], begin_mask=p["begin_mask"],
                            end_mask=p["end_mask"], name=node.id)


@emits("Expanddims")
def _expand_dims(xs, p, node, rng):
    return tf.expand_dims(xs[0], p["axis"], name=node.id)


@emits("Squeeze")
def _squeeze(xs, p, node, rng):
    return tf.raw_ops.Squeeze(input=xs[0], axis=p["axes"], name=node.id)


@emits("Transpose")
def _transpose(xs, p, node, rng):
    return tf.transpose(xs[0], p["perm"], name=node.id)


@emits("Tile")
def _tile(xs, p, node, rng):
    return tf.tile(xs[0], p["multiples"], name=node.id)


@emits("Shape")
def _shape(xs, p, node, rng):
    return tf.shape(xs[0], out_type=tf.int32, name=node.id)


@emits("GatherV2")
def _gather(xs, p, node, rng):
    return tf.gather(xs[0], np.array(p["indices"], np.int32), axis=p["axis"], name=node.id)


@emits("Spacetobatchnd")
def _space_to_batch(xs, p, node, rng):
    return tf.raw_ops.SpaceToBatchND(input=xs[0], block_shape=[p["bh"], p["bw"]], paddings=p["pads"], name=node.id)


@emits("Batchtospacend")
def _batch_to_space(xs, p, node, rng):
    return tf.raw_ops.BatchToSpaceND(input=xs[0], block_shape=[p["bh"], p["bw"]], crops=p["crops"], name=node.id)


# --------------------------------------------------------------------------- reductions & selection


REDUCE = {"Reducemax": tf.math.reduce_max, "Reducemean": tf.math.reduce_mean,
          "Reduceprod": tf.math.reduce_prod, "Reducesum": tf.math.reduce_sum}


@emits(*REDUCE)
def _reduce(xs, p, node, rng):
    return REDUCE[node.op](xs[0], axis=p["axes"], keepdims=p["keepdims"], name=node.id)


@emits("Argmax")
def _argmax(xs, p, node, rng):
    return tf.math.argmax(xs[0], axis=p["axis"], output_type=DTYPES[p["output_type"]], name=node.id)


@emits("Softmax")
def _softmax(xs, p, node, rng):
    return tf.nn.softmax(xs[0], axis=p["axis"], name=node.id)


@emits("TopKV2")
def _topk(xs, p, node, rng):
    return tf.math.top_k(xs[0], k=p["k"], sorted=True, name=node.id).values


# --------------------------------------------------------------------------- image


@emits("Resizebilinear")
def _resize_bilinear(xs, p, node, rng):
    return tf1.image.resize_bilinear(xs[0], [p["h"], p["w"]], align_corners=p["align_corners"],
                                     half_pixel_centers=p["half_pixel_centers"], name=node.id)


@emits("Resizenearestneighbor")
def _resize_nearest(xs, p, node, rng):
    return tf1.image.resize_nearest_neighbor(xs[0], [p["h"], p["w"]], align_corners=p["align_corners"],
                                             half_pixel_centers=p["half_pixel_centers"], name=node.id)


RESIZE_OPS = {"bilinear": tf.raw_ops.ResizeBilinear, "nearest": tf.raw_ops.ResizeNearestNeighbor,
              "bicubic": tf.raw_ops.ResizeBicubic, "area": tf.raw_ops.ResizeArea}


@emits("Resize")
def _resize(xs, p, node, rng):
    # What tf.image.resize (TF2) lowers to for each method, half-pixel centres on.
    fn = RESIZE_OPS[p["method"]]
    kw = {} if p["method"] == "area" else {"half_pixel_centers": True}
    return fn(images=xs[0], size=[p["h"], p["w"]], name=node.id, **kw)


@emits("Cropandresize")
def _crop_and_resize(xs, p, node, rng):
    y0, x0 = rng.uniform(0.0, 0.5, size=(2, p["boxes"]))
    y1, x1 = rng.uniform(0.5, 1.0, size=(2, p["boxes"]))
    boxes = np.stack([y0, x0, y1, x1], axis=1).astype(np.float32)
    idx = np.zeros([p["boxes"]], np.int32)
    return tf.image.crop_and_resize(xs[0], boxes, idx, [p["crop_h"], p["crop_w"]], method=p["method"], name=node.id)
