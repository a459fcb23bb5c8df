"""Fingerprints: the one key for "the same bug".

Built from the stage, the status and what the engine said, after normalising
away what changes between occurrences of one bug (addresses, numbers, paths,
tensor names, line numbers, timestamps), the way syzbot normalises crash
titles.  Per status (the paper's rule, made precise):
  MCF  error kind (unsupported / check / signal / error), code (the check, the
       signal or the normalised message), the failing operator;
  IF   signal or error kind, the top meaningful native frames when a backtrace
       is there, the operator;
  DCF  the operator where outputs first diverge and the structure around it
       (its in-degree and input ranks).
  XPF  as DCF, for outputs that differ between platforms (never the platform
       names: the same bug on another pair of platforms is the same bug).
  XBF  as DCF, for outputs that differ between the build under test and the
       base build where TensorFlow cannot tell them apart.

What an engine's log means (its error formats, how it names operators) is the engine's
knowledge (``knowledge.base``), passed in; without it no log pattern is read.
"""

from __future__ import annotations

import re

from ..knowledge.base import GENERIC, EngineKnowledge, Failure
from ..graph.ir import Graph
from ..records.keys import Fingerprint

_TIMESTAMP = re.compile(r"\[\d{1,2}:\d{2}:\d{2}\]\s*(:\d+:)?")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:/[\w.+@-]+){2,}/?")
_TENSOR = re.compile(r"\b(?:n|a|in)\d+\b")
_LINE = re.compile(r"(?<=[\w.]):\d+\b")
_NUM = re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_SPACE = re.compile(r"\s+")
_FRAME = re.compile(r"^\s*#\d+\s+(?:0x[0-9a-f]+\s+in\s+)?([\w:~<>]+)", re.M)
_BORING_FRAMES = ("abort", "raise", "__libc", "gsignal", "_start", "start_thread", "clone", "Py", "_Py")


def normalise(text: str) -> str:
    """Make a message comparable across occurrences of one bug."""
    t = _TIMESTAMP.sub("", text)
    t = _HEX.sub("ADDR", t)
    t = _PATH.sub("PATH", t)
    t = _TENSOR.sub("T", t)
    t = _LINE.sub(":L", t)
    t = _NUM.sub("N", t)
    return _SPACE.sub(" ", t).strip()[:200]


def fingerprint(status: str, stage: str, message: str, log: str, g: Graph, op: str = "", node: str = "",
                signal: int | None = None, mismatch: str = "",
                knowledge: EngineKnowledge = GENERIC) -> Fingerprint | None:
    """The fingerprint of one judged engine failure (None for passes, REF, GEN);
    ``knowledge``: the engine's, to read its log with."""
    if status in ("DCF", "XPF", "XBF", "XTF"):
        return _dcf(g, node, op, mismatch, status)
    if status == "TIMEOUT" and stage in ("convert", "infer"):
        return Fingerprint(stage, status, "timeout", "", op)
    if status not in ("MCF", "IF"):
        return None
    if signal:
        import signal as _signal

        name = _signal.Signals(signal).name if signal in _signal.Signals._value2member_map_ else f"signal {signal}"
        frames = top_frames(log)
        return Fingerprint(stage, status, "signal", name + (f" in {frames}" if frames else ""),
                           op or op_named_in(log, g, knowledge))
    return _error(stage, status, message, log, g, op, knowledge)


def _error(stage: str, status: str, message: str, log: str, g: Graph, op: str,
           knowledge: EngineKnowledge) -> Fingerprint:
    f = knowledge.explain(stage, log, message)
    if f is None:  # words the engine's knowledge does not recognise: the message's first line
        text = message or log
        f = Failure("error", text.splitlines()[0] if text else "")
    # f.op None: the log does not say which operator; the caller's, or one the log names.
    blamed = f.op if f.op is not None else op or op_named_in(log, g, knowledge)
    return Fingerprint(stage, status, f.kind, normalise(f.code), blamed)


def _dcf(g: Graph, node: str, op: str, mismatch: str, status: str = "DCF") -> Fingerprint:
    structure = ""
    if node:
        try:
            n = g.node(node)
            ranks = ",".join(str(g.tensor_type(i).rank) for i in n.inputs)
            structure = f"in-degree {len(n.inputs)}, input ranks [{ranks}]"
            op = op or n.op
        except KeyError:
            pass
    return Fingerprint("compare", status, "mismatch", mismatch, op, structure)


def _op_of(g: Graph, name: str) -> str:
    try:
        return g.node(name).op
    except KeyError:
        return ""


def op_named_in(log: str, g: Graph, knowledge: EngineKnowledge = GENERIC) -> str:
    """An operator the log names: an op type in the engine's notation, or a node of the graph."""
    named = knowledge.op_named(log)
    if named:
        return named
    for name in re.findall(r"\b(?:n|a)\d+\b", knowledge.blaming(log)):
        op = _op_of(g, name)
        if op:
            return op
    return ""


def top_frames(log: str, n: int = 3) -> str:
    """The top meaningful native frames of a backtrace (gdb/ASan style), if any."""
    frames = [f for f in _FRAME.findall(log) if not f.startswith(_BORING_FRAMES)]
    return " < ".join(frames[:n])
