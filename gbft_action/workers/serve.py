"""Worker process entry point: ``python -m gbft_action.workers.serve``.

Runs one handler (the TensorFlow reference, or an engine adapter) in a loop over
the pipe the supervisor gave it.  Python exceptions become error replies; native
crashes kill the process, and the supervisor reports them.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import os
import platform
import resource
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any


# Reference frameworks by front end (frontends.Frontend.reference): imported only here, in
# the worker, so that an ONNX run never starts TensorFlow.
REFERENCES = {
    "tf": "gbft_action.reference.worker:ReferenceHandler",
    "onnx": "gbft_action.reference.onnx_worker:OnnxReferenceHandler",
}


def load_handler(role: str, target: str) -> Any:
    if role == "reference":
        mod, _, cls = REFERENCES[target or "tf"].partition(":")
        return getattr(importlib.import_module(mod), cls)()
    if role == "engine":
        mod, _, cls = target.partition(":")
        from ..engines.adapter import EngineHandler

        return EngineHandler(getattr(importlib.import_module(mod), cls)())
    raise SystemExit(f"unknown worker role {role!r}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", required=True)
    ap.add_argument("--target", default="")
    ap.add_argument("--rfd", type=int, required=True)
    ap.add_argument("--wfd", type=int, required=True)
    ap.add_argument("--mem-mb", type=int, default=0)
    a = ap.parse_args(argv)
    _die_with_parent()
    if a.mem_mb:
        lim = a.mem_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    rconn = Connection(a.rfd, writable=False)
    wconn = Connection(a.wfd, readable=False)
    handler = None
    while True:
        try:
            msg = rconn.recv()
        except EOFError:
            return
        try:
            if msg["op"] == "hello":
                handler = handler or load_handler(a.role, a.target)
                reply = {"ok": True, "machine": platform.machine(), "pid": os.getpid(),
                         "python": sys.version.split()[0], **handler.hello()}
            else:
                reply = handler.handle(msg)  # type: ignore[union-attr]
        except MemoryError:
            reply = {"ok": False, "error": "MemoryError", "kind": "memory", "trace": traceback.format_exc()}
        except Exception as e:  # noqa: BLE001 - reported to the supervisor, never lost
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}", "kind": type(e).__name__,
                     "trace": traceback.format_exc()}
        _flush()
        wconn.send(reply)


def _die_with_parent() -> None:
    # Workers run in their own session (so a timeout can kill the whole group).
    # If the supervisor dies (SIGKILL), exit too.  PR_SET_PDEATHSIG is no use
    # here: it fires when the supervisor *thread* that started us ends.
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def _flush() -> None:
    # Native code (MNN's converter) writes through C stdio, which is fully
    # buffered on a file: flush it so this call's log is complete.
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    main()
