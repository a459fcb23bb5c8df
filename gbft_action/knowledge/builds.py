"""Engine builds: what an engine worker needs to run one build of an engine.

The build under test (a pull request's) and the base build it is judged against
are both an ``EngineBuild``: the adapter (a registry name or ``module:Class``),
the worker's interpreter, and environment variables for the adapter.  How a
build on disk becomes one:

  an engine with a pip package (its knowledge's ``Package``: mnn, onnxruntime)
           a wheel (or a folder holding one) goes into a private virtual
           environment, with the tool's own packages visible behind it;
  command  a build folder, reached by the adapter as ``{build}``, with the
           converter and runner command templates.
"""

from __future__ import annotations

import site
import subprocess
import sys
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..records.bundle import EngineInfo
from .registry import ENGINES


@dataclass(frozen=True)
class EngineBuild:
    engine: str = "mnn"  # registry name or module:Class
    python: str = ""  # the worker's interpreter; "" = the host's
    env: dict[str, str] = field(default_factory=dict)  # for the adapter (the command engine's commands)
    source: str = ""  # where it came from (a wheel, a folder), as reports show it


class BuildError(ValueError):
    """A build path that holds no usable build: one line naming it."""


@dataclass(frozen=True)
class Commands:
    """The command engine's two templates (see engines/command.py for the contract)."""
    converter: str = ""
    runner: str = ""


def prepare_build(engine: str, path: Path | None, venv_dir: Path, commands: Commands = Commands()) -> EngineBuild:
    """An ``EngineBuild`` for ``engine`` from ``path`` (None: the engine the tool runs with)."""
    make = _preparer(engine)
    if make is None:  # module:Class (tests, out-of-tree adapters): runs with the host's packages
        return EngineBuild(engine, source=str(path or ""))
    return make(path, venv_dir, commands)


def _preparer(engine: str) -> Callable[[Path | None, Path, Commands], EngineBuild] | None:
    if engine == "command":
        return _command
    package = ENGINES[engine].package.pip if engine in ENGINES else ""
    return _wheel(engine, package) if package else None


def build_of_bundle(engine: EngineInfo) -> EngineBuild:
    """The build a bundle's engine record names, to replay it with (the installed engine with
    the settings it ran with, or for the command engine the commands and build folder)."""
    name = engine.engine or "mnn"
    cmds = engine.commands
    if name == "command" and cmds:
        return _command(Path(cmds["build"]) if cmds.get("build") else None, Path(),
                        Commands(cmds.get("converter", ""), cmds.get("runner", "")))
    known = ENGINES.get(name)
    return EngineBuild(name, env=known.env_for(known.settings(engine.settings)) if known else {})


def prepare_builds(engine: str, pr: Path | None, base: Path | None, out: Path,
                   commands: Commands = Commands()) -> tuple[EngineBuild, EngineBuild | None]:
    """The build under test and the base build (None without one), their venvs under ``out``.

    The two venv folders have names of one length: the interpreter's path reaches the
    engine's process (argv, environment), MNN's heap-damage bugs react to the length of
    such strings, and a difference there once turned a same-release run's sometimes-bug
    into a confirmed "changed".  Only the build may differ between the two.
    """
    this = prepare_build(engine, pr, out / ".engine-this", commands)
    return this, prepare_build(engine, base, out / ".engine-base", commands) if base is not None else None


def _wheel(engine: str, package: str) -> Callable[[Path | None, Path, Commands], EngineBuild]:
    """An engine shipped as a Python wheel (MNN, ONNX Runtime): a private venv holding it."""

    def make(path: Path | None, venv_dir: Path, commands: Commands) -> EngineBuild:
        if path is None:
            return EngineBuild(engine)
        wheels = [path] if path.suffix == ".whl" else sorted(path.glob("*.whl"))
        if not wheels:
            raise BuildError(f"{path}: no {package} wheel (*.whl) there")
        venv.EnvBuilder(system_site_packages=True, clear=True, with_pip=False).create(venv_dir)
        _see_own_packages(venv_dir)
        py = venv_dir / "bin" / "python"
        # A local wheel needs no network; --no-deps keeps the tool's numpy underneath.
        subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-index",
                        "--no-deps", "--force-reinstall", str(wheels[0])], check=True)
        return EngineBuild(engine, str(py), source=str(wheels[0]))

    return make


def _command(path: Path | None, venv_dir: Path, commands: Commands) -> EngineBuild:
    if not (commands.converter and commands.runner):
        raise BuildError("the command engine needs a converter command and a runner command")
    env = {"GBFT_CONVERTER_COMMAND": commands.converter, "GBFT_RUNNER_COMMAND": commands.runner}
    if path is not None:
        env["GBFT_ENGINE_BUILD"] = str(path.resolve())
    return EngineBuild("command", env=env, source=str(path or ""))


def _see_own_packages(venv_dir: Path) -> None:
    """Put the tool's own site-packages behind the venv's: the worker imports gbft_action and
    its dependencies from there, the build's engine from the venv.

    ``system_site_packages`` only reaches the base interpreter's packages, not those of
    the environment gbft runs in (a virtual environment, an editable install).  A .pth
    line starting with "import" runs at start-up; ``addsitedir`` also runs that
    directory's own .pth files (an editable install's finder).
    """
    site_dir = next(venv_dir.glob("lib/python*/site-packages"))
    dirs = [d for d in site.getsitepackages() if Path(d).is_dir()]
    (site_dir / "zz-gbft-host.pth").write_text(f"import site; list(map(site.addsitedir, {dirs!r}))\n")
