"""Front ends: the model format an engine's converter reads, and who computes the expected outputs.

A front end is what a maintainer's users convert from: a frozen TensorFlow graph (``tf``, the
paper's path), a TFLite flatbuffer made from it (``tflite``: the same graph, the same
TensorFlow reference, the engine's other converter), or an ONNX model (``onnx``: its own block
corpus of exported-model operators, ONNX Runtime as the reference).  Each converter is a
separate code path with its own bugs, so fingerprints and reports name the front end.
A campaign may mix front ends (``tf,onnx``, ``parse_frontends``): each keeps its own corpus,
generator and coverage, since an ONNX operator is not the TensorFlow one of the same name.
The ONNX opsets the onnx front end writes (``OPSETS``, ``DEFAULT_OPSETS``) and their checks live
here too, at layer 0, since the configuration (``records.config``) checks them.
"""

from __future__ import annotations

from collections.abc import Iterable
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


# The opsets the ONNX front end writes.  17: every graph made before opsets were chosen (a
# graph's meta without "opset"), so old bundles' instance indices keep their meaning.  27: the
# newest ONNX Runtime 1.32 runs (its node tests pass up to 27; it has no kernel for SwiGLU-28's
# body), and MNN 3.6's converter reads models of 18 to 28.
LEGACY_OPSET = 17
NEWEST_OPSET = 27
OPSETS = tuple(range(LEGACY_OPSET, NEWEST_OPSET + 1))
# What a campaign writes unless told: the newest, and one model in four (search.opsets) at 17,
# which torch.onnx wrote by default for years and which still holds the nine operators whose
# newest versions ONNX Runtime runs no kernel of at 27.
DEFAULT_OPSETS = (NEWEST_OPSET, LEGACY_OPSET)


def check_opset(opset: object, what: str = "opset") -> int:
    """``opset`` if the ONNX front end writes it (one of OPSETS); else a one-line ValueError
    naming ``what`` and the value."""
    if type(opset) is not int or opset not in OPSETS:
        raise ValueError(f"{what} must be from {OPSETS[0]} to {OPSETS[-1]}, got {str(opset)[:20]!r}")
    return opset


def parse_opsets(text: str, what: str = "--opset") -> tuple[int, ...]:
    """``"27"`` (every model at 27) or ``"27,17"`` (most at the first, the main one; the rest
    at the others: search.opsets), each checked; a one-line ValueError naming the bad value."""
    parts = [p.strip() for p in str(text).split(",")]
    if not all(p.lstrip("-").isdigit() for p in parts):
        raise ValueError(f"{what} must be an opset or a comma list of them (e.g. 27 or 27,17), got {str(text)[:40]!r}")
    return check_opsets([int(p) for p in parts], what)


def check_opsets(opsets: Iterable[object], what: str = "--opset") -> tuple[int, ...]:
    """``opsets`` (the main one first) if each is one the ONNX front end writes, none twice and
    at least one; else a one-line ValueError naming ``what``."""
    out = tuple(check_opset(o, what) for o in opsets)
    if not out:
        raise ValueError(f"{what} must name an opset, got none")
    if len(set(out)) < len(out):
        raise ValueError(f"{what} lists an opset twice: {','.join(map(str, out))[:40]!r}")
    return out
