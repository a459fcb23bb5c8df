"""The comparison's tolerance, as a bundle records it (oracle compares with it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .io import Fields


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 1e-3
    atol: float = 1e-5
    min_ratio: float = 0.999

    def to_json(self) -> dict[str, float]:
        return asdict(self)

    @staticmethod
    def from_json(f: Fields) -> Tolerance:
        """A stored tolerance; a bound an older record lacks takes its default."""
        t = Tolerance()
        return Tolerance(f.float("rtol", t.rtol), f.float("atol", t.atol), f.float("min_ratio", t.min_ratio))
