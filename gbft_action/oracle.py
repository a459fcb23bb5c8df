"""Statuses and the output comparison (paper IV: DCP/MCF/IF/DCF).

A case passes (DCP) when, for every output, at least ``min_ratio`` (99.9%) of the
elements are close: ``|actual - expected| <= atol + rtol * |expected|`` with
``rtol`` 0.1% (the paper's relative error) and a small ``atol`` (1e-5) so that
values near zero, where relative error is meaningless (a sum of terms that
cancel), do not fail on float rounding.  NaN matches NaN and an infinity matches
the same infinity; NaN or Inf on one side only is a mismatch (the paper's
sigmoid(NaN) and x/0 cases).  A shape mismatch fails outright; values of
different dtypes (int32 from the engine, int64 from TensorFlow; bool) are
compared as numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np


class Status(str, Enum):
    DCP = "DCP"  # data comparison pass
    MCF = "MCF"  # model conversion failure (engine)
    IF = "IF"  # inference failure (engine)
    DCF = "DCF"  # data comparison failure (engine disagrees with the reference)
    REF = "REF"  # the reference framework failed; never blamed on the engine
    GEN = "GEN"  # the generator built a model the reference rejects
    TIMEOUT = "TIMEOUT"  # a stage exceeded its time limit (stage says which)
    XPF = "XPF"  # cross-platform failure: the engine's outputs differ between platforms
    XBF = "XBF"  # cross-build failure: the build under test's outputs differ from the base build's

    def __str__(self) -> str:
        return self.value


ENGINE_FAILURES = (Status.MCF, Status.IF, Status.DCF, Status.XPF, Status.XBF)


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 1e-3
    atol: float = 1e-5
    min_ratio: float = 0.999


@dataclass
class OutputDiff:
    name: str
    ok: bool
    ratio: float  # share of elements within tolerance
    reason: str = ""
    worst: list[dict[str, Any]] = field(default_factory=list)  # index, expected, actual

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "ratio": self.ratio, "reason": self.reason, "worst": self.worst}


def compare(expected: np.ndarray, actual: np.ndarray, name: str = "", tol: Tolerance = Tolerance(),
            n_worst: int = 5) -> OutputDiff:
    e = np.asarray(expected)
    a = np.asarray(actual)
    if e.shape != a.shape:
        # Some engines drop or add unit dims; same data in another shape is still a bug to report.
        return OutputDiff(name, False, 0.0, f"shape {list(a.shape)} != expected {list(e.shape)}")
    if e.size == 0:
        return OutputDiff(name, True, 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        e64 = e.astype(np.float64)
        a64 = a.astype(np.float64)
        # Only finite pairs can be "close": |inf - x| <= rtol * inf would pass anything.
        close = np.isfinite(e64) & np.isfinite(a64) & (np.abs(a64 - e64) <= tol.atol + tol.rtol * np.abs(e64))
        same_special = (np.isnan(e64) & np.isnan(a64)) | (np.isinf(e64) & (a64 == e64))
    ok_mask = close | same_special
    ok_mask &= ~(np.isnan(e64) ^ np.isnan(a64))
    ratio = float(ok_mask.mean())
    ok = ratio >= tol.min_ratio
    worst = [] if ok else _worst(e64, a64, ok_mask, n_worst)
    reason = "" if ok else f"{(~ok_mask).sum()} of {e.size} elements differ ({100 * (1 - ratio):.3f}%)"
    return OutputDiff(name, ok, ratio, reason, worst)


def _worst(e: np.ndarray, a: np.ndarray, ok: np.ndarray, n: int) -> list[dict[str, Any]]:
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a - e)
    err = np.where(np.isnan(err), np.inf, err)
    err = np.where(ok, -1.0, err)
    idx = np.argsort(err.ravel())[::-1][:n]
    out = []
    for i in idx:
        if ok.ravel()[i]:
            break
        out.append({"index": [int(x) for x in np.unravel_index(i, e.shape)],
                    "expected": _num(e.ravel()[i]), "actual": _num(a.ravel()[i])})
    return out


def _num(x: float) -> float | str:
    return float(x) if np.isfinite(x) else str(x)


def judge_outputs(expected: dict[str, np.ndarray], actual: dict[str, np.ndarray], names: list[str],
                  tol: Tolerance = Tolerance()) -> list[OutputDiff]:
    diffs = []
    for n in names:
        if n not in actual:
            diffs.append(OutputDiff(n, False, 0.0, "output missing from the engine's results"))
        else:
            diffs.append(compare(expected[n], actual[n], n, tol))
    return diffs
