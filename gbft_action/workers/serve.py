"""Worker process entry point: ``python -m gbft_action.workers.serve``.

Runs one handler (the TensorFlow reference, or an engine adapter) in a loop over
the pipe the supervisor gave it.  Python exceptions become error replies; native
crashes kill the process, and the supervisor reports them.

With ``--zygote-fd`` it is a fork server instead (``wire.zygote``): it builds the
handler once, on the first ``fork`` request, and forks a worker for each request, which
serves the pipe ends passed with it.  Its children are the workers; it runs no model.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import json
import os
import platform
import resource
import signal
import socket
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
    ap.add_argument("--rfd", type=int, default=-1)
    ap.add_argument("--wfd", type=int, default=-1)
    ap.add_argument("--zygote-fd", type=int, default=-1)
    ap.add_argument("--mem-mb", type=int, default=0)
    a = ap.parse_args(argv)
    _die_with_parent()
    if a.mem_mb:  # a zygote's children inherit it
        lim = a.mem_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    if a.zygote_fd >= 0:
        zygote(a.role, a.target, socket.socket(fileno=a.zygote_fd))
    else:
        serve(a.role, a.target, a.rfd, a.wfd)


def serve(role: str, target: str, rfd: int, wfd: int, handler: Any = None) -> None:
    """Answer the supervisor's calls until it closes the pipe; the hello builds the handler
    (a forked worker has the zygote's already)."""
    rconn = Connection(rfd, writable=False)
    wconn = Connection(wfd, readable=False)
    while True:
        try:
            msg = rconn.recv()
        except EOFError:
            return
        c0 = time.process_time()
        try:
            if msg["op"] == "hello":
                handler = handler or load_handler(role, target)
                reply = {"ok": True, "machine": platform.machine(), "pid": os.getpid(),
                         "python": sys.version.split()[0], **handler.hello()}
            else:
                reply = handler.handle(msg)
        except MemoryError:
            reply = {"ok": False, "error": "MemoryError", "kind": "memory", "trace": traceback.format_exc()}
        except Exception as e:  # noqa: BLE001 - reported to the supervisor, never lost
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}", "kind": type(e).__name__,
                     "trace": traceback.format_exc(), **({"blocks": e.blocks} if hasattr(e, "blocks") else {})}
        _flush()
        reply["cpu"] = time.process_time() - c0  # this process's CPU (all threads) for the call
        wconn.send(reply)


def zygote(role: str, target: str, sock: socket.socket) -> None:
    """The fork server's loop (wire.zygote): ``fork`` and ``wait`` until the supervisor goes."""
    handler = None
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 2)
        except OSError:
            return
        if not data:
            return
        req = json.loads(data)
        if req["op"] == "fork":
            try:
                handler = handler or load_handler(role, target)  # the engine's import, once
            except Exception as e:  # noqa: BLE001 - the supervisor's start fails, saying why
                for fd in fds:
                    os.close(fd)
                sock.send(json.dumps({"error": f"{type(e).__name__}: {e}"}).encode())
                continue
            _flush()  # or the child would print the zygote's buffered output again
            pid = os.fork()
            if pid == 0:
                _child(sock, fds, role, target, handler)
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"pid": pid}).encode())
        elif req["op"] == "wait":
            sock.send(json.dumps({"status": _wait(int(req["pid"]), float(req["timeout"]))}).encode())


def _child(sock: socket.socket, fds: list[int], role: str, target: str, handler: Any) -> None:
    sock.close()
    os.setsid()  # its own group: a timeout kills it (and what it started), not the zygote
    _die_with_parent()  # the zygote's watch thread did not survive the fork
    try:
        serve(role, target, fds[0], fds[1], handler)
    finally:
        _flush()
        os._exit(0)  # never back into the zygote's loop or its interpreter's shutdown


def _wait(pid: int, timeout: float) -> int | None:
    """pid's raw wait status once it ended, None if it still runs after timeout."""
    end = time.monotonic() + timeout
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped before: nothing more to say than "gone"
            return int(signal.SIGKILL)  # the raw status of a process killed by SIGKILL
        if done:
            return status
        if time.monotonic() >= end:
            return None
        time.sleep(0.002)


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
