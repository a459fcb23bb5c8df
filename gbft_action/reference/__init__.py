"""Materialisers (IR -> a framework's model), their code printers and reference workers.
"""

from __future__ import annotations

from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable[..., object])


def registrar(table: dict[str, F]) -> Callable[..., Callable[[F], F]]:
    """``@deco("Op1", "Op2")`` puts the function in ``table`` under each operator name (the
    emitters and code printers of each framework are such tables)."""
    def register(*names: str) -> Callable[[F], F]:
        def deco(fn: F) -> F:
            for n in names:
                table[n] = fn
            return fn
        return deco
    return register
