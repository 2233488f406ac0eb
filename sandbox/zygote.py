"""The template ("zygote") process: a warm copy of the fork server that never sees job data.

forkserver.main() forks it after importing torch and warming up, before reading any job. From then on it only
receives fork and kill orders over a private AF_UNIX SOCK_SEQPACKET socketpair (one JSON object per message):

  dispatcher -> zygote  {"op": "fork", "id", "workdir"} with SCM_RIGHTS fds [request (read end), stdout, stderr,
                        result (write ends)];  {"op": "kill", "pid"}
  zygote -> dispatcher  {"event": "forked", "id", "pid"};  {"event": "failed", "id", "message", "fatal"};
                        {"event": "exit", "pid", "status", "cpu_ms", "maxrss_kb"}

Each forked child reads its own request (the submitted code, inputs, limits) from the request pipe, which only the
dispatcher writes, then runs runner.child_main (confinement, seccomp last, the snippet). So a child's memory is a copy of this
process (torch, warm caches, pids and job ids) plus its own request, never another user's code or output.

The zygote is its children's parent, so it alone can reap them: it wait4()s each one and reports status and
rusage. Kills go through it too: a pid it has not reaped yet cannot have been reused, so kill/killpg never hit
a stranger. It stays single-threaded (checked before every fork), non-dumpable, dies with the dispatcher
(PR_SET_PDEATHSIG, and on EOF it kills its children), and its children die with it (confine.enter arms their
PDEATHSIG). If it dies, the dispatcher exits and the client restarts the server.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import select
import signal
import socket
import sys
import traceback
from typing import Any, NoReturn

MAX_REQUEST = 64 << 20
FDS_PER_JOB = 4  # request read end, stdout, stderr, result write ends
EXIT_MULTITHREADED = 3
_MAX_ORDER = 1 << 16
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def spawn(*, isolated: bool) -> tuple[socket.socket, int]:
    """Fork the zygote from the (warm, single-threaded) caller; the dispatcher's end of the socket and its pid."""
    dispatcher_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    dispatcher_pid = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            dispatcher_end.close()
            code = Zygote(zygote_end, isolated=isolated, dispatcher_pid=dispatcher_pid).serve()
        except BaseException:  # noqa: BLE001 - never return into the dispatcher's code
            traceback.print_exc()
        finally:
            os._exit(code)
    zygote_end.close()
    return dispatcher_end, pid


class Zygote:
    def __init__(self, sock: socket.socket, *, isolated: bool, dispatcher_pid: int) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != dispatcher_pid:  # the dispatcher died before PDEATHSIG was armed
            os._exit(0)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # inherited already; stated here because it matters here
        # The control channel is the dispatcher's alone: stdin/stdout become /dev/null (not closed, so received
        # descriptors never land on 0-2). stderr stays for tracebacks.
        devnull = os.open("/dev/null", os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        # Everything the warm-up built becomes permanent: a child's garbage collections never walk (and so never
        # copy-on-write) the template's few hundred thousand objects; one such pass cost a job ~5 ms.
        gc.collect()
        gc.freeze()
        self.sock = sock
        self.isolated = isolated
        self.pid = os.getpid()
        self.poller = select.poll()
        self.poller.register(sock.fileno(), select.POLLIN)
        self.live: dict[int, int] = {}  # pidfd -> pid of children not reaped yet
        self.pids: set[int] = set()

    def reply(self, message: dict[str, Any]) -> None:
        self.sock.send(json.dumps(message).encode())

    def serve(self) -> int:
        """Run until the dispatcher goes away; the exit code."""
        try:
            while True:
                for fd, _ in self.poller.poll():
                    code = self.on_order() if fd == self.sock.fileno() else self.reap(fd)
                    if code is not None:
                        return code
        except (BrokenPipeError, ConnectionError):  # the dispatcher is gone
            self.kill_all()
            return 0

    def on_order(self) -> int | None:
        data, fds, flags, _ = socket.recv_fds(self.sock, _MAX_ORDER, FDS_PER_JOB)
        if not data or flags & socket.MSG_TRUNC:  # EOF: the dispatcher exited (orders are never truncated)
            for fd in fds:
                os.close(fd)
            self.kill_all()
            return 0
        order = json.loads(data)
        if order.get("op") == "fork":
            return self.fork(order, fds)
        for fd in fds:
            os.close(fd)
        if order.get("op") == "kill":
            self.kill(int(order["pid"]))
        return None

    def fork(self, order: dict[str, Any], fds: list[int]) -> int | None:
        job_id = order.get("id")
        if len(fds) != FDS_PER_JOB:
            for fd in fds:
                os.close(fd)
            self.reply({"event": "failed", "id": job_id, "message": f"fork order came with {len(fds)} descriptors"})
            return None
        threads = thread_count()
        if threads != 1:  # fork-safety invariant: restart rather than fork a poisoned child
            self.reply({"event": "failed", "id": job_id, "fatal": True,
                        "message": f"fork server (zygote) is multi-threaded ({threads} threads)"})
            self.kill_all()
            return EXIT_MULTITHREADED
        try:
            pid = os.fork()
        except OSError as exc:  # EAGAIN/ENOMEM: fail this job, keep serving
            for fd in fds:
                os.close(fd)
            self.reply({"event": "failed", "id": job_id, "message": f"fork failed: {exc}"})
            return None
        if pid == 0:
            _child(self.sock, fds, order, zygote_pid=self.pid, isolated=self.isolated)
        for fd in fds:
            os.close(fd)
        # Opened before we could possibly reap it, so this is that child and no other.
        pidfd = os.pidfd_open(pid)
        self.live[pidfd] = pid
        self.pids.add(pid)
        self.poller.register(pidfd, select.POLLIN)
        self.reply({"event": "forked", "id": job_id, "pid": pid})
        return None

    def reap(self, pidfd: int) -> int | None:
        pid = self.live[pidfd]
        waited, status, rusage = os.wait4(pid, os.WNOHANG)
        if waited == 0:  # readable before the whole thread group is gone; poll again
            return None
        self.poller.unregister(pidfd)
        os.close(pidfd)
        del self.live[pidfd]
        self.pids.discard(pid)
        self.reply({
            "event": "exit", "pid": pid, "status": status,
            "cpu_ms": (rusage.ru_utime + rusage.ru_stime) * 1000, "maxrss_kb": rusage.ru_maxrss,
        })
        return None

    def kill(self, pid: int) -> None:
        """SIGKILL a child and its process group (it called setsid); only children not reaped yet."""
        if pid not in self.pids:
            return
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def kill_all(self) -> None:
        for pid in list(self.pids):
            self.kill(pid)


def _read_request(fd: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > MAX_REQUEST:
            raise ValueError(f"request larger than {MAX_REQUEST} bytes")
        chunks.append(chunk)


def _child(sock: socket.socket, fds: list[int], order: dict[str, Any], *, zygote_pid: int, isolated: bool) -> NoReturn:
    """In the freshly forked child: read this job's request, then run it exactly as runner.child_main does."""
    try:
        from sandbox import runner  # already imported (warm) in the server before the zygote was forked

        sock.close()
        request_fd, out_fd, err_fd, result_fd = fds
        try:
            job = json.loads(_read_request(request_fd))
            os.close(request_fd)
        except BaseException as exc:  # noqa: BLE001
            message = json.dumps({"confine_error": f"could not read the job: {type(exc).__name__}: {exc}"[:4000]})
            os.write(result_fd, (message + "\n").encode())
            os._exit(runner.EXIT_CONFINE_FAILED)
        runner.child_main(
            job, out_fd=out_fd, err_fd=err_fd, result_fd=result_fd, isolated=isolated, server_pid=zygote_pid,
            workdir=str(order.get("workdir") or ""),
        )
    except BaseException:  # noqa: BLE001 - whatever happens, never return into the zygote's loop
        traceback.print_exc(file=sys.stderr)
    finally:
        os._exit(1)
