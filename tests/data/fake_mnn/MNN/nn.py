import os

from .expr import Var

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1"  # the reference worker's kernels


class _Module:
    def __init__(self, path, inputs, outputs):
        self.path, self.inputs, self.outputs = path, inputs, outputs

    def forward(self, xs):
        if os.environ.get("FAKE_MNN_MODE") == "no-outputs":  # a converter that lost the outputs' names
            return []
        with open(self.path, "rb") as f:
            if f.read(1) == b"\x08":  # an ONNX model (ir_version first), not a GraphDef (nodes first)
                return self._onnx(xs)
        import tensorflow as tf

        tf1 = tf.compat.v1
        gd = tf1.GraphDef()
        with open(self.path, "rb") as f:
            gd.ParseFromString(f.read())
        g = tf.Graph()
        with g.as_default():
            tf1.import_graph_def(gd, name="")
        cfg = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        cfg.graph_options.rewrite_options.disable_meta_optimizer = True
        with tf1.Session(graph=g, config=cfg) as s:
            vals = s.run([o + ":0" for o in self.outputs], {k + ":0": x for k, x in zip(self.inputs, xs)})
        return [Var(v) for v in vals]


    def _onnx(self, xs):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        s = ort.InferenceSession(self.path, so, providers=["CPUExecutionProvider"])
        return [Var(v) for v in s.run(self.outputs, dict(zip(self.inputs, xs)))]


def load_module_from_file(path, inputs, outputs, precision_mode=None):
    return _Module(path, list(inputs), list(outputs))
