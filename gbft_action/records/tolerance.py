"""The comparison's tolerance, as a bundle records it (oracle compares with it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 1e-3
    atol: float = 1e-5
    min_ratio: float = 0.999
