"""Shape arithmetic shared by the operator specs and the solver."""

from __future__ import annotations

import random

from ..graph.ir import Shape

# Largest tensor the generator lets through.  Small tensors keep a model in the
# millisecond range for both TensorFlow and the engine; bugs rarely need big ones.
MAX_ELEMS = 16384
MAX_RANK = 6


def prod(shape: Shape | list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def factorize(rng: random.Random, n: int, rank: int) -> Shape:
    """A random shape of ``rank`` dims whose product is ``n``."""
    dims = []
    rest = n
    for _ in range(rank - 1):
        d = rng.choice(divisors(rest))
        dims.append(d)
        rest //= d
    dims.append(rest)
    rng.shuffle(dims)
    return tuple(dims)


def to_rank4(rng: random.Random, n: int) -> Shape:
    """An NHWC shape holding ``n`` elements, batch 1, image-like when possible."""
    c = rng.choice([d for d in divisors(n) if d <= 16])
    hw = n // c
    h = rng.choice(divisors(hw))
    return (1, h, hw // h, c)


def slice_len(dim: int, begin: int | None, end: int | None, stride: int) -> int:
    """Length of x[begin:end:stride] on an axis of ``dim`` (TF == Python semantics)."""
    return len(range(dim)[slice(begin, end, stride)])


def conv_out(i: int, f: int, s: int, d: int, pad_total: int) -> int:
    """Paper eq. (9) generalised to asymmetric padding."""
    return (i + pad_total - d * (f - 1) - 1) // s + 1


def same_out(i: int, s: int) -> int:
    return -(-i // s)


def solve_explicit_padding(
    rng: random.Random, i: int, fs: list[int], ss: list[int], ds: list[int]
) -> tuple[int, int, int, int, int] | None:
    """Solve eqs. (9)-(13): find f, s, d and pads with oH == iH.

    Constraints: 0 <= pad_lo, pad_hi <= f; stride and dilation within their
    domains; dilation > 1 only with stride 1 (TensorFlow's CPU kernels reject
    both).  Returns (f, s, d, pad_lo, pad_hi) chosen at random among all
    solutions, or None when the domains allow none.
    """
    sols = []
    for f in fs:
        for s in ss:
            for d in ds:
                if d > 1 and s > 1:
                    continue
                total = (i - 1) * s + d * (f - 1) + 1 - i
                lo = total // 2
                hi = total - lo
                if 0 <= lo <= f and 0 <= hi <= f:
                    sols.append((f, s, d, lo, hi))
    return rng.choice(sols) if sols else None
