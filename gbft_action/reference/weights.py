"""Constants of a model (weights, biases, indices): one seeded stream per node, numpy only.

Every emitter (TensorFlow's, ONNX's) draws a node's constants from
``weights_rng(graph seed, node id)``, so the same IR always yields the same
model bytes, and one node's draws never move another's.

Numpy only.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np


def weights_rng(seed: int, node_id: str) -> np.random.Generator:
    return np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(node_id.encode())])


def uniform(rng: np.random.Generator, shape: Any, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def divisor(rng: np.random.Generator, shape: Any) -> np.ndarray:
    """A constant divisor, +-U[0.5, 1]: never near zero (ops.ranges.DIVISOR_RANGE).

    The magnitude is drawn first, then the sign's source; tf_code writes the same.
    """
    return np.copysign(uniform(rng, shape, 0.5, 1.0), uniform(rng, shape))
