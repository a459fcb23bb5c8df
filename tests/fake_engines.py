"""Engine adapters that misbehave on purpose, for the crash-isolation tests.

They wrap the real MNN adapter and misbehave on a deterministic share of the
models (chosen by the case index), so the rest of the campaign runs
on the real engine.  The worker imports them by ``module:Class``.
"""

from __future__ import annotations

import os
import signal
import time
import zlib
from pathlib import Path

from gbft_action.engines.mnn import MNNEngine


def _selected(model: Path, every: int = 3) -> bool:
    # By the case's index (its folder's name) where there is one: the frozen model's
    # bytes once picked none of 12 models in a CI run, while the same models elsewhere
    # picked 5.
    name = model.parent.name
    return (int(name) if name.isdigit() else zlib.crc32(model.read_bytes())) % every == 0


class SegfaultOnConvert(MNNEngine):
    """SIGSEGV in the converter on about a third of the models."""

    def convert(self, model, fmt, workdir):
        if _selected(model):
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().convert(model, fmt, workdir)


class AbortOnInfer(MNNEngine):
    """SIGABRT during inference on about a third of the models."""

    def convert(self, model, fmt, workdir):
        self._crash = _selected(model)
        return super().convert(model, fmt, workdir)

    def infer(self, artifact, inputs, outputs):
        if self._crash:
            print("fake engine: about to abort", flush=True)
            os.abort()
        return super().infer(artifact, inputs, outputs)


class HangOnInfer(MNNEngine):
    """Hangs in inference on about a third of the models."""

    def convert(self, model, fmt, workdir):
        self._hang = _selected(model)
        return super().convert(model, fmt, workdir)

    def infer(self, artifact, inputs, outputs):
        if self._hang:
            time.sleep(3600)
        return super().infer(artifact, inputs, outputs)


class RunawayMemory(MNNEngine):
    """Allocates without bound during inference on about a third of the models."""

    def convert(self, model, fmt, workdir):
        self._hog = _selected(model)
        return super().convert(model, fmt, workdir)

    def infer(self, artifact, inputs, outputs):
        if self._hog:
            hoard = []
            while True:
                hoard.append(bytearray(256 << 20))
        return super().infer(artifact, inputs, outputs)


class HangOnConvert(MNNEngine):
    """Hangs in every conversion: a call that is in flight for as long as a test needs."""

    def convert(self, model, fmt, workdir):
        time.sleep(3600)


class StrayFileOnConvert(MNNEngine):
    """Writes a file to a relative path before converting (as MNN did once, under a garbled name)."""

    def convert(self, model, fmt, workdir):
        Path("stray.mnn").write_bytes(b"stray")
        return super().convert(model, fmt, workdir)


class ScriptedRejects(MNNEngine):
    """Rejects models holding given operators, as two builds of one engine would differ.

    ``GBFT_FAKE_REJECT`` lists ``Op:tag`` pairs in order: a model whose frozen graph holds
    the op (first match wins) fails conversion with a message naming the op and the tag,
    so two builds with different tags fail the same model differently.  ``GBFT_FAKE_FLAKY``
    lists ``Op:p``: the op is rejected with chance p (a sometimes-bug).  Everything else
    is the real MNN.
    """

    def __init__(self) -> None:
        super().__init__()
        import random

        self._rng = random.Random()  # seeded from the OS: each worker process differs
        self.reject = [x.split(":") for x in os.environ.get("GBFT_FAKE_REJECT", "").split(",") if x]
        self.flaky = [x.split(":") for x in os.environ.get("GBFT_FAKE_FLAKY", "").split(",") if x]

    def convert(self, model, fmt, workdir):
        from gbft_action.engines.adapter import ConvertError

        data = model.read_bytes()
        for op, chance in self.flaky:
            if op.encode() in data and self._rng.random() < float(chance):
                raise ConvertError(f"fake build: sometimes rejects {op}")
        for op, tag in self.reject:
            if op.encode() in data:
                raise ConvertError(f"fake build {tag}: rejects {op}")
        return super().convert(model, fmt, workdir)


class WrongBesideGarbage(MNNEngine):
    """One output deterministically wrong (+1), the other garbage that changes from call to
    call (as an uninitialised read does when the heap is perturbed); ``GBFT_FAKE_GARBAGE``
    says which output index is the garbage one."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.garbage = int(os.environ.get("GBFT_FAKE_GARBAGE", "1"))

    def infer(self, artifact, inputs, outputs):
        self.calls += 1
        got = super().infer(artifact, inputs, outputs)
        for k, name in enumerate(outputs):
            got[name] = got[name] + (1000.0 * self.calls if k == self.garbage else 1.0)
        return got


class NoisyStderr(MNNEngine):
    """Writes 100 MB to stderr in every inference, then answers right."""

    def infer(self, artifact, inputs, outputs):
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            os.write(2, chunk)
        return super().infer(artifact, inputs, outputs)


class NaNEverywhere(MNNEngine):
    """Every output element NaN."""

    def infer(self, artifact, inputs, outputs):
        import numpy as np
        return {k: np.full_like(v, np.nan) for k, v in super().infer(artifact, inputs, outputs).items()}


class SlowProbe(NaNEverywhere):
    """NaN everywhere, answered at once; asked for intermediate tensors too (a localisation
    probe), it takes a minute."""

    def infer(self, artifact, inputs, outputs):
        if len(outputs) > 1:
            time.sleep(60)
        return super().infer(artifact, inputs, outputs)


class WrongShapes(MNNEngine):
    """Every output flattened and one element longer."""

    def infer(self, artifact, inputs, outputs):
        import numpy as np
        return {k: np.append(v.ravel(), 0) for k, v in super().infer(artifact, inputs, outputs).items()}


class GarbageArtifact(MNNEngine):
    """The converter "succeeds" with random bytes as its model."""

    def convert(self, model, fmt, workdir):
        out = super().convert(model, fmt, workdir)
        out.write_bytes(os.urandom(4096))
        return out


class DamagedByItsFirstModel(MNNEngine):
    """After its first inference, every later conversion in the same process raises
    AttributeError, as heap damage that broke the worker's own Python did in a campaign; a
    fresh worker (a fork of the server, which ran no model) converts again."""

    ran = 0

    def convert(self, model, fmt, workdir):
        if DamagedByItsFirstModel.ran:
            raise AttributeError("'list' object has no attribute 'isinstance'")
        return super().convert(model, fmt, workdir)

    def infer(self, artifact, inputs, outputs):
        DamagedByItsFirstModel.ran += 1
        return super().infer(artifact, inputs, outputs)


class ExitWithoutOutputs(MNNEngine):
    """Inference ends the process with exit status 0 and no answer."""

    def infer(self, artifact, inputs, outputs):
        os._exit(0)


class HangOnRestart(MNNEngine):
    """Crashes in its first conversion; every later start-up (the restart's hello: a worker
    forked from the fork server builds nothing, it only says hello) hangs."""

    def version(self) -> str:
        marker = Path(os.environ["GBFT_FAKE_MARKER"])
        if marker.exists():
            time.sleep(3600)
        marker.write_text("started once")
        return super().version()

    def convert(self, model, fmt, workdir):
        os.kill(os.getpid(), signal.SIGSEGV)


class OnnxRuntimeSays(MNNEngine):
    """Answers what ONNX Runtime computes for the case's TensorFlow graph (its translation,
    reference.tf_as_onnx): the graph of case N is GBFT_FAKE_GRAPHS/N.json.  On a graph of
    normal values it adds 1, a plain wrong result; on special values it sides with ONNX
    Runtime where the two references disagree; on a graph it cannot translate it answers 7."""

    def convert(self, model, fmt, workdir):
        return model

    def infer(self, artifact, inputs, outputs):
        import numpy as np

        from gbft_action.graph.ir import Graph
        from gbft_action.reference.onnx_worker import make_session
        from gbft_action.reference.tf_as_onnx import translate

        g = Graph.from_json((Path(os.environ["GBFT_FAKE_GRAPHS"]) / f"{int(artifact.parent.name)}.json").read_text())
        model, _ = translate(g, [o for o in outputs if o not in g.outputs])
        if model is None:  # nothing to side with: plainly wrong
            return {o: np.full(g.tensor_type(o).shape, 7.0, g.tensor_type(o).dtype) for o in outputs}
        vals = make_session(model.SerializeToString()).run(outputs, {k: np.asarray(v) for k, v in inputs.items()})
        shift = 1.0 if g.values == "normal" else 0.0
        return {k: v + np.asarray(shift, v.dtype) for k, v in zip(outputs, vals)}


class HangOnImport(MNNEngine):
    """Its start-up (building the adapter, i.e. the engine's import) never ends."""

    def __init__(self) -> None:
        time.sleep(3600)


class DieOnImport(MNNEngine):
    """Its start-up (the engine's import) dies of SIGSEGV."""

    def __init__(self) -> None:
        os.kill(os.getpid(), signal.SIGSEGV)


class RaiseOnImport(MNNEngine):
    """Its start-up (the engine's import) raises: a missing library, say."""

    def __init__(self) -> None:
        raise ImportError("libMNN_fake.so: cannot open shared object file")


class OnnxRewrites(MNNEngine):
    """The real MNN on an ONNX model its "converter" first damages, one operator type at a time.

    ``GBFT_FAKE_WRONG`` is ``Op=Other``: every node of type Op is converted as Other (an
    operator wrong alone, wherever it sits in the model); ``GBFT_FAKE_CRASH`` names an
    operator whose presence crashes the converter (SIGSEGV); ``GBFT_FAKE_HIDE`` lists node names
    whose values inference does not expose (as MNN drops tensors it fuses away), so localisation
    stops elsewhere; ``GBFT_FAKE_NUDGE`` scales every value by 1 + it (another build's rounding,
    far within the tolerance).  Everything else is the real MNN.
    """

    def infer(self, artifact, inputs, outputs):
        hidden = set(os.environ.get("GBFT_FAKE_HIDE", "").split(",")) - {""}
        nudge = 1.0 + float(os.environ.get("GBFT_FAKE_NUDGE", "0") or 0)
        if hidden & set(outputs):  # as MNN does for a tensor it no longer has
            raise RuntimeError(f"fake build: no tensor {sorted(hidden & set(outputs))[0]}")
        return {k: (v * nudge).astype(v.dtype) for k, v in super().infer(artifact, inputs, outputs).items()}

    def convert(self, model, fmt, workdir):
        import onnx

        m = onnx.load(str(model))
        ops = {n.op_type for n in m.graph.node}
        if os.environ.get("GBFT_FAKE_CRASH", "") in ops:
            os.kill(os.getpid(), signal.SIGSEGV)
        src, _, dst = os.environ.get("GBFT_FAKE_WRONG", "").partition("=")
        for n in m.graph.node:
            if n.op_type == src:
                n.op_type = dst
        out = Path(workdir) / "rewritten.onnx"
        onnx.save(m, str(out))
        return super().convert(out, fmt, workdir)


class RacyAtMoreThreads(MNNEngine):
    """Right at one thread; at more (GBFT_MNN_THREADS above 1, the thread-count oracle's run)
    every output is off by 0.05, as a race or a tiling defect would leave it."""

    def infer(self, artifact, inputs, outputs):
        got = super().infer(artifact, inputs, outputs)
        return {k: v + 0.05 for k, v in got.items()} if self.threads != "1" else got


class SegfaultAtMoreThreads(MNNEngine):
    """SIGSEGV at inference when run at more than one thread."""

    def infer(self, artifact, inputs, outputs):
        if self.threads != "1":
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().infer(artifact, inputs, outputs)


class RunawayResident(MNNEngine):
    """Fills memory it touches, without bound, on every conversion (as MNN did under qemu)."""

    def convert(self, model, fmt, workdir):
        hoard = []
        while True:
            hoard.append(b"\x01" * (64 << 20))


class CoveredMNN(MNNEngine):
    """MNN, plus a call into a small library built with coverage instrumentation
    (tests/data/covered_engine, its path in GBFT_TEST_COVERED_LIB) on every convert and infer:
    an instrumented "engine" the engine-coverage tests can build in seconds."""

    def __init__(self) -> None:
        import ctypes

        self.lib = ctypes.CDLL(os.environ["GBFT_TEST_COVERED_LIB"])
        super().__init__()

    def convert(self, model, fmt, workdir):
        self.lib.front_convert(len(model.read_bytes()))
        return super().convert(model, fmt, workdir)

    def infer(self, artifact, inputs, outputs):
        self.lib.cpu_run(sum(x.size for x in inputs.values()))
        return super().infer(artifact, inputs, outputs)
