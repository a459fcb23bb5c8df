"""Arrays cross process (and platform) boundaries as .npy bytes."""

from __future__ import annotations

import hashlib
import io

import numpy as np


def to_npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def from_npy(b: bytes) -> np.ndarray:
    return np.load(io.BytesIO(b), allow_pickle=False)


def pack(d: dict[str, np.ndarray]) -> dict[str, bytes]:
    return {k: to_npy(v) for k, v in d.items()}


def unpack(d: dict[str, bytes]) -> dict[str, np.ndarray]:
    return {k: from_npy(v) for k, v in d.items()}


def digest(d: dict[str, np.ndarray]) -> str:
    """A name for these exact arrays (names, dtypes, shapes, bytes): the same on both sides of
    a pipe, whichever side computes it."""
    h = hashlib.sha1()
    for k in sorted(d):
        a = np.ascontiguousarray(d[k])
        h.update(f"{k}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()
