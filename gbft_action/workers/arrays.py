"""Arrays cross process (and platform) boundaries as .npy bytes."""

from __future__ import annotations

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
