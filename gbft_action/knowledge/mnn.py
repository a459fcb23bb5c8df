"""What the host knows of Alibaba MNN: its log formats, its package, its repro stage (never
imports MNN: the host reads it).

MNN's converter and runtime write free-form English to stdout/stderr (the worker's log):
  ``[20:15:00] :220: These Op Not Support: Tensorflow::ResizeArea | Tensorflow::X``
      the converter has no conversion for these op types (or one failed, see below);
  ``==== output_shape is not consistent with inferred output shape in MNN. ====``
  `` ====Converte Tensorflow's Op n26 , type = Conv2DBackpropInput, failed, ...``
      the converter computed another output shape than the model's: a conversion defect
      of an op it does support, which MNN then also lists under "Not Support";
  ``Check failed: <condition>``  an assertion in MNN's code; one whose message states a
      limit (``==> "MNN SoftmaxCrossEntropyLoss only support 1 output"``) is missing support;
  ``Check failed: creator ==> NOT_SUPPORTED_OP: [ ARG_MAX ]``  its TFLite converter has no
      conversion for this TFLite builtin (an unsupported operator, named as TFLite names it);
  ``PipelineModule:: Can't find output n18 from the model``  the converter dropped an
      output (folded it into a constant);
  ``Converted Failed!``  the converter's last words on any failure (says nothing of why).

At inference, a model that converted can still hold what the runtime cannot run; it then
returns fewer outputs and says why:
  ``Don't support type [Dropout]``  no execution for this op type at all;
  ``CpuBinary: unsupported data type (bits: 8, code: 0)``  no binary op for this element type.
These are missing support, listed in the tracking issue, not a defect each.  (MNN also
says ``Create execution error : 7`` with no operator named: left a conversion error.)

The patterns are the ones fingerprints were built from before they moved here: a change
to them changes fingerprint ids, which users' issue markers and state files hold
(tests/test_engine_knowledge.py pins ids of real MNN logs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .base import ERROR_WORDS, EngineKnowledge, Failure, Package

_NOT_SUPPORT = re.compile(r"Not Support:\s*((?:\w+::\w+\s*\|?\s*)+)", re.I)
_CHECK = re.compile(r"Check failed:\s*(.+)")
_TFLITE_NOT_SUPPORTED = re.compile(r"NOT_SUPPORTED_OP: \[ (\w+) \]")
_NO_OUTPUT = re.compile(r"Can't find output (\S+) from the model")
_OP_TYPE = re.compile(r"(?:Tensorflow|TF|Onnx|Tflite)::(\w+)", re.I)
_SHAPE_MISMATCH = "output_shape is not consistent with inferred output shape"
_OP_FAILED = re.compile(r"Converte \w+'s Op \S+ , type = (\w+), failed")
_RUNTIME_NO_TYPE = re.compile(r"Don't support type \[(\w+)\]")
# An assertion whose message states a limit: "MNN SoftmaxCrossEntropyLoss only support 1 output"
_ONLY_SUPPORTS = re.compile(r"MNN (\w+) only supports? ")
# Not "Create execution error : N" alone: it names no operator, and in a model of many the
# caller's guess was another one (a Unary op's failure listed as ReverseSequence's).
_RUNTIME_NO_EXECUTION = re.compile(r"CpuBinary: unsupported data type \(bits: \d+, code: \d+\)")
PRECISIONS = ("high", "normal", "low")  # MNN's PrecisionMode, GBFT_MNN_PRECISION (engines/mnn.py)
THREADS = ("1", "4")  # the session's thread count, GBFT_MNN_THREADS
SWITCH = ("off", "on")  # a converter flag: --transformerFuse (GBFT_MNN_TRANSFORMER_FUSE)
WEIGHT_BITS = ("off", "8", "4")  # the converter's --weightQuantBits (GBFT_MNN_WEIGHT_QUANT_BITS)


class MNNKnowledge(EngineKnowledge):
    name = "mnn"
    package = Package(pip="MNN")
    repro_template = "engine_mnn.py.j2"
    error_words = re.compile(f"(Not Support|Check failed|{ERROR_WORDS})")
    not_errors = ("Converted Failed",)
    # The ONNX converter's note on an optional input left out ("n8 has empty input, the index is
    # 2": a NegativeLogLikelihoodLoss without weights): it took the node; a model that then
    # failed with "Unary Op can not execute" was filed under that loss.
    notes = re.compile(r"Check it out ==> \S+ has empty input")
    setting_vars = {"precision": ("GBFT_MNN_PRECISION", PRECISIONS), "threads": ("GBFT_MNN_THREADS", THREADS),
                    "transformer_fuse": ("GBFT_MNN_TRANSFORMER_FUSE", SWITCH),
                    "weight_quant_bits": ("GBFT_MNN_WEIGHT_QUANT_BITS", WEIGHT_BITS)}

    threads_oracle = {"threads": "4"}
    # MNN's ONNX converter: tools/converter/source/optimizer/onnxextra/OnnxReduceL2.cpp lowers
    # the five composite reductions in one transform (reading axes from the attribute only: at
    # opset 18+ all five reduce every axis), and onnx/ArgMaxOnnx.cpp converts ArgMax and ArgMin
    # in one function (which ignores select_last_index); onnxextra/OnnxLogSoftmax.cpp registers one
    # transform for SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (whose mean divides by
    # every element, ignored ones too).
    converter_units = {"onnx": (("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"),
                                ("ArgMax", "ArgMin"), ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"))}

    # MNN's source tree, as a maintainer names its parts (engine coverage, issue 38): the
    # converter's front ends and optimiser passes, then the runtime from the most specific folder.
    source_modules = (("tools/converter/source/onnx", "converter: onnx"),
                      ("tools/converter/source/tflite", "converter: tflite"),
                      ("tools/converter/source/tensorflow", "converter: tensorflow"),
                      ("tools/converter/source/optimizer", "converter: optimiser"),
                      ("tools/converter", "converter: other"),
                      ("source/geometry", "geometry"), ("source/shape", "shape"),
                      ("source/backend/cpu/x86_x64", "x86 kernels"), ("source/backend/cpu/arm", "ARM kernels"),
                      ("source/backend/cpu", "CPU compute"), ("source/core", "core"),
                      ("express", "express"), ("pymnn", "python binding"),
                      # code of its own in headers: flatbuffers' generated (un)packing, templates
                      # the C++ library instantiated out of line, the bundled protobuf
                      ("schema/current", "schema (flatbuffers)"), ("3rd_party", "third party"),
                      ("include/c++", "C++ library"), ("source/utils", "core"))

    def half_arithmetic(self, settings: Mapping[str, str]) -> bool:
        # Low precision runs float16 kernels where the CPU has them (ARMv8.2's FP16); on
        # others MNN keeps float32, and float16's bound only makes the check looser there.
        return settings.get("precision") == "low"

    def weight_bits(self, settings: Mapping[str, str]) -> int:
        bits = settings.get("weight_quant_bits", "off")
        return int(bits) if bits.isdigit() else 0

    def explain(self, stage: str, log: str, message: str) -> Failure | None:
        m = _NOT_SUPPORT.search(log) or _NOT_SUPPORT.search(message)
        if m:
            return _not_supported(m, log)
        m = _TFLITE_NOT_SUPPORTED.search(log) or _TFLITE_NOT_SUPPORTED.search(message)
        if m:  # its TFLite converter asserts instead ("Check failed: creator ==> ..."): no creator for this builtin
            return Failure("unsupported", "", m.group(1), m.group(0))
        m = _CHECK.search(log) or _CHECK.search(message)
        if m and (only := _ONLY_SUPPORTS.search(m.group(1))):  # an assertion that states a limit
            return Failure("unsupported", "", only.group(1), m.group(0))
        if m:
            return Failure("check", m.group(1), None, m.group(0))
        m = _RUNTIME_NO_TYPE.search(log)
        if m:
            return Failure("unsupported", "", m.group(1), m.group(0))
        m = _RUNTIME_NO_EXECUTION.search(log)
        if m and stage == "infer":  # the failing operator, as the caller knows it
            return Failure("unsupported", "", None, m.group(0))
        m = _NO_OUTPUT.search(log)
        if m:
            # One bug whatever the operator: the converter drops outputs it folds
            # into constants (seen with Shape/Cast-fed chains of many op types).
            return Failure("missing-output", "", "", m.group(0))
        return None

    def op_named(self, log: str) -> str:
        m = _OP_TYPE.search(log)
        return m.group(1) if m else ""



def _not_supported(m: re.Match[str], log: str) -> Failure:
    """"Not Support" lists every op type whose conversion failed; those that failed on MNN's
    own shape check are supported ops converted wrongly, not missing ones."""
    listed = sorted(x.split("::")[1] for x in re.findall(r"\w+::\w+", m.group(1)))
    misshaped = _shape_failures(log)
    missing = [op for op in listed if op not in misshaped]
    if missing:  # the sorted first: one fingerprint however many the converter lists
        return Failure("unsupported", "", missing[0], m.group(0))
    return Failure("error", _SHAPE_MISMATCH, sorted(misshaped)[0], m.group(0))


def _shape_failures(log: str) -> set[str]:
    """Op types whose conversion failed right after MNN's output-shape check did."""
    failed, pending = set(), False
    for line in log.splitlines():
        if _SHAPE_MISMATCH in line:
            pending = True
        elif pending and (f := _OP_FAILED.search(line)):
            failed.add(f.group(1))
            pending = False
    return failed
