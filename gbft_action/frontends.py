"""Front ends: the model format an engine's converter reads, and who computes the expected outputs.

A front end is what a maintainer's users convert from: a frozen TensorFlow graph (``tf``, the
paper's path), a TFLite flatbuffer made from it (``tflite``: the same graph, the same
TensorFlow reference, the engine's other converter), or an ONNX model (``onnx``: its own block
corpus of exported-model operators, ONNX Runtime as the reference).  Each converter is a
separate code path with its own bugs, so fingerprints and reports name the front end.
A campaign may mix front ends (``tf,onnx``, ``parse_frontends``): each keeps its own corpus,
generator and coverage, since an ONNX operator is not the TensorFlow one of the same name.

May import: nothing of the package (the host, the workers and the action all read it).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from .records.keys import Fingerprint

CORPORA = Path(str(files("gbft_action") / "corpora"))  # package data


@dataclass(frozen=True)
class Frontend:
    name: str  # as the user writes it (--frontend) and as reports show it
    reference: str  # the reference worker's target (workers.serve.REFERENCES)
    model: str  # the file in the case folder the engine's converter reads
    format: str  # the format name engine adapters know (EngineAdapter.formats)
    corpus: str  # the default block corpus (its file name under gbft_action/corpora)

    @property
    def default_corpus(self) -> Path:
        return CORPORA / self.corpus


FRONTENDS: dict[str, Frontend] = {
    "tf": Frontend("tf", "tf", "model.pb", "pb", "tensorflow-mnn.yaml"),
    "tflite": Frontend("tflite", "tf", "model.tflite", "tflite", "tflite-mnn.yaml"),
    # Every operator by default (issue 26): onnx-mnn.yaml's blocks plus the recorded operators.
    "onnx": Frontend("onnx", "onnx", "model.onnx", "onnx", "onnx-all.yaml"),
}
DEFAULT_FRONTEND = FRONTENDS["tf"]


def parse_frontend(text: str) -> Frontend:
    """``tf`` | ``tflite`` | ``onnx``; a one-line error naming the bad value."""
    name = (text or "tf").strip().lower()
    if name not in FRONTENDS:
        raise ValueError(f"unknown front end {text!r} (known: {', '.join(FRONTENDS)})")
    return FRONTENDS[name]


def parse_frontends(text: str) -> tuple[Frontend, ...]:
    """One front end or a comma list of them (``tf,onnx``: a mixed campaign), in the order given;
    a one-line error naming the bad value (unknown, empty or given twice)."""
    names = [n.strip().lower() for n in (text or "tf").split(",")]
    for i, n in enumerate(names):
        if not n:
            raise ValueError(f"empty front end in {text!r} (write e.g. tf,onnx)")
        if n in names[:i]:
            raise ValueError(f"front end {n!r} given twice in {text!r}")
    return tuple(parse_frontend(n) for n in names)


def corpus_file(frontends: tuple[Frontend, ...], corpus: str) -> str:
    """The corpus a campaign records: the one given, else its one front end's default; "" for
    a mixed campaign without one (each front end takes its own default)."""
    if corpus or len(frontends) > 1:
        return corpus
    return str(frontends[0].default_corpus)


def frontend_of(fingerprint: Fingerprint) -> Frontend:
    """The front end a bundle's fingerprint was found through (replays use the same one)."""
    return parse_frontend(fingerprint.frontend or "tf")
