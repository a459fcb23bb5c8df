"""Knobs: the campaign's settings the CLI and the action share (issue 39, item 2).

A ``Knob`` is one setting: its name (``gbft fuzz --NAME`` and the action's input ``NAME``), its
default (as the text an input holds), how a text is read (``parse``), what a value must be
(``check``: one set of ranges, however the value was built) and its help.  Each knob is declared
once, as a field of ``records.config.Config`` made by ``knob(...)``; ``records.config.KNOBS``
reads them from there, the CLI adds one flag per knob and the action reads one input per knob.
This module holds the type and the parsers and checks they are made of.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .policy import POLICIES, SYMPTOMS

CHOOSERS = ("mcts", "random", "learned")  # search.guided's block choosers
MAX_BLOCKS = 100
MAX_SEED = 2**31 - 1

Parse = Callable[[str], Any]  # a text -> its value; ValueError: what it must be
Check = Callable[[Any], None]  # a value -> ValueError when it is out of range


@dataclass(frozen=True)
class Knob:
    name: str  # --name, and the action's input
    default: str  # as text
    parse: Parse
    check: Check
    help: str
    metavar: str | None = None
    # Part of the campaign's identity: ``--resume`` takes it from the output, not the command line.
    resumed: bool = False
    field: str = ""  # the Config field it is (set when records.config reads the fields)

    @property
    def value(self) -> Any:
        """The default as a value."""
        return self.parse(self.default)


def knob(name: str, default: str, parse: Parse, check: Check, help: str, metavar: str | None = None,
         resumed: bool = False) -> Any:
    """A Config field that is a knob: its default is the knob's, and the knob rides in the
    field's metadata (typed ``Any`` as ``dataclasses.field`` is, so the field keeps its type)."""
    k = Knob(name, default, parse, check, help, metavar, resumed)
    v = k.value
    if isinstance(v, (dict, list)):  # a mutable default: a fresh one per Config
        return dataclasses.field(default_factory=lambda: k.parse(default), metadata={"knob": k})
    return dataclasses.field(default=v, metadata={"knob": k})


def number(kind: type, lo: float, hi: float, want: str) -> tuple[Parse, Check]:
    def check(v: Any) -> None:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not lo <= v <= hi or (kind is int and v != int(v)):
            raise ValueError(f"must be {want}, got {v!r}")

    def parse(t: str) -> Any:
        try:
            v = kind(t.strip())
        except ValueError:
            raise ValueError(f"must be {want}, got {t!r}") from None
        check(v)
        return v
    return parse, check


_BLOCKS_WANT = f"must be MIN-MAX with 1 <= MIN <= MAX <= {MAX_BLOCKS} (e.g. 1-30)"


def blocks_check(v: Any) -> None:
    ok = isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, int) for x in v)
    if not ok or not 1 <= v[0] <= v[1] <= MAX_BLOCKS:
        raise ValueError(f"{_BLOCKS_WANT}, got {f'{v[0]}-{v[1]}' if ok else repr(v)}")


def parse_blocks(t: str) -> tuple[int, int]:
    lo, _, hi = t.strip().partition("-")
    try:
        v = (int(lo), int(hi or lo))
    except ValueError:
        raise ValueError(f"{_BLOCKS_WANT}, got {t!r}") from None
    blocks_check(v)
    return v


def choice(options: tuple[str, ...]) -> tuple[Parse, Check]:
    def check(v: Any) -> None:
        if v not in options:
            raise ValueError(f"must be one of {', '.join(options)}; got {v!r}")

    def parse(t: str) -> str:
        check(t.strip())
        return t.strip()
    return parse, check


def policy_check(v: Any) -> None:
    if not isinstance(v, Mapping) or any(c not in SYMPTOMS or p not in POLICIES for c, p in v.items()):
        raise ValueError(f"must be CLASS=POLICY pairs (classes: {', '.join(SYMPTOMS)}; policies: "
                         f"{', '.join(POLICIES)}), got {v!r}")


def list_only_check(v: Any) -> None:
    if not isinstance(v, (tuple, list)) or any(c not in SYMPTOMS for c in v):
        raise ValueError(f"must be symptom classes ({', '.join(SYMPTOMS)}), got {v!r}")


def text(t: str) -> str:
    return t.strip()


def text_check(v: Any) -> None:
    if not isinstance(v, str):
        raise ValueError(f"must be text, got {v!r}")
