"""The two keys of "the same bug": a fingerprint (one failing case's words, normalised) and a
root-cause key (what a maintainer calls one defect).  Their ids name bundles, issues and
markers, so they are computed here once, from the fields a record stores."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from .enums import Symptom
from .io import Fields


# Memory errors: one class, whichever signal shows (Fingerprint.same_failure).
MEMORY_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGABRT")


def signal_name(code: str) -> str:
    """A crash fingerprint's signal without its native frames ("SIGSEGV in foo" -> "SIGSEGV")."""
    return code.split(" in ", 1)[0]


@dataclass(frozen=True, order=True)
class Fingerprint:
    stage: str  # convert | infer | compare | reference
    status: str  # MCF | IF | DCF | TIMEOUT
    kind: str  # unsupported | check | signal | error | missing-output | mismatch | timeout
    code: str  # normalised check / signal / message / mismatch shape
    op: str  # the failing operator ("" when the engine does not say)
    structure: str = ""  # DCF: in-degree and input ranks of the diverging node
    # The model format converted (frontends): each converter is its own code path, so its bugs
    # are its own.  "" for tf, the first one, whose fingerprint ids predate front ends.
    frontend: str = ""

    @property
    def id(self) -> str:
        parts = (self.stage, self.status, self.kind, self.code, self.op, self.structure)
        key = "|".join((*parts, self.frontend) if self.frontend else parts)
        return hashlib.sha256(key.encode()).hexdigest()[:12]

    @property
    def memory_error(self) -> bool:
        return self.kind == "signal" and signal_name(self.code) in MEMORY_SIGNALS

    def same_failure(self, seen: Fingerprint | None) -> bool:
        """Whether ``seen`` is this failure again: the same fingerprint or, for a memory error,
        any memory error.  One out-of-bounds write crashes with SIGSEGV, SIGBUS or glibc's
        SIGABRT, at whichever operator next touches the damaged heap, from run to run: reading
        the base build's memory error as "failing otherwise" blamed a pull request for a
        pre-existing crash."""
        return seen is not None and (seen == self or (seen.memory_error and self.memory_error))

    @property
    def title(self) -> str:
        return f"[{self.frontend}] {self._title()}" if self.frontend else self._title()

    def _title(self) -> str:
        op = self.op or "an unidentified operator"
        if self.kind == "unsupported":  # by the converter, or at inference by the runtime
            return f"{self.status}: {'converter' if self.stage == 'convert' else 'engine'} does not support {op}"
        if self.kind == "check":
            return f"{self.status}: check failed in {self.stage} ({op}): {self.code[:80]}"
        if self.kind == "signal":
            return f"{self.status}: {self.code} during {self.stage} ({op})"
        if self.kind == "missing-output":
            return "IF: a model output is missing from the converted model"
        if self.kind == "mismatch" and self.status == "XPF":
            return f"XPF: results from {op} differ between platforms ({self.structure})"
        if self.kind == "mismatch" and self.status == "XTF":
            return f"XTF: results from {op} change with the thread count ({self.structure})"
        if self.kind == "mismatch" and self.status == "XBF":
            return f"XBF: results from {op} changed from the base build ({self.structure})"
        if self.kind == "mismatch":
            return f"DCF: wrong results from {op} ({self.structure})"
        if self.kind == "timeout":
            return f"TIMEOUT: {self.stage} hangs ({op})"
        return f"{self.status}: {self.stage} error ({op}): {self.code[:80]}"

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.frontend:  # tf: stored as before front ends
            del d["frontend"]
        return {**d, "id": self.id, "title": self.title}

    @staticmethod
    def from_json(d: Any, where: str = "fingerprint") -> Fingerprint:
        """A stored fingerprint (its id and title are recomputed, never trusted)."""
        f = Fields(d, where)
        return Fingerprint(f.str("stage"), f.str("status"), f.str("kind"), f.str("code"), f.str("op"),
                           f.str("structure"), f.str("frontend"))


def same_class(symptom: str) -> str:
    """The symptom a root cause's id is made of.  Garbage read from uninitialised memory is how a
    wrong geometry (an out-of-bounds read) shows on some inputs: one defect with the same
    operator's deterministic wrong values (a Pad of the batch axis gives zeros in constant mode,
    garbage in edge mode)."""
    return Symptom.WRONG if symptom == Symptom.NONDETERMINISTIC else symptom


SPECIAL_INPUT = "special-input"  # wrong only for NaN/Inf inputs: no special value in either output
_DIRECTION = {
    SPECIAL_INPUT: "differs from the reference on NaN/Inf inputs",
    "NaN->finite": "maps NaN to a finite number", "Inf->finite": "gives a finite number where the result is infinite",
    "finite->NaN": "gives NaN for a finite result", "finite->Inf": "overflows to infinity",
    "NaN->Inf": "gives an infinity for NaN", "Inf->NaN": "gives NaN where the result is infinite",
    "Inf->Inf": "gives an infinity of the wrong sign",
}


@dataclass(frozen=True)
class RootKey:
    symptom: str
    ops: tuple[str, ...]  # the blamed operator, or the minimised model's operators (a pattern)
    detail: str = ""  # nan-inf direction, crash signal/frames, error code, salient parameters
    isolated: bool = False  # the blame was confirmed by re-running the operator alone
    # Not part of the key: the minimised model's operators when the defect shows only in a
    # pattern (every operator right alone); the key names the operator where it shows.
    pattern: tuple[str, ...] = ()
    # The front end (frontends) whose converter showed it: "" for tf, whose keys predate front
    # ends; another front end's Concat is another converter's defect.
    frontend: str = ""
    # The operators one code path of the engine converts, the blamed one among them
    # (EngineKnowledge.converter_units): the key names the path, so that a defect of it is one
    # root cause whichever of its operators showed it.  () for most keys.
    unit: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        parts = [same_class(self.symptom), list(self.unit or self.ops), self.detail] + ([self.frontend] if self.frontend else [])
        raw = json.dumps(parts, separators=(",", ":"))
        return "rc-" + hashlib.sha256(raw.encode()).hexdigest()[:12]

    @property
    def subject(self) -> str:
        if not self.ops and self.pattern:
            return "a pattern (no operator fails alone; e.g. " + " -> ".join(self.pattern) + ")"
        if not self.ops:
            return "an unidentified operator"
        if self.unit:
            return " / ".join(self.unit)
        return self.ops[0] if len(self.ops) == 1 else "the pattern " + " -> ".join(self.ops)

    @property
    def title(self) -> str:
        return f"[{self.frontend}] {self._title()}" if self.frontend else self._title()

    def _title(self) -> str:
        s, subj, d = self.symptom, self.subject, self.detail
        if s == Symptom.WRONG and len(self.pattern) > 1 and self.pattern[-1] != subj:
            # The model's one addressing operator, blamed for a plan only the whole model shows.
            return f"{subj}: wrong results in " + " -> ".join(self.pattern) + " (each right alone)"
        if s == Symptom.WRONG and len(self.pattern) > 1:
            return f"{subj}: wrong results after " + " -> ".join(self.pattern[:-1]) + " (each right alone)"
        if s == Symptom.WRONG:
            # Named without proof (isolation was cut short or said nothing): the title says so.
            unproven = "" if self.isolated or len(self.ops) != 1 else "not yet shown wrong alone"
            return f"{subj}: wrong results" + (f" ({', '.join(x for x in (d, unproven) if x)})" if d or unproven else "")
        if s == Symptom.NAN_INF:
            return f"{subj} {_DIRECTION.get(d, d)}"
        if s == Symptom.PRECISION:
            return f"{subj}: precision beyond 0.1%"
        if s == Symptom.NONDETERMINISTIC:  # the parameters it needs, as for a wrong result
            return f"{subj}: output depends on uninitialised memory" + (f" ({d})" if d else "")
        if s == Symptom.CRASH and not self.ops:
            return f"{d or 'crash'}: no operator crashes alone (damage done earlier in the model)"
        if s == Symptom.CRASH:
            return f"{d or 'crash'} with {subj}"
        if s == Symptom.HEAP_DAMAGE and d == "wrong results":
            return "wrong results that do not come back on fresh workers (heap state left by earlier models)"
        if s == Symptom.HEAP_DAMAGE:
            return f"{d or 'crash'}: heap damage left by an earlier model"
        if s == Symptom.REFERENCE:
            return f"{subj}: TensorFlow and ONNX Runtime disagree (a reference question, not an engine defect)"
        if s == Symptom.UNSUPPORTED:
            return f"converter does not support {subj}"
        if s == Symptom.CONVERSION and not self.ops and self.pattern:
            return f"conversion error: {d} in {subj}"
        if s == Symptom.CONVERSION:
            return f"conversion error with {subj}" + (f": {d}" if d else "")
        if s == Symptom.TIMEOUT:
            return f"{d or 'a stage'} hangs with {subj}"
        return f"engine error with {subj}" + (f": {d}" if d else "")

    def to_json(self) -> dict[str, object]:
        d = {**asdict(self), "ops": list(self.ops), "pattern": list(self.pattern), "key": self.id, "title": self.title}
        if not self.frontend:  # tf: stored as before front ends
            del d["frontend"]
        if self.unit:
            d["unit"] = list(self.unit)
        else:  # stored as before units
            del d["unit"]
        return d

    @staticmethod
    def from_json(d: Any, where: str = "root cause") -> RootKey:
        """A stored key (its id and title are recomputed, never trusted)."""
        f = Fields(d, where)
        return RootKey(f.str("symptom"), f.strs("ops"), f.str("detail"), bool(f.d.get("isolated")), f.strs("pattern"),
                       f.str("frontend"), f.strs("unit"))
