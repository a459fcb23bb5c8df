"""Host side of a worker process: start, call with a timeout, survive its death.

A worker is ``python -m gbft_action.workers.serve`` (optionally behind a command
prefix such as ``chroot ROOT``) speaking pickled dicts over an inherited pipe.
Its stdout/stderr go to a log file, so whatever native code prints (MNN's
converter prints its errors) is kept per call by file offset.  A call ends in
one of three ways: a reply, the worker's death (signal or exit code, with the
tail of its log), or a timeout (the worker is killed).  The next call starts a
fresh worker.

``close`` (a cancelled run) may come from another thread at any moment: it kills
the process and no worker starts after it, so calls in flight and later ones end
as crashes and ``start`` raises ``WorkerClosed`` instead of leaving a process behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..wire.zygote import ForkedChild, Zygote, ZygoteFailed

LOG_TAIL_LINES = 40


@dataclass
class CallResult:
    kind: str  # "ok" | "error" | "crash" | "timeout"
    reply: dict[str, Any] = field(default_factory=dict)
    log: str = ""  # what the worker printed during this call
    signal: int | None = None
    exit_code: int | None = None
    elapsed: float = 0.0
    cpu: float = 0.0  # the worker's own CPU seconds for the call, as its reply said

    @property
    def crash_summary(self) -> str:
        if self.kind == "timeout":
            return "timed out (worker killed)"
        if self.signal:
            return f"killed by signal {self.signal} ({signal.Signals(self.signal).name})"
        return f"worker exited with code {self.exit_code}"


@dataclass
class WorkerSpec:
    role: str  # "reference" | "engine"
    target: str = ""  # engine "module:Class" for engine workers
    prefix: tuple[str, ...] = ()  # e.g. ("chroot", ROOT) for an emulated platform
    python: str = sys.executable
    mem_mb: int = 0  # address-space limit inside the worker; 0: none
    # Resident memory watched from outside, in MiB (0: not watched): for a platform whose
    # emulator cannot take an address-space limit (qemu-user reserves the guest's whole
    # space), a runaway engine is killed here instead of taking the machine's memory (MNN under
    # qemu grew to 14 GB in two minutes).
    rss_mb: int = 0
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    pythonpath: str = ""
    # Fork each worker from a process that imported the handler once (wire.zygote): a
    # restart after a crash costs a fork, not an interpreter and the engine's import.
    fork_server: bool = False


RSS_POLL_S = 0.25  # how often a watched worker's resident memory is read while it works


def resident_mb(pid: int) -> int:
    """Process ``pid``'s resident memory in MiB (0 when it cannot be read: gone, or no /proc)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            line = next((x for x in f if x.startswith("VmRSS:")), "")
    except OSError:
        return 0
    parts = line.split()
    return int(parts[1]) >> 10 if len(parts) > 1 and parts[1].isdigit() else 0


class StartFailed(RuntimeError):
    """A worker did not answer its hello: ``result`` says how (timeout, signal, exit code)."""

    def __init__(self, message: str, result: CallResult) -> None:
        super().__init__(message)
        self.result = result


class WorkerClosed(RuntimeError):
    """The worker was closed for good (a cancelled run) and will not start again."""


class Worker:
    def __init__(self, spec: WorkerSpec, log_path: Path) -> None:
        self.spec = spec
        self.log_path = log_path
        self._logfd: int | None = None  # the log, open for reading (see _log_fd)
        self._loglock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | ForkedChild | None = None
        self.conn: _DuplexConn | None = None
        self.zygote: Zygote | None = None  # the fork server, with spec.fork_server
        self._whole = False  # the next start is a whole new process, not a fork (renew)
        self.restarts = 0
        self.hello: dict[str, object] = {}
        self.closed = False  # closed for good (a cancelled run): no restarts
        self._lock = threading.Lock()  # a process is started, or closed, not both at once
        self._swap = threading.Lock()  # one thread takes the process to stop it, not two
        # Wall seconds waited for this worker, by op ("start": spawning it up to its hello), and
        # how many calls: where a lane's time goes (bench/throughput.py).
        self.spent: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        # The worker's own CPU seconds for those calls (all its threads), as its replies say:
        # what the engine or the reference costs, apart from waiting for a core.
        self.cpu: dict[str, float] = defaultdict(float)

    # -- lifecycle ------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> dict[str, object]:
        t0 = time.monotonic()
        with self._lock:
            if self.closed:
                raise WorkerClosed(f"{self.spec.role} worker closed")
            pipes = self._spawn()
        if pipes is not None:  # fork it from the zygote (outside the lock: close() may kill it)
            self._fork(pipes, timeout)
        res = self.call({"op": "hello"}, timeout)
        self._count("start", time.monotonic() - t0, res.cpu)  # the hello loads the handler
        if res.kind != "ok":
            self._start_failed(res)
        self.hello = res.reply
        return res.reply

    def _start_failed(self, res: CallResult) -> None:
        if self.closed:
            raise WorkerClosed(f"{self.spec.role} worker closed while starting")
        tail = res.log or self._tail(0)
        self.stop()  # its zygote too: one that hung or crashed starting is started afresh next time
        # An error reply (the engine's import raised) says why; a death or a hang, how.
        why = res.reply.get("error") if res.kind == "error" and res.reply.get("error") else res.crash_summary
        raise StartFailed(f"{self.spec.role} worker failed to start: {why}\n{tail}",
                          CallResult(res.kind, res.reply, tail[-8000:], res.signal, res.exit_code, res.elapsed))

    def _spawn(self) -> tuple[int, int, int, int] | None:
        """Start the worker process, or with a fork server make sure the server runs and return
        the pipes (r_parent, w_parent, r_child, w_child) its fork is to serve."""
        r_parent, w_child = os.pipe()
        r_child, w_parent = os.pipe()
        argv = [*self.spec.prefix, self.spec.python, "-m", "gbft_action.workers.serve",
                "--role", self.spec.role, "--mem-mb", str(self.spec.mem_mb)]
        if self.spec.target:
            argv += ["--target", self.spec.target]
        env = {**os.environ, **self.spec.env, "PYTHONUNBUFFERED": "1"}
        if self.spec.pythonpath:
            env["PYTHONPATH"] = self.spec.pythonpath
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            if self.spec.fork_server and not self._whole:
                if self.zygote is None or not self.zygote.alive():
                    if self.zygote is not None:
                        self.zygote.kill()
                    self.zygote = Zygote(argv, env, self.spec.cwd, log)
                return r_parent, w_parent, r_child, w_child
            self._whole = False
            self.proc = subprocess.Popen([*argv, "--rfd", str(r_child), "--wfd", str(w_child)],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         pass_fds=(r_child, w_child), env=env, cwd=self.spec.cwd,
                                         start_new_session=True)
        except BaseException:
            for fd in (r_parent, w_parent, r_child, w_child):
                os.close(fd)
            raise
        finally:
            log.close()
        os.close(r_child)
        os.close(w_child)
        self.conn = _DuplexConn(r_parent, w_parent)
        return None

    def _fork(self, pipes: tuple[int, int, int, int], timeout: float) -> None:
        r_parent, w_parent, r_child, w_child = pipes
        zygote = self.zygote
        try:
            if zygote is None:
                raise ZygoteFailed("worker closed", "crash", -signal.SIGKILL)
            child = zygote.fork(r_child, w_child, timeout)
        except ZygoteFailed as e:
            for fd in pipes:
                os.close(fd)
            code = e.code
            self._start_failed(CallResult(e.kind, {"error": str(e)}, signal=-code if code and code < 0 else None,
                                          exit_code=code))
            return
        os.close(r_child)
        os.close(w_child)
        with self._swap:
            self.proc, self.conn = child, _DuplexConn(r_parent, w_parent)
        if self.closed:  # close() ran while it forked: take it down again
            self._end_process()

    def alive(self) -> bool:
        proc = self.proc
        return proc is not None and proc.poll() is None

    def stop(self) -> None:
        """Stop the worker and its fork server: nothing of it runs after this."""
        self._end_process()
        with self._swap:
            zygote, self.zygote = self.zygote, None
        if zygote is not None:
            zygote.kill()
        self._close_log()

    def recycle(self) -> None:
        """End the worker process; the next call starts a fresh one (a fork of the server when
        there is one: cheap).  For a worker an earlier model may have left damaged."""
        self._end_process()

    def renew(self) -> None:
        """End the worker process; the next one starts whole, not forked (the fork server is kept
        for later restarts).  Forks share their server's address-space layout, heap and random
        state: a replay that asks whether a bug shows again on a fresh worker needs a process
        that differs as two real runs would."""
        self._end_process()
        self._whole = True

    def _end_process(self) -> None:
        with self._swap:
            proc, conn = self.proc, self.conn
            self.proc, self.conn = None, None
        if proc is not None:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
        if conn is not None:
            conn.close()

    def ensure(self, timeout: float = 120.0) -> None:
        if not self.alive():
            if self.proc is not None:
                self.restarts += 1
            self._end_process()
            self.start(timeout)

    # -- calls ----------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self.closed = True
            self.stop()

    def call(self, msg: dict[str, Any], timeout: float) -> CallResult:
        t_start = time.monotonic()
        try:
            if msg.get("op") != "hello":
                self.ensure(timeout)  # a restart that hangs or dies is this call's failure, within its limit
        except WorkerClosed:
            pass
        except StartFailed as e:  # the engine could not start again (a hang, a crash in its import)
            return replace(e.result, kind="crash" if e.result.kind == "error" else e.result.kind,
                           elapsed=time.monotonic() - t_start)
        proc, conn = self.proc, self.conn  # close() may clear them from another thread
        if self.closed or proc is None or conn is None:
            return CallResult("crash", log="worker closed", exit_code=-9)
        off = self._size()
        t0 = time.monotonic()
        res = self._exchange(proc, conn, msg, timeout, off, t0)
        if msg.get("op") != "hello":  # a hello is counted with the start that asked it
            self._count(str(msg.get("op")), res.elapsed, res.cpu)
        return res

    def _exchange(self, proc: subprocess.Popen[bytes] | ForkedChild, conn: _DuplexConn, msg: dict[str, object], timeout: float,
                  off: int, t0: float) -> CallResult:
        try:
            conn.send(msg)
            answered = self._wait(proc, conn, timeout)
            if answered is None:  # over its resident memory: killed, a finding like any crash
                return self._died(proc, off, t0, f"killed: resident memory above {self.spec.rss_mb} MiB")
            if not answered:
                self._end_process()
                return CallResult("timeout", log=self._tail(off), elapsed=time.monotonic() - t0)
            reply = conn.recv()
        except (EOFError, OSError):
            return self._died(proc, off, t0)
        kind = "ok" if reply.get("ok") else "error"
        cpu = float(reply.pop("cpu", 0.0))  # bookkeeping, not the answer (a hello is kept whole)
        return CallResult(kind, reply, self._read(off), elapsed=time.monotonic() - t0, cpu=cpu)

    def _wait(self, proc: subprocess.Popen[bytes] | ForkedChild, conn: _DuplexConn, timeout: float) -> bool | None:
        """Whether the worker answered within ``timeout``; None when it went over its resident
        memory (spec.rss_mb) first, and was killed."""
        if not self.spec.rss_mb:
            return conn.poll(timeout)
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if conn.poll(max(0.0, min(RSS_POLL_S, left))):
                return True
            if resident_mb(proc.pid) > self.spec.rss_mb:
                os.kill(proc.pid, signal.SIGKILL)
                return None
            if left <= RSS_POLL_S:
                return False

    def _count(self, op: str, seconds: float, cpu: float = 0.0) -> None:
        self.spent[op] += seconds
        self.calls[op] += 1
        self.cpu[op] += cpu

    def _died(self, proc: subprocess.Popen[bytes] | ForkedChild, off: int, t0: float, why: str = "") -> CallResult:
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._end_process()
            code = proc.wait()
        log = self._tail(off) + (f"\n{why}\n" if why else "")
        self._end_process()
        sig = -code if code < 0 else None
        return CallResult("crash", log=log, signal=sig, exit_code=code, elapsed=time.monotonic() - t0)

    # -- log ------------------------------------------------------------------------
    # The log is read after every call: one descriptor kept open (pread, fstat) rather than
    # an open, seek and close per call, and no read at all when the call printed nothing.
    # Under a lock: stop() closes it (from another thread, when a run is cancelled), and a
    # descriptor number closed mid-read could be another file's by then.
    def _log_fd(self) -> int | None:
        if self._logfd is None:
            try:
                self._logfd = os.open(self.log_path, os.O_RDONLY)
            except OSError:
                return None
        return self._logfd

    def _size(self) -> int:
        with self._loglock:
            fd = self._log_fd()
            try:
                return os.fstat(fd).st_size if fd is not None else 0
            except OSError:
                return 0

    def _read(self, off: int, limit: int = 64 * 1024) -> str:
        with self._loglock:
            fd = self._log_fd()
            try:
                if fd is None or os.fstat(fd).st_size <= off:
                    return ""
                return os.pread(fd, limit, off).decode("utf-8", "replace")
            except OSError:
                return ""

    def _close_log(self) -> None:
        with self._loglock:
            if self._logfd is not None:
                os.close(self._logfd)
                self._logfd = None

    def _tail(self, off: int) -> str:
        return "\n".join(self._read(off, 1 << 20).splitlines()[-LOG_TAIL_LINES:])


class _DuplexConn:
    """Two one-way pipe Connections used as one duplex connection."""

    def __init__(self, rfd: int, wfd: int) -> None:
        self.r = Connection(rfd, writable=False)
        self.w = Connection(wfd, readable=False)

    def send(self, obj: Any) -> None:
        self.w.send(obj)

    def recv(self) -> Any:
        return self.r.recv()

    def poll(self, timeout: float) -> bool:
        return self.r.poll(timeout)

    def close(self) -> None:
        self.r.close()
        self.w.close()
