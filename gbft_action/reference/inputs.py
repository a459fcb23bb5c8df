"""A model's input data: one numpy-only drawing for the reference worker and the repro script.

Inputs are U[-1, 1] from a generator seeded by the graph seed, on a stream of its
own (the weights draw from streams keyed by node id).  A "special" graph's inputs
(``Graph.values``) then get some elements replaced by NaN, +Inf, -Inf, -0.0 and +0.0,
at places drawn from the same generator: special values
on purpose, never by accident.  The repro script writes the uniform draw out and
carries the source of ``with_special_values`` (``special_values_source``), so it
draws the very same arrays (``tests/test_values.py`` checks this bit for bit).

Host side: numpy only.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ..graph.ir import Graph

INPUT_STREAM = 0x1F  # separates the input-data stream from the weight streams


def input_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([seed & 0xFFFFFFFF, INPUT_STREAM])


def draw_inputs(g: Graph) -> dict[str, np.ndarray]:
    """The inputs the reference (and the engine) run ``g`` on: every uniform draw, then the specials."""
    r = input_rng(g.seed)
    xs = {k: r.uniform(-1.0, 1.0, size=t.shape).astype(t.dtype) for k, t in sorted(g.inputs.items())}
    if g.values == "special":
        xs = {k: with_special_values(r, x) for k, x in xs.items()}
    return xs


def with_special_values(r: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """x with NaN, +-Inf and +-0 at random places: each kind once when there is room, else as
    many kinds as fit; about one element in sixteen of a larger tensor.  No denormals:
    TensorFlow flushes them to zero, so it cannot judge an engine that keeps them (IEEE)."""
    if x.dtype.kind != "f":
        return x
    kinds = r.permutation(np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], x.dtype))
    n = min(x.size, max(len(kinds), x.size // 16))
    y = x.reshape(-1).copy()
    y[r.permutation(x.size)[:n]] = np.resize(kinds, n)
    return y.reshape(x.shape)


@functools.cache  # read from the source file: the same for the whole run, and not cheap
def special_values_source() -> str:
    """``with_special_values`` as source text, for the repro script."""
    return inspect.getsource(with_special_values).rstrip()
