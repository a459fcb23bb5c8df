import os

from .expr import Var

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


class _Module:
    def __init__(self, path, inputs, outputs):
        self.path, self.inputs, self.outputs = path, inputs, outputs

    def forward(self, xs):
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


def load_module_from_file(path, inputs, outputs, precision_mode=None):
    return _Module(path, list(inputs), list(outputs))
