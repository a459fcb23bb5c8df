"""Arrays cross process (and platform) boundaries as (dtype, shape, bytes) triples.

Not .npy bytes: numpy parses an .npy header with ``ast.literal_eval``, which cost the
harness more than the rest of a model's unpacking.  The triple is numpy-version and
platform independent (the dtype string carries the byte order), so an arm64 worker
under qemu with another numpy speaks it too; an object dtype cannot be made from bytes
(numpy refuses), so nothing but numbers crosses.
"""

from __future__ import annotations

from collections.abc import Mapping
import hashlib
from typing import Any

import numpy as np

Wire = tuple[str, tuple[int, ...], bytes]


def pack(d: dict[str, np.ndarray]) -> dict[str, Wire]:
    return {k: _wire(np.asarray(v)) for k, v in d.items()}


def unpack(d: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Writable arrays (a copy of each buffer: the receiver may change them in place)."""
    return {k: np.frombuffer(b, np.dtype(dt)).reshape(shape).copy() for k, (dt, shape, b) in d.items()}


def _wire(a: np.ndarray) -> Wire:
    return a.dtype.str, tuple(a.shape), a.tobytes()  # C order, whatever a's strides


def digest(d: dict[str, np.ndarray]) -> str:
    """A name for these exact arrays (names, dtypes, shapes, bytes): the same on both sides of
    a pipe, whichever side computes it."""
    h = hashlib.sha1()
    for k in sorted(d):
        a = np.ascontiguousarray(d[k])
        h.update(f"{k}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()
