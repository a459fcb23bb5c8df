"""A runner command around the installed MNN (the command engine's contract):

    python run.py ARTIFACT INPUTS_DIR OUTPUTS_DIR OUT1,OUT2,...

Reads one NAME.npy per input, runs the model with MNN's Module API, writes one NAME.npy
per requested output.
"""

import os
import sys

import numpy as np
import MNN
import MNN.expr as F

artifact, ins, outs, wanted = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
inputs = {f[:-4]: np.load(os.path.join(ins, f)) for f in sorted(os.listdir(ins)) if f.endswith(".npy")}
names = sorted(inputs)
net = MNN.nn.load_module_from_file(artifact, names, wanted, precision_mode=F.PrecisionMode.High)
ys = net.forward([F.const(inputs[k], list(inputs[k].shape), F.NHWC) for k in names])
if len(ys) != len(wanted):
    sys.exit(f"MNN returned {len(ys)} of {len(wanted)} outputs")
for name, y in zip(wanted, ys):
    if y.data_format == F.NC4HW4:
        y = F.convert(y, F.NHWC)
    np.save(os.path.join(outs, name + ".npy"), np.array(y.read()).copy())
