"""An arm64 Debian root for running the engine worker under qemu-user emulation.

``gbft arm-root DIR`` builds it with ``debootstrap --arch=arm64`` (Debian's
``qemu-user-static`` runs the arm64 binaries once binfmt_misc knows
qemu-aarch64).  The engine's aarch64 wheels are unpacked into ``/opt/gbft/site``
by the host's pip (``--target`` with aarch64 platform tags: nothing runs under
emulation to install them).  The root is cached: its content key covers this
file, the Debian suite and packages, and the engine's version or wheel, so a
second run with the same inputs costs nothing.  A build goes into DIR.partial
and is renamed only when it works, so an interrupted build is never taken for
a finished one.

The worker runs as ``unshare --mount ... chroot DIR python3``: inside a private
mount namespace the lane's work folder and the host's ``gbft_action`` source are
bind-mounted at the same paths, so model files need no path translation and the
mounts vanish with the worker.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

SUITE = "bookworm"
PACKAGES = ("python3",)  # Debian bookworm's Python is 3.11, as the host's: one pickle protocol
ROOT_PYTHON = "/usr/bin/python3"
SITE, SRC = "/opt/gbft/site", "/opt/gbft/src"
ROOT_PYTHONPATH = f"{SRC}:{SITE}"
KEY_FILE = ".gbft-arm-root.json"
BINFMT = Path("/proc/sys/fs/binfmt_misc")
QEMU_CONF = Path("/usr/lib/binfmt.d/qemu-aarch64.conf")
# The aarch64 wheel tags pip may take (it does not widen a manylinux tag by itself).
WHEEL_TAGS = ("manylinux2014_aarch64", *(f"manylinux_2_{v}_aarch64" for v in range(17, 37)))

# Runs as root in a fresh mount namespace: $1 root, $2 work folder, $3 gbft_action source.
_CHROOT_SH = r"""set -e
PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH"
R="$1"; W="$2"; S="$3"; shift 3
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
mkdir -p "$R$W" "$R/opt/gbft/src/gbft_action"
mount --bind "$W" "$R$W"
mount --bind "$S" "$R/opt/gbft/src/gbft_action"
mount -o remount,bind,ro "$R/opt/gbft/src/gbft_action"
exec chroot "$R" "$@"
"""


class ArmRootError(RuntimeError):
    pass


def engine_requirements() -> list[str]:
    """The host's MNN and numpy versions: the ARM worker runs the same engine release."""
    from importlib.metadata import version

    return [f"MNN=={version('MNN')}", f"numpy=={version('numpy')}"]


def content_key(requirements: list[str], wheel: Path | None) -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(json.dumps([SUITE, PACKAGES, requirements]).encode())
    if wheel is not None:
        h.update(wheel.read_bytes())
    return h.hexdigest()[:16]


def ensure_binfmt() -> None:
    """Mount binfmt_misc and register qemu-aarch64 (Debian's entry, F flag: works in a chroot)."""
    if not (BINFMT / "register").exists():
        _run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], "mount binfmt_misc")
    entry = BINFMT / "qemu-aarch64"
    if not entry.exists():
        if not QEMU_CONF.exists():
            raise ArmRootError(f"{QEMU_CONF} missing: install qemu-user-static (apt-get install qemu-user-static)")
        (BINFMT / "register").write_text(QEMU_CONF.read_text().strip())
    if entry.read_text().splitlines()[0] != "enabled":
        entry.write_text("1")


def check_tools() -> None:
    if os.geteuid() != 0:
        raise ArmRootError("an arm64 root needs root (debootstrap, binfmt_misc, chroot)")
    missing = [t for t in ("debootstrap", "unshare", "chroot") if shutil.which(t) is None]
    if missing:
        raise ArmRootError(f"missing {', '.join(missing)} (apt-get install debootstrap qemu-user-static)")


def build_arm_root(root: Path, wheel: Path | None = None, mirror: str = "",
                   log: Callable[[str], None] = print) -> Path:
    """Build (or reuse) the arm64 root at ``root``; returns its absolute path."""
    check_tools()
    ensure_binfmt()
    root = root.resolve()
    reqs = engine_requirements() if wheel is None else [engine_requirements()[1]]
    key = content_key(reqs, wheel)
    if _key_of(root) == key:
        log(f"arm-root: {root} is up to date (key {key})")
        return root
    part = root.with_name(root.name + ".partial")
    shutil.rmtree(part, ignore_errors=True)
    log(f"arm-root: debootstrap --arch=arm64 {SUITE} into {part} (a few minutes)")
    _run(["debootstrap", "--arch=arm64", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE,
          str(part), mirror or host_mirror()], "debootstrap")
    _install_wheels(part, reqs, wheel, log)
    machine = smoke_test(part)
    (part / KEY_FILE.lstrip("/")).write_text(json.dumps({"key": key, "requirements": reqs,
                                                         "wheel": wheel.name if wheel else "",
                                                         "machine": machine}, indent=2) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    os.replace(part, root)
    log(f"arm-root: ready at {root} (key {key}, python reports {machine})")
    return root


def _install_wheels(part: Path, reqs: list[str], wheel: Path | None, log: Callable[[str], None]) -> None:
    tags = [a for t in WHEEL_TAGS for a in ("--platform", t)]
    target = str(part / SITE.lstrip("/"))
    log(f"arm-root: pip install --target {SITE} {' '.join(reqs)}{' ' + wheel.name if wheel else ''}")
    _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--only-binary=:all:", *tags,
          "--python-version", "3.11", "--implementation", "cp", "--target", target, *reqs,
          *([str(wheel)] if wheel else [])], "pip install (aarch64 wheels)")


def smoke_test(root: Path) -> str:
    """Import the engine inside the root; returns what Python reports as the machine."""
    code = "import platform, MNN, numpy, _tools; print('machine=' + platform.machine())"
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"
    p = subprocess.run([chroot, str(root), ROOT_PYTHON, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": ROOT_PYTHONPATH, "PATH": "/usr/bin:/bin"}, timeout=300)
    if p.returncode != 0:
        raise ArmRootError(f"arm-root: the engine does not import in {root}:\n{p.stderr[-2000:]}")
    # MNN prints its CPU features on import: take our own line.
    return next(x for x in p.stdout.splitlines() if x.startswith("machine="))[len("machine="):]


def check_root(root: Path) -> Path:
    """An arm root ready for workers (built by build_arm_root, binfmt registered)."""
    root = root.resolve()
    if _key_of(root) is None:
        raise ArmRootError(f"--arm-root {root}: not an arm64 root built by `gbft arm-root` (no {KEY_FILE})")
    check_tools()
    ensure_binfmt()
    return root


def chroot_prefix(root: Path, workdir: Path) -> tuple[str, ...]:
    src = Path(__file__).resolve().parent.parent  # the gbft_action package the host runs
    return ("unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", _CHROOT_SH, "gbft-chroot",
            str(root), str(workdir.resolve()), str(src))


def host_mirror() -> str:
    """The Debian mirror the host's apt uses (it is the one this machine can reach)."""
    for f in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            text = f.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            words = line.split()
            if words and words[0] in ("URIs:", "deb"):
                for w in words[1:]:
                    if w.startswith("http") and w.rstrip("/").endswith("/debian"):
                        return w
    return "http://deb.debian.org/debian"


def _key_of(root: Path) -> str | None:
    try:
        return json.loads((root / KEY_FILE).read_text())["key"]
    except (OSError, ValueError, KeyError):
        return None


def _run(argv: list[str], what: str) -> None:
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        raise ArmRootError(f"{what} failed (exit {p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
