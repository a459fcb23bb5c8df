"""Reading and writing a record's JSON file: strict on reading, atomic on writing."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

from ..statefile import write_atomic

T = TypeVar("T")
# The builtins under other names: Fields has methods named str, int, float and bool, which
# shadow them in its class body (and so in its annotations, to a type checker).
Text: TypeAlias = str
Int: TypeAlias = int
Float: TypeAlias = float
Bool: TypeAlias = bool


class RecordError(ValueError):
    """A record that is not what it should be: one line naming the file (or record) and field."""


def read_record(path: Path, what: str) -> dict[str, object]:
    """The JSON object in ``path``; a RecordError naming it (``what`` it should hold) otherwise."""
    if not path.exists():
        raise RecordError(f"{path}: no such file (the {what})")
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise RecordError(f"{path}: not valid JSON (truncated?): {e}") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object (the {what})")
    return data


def write_record(path: Path, data: Any) -> None:
    """``data`` as indented, key-sorted JSON, replacing ``path`` atomically (a kill leaves the
    old file or the new one, never half of one)."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


class Fields:
    """Typed access to one JSON object being read: each getter checks the exact type (bool is
    not an int, an int is a float) and names the record and field in its RecordError."""

    def __init__(self, d: Any, where: str) -> None:
        if not isinstance(d, Mapping):
            raise RecordError(f"{where}: not a JSON object")
        self.d, self.where = d, where

    def _bad(self, key: str, what: str) -> RecordError:
        return RecordError(f"{self.where}: {key!r} must be {what}, got {str(self.d.get(key))[:40]!r}")

    def str(self, key: Text, default: Text = "") -> Text:
        v = self.d.get(key, default)
        if v is None:
            return default
        if not isinstance(v, str):
            raise self._bad(key, "a string")
        return v

    def int(self, key: Text, default: Int = 0, minimum: Int | None = None) -> Int:
        v = self.d.get(key, default)
        if type(v) is not int or (minimum is not None and v < minimum):
            raise self._bad(key, "a whole number" + (f" of at least {minimum}" if minimum is not None else ""))
        return v

    def opt_int(self, key: Text) -> Int | None:
        return None if self.d.get(key) is None else self.int(key)

    def float(self, key: Text, default: Float = 0.0) -> Float:
        v = self.d.get(key, default)
        if type(v) not in (int, float):
            raise self._bad(key, "a number")
        return float(v)

    def opt_float(self, key: Text) -> Float | None:
        return None if self.d.get(key) is None else self.float(key)

    def bool(self, key: Text, default: Bool = False) -> Bool:
        v = self.d.get(key, default)
        if type(v) is not bool:
            raise self._bad(key, "true or false")
        return v

    def opt_bool(self, key: Text) -> Bool | None:
        return None if self.d.get(key) is None else self.bool(key)

    def strs(self, key: Text) -> tuple[Text, ...]:
        v = self.d.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise self._bad(key, "a list of strings")
        return tuple(v)

    def ints(self, key: Text) -> tuple[Int, ...]:
        v = self.d.get(key) or []
        if not isinstance(v, list) or not all(type(x) is int for x in v):
            raise self._bad(key, "a list of whole numbers")
        return tuple(v)

    def list(self, key: Text) -> list[Any]:
        """A list of anything (its items read by their own record)."""
        v = self.d.get(key) or []
        if not isinstance(v, list):
            raise self._bad(key, "a list")
        return v

    def mapping(self, key: Text) -> dict[Text, Any] | None:
        """A JSON object kept as it is (None when absent or null)."""
        v = self.d.get(key)
        if v is not None and not isinstance(v, Mapping):
            raise self._bad(key, "an object")
        return None if v is None else dict(v)

    def int_map(self, key: Text) -> dict[Text, Int]:
        """An object of counts: names to whole numbers."""
        v = self.mapping(key) or {}
        if not all(type(x) is int for x in v.values()):
            raise self._bad(key, "an object of names to whole numbers")
        return {str(k): x for k, x in v.items()}

    def float_map(self, key: Text) -> dict[Text, Float]:
        """An object of measures: names to numbers (whole or not)."""
        v = self.mapping(key) or {}
        if not all(type(x) in (int, float) for x in v.values()):
            raise self._bad(key, "an object of names to numbers")
        return {str(k): float(x) for k, x in v.items()}

    def str_map(self, key: Text) -> dict[Text, Text]:
        v = self.d.get(key) or {}
        if not isinstance(v, Mapping):
            raise self._bad(key, "an object")
        return {str(k): str(x) for k, x in v.items()}

    def version(self, latest: Int) -> Int:
        """The record's schema version (0: written before records had one); a newer one than
        this gbft reads is refused, not misread."""
        v = self.int("version", 0, minimum=0)
        if v > latest:
            raise RecordError(f"{self.where}: version {v} is newer than this gbft reads ({latest})")
        return v

    def obj(self, key: Text) -> Fields:
        return Fields(self.d.get(key) or {}, f"{self.where}: {key}")

    def opt(self, key: Text, read: Callable[[Fields], T]) -> T | None:
        """The nested object ``key`` read by ``read``, None when absent or null."""
        return None if self.d.get(key) is None else read(self.obj(key))

    def enum(self, key: Text, kind: Callable[[Text], T], default: Text = "") -> T:
        v = self.str(key, default)
        try:
            return kind(v)
        except ValueError:
            raise self._bad(key, f"one of {', '.join(m.value for m in kind)}") from None  # type: ignore[attr-defined]
