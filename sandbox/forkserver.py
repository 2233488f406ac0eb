"""The warm fork server: imports torch once, then forks one confined child per job.

Design decision (issue 4): the server lives inside ONE long-lived bubblewrap jail shared by all jobs (built by
jail.py: read-only view of the interpreter and its packages only, cleared env, every namespace unshared, no
capabilities, uid 1000). Per-job isolation does not come from a bwrap per run (that would cost the ~1.7 s torch
import every time) but from the child's own layers (confine.py): closed descriptors, rlimits, fresh user/mount/
network/IPC namespaces with a private tmpfs, dropped capabilities and a seccomp filter. The server itself
holds no secrets and is non-dumpable, so a child cannot read its memory through /proc or signal it.
Known limit: a child starts as a copy of the server, so it could find in its own memory what the server held
at fork time (e.g. a concurrent job's source); a template process that never sees job data would close that.

Fork safety: single-threaded (OMP/MKL/OpenBLAS = 1 thread, torch.set_num_threads(1) before any op; checked at
start and before every fork), and every job has a wall deadline after which its process group is SIGKILLed.

Protocol (JSON lines): stdin gets {"op": "run", "id", "code", "limits", ...} or {"op": "ping", "id"}; stdout
answers {"event": "hello"} once, then {"id", "event": "started"} and {"id", "event": "done", ...} per job.
"""

from __future__ import annotations

import ctypes
import json
import os
import selectors
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

_MAX_REQUEST = 64 << 20
_STREAMS = ("stdout", "stderr", "result")
_PR_SET_DUMPABLE = 4

SELF_TEST = "import torch\nx = torch.ones(2, requires_grad=True)\n(x * 3).sum().backward()\n"


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


@dataclass
class Job:
    id: int
    pid: int
    pidfd: int
    fds: dict[str, int]
    deadline: float
    output_cap: int
    result_cap: int
    started: float
    workdir: str | None
    bufs: dict[str, bytearray] = field(default_factory=lambda: {s: bytearray() for s in _STREAMS})
    open: set[str] = field(default_factory=lambda: set(_STREAMS))
    output_total: int = 0
    truncated: bool = False
    killed: str | None = None
    status: int | None = None
    cpu_ms: float = 0.0
    maxrss_kb: int = 0
    ended: float = 0.0


class Server:
    def __init__(self, *, isolated: bool) -> None:
        self.isolated = isolated
        self.pid = os.getpid()
        self.selector = selectors.DefaultSelector()
        self.jobs: dict[int, Job] = {}
        self.inbuf = bytearray()
        self.replies: dict[int, dict[str, Any]] = {}
        self.capture_replies = False

    # Output ----------------------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        if self.capture_replies:
            self.replies[message["id"]] = message
            return
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(1, data):]

    # Starting a job ------------------------------------------------------------------------------------------

    def start_job(self, request: dict[str, Any]) -> None:
        from sandbox import runner
        from sandbox.limits import Limits

        job_id = int(request["id"])
        limits = Limits.from_json(request.get("limits") or {})
        if _thread_count() != 1:  # fork-safety invariant; restart rather than fork a poisoned child
            self.send({"id": job_id, "event": "error", "message": "fork server is multi-threaded"})
            sys.exit(3)
        pipes = {name: os.pipe() for name in _STREAMS}
        workdir = None if self.isolated else tempfile.mkdtemp(prefix="depthcards-job-")
        started = time.monotonic()
        try:
            pid = os.fork()
        except OSError as exc:  # EAGAIN/ENOMEM: fail this job, keep serving
            for pair in pipes.values():
                os.close(pair[0])
                os.close(pair[1])
            self.send({"id": job_id, "event": "error", "message": f"fork failed: {exc}"})
            return
        if pid == 0:
            runner.child_main(
                request, out_fd=pipes["stdout"][1], err_fd=pipes["stderr"][1], result_fd=pipes["result"][1],
                isolated=self.isolated, server_pid=self.pid, workdir=workdir or "",
            )
        for read_end, write_end in pipes.values():
            os.close(write_end)
            os.set_blocking(read_end, False)
        job = Job(
            id=job_id, pid=pid, pidfd=os.pidfd_open(pid),
            fds={name: pair[0] for name, pair in pipes.items()},
            deadline=started + float(limits.wall_s), output_cap=int(limits.output_bytes),
            # base64 inflates tensors by 4/3; the JSON around them is small.
            result_cap=int(limits.result_bytes) * 4 // 3 + (1 << 20), started=started, workdir=workdir,
        )
        self.jobs[pid] = job
        for name, fd in job.fds.items():
            self.selector.register(fd, selectors.EVENT_READ, ("stream", job, name))
        self.selector.register(job.pidfd, selectors.EVENT_READ, ("exit", job, None))
        self.send({"id": job_id, "event": "started"})

    # Watching jobs ----------------------------------------------------------------------------------------

    def kill(self, job: Job, reason: str) -> None:
        if job.killed is None and job.status is None:
            job.killed = reason
        for kill in (os.killpg, os.kill):
            try:
                kill(job.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def on_stream(self, job: Job, name: str) -> bool:
        """Read one chunk; False when nothing was there (EOF closes the stream)."""
        fd = job.fds[name]
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        if not chunk:
            self.close_stream(job, name)
            return False
        buf = job.bufs[name]
        if name == "result":
            if len(buf) + len(chunk) > job.result_cap:
                self.kill(job, "result")
                self.close_stream(job, name)
                return False
            buf += chunk
            return True
        room = job.output_cap - job.output_total
        job.output_total += len(chunk)
        buf += chunk[: max(room, 0)]
        if len(chunk) > room:
            job.truncated = True
            self.kill(job, "output")
            self.close_stream(job, name)
            return False
        return True

    def close_stream(self, job: Job, name: str) -> None:
        if name in job.open:
            self.selector.unregister(job.fds[name])
            os.close(job.fds[name])
            job.open.discard(name)

    def on_exit(self, job: Job) -> None:
        _, status, rusage = os.wait4(job.pid, 0)
        job.ended = time.monotonic()
        job.status = status
        job.cpu_ms = (rusage.ru_utime + rusage.ru_stime) * 1000
        job.maxrss_kb = rusage.ru_maxrss
        self.selector.unregister(job.pidfd)
        os.close(job.pidfd)
        # The child is gone, so its pipes hold all they will ever hold: drain them, then close.
        for name in list(job.open):
            while self.on_stream(job, name):
                pass
            self.close_stream(job, name)
        self.finish(job)

    def finish(self, job: Job) -> None:
        del self.jobs[job.pid]
        if job.workdir:
            shutil.rmtree(job.workdir, ignore_errors=True)  # fd-based, never follows the child's symlinks
        status = job.status or 0
        self.send({
            "id": job.id,
            "event": "done",
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "killed": job.killed,
            "stdout": job.bufs["stdout"].decode("utf-8", "replace"),
            "stderr": job.bufs["stderr"].decode("utf-8", "replace"),
            "output_truncated": job.truncated,
            "result": job.bufs["result"].decode("utf-8", "replace"),
            "duration_ms": round((job.ended - job.started) * 1000, 3),
            "cpu_ms": round(job.cpu_ms, 3),
            "maxrss_kb": job.maxrss_kb,
        })

    # Control channel ------------------------------------------------------------------------------------

    def on_control(self) -> bool:
        """Read requests; False once the client has gone away."""
        try:
            chunk = os.read(0, 1 << 20)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.inbuf += chunk
        if len(self.inbuf) > _MAX_REQUEST and b"\n" not in self.inbuf:
            return False
        while b"\n" in self.inbuf:
            line, _, rest = self.inbuf.partition(b"\n")
            self.inbuf = bytearray(rest)
            self.handle(json.loads(line))
        return True

    def handle(self, request: dict[str, Any]) -> None:
        op = request.get("op")
        if op == "run":
            self.start_job(request)
        elif op == "ping":
            self.send({"id": request.get("id"), "event": "pong", "jobs": len(self.jobs)})
        else:
            self.send({"id": request.get("id"), "event": "error", "message": f"unknown op {op!r}"})

    def step(self) -> None:
        now = time.monotonic()
        timeout = min((j.deadline - now for j in self.jobs.values() if j.killed is None), default=None)
        for key, _ in self.selector.select(None if timeout is None else max(timeout, 0.0)):
            kind, job, name = key.data
            if kind == "control":
                if not self.on_control():
                    raise SystemExit(0)
            elif kind == "stream" and job.pid in self.jobs:
                self.on_stream(job, name)
            elif kind == "exit" and job.pid in self.jobs:
                self.on_exit(job)
        now = time.monotonic()
        for job in list(self.jobs.values()):
            if job.killed is None and now >= job.deadline:
                self.kill(job, "wall")

    def serve(self) -> None:
        os.set_blocking(0, False)
        self.selector.register(0, selectors.EVENT_READ, ("control", None, None))
        try:
            while True:
                self.step()
        finally:
            for job in list(self.jobs.values()):
                self.kill(job, "shutdown")

    def self_test(self) -> str | None:
        """Run one real job through every layer; the reason it failed, or None."""
        from sandbox.limits import Limits

        limits = Limits(wall_s=30).to_json()
        self.capture_replies = True
        try:
            self.start_job({"id": 0, "code": SELF_TEST, "wants": ["x.grad"], "limits": limits})
            if self.isolated:
                self.start_job({"id": 1, "code": "import socket\nsocket.socket()\n", "limits": limits})
            while self.jobs:
                self.step()
        finally:
            self.capture_replies = False
        reply = self.replies.pop(0)
        if reply.get("exit_code") != 0 or '"outcome": "ok"' not in reply["result"]:
            try:
                detail = json.loads(reply["result"]).get("confine_error")
            except ValueError:
                detail = None
            return detail or f"self-test job failed: exit={reply.get('exit_code')} signal={reply.get('signal')}"
        if self.isolated:
            probe = self.replies.pop(1)
            if probe.get("signal") != signal.SIGSYS:
                detail = {k: probe.get(k) for k in ("exit_code", "signal", "result", "stderr")}
                return f"the seccomp filter did not stop socket() in the self-test: {detail}"
        return None


def main() -> None:
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    isolated = bool(config.get("isolated", True))
    import torch

    torch.set_num_threads(1)  # before any op: a parallel region in the parent hangs children (anchors §3)
    torch.set_num_interop_threads(1)
    from sandbox import runner

    runner.warm_up()
    # Non-dumpable (inherited by children): /proc/<server>/{mem,environ} and ptrace need privileges nobody has.
    ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    server = Server(isolated=isolated)
    threads = _thread_count()
    error = None if threads == 1 else f"fork server has {threads} threads after warm-up"
    error = error or server.self_test()
    server.send({
        "id": None, "event": "hello", "ok": error is None, "error": error, "isolated": isolated,
        "torch": torch.__version__, "python": sys.version.split()[0], "threads": threads,
    })
    if error is None:
        server.serve()


if __name__ == "__main__":
    main()
