"""A fake MNN for tests: an engine that always agrees with TensorFlow (it is TensorFlow).

Only what repro scripts use: ``MNN.nn.load_module_from_file`` and ``MNN.expr``'s
``const``, ``convert``, ``NHWC``, ``NC4HW4``, ``PrecisionMode``.
"""

from . import expr, nn  # noqa: F401


def version():
    return "0.0-fake"
