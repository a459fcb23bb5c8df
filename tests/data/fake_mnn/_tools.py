"""A fake MNN converter for tests: the "converted" model is the frozen TensorFlow graph itself."""

import os
import shutil


def mnnconvert(argv):
    if os.environ.get("FAKE_MNN_MODE") == "abort":  # heap damage glibc notices: SIGABRT, not SIGSEGV
        os.abort()
    shutil.copy(argv[argv.index("--modelFile") + 1], argv[argv.index("--MNNModel") + 1])
    return True
