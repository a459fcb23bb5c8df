"""Where the engine worker runs: natively, or in an emulated arm64 root.

A platform turns into a worker command (prefix, interpreter, import path) and a
slowdown factor for the stage time limits.  The table below is the only place
that knows the platform names; the reference (TensorFlow) always runs natively.

Layer 0 of ``gbft_action.LAYERS``.
"""

from __future__ import annotations

import platform as _platform
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Platform:
    name: str  # as the user writes it and as bundles, issues and summaries show it
    prefix: tuple[str, ...] = ()  # command before the worker's python (e.g. a chroot)
    python: str = ""  # the worker's interpreter; "" = the engine build's or the host's
    pythonpath: str = ""
    slowdown: float = 1.0  # stage time limits are multiplied by this
    mem_limit: bool = True  # RLIMIT_AS breaks qemu-user's address-space reservation


class PlatformError(ValueError):
    pass


def host_machine() -> str:
    m = _platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m.lower(), m)


def _native(name: str) -> Callable[[str, Path], Platform]:
    def make(arm_root: str, workdir: Path) -> Platform:
        if host_machine() != name:
            hint = " (use arm64-qemu with --arm-root DIR)" if name == "aarch64" else ""
            raise PlatformError(f"platform {name}: this machine is {host_machine()}{hint}")
        return Platform(name)
    return make


def _arm64_qemu(arm_root: str, workdir: Path) -> Platform:
    from .armroot import ROOT_PYTHON, ROOT_PYTHONPATH, check_root, chroot_prefix

    if not arm_root:
        raise PlatformError("platform arm64-qemu needs --arm-root DIR (build one with: gbft arm-root DIR)")
    root = check_root(Path(arm_root))
    return Platform("arm64-qemu", chroot_prefix(root, workdir), ROOT_PYTHON, ROOT_PYTHONPATH,
                    slowdown=8.0, mem_limit=False)


# The platform table: name -> how to make it (arm root, the lane's work folder).
PLATFORMS: dict[str, Callable[[str, Path], Platform]] = {
    "x86_64": _native("x86_64"),
    "aarch64": _native("aarch64"),
    "arm64-qemu": _arm64_qemu,
}


def parse_platforms(text: str) -> tuple[str, ...]:
    """'x86_64,arm64-qemu' -> names, checked against the table (empty: this machine)."""
    names = tuple(p.strip() for p in text.split(",") if p.strip())
    for n in names:
        if n not in PLATFORMS:
            raise PlatformError(f"unknown platform {n!r}; allowed: {', '.join(PLATFORMS)}")
    if len(set(names)) != len(names):
        raise PlatformError(f"platform listed twice in {text!r}")
    return names or (host_machine(),)


def resolve(names: tuple[str, ...], arm_root: str, workdir: Path) -> tuple[Platform, ...]:
    return tuple(PLATFORMS[n](arm_root, workdir) for n in names)
