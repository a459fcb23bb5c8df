"""Parameter domains: the declarative part of an operator spec.

A domain is what a parameter may take.  The corpus may narrow a spec's domain
(a smaller range, fewer choices) but never widen it; ``narrows`` checks that.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True)
class IntRange:
    lo: int
    hi: int

    def draw(self, rng: random.Random) -> int:
        return rng.randint(self.lo, self.hi)

    def contains(self, v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and self.lo <= v <= self.hi

    def to_json(self) -> dict[str, object]:
        return {"range": [self.lo, self.hi]}


@dataclass(frozen=True)
class FloatRange:
    lo: float
    hi: float

    def draw(self, rng: random.Random) -> float:
        # Rounded so the value survives JSON and reads well in a report.
        return round(rng.uniform(self.lo, self.hi), 4)

    def contains(self, v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and self.lo <= v <= self.hi

    def to_json(self) -> dict[str, object]:
        return {"range": [self.lo, self.hi]}


@dataclass(frozen=True)
class Choice:
    values: tuple[Any, ...]

    def draw(self, rng: random.Random) -> Any:
        return rng.choice(self.values)

    def contains(self, v: Any) -> bool:
        return v in self.values

    def to_json(self) -> dict[str, object]:
        return {"choice": list(self.values)}


Domain = Union[IntRange, FloatRange, Choice]


def parse_domain(raw: Any, like: Domain) -> Domain:
    """Parse a corpus domain (``{range: [lo, hi]}`` or ``{choice: [...]}``).

    ``like`` is the spec's own domain; the result must narrow it.  Raises
    ValueError with a short reason on any mismatch.
    """
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ValueError("a domain is a mapping with exactly one key, 'range' or 'choice'")
    (kind, val), = raw.items()
    if kind == "range":
        if not isinstance(like, (IntRange, FloatRange)):
            raise ValueError(f"expects a choice of {list(like.values)}")
        if not (isinstance(val, list) and len(val) == 2):
            raise ValueError("range must be [lo, hi]")
        lo, hi = val
        if isinstance(like, IntRange):
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi)):
                raise ValueError("range bounds must be integers")
            dom: Domain = IntRange(lo, hi)
        else:
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (lo, hi)):
                raise ValueError("range bounds must be numbers")
            dom = FloatRange(float(lo), float(hi))
        if lo > hi:
            raise ValueError(f"empty range [{lo}, {hi}]")
        if lo < like.lo or hi > like.hi:
            raise ValueError(f"range [{lo}, {hi}] is outside the allowed [{like.lo}, {like.hi}]")
        return dom
    if kind == "choice":
        if not isinstance(like, Choice):
            raise ValueError(f"expects a range within [{like.lo}, {like.hi}]")
        if not isinstance(val, list) or not val:
            raise ValueError("choice must be a non-empty list")
        bad = [v for v in val if v not in like.values]
        if bad:
            raise ValueError(f"choice values {bad} not in the allowed {list(like.values)}")
        return Choice(tuple(val))
    raise ValueError(f"unknown domain kind {kind!r} (allowed: range, choice)")
