"""A converter command around the installed MNN (the command engine's contract):

    python BUILD/convert.py MODEL ARTIFACT

Converts a frozen TensorFlow graph with MNN's compiled converter.  A file ``REJECT`` beside
this script lists operators (comma-separated) whose models this build refuses, as a
regressed build of the converter would.
"""

import os
import sys

model, artifact = sys.argv[1], sys.argv[2]
reject = os.path.join(os.path.dirname(os.path.abspath(__file__)), "REJECT")
if os.path.exists(reject):
    data = open(model, "rb").read()
    for op in open(reject).read().split(","):
        if op.strip() and op.strip().encode() in data:
            sys.exit(f"Error: this build rejects {op.strip()}")
import _tools  # noqa: E402 - MNN's compiled converter (its Python wrappers send telemetry)

_tools.mnnconvert(["mnnconvert", "-f", "TF", "--modelFile", model, "--MNNModel", artifact, "--bizCode", "gbft"])
