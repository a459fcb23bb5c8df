"""Hand-written single-operator ONNX models whose MNN 3.6.1 behaviour was read on 2026-11-23.

    python bench/onnx_mnn_cases.py [NAME ...]

Each case is one node of the ONNX registry (``ops.onnx_specs``) on a small input,
run in ONNX Runtime (the reference) and in MNN (converter ``-f ONNX``, Module API,
NCHW inputs; a fresh process per model: ``bench/onnx_mnn.py``).  ``KNOWN`` records
what MNN 3.6.1 did: ``agree`` (rtol 1e-3, atol 1e-4), ``differs`` or ``crash``
(the converter died by a signal).  The script prints every case and marks with
``!`` the ones that no longer behave as recorded (a fix, or a new defect).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from onnx_mnn import run_children  # noqa: E402

from gbft_action.graph.ir import Graph, Node, TensorType  # noqa: E402
from gbft_action.ops.onnx_specs import ONNX_SPECS  # noqa: E402
from gbft_action.reference.onnx_worker import OnnxReferenceHandler  # noqa: E402
from gbft_action.wire.arrays import unpack  # noqa: E402


def case(op: str, shape: tuple[int, ...], params: dict, n_in: int = 1) -> Graph:
    x = TensorType(shape)
    out = ONNX_SPECS[op].infer([x] * n_in, params)
    return Graph({"in0": x}, [Node("n0", op, ["in0"] * n_in, params, out, block=op)], ["n0"], seed=4)


def gemm(**kw) -> Graph:
    return case("Gemm", (3, 4), {"n": 5, "transA": False, "transB": False, "alpha": 1.0, "beta": 1.0, "c": "none", **kw})


def conv(auto_pad: str) -> Graph:
    return case("Conv", (1, 2, 5, 5), {"kh": 2, "kw": 2, "sh": 1, "sw": 1, "dh": 1, "dw": 1, "out_ch": 2, "bias": False,
                                       "groups": "one", "group": 1, "auto_pad": auto_pad, "pads": [0, 0, 0, 0]})


def resize(mode: str, ctm: str) -> Graph:
    return case("Resize", (1, 2, 5, 6), {"mode": mode, "coordinate_transformation_mode": ctm,
                                         "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75,
                                         "exclude_outside": False, "by": "sizes", "sh": 1.0, "sw": 1.0,
                                         "out_h": 8, "out_w": 4})


def grid(mode: str, pad: str, ac: bool) -> Graph:
    return case("GridSample", (1, 2, 5, 6), {"mode": mode, "padding_mode": pad, "align_corners": ac,
                                             "out_h": 4, "out_w": 3})


def rnn(op: str, direction: str = "forward", **kw) -> Graph:
    d = 2 if direction == "bidirectional" else 1
    p = {"hidden_size": 3, "direction": direction, "layout": 0, **kw}
    return Graph({"in0": TensorType((3, 2, 4))}, [Node("n0", op, ["in0"], p, TensorType((3, d, 2, 3)), block=op)],
                 ["n0"], seed=4)


CASES: dict[str, tuple[Graph, str]] = {
    "gemm-plain": (gemm(), "agree"),
    "gemm-transA": (gemm(transA=True), "differs"),
    "gemm-transB": (gemm(transB=True), "agree"),
    "gemm-alpha-beta-row": (gemm(alpha=0.5, beta=0.5, c="row"), "agree"),
    "gatherelements-negative-indices": (case("GatherElements", (2, 3, 4), {"axis": 2, "ishape": [2, 3, 3]}), "differs"),
    "gathernd-negative-indices": (case("GatherND", (3, 4, 5), {"batch_dims": 0, "k": 2, "m": 4}), "differs"),
    "less-constant-tensor": (case("Less", (1, 3, 4, 5), {"operand": "same"}), "differs"),
    "less-constant-channel": (case("Less", (1, 3, 4, 5), {"operand": "channel"}), "differs"),
    "where-scalar-threshold": (case("Where", (1, 3, 4, 5), {"operand": "same", "threshold": 0.1}), "agree"),
    "pad-reflect-nc": (case("Pad", (2, 3, 4, 5), {"mode": "reflect", "pads": [[1, 0], [0, 1], [0, 0], [0, 0]],
                                                   "value": 0.0}), "agree"),
    "layernorm-axis0": (case("LayerNormalization", (2, 3, 4), {"axis": 0, "epsilon": 0.001}), "differs"),
    "layernorm-axis1": (case("LayerNormalization", (2, 3, 4), {"axis": 1, "epsilon": 0.001}), "agree"),
    "conv-same-lower-even-kernel": (conv("SAME_LOWER"), "differs"),
    "conv-same-upper-even-kernel": (conv("SAME_UPPER"), "agree"),
    "matmul-1d-vector": (case("MatMul", (1, 2, 3, 4), {"form": "vector", "n": 3}), "agree"),
    "matmul-1d-vector-unit-dims": (case("MatMul", (1, 1, 12, 3), {"form": "vector", "n": 3}), "differs"),
    "matmul-1d-left-operand": (case("MatMul", (4,), {"form": "weight", "n": 3}), "agree"),
    "argmax-select-last": (case("ArgMax", (2, 5), {"axis": 1, "keepdims": True, "select_last_index": True}), "agree"),
    "resize-linear-half_pixel": (resize("linear", "half_pixel"), "agree"),
    "resize-nearest-tf_crop_and_resize": (resize("nearest", "tf_crop_and_resize"), "differs"),
    "resize-linear-tf_crop_and_resize": (resize("linear", "tf_crop_and_resize"), "differs"),
    "resize-cubic-half_pixel": (resize("cubic", "half_pixel"), "differs"),
    "resize-cubic-pytorch_half_pixel": (resize("cubic", "pytorch_half_pixel"), "differs"),
    "resize-cubic-align_corners": (resize("cubic", "align_corners"), "agree"),
    "gridsample-bilinear-zeros": (grid("bilinear", "zeros", False), "agree"),
    "gridsample-bilinear-reflection-aligned": (grid("bilinear", "reflection", True), "differs"),
    "gridsample-bicubic-border": (grid("bicubic", "border", False), "differs"),
    "lstm-forward": (rnn("LSTM"), "crash"),
    "gru-linear-before-reset": (rnn("GRU", linear_before_reset=True), "agree"),
    "gru-no-linear-before-reset": (rnn("GRU", linear_before_reset=False), "differs"),
}


def outcome(r: dict) -> str:
    if r.get("stage", "").startswith("crash"):
        return "crash"
    if r.get("stage") != "done":
        return r.get("stage", "missing")
    return "agree" if r.get("agree") else "differs"


def main(names: list[str]) -> int:
    root = Path(tempfile.mkdtemp(prefix="onnx-mnn-cases-"))
    h = OnnxReferenceHandler()
    jobs = []
    for name in names or list(CASES):
        g, _ = CASES[name]
        d = root / name
        r = h.build({"op": "build", "graph": g.to_json(), "dir": str(d)})
        assert r["ok"], (name, r)
        np.savez(d / "io.npz", **unpack(r["inputs"]), **unpack(r["expected"]))
        jobs.append({"block": name, "dir": str(d), "outputs": g.outputs})
    res = run_children(jobs, root, 1)
    changed = 0
    for i, job in enumerate(jobs):
        got, known = outcome(res.get(i, {})), CASES[job["block"]][1]
        changed += got != known
        print(f"{'!' if got != known else ' '} {job['block']:40} {got:8} (recorded: {known})")
    print(f"{changed} of {len(jobs)} behave otherwise than recorded; models under {root}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
