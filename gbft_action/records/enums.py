"""The enums records hold: a case's status, a failure's symptom class, a verdict against the
base build, a symptom class's policy, why a campaign stopped.  Each is a ``str`` Enum whose
value is what the files say, so a record reads and writes them as before."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class _Text(str, Enum):
    def __str__(self) -> str:
        return self.value


class Status(_Text):
    DCP = "DCP"  # data comparison pass
    MCF = "MCF"  # model conversion failure (engine)
    IF = "IF"  # inference failure (engine)
    DCF = "DCF"  # data comparison failure (engine disagrees with the reference)
    REF = "REF"  # the reference framework failed; never blamed on the engine
    GEN = "GEN"  # the generator built a model the reference rejects
    TIMEOUT = "TIMEOUT"  # a stage exceeded its time limit (stage says which)
    XPF = "XPF"  # cross-platform failure: the engine's outputs differ between platforms
    XBF = "XBF"  # cross-build failure: the build under test's outputs differ from the base build's
    XTF = "XTF"  # cross-thread failure: the outputs change with the engine's thread count


class Symptom(_Text):
    WRONG = "wrong-result"  # wrong on finite inputs with a finite reference
    NAN_INF = "nan-inf"  # NaN or Inf on one side only
    PRECISION = "precision"  # beyond the strict tolerance, within the loose one
    CRASH = "crash"  # a signal that reproduces in a fresh worker
    UNSUPPORTED = "unsupported"  # the converter says it does not support an operator
    CONVERSION = "conversion-error"  # the converter failed or built a wrong model (outputs missing)
    API = "api-error"  # the engine's binding raised
    TIMEOUT = "timeout"  # a stage hung
    NONDETERMINISTIC = "nondeterministic"  # outputs change between runs: uninitialised memory
    HEAP_DAMAGE = "heap-damage"  # a crash that does not reproduce fresh: damage left by earlier models
    TIE = "tie"  # differences explained by ties or undefined behaviour: not a bug
    # TensorFlow and ONNX Runtime disagree on the outputs the engine fails: the reference is in
    # question, not the engine (pipeline.Lane._cross_reference)
    REFERENCE = "reference-disagreement"


class Verdict(_Text):
    NEW = "new"
    PRE_EXISTING = "pre-existing"
    FIXED = "fixed"
    CHANGED = "changed"
    FLAKY_NEW = "flaky-new"
    FLAKY_FIXED = "flaky-fixed"  # the base build's failure did not show on every replay
    UNCHECKED = "unchecked"


class Policy(_Text):
    """What happens to a symptom class's root causes (policy)."""

    REPORT = "report"  # one issue each
    SUMMARY = "summary"  # listed (and in a tracking issue), not filed one by one
    IGNORE = "ignore"  # counted only


class StopReason(_Text):
    """What stopped a campaign: the loop's own reasons, or one from outside it."""

    BUDGET = "budget reached"
    MAX_MODELS = "max-models reached"
    DISK_FULL = "disk full"  # the output disk filled: the entry points err
    HARNESS_ERROR = "harness error"  # a bug of ours (the generator): the entry points err
    OUTSIDE = "stopped"  # a signal, a cancelled job, a caller: its own words


@dataclass(frozen=True)
class Stop:
    """Why a campaign stopped, as the code reads it (``reason``, ``detail``) and as the files keep
    it (``str()``: the words summary.json and campaign.json have always held; ``of_text`` reads
    them back)."""

    reason: StopReason
    detail: str = ""  # what filled, what failed, which signal

    def __str__(self) -> str:
        if self.reason is StopReason.OUTSIDE:
            return self.detail or self.reason.value
        return f"{self.reason.value}: {self.detail}" if self.detail else self.reason.value

    @property
    def cut_short(self) -> bool:
        """Stopped before its budget by a failure of its own (its summary covers what was judged)."""
        return self.reason in (StopReason.DISK_FULL, StopReason.HARNESS_ERROR)

    @staticmethod
    def of_text(text: str) -> Stop | None:
        """The stop a file's words say (None: none, ""); words of no reason of the loop's are an
        outside stop's own."""
        if not text:
            return None
        for r in StopReason:
            if r is not StopReason.OUTSIDE and (text == r.value or text.startswith(r.value + ": ")):
                return Stop(r, text[len(r.value) + 2:])
        return Stop(StopReason.OUTSIDE, text)
