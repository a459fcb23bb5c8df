"""Host side of a fork server: engine workers forked from a process that imported the engine once.

A crash kills the engine worker, and MNN crashes often (a fuzz campaign met 30 crashes in
30 s): starting a fresh interpreter and importing numpy and the engine costs about 200 ms
of CPU each time, as much as twenty models.  A fork server ("zygote") is started once per
``Worker``: it imports the engine and builds its adapter, then runs no model ever; every
worker is a fork of it, so it starts in a few milliseconds and is as fresh as a new
process (nothing an earlier model did to the heap is in it).

The zygote speaks JSON over a Unix socket pair: ``fork`` (with the worker's two pipe ends
passed as file descriptors) answers the child's pid; ``wait`` answers the child's wait
status once it ended (or null after ``timeout``), since the zygote, not the supervisor,
is its parent.  ``ForkedChild`` wraps that in the part of ``subprocess.Popen`` the
supervisor uses (``pid``, ``poll``, ``wait``).  The zygote's own start-up (the engine's
import, which may hang or crash) is bounded by the first fork's timeout.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import threading
from typing import Any

# A child that no one can wait for any more (the zygote is gone): reported as killed.
LOST = -signal.SIGKILL


class ZygoteFailed(RuntimeError):
    """The fork server did not fork: it timed out, died (``code``: its exit status) or said why."""

    def __init__(self, message: str, kind: str, code: int | None = None) -> None:
        super().__init__(message)
        self.kind, self.code = kind, code  # kind: timeout | crash | error


class Zygote:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None, log: Any) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen([*argv, "--zygote-fd", str(theirs.fileno())], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, pass_fds=(theirs.fileno(),),
                                         env=env, cwd=cwd, start_new_session=True)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.sock = ours
        self._lock = threading.Lock()  # one request and its answer at a time

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fork(self, rfd: int, wfd: int, timeout: float) -> ForkedChild:
        """A worker forked with the pipe ends rfd (it reads) and wfd (it writes)."""
        reply = self._ask({"op": "fork"}, timeout, fds=[rfd, wfd])
        if "pid" not in reply:
            raise ZygoteFailed(str(reply.get("error", "the fork server did not fork")), "error")
        return ForkedChild(self, int(reply["pid"]))

    def wait(self, pid: int, timeout: float) -> int | None:
        """pid's exit code (negative: the signal), or None if it still runs after timeout."""
        try:
            status = self._ask({"op": "wait", "pid": pid, "timeout": timeout}, timeout + 5.0).get("status")
        except ZygoteFailed:
            return LOST
        return None if status is None else os.waitstatus_to_exitcode(status)

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self.sock.close()

    def _ask(self, req: dict[str, object], timeout: float, fds: list[int] | None = None) -> dict[str, Any]:
        with self._lock:
            try:
                self.sock.settimeout(max(timeout, 0.001))
                socket.send_fds(self.sock, [json.dumps(req).encode()], fds or [])
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                raise ZygoteFailed("the fork server did not answer in time", "timeout") from None
            except OSError as e:
                data = b""
                why = str(e)
            else:
                why = "it closed its socket"
        if not data:  # dead: its exit status says how
            try:
                code = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
            raise ZygoteFailed(f"the fork server died ({why})", "crash", code)
        return json.loads(data)


class ForkedChild:
    """A worker forked by a zygote, with the part of ``subprocess.Popen`` the supervisor uses."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.returncode: int | None = None
        # A pidfd turns readable when the child ends: "still running?" (asked before every
        # call) without a round trip to the zygote.  -1 where the kernel has none.
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._pidfd = -1

    def poll(self) -> int | None:
        if self.returncode is None and self._running():
            return None
        if self.returncode is None:
            self.returncode = self.zygote.wait(self.pid, 0.0)
        self._close()
        return self.returncode

    def _running(self) -> bool:
        if self._pidfd < 0:
            return False  # unknown: ask the zygote
        return not select.select([self._pidfd], [], [], 0)[0]

    def _close(self) -> None:
        if self._pidfd >= 0 and self.returncode is not None:
            os.close(self._pidfd)
            self._pidfd = -1

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.zygote.wait(self.pid, 3600.0 if timeout is None else timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
        self._close()
        return self.returncode
