"""A fake MNN converter for tests: the "converted" model is the frozen TensorFlow graph itself."""

import os
import shutil


def mnnconvert(argv):
    mode = os.environ.get("FAKE_MNN_MODE")
    if mode == "abort":  # heap damage glibc notices: SIGABRT, not SIGSEGV
        os.abort()
    if mode == "abort-once" and not os.path.exists(os.environ["FAKE_MNN_ONCE"]):  # this run's heap state only
        open(os.environ["FAKE_MNN_ONCE"], "w").close()
        os.abort()
    shutil.copy(argv[argv.index("--modelFile") + 1], argv[argv.index("--MNNModel") + 1])
    return True
