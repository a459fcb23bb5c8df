"""The environment TensorFlow reads when it loads, the same wherever the reference runs.

TensorFlow turns its oneDNN kernels on by default only on CPUs with AVX-512 class
features.  Without them it falls back to Eigen kernels that (TF 2.21) reject a
DepthwiseConv2dNative with dilations (a tenth of random models) and give other NaN
semantics (Softmax over a NaN: oneDNN makes the whole row NaN).  So the reference, and the
verdict built on it, would depend on the runner's CPU.  Forcing oneDNN on makes it the same
on every x86 machine (and oneDNN with ACL on arm64).

Framework-free.
"""

from __future__ import annotations

import os

TF_ENV = {"TF_ENABLE_ONEDNN_OPTS": "1"}  # forced: the reference must not follow the CPU
TF_QUIET = {"TF_CPP_MIN_LOG_LEVEL": "2"}  # a default: a user may ask for TensorFlow's logs


def set_tf_env() -> None:
    """Call before TensorFlow is imported in this process (it reads these once, at load)."""
    os.environ.update(TF_ENV)
    for k, v in TF_QUIET.items():
        os.environ.setdefault(k, v)
