"""A generic engine driven by two command templates, for any engine build.

Contract (documented in the README):
  converter: ``GBFT_CONVERTER_COMMAND``, e.g. ``{build}/MNNConvert -f TF --modelFile {model} --MNNModel {artifact}``;
             must create ``{artifact}``; a non-zero exit or no artifact is a conversion failure.
  runner:    ``GBFT_RUNNER_COMMAND``, e.g. ``{build}/run_model {artifact} {inputs} {outputs_dir} {outputs}``;
             reads one ``<name>.npy`` per graph input from ``{inputs}``, writes one ``<name>.npy`` per
             requested output (``{outputs}``: comma-separated names) into ``{outputs_dir}``; a non-zero
             exit is an inference failure.
Placeholders: {build} {model} {format} {artifact} {inputs} {outputs_dir} {outputs} {workdir}.
Commands run without a shell; their output goes to the worker's log.  A runner killed by a
signal (a native crash) is reported as that signal, as an in-process engine's crash would be.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import numpy as np

from .adapter import ConvertError


class CommandEngine:
    name = "command"
    formats = ("pb", "tflite")

    def __init__(self) -> None:
        self.convert_tpl = os.environ.get("GBFT_CONVERTER_COMMAND", "")
        self.run_tpl = os.environ.get("GBFT_RUNNER_COMMAND", "")
        self.build = os.environ.get("GBFT_ENGINE_BUILD", "")
        if not self.convert_tpl or not self.run_tpl:
            raise RuntimeError("the command engine needs GBFT_CONVERTER_COMMAND and GBFT_RUNNER_COMMAND")

    def version(self) -> str:
        return os.environ.get("GBFT_ENGINE_VERSION", "unknown")

    def describe(self) -> dict[str, dict[str, str]]:
        """What a bundle needs to run this build again (replay, repro.py): the two templates."""
        return {"commands": {"converter": self.convert_tpl, "runner": self.run_tpl, "build": self.build}}

    def _run(self, tpl: str, **kw: str) -> subprocess.CompletedProcess[bytes]:
        argv = [part.format(build=self.build, **kw) for part in shlex.split(tpl)]
        return subprocess.run(argv, stdout=None, stderr=None)

    def convert(self, model: Path, fmt: str, workdir: Path) -> Path:
        artifact = workdir / "model.engine"
        artifact.unlink(missing_ok=True)
        p = self._run(self.convert_tpl, model=str(model), format=fmt, artifact=str(artifact), workdir=str(workdir),
                      inputs="", outputs_dir="", outputs="")
        if p.returncode != 0 or not artifact.exists():
            raise ConvertError(f"converter exited with {p.returncode}" + ("" if artifact.exists() else ", no artifact"))
        return artifact

    def infer(self, artifact: Path, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        work = artifact.parent
        ins, outs = work / "engine-inputs", work / "engine-outputs"
        ins.mkdir(exist_ok=True)
        outs.mkdir(exist_ok=True)
        for name, arr in inputs.items():
            np.save(ins / f"{name}.npy", arr)
        p = self._run(self.run_tpl, model="", format="", artifact=str(artifact), workdir=str(work), inputs=str(ins),
                      outputs_dir=str(outs), outputs=",".join(outputs))
        if p.returncode < 0:  # the runner crashed: the worker reports the same signal
            os.kill(os.getpid(), -p.returncode)
        if p.returncode != 0:
            raise RuntimeError(f"runner exited with {p.returncode}")
        missing = [o for o in outputs if not (outs / f"{o}.npy").exists()]
        if missing:
            raise RuntimeError(f"runner wrote no {', '.join(missing)}")
        return {o: np.load(outs / f"{o}.npy") for o in outputs}
