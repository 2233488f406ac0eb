"""The warm fork server: imports torch once, then has one confined child forked per job.

Design decision (issue 4): the server lives inside ONE long-lived bubblewrap jail shared by all jobs (built by
jail.py: read-only view of the interpreter and its packages only, cleared env, every namespace unshared, no
capabilities, uid 1000). Per-job isolation does not come from a bwrap per run (that would cost the ~1.7 s torch
import every time) but from the child's own layers (confine.py): closed descriptors, rlimits, fresh user/mount/
network/IPC namespaces with a private tmpfs, dropped capabilities and a seccomp filter.

Two processes, so that no job can see another's data (zygote.py):
- the dispatcher (Server, below) reads requests, creates each job's pipes, writes the request into the job's
  request pipe, buffers its stdout/stderr/result and answers the client. It holds every user's data, so it
  never forks a job: it frees a request once written to the pipe and a job's output once answered.
- the zygote is forked from it after the torch import and warm-ups, BEFORE the first request is read. It only
  receives fork/kill orders (job id, pipe ends by SCM_RIGHTS) and never reads a request or any output. Every
  job is forked from it and reads only its own request, so a child's memory holds the warm template and its
  own job. The zygote is the children's parent: it reaps them and reports status and rusage, from which the
  dispatcher builds the verdict (its wall deadline still kills, through the zygote).
Both are non-dumpable, so a child cannot read their memory through /proc or ptrace them, nor signal them
(seccomp). Closed limit: before the zygote, a child was a copy of the server and could find a concurrent job's
source or output in its own memory (tests/sandbox/test_hostile.py::test_cant_read_another_jobs_code_or_output).

Fork safety: single-threaded (OMP/MKL/OpenBLAS = 1 thread, torch.set_num_threads(1) before any op; checked at
start and, in the zygote, before every fork), and every job has a wall deadline after which its process group
is SIGKILLed. If the zygote dies or turns multi-threaded, the dispatcher exits at once and the client starts a
new server.

Protocol (JSON lines): stdin gets {"op": "run", "id", "code", "limits", ...} or {"op": "ping", "id"}; stdout
answers {"event": "hello"} once, then {"id", "event": "started"} and {"id", "event": "done", ...} per job.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

from sandbox import zygote  # noqa: E402 - after the thread pins

_MAX_REQUEST = zygote.MAX_REQUEST
_STREAMS = ("stdout", "stderr", "result")
_PR_SET_DUMPABLE = 4
_F_SETPIPE_SZ = 1031
_REQUEST_PIPE_BYTES = 1 << 20  # the unprivileged maximum (fs.pipe-max-size): big inputs in few round trips

SELF_TEST = "import torch\nx = torch.ones(2, requires_grad=True)\n(x * 3).sum().backward()\n"


def _thread_count() -> int:
    return zygote.thread_count()


def _write_line(message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(1, data):]


class ZygoteGone(Exception):
    """The template process died, stopped listening or became unsafe: the dispatcher exits at once (no slow
    interpreter teardown) so the client sees EOF and restarts the whole server."""

    def __init__(self, why: str, code: int = 4) -> None:
        super().__init__(why)
        self.code = code


@dataclass
class Job:
    id: int
    fds: dict[str, int]
    deadline: float
    output_cap: int
    result_cap: int
    started: float
    workdir: str | None
    request: memoryview | None  # the raw request line, until it is all in the request pipe
    request_fd: int | None
    pid: int | None = None  # known once the zygote has forked the child
    bufs: dict[str, bytearray] = field(default_factory=lambda: {s: bytearray() for s in _STREAMS})
    open: set[str] = field(default_factory=lambda: set(_STREAMS))
    output_total: int = 0
    truncated: bool = False
    killed: str | None = None
    status: int | None = None
    cpu_ms: float = 0.0
    maxrss_kb: int = 0
    ended: float = 0.0
    finished: bool = False


class Server:
    """The dispatcher: reads requests, owns every job's pipes and buffers, never forks a job itself."""

    def __init__(self, *, isolated: bool, zygote_sock: socket.socket) -> None:
        self.isolated = isolated
        self.zygote = zygote_sock
        self.selector = selectors.DefaultSelector()
        self.selector.register(zygote_sock.fileno(), selectors.EVENT_READ, ("zygote", None, None))
        self.jobs: dict[int, Job] = {}  # by job id
        self.by_pid: dict[int, Job] = {}
        self.inbuf = bytearray()
        self.replies: dict[int, dict[str, Any]] = {}
        self.capture_replies = False

    # Output ----------------------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        if self.capture_replies:
            self.replies[message["id"]] = message
            return
        _write_line(message)

    def order(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        try:
            if fds:
                socket.send_fds(self.zygote, [json.dumps(message).encode()], fds)
            else:
                self.zygote.send(json.dumps(message).encode())
        except OSError as exc:
            raise ZygoteGone(str(exc)) from exc

    # Starting a job ------------------------------------------------------------------------------------------

    def start_job(self, request: dict[str, Any], raw: bytes | bytearray) -> None:
        """Hand the child's pipe ends to the zygote; the request itself goes down the request pipe later."""
        from sandbox.limits import Limits

        job_id = int(request["id"])
        limits = Limits.from_json(request.get("limits") or {})
        if job_id in self.jobs:
            self.send({"id": job_id, "event": "error", "message": "duplicate job id"})
            return
        request_r, request_w = os.pipe()
        if len(raw) > 1 << 16:
            try:
                fcntl.fcntl(request_w, _F_SETPIPE_SZ, min(len(raw), _REQUEST_PIPE_BYTES))
            except OSError:  # over the per-user pipe budget: the default 64 KiB works, just in more steps
                pass
        pipes = {name: os.pipe() for name in _STREAMS}
        workdir = None if self.isolated else tempfile.mkdtemp(prefix="depthcards-job-")
        started = time.monotonic()
        child_ends = [request_r] + [pipes[name][1] for name in _STREAMS]
        try:
            self.order({"op": "fork", "id": job_id, "workdir": workdir or ""}, child_ends)
        finally:
            for fd in child_ends:  # the zygote holds its own copies now (or never will)
                os.close(fd)
        os.set_blocking(request_w, False)
        for read_end, _ in pipes.values():
            os.set_blocking(read_end, False)
        job = Job(
            id=job_id, fds={name: pair[0] for name, pair in pipes.items()},
            deadline=started + float(limits.wall_s), output_cap=int(limits.output_bytes),
            # base64 inflates tensors by 4/3; the JSON around them is small.
            result_cap=int(limits.result_bytes) * 4 // 3 + (1 << 20), started=started, workdir=workdir,
            request=memoryview(raw), request_fd=request_w,
        )
        self.jobs[job_id] = job
        for name, fd in job.fds.items():
            self.selector.register(fd, selectors.EVENT_READ, ("stream", job, name))

    def on_forked(self, job: Job, pid: int) -> None:
        job.pid = pid
        self.by_pid[pid] = job
        self.write_request(job)
        if job.killed is not None:  # killed (output flood, deadline) before its pid was known
            self.order({"op": "kill", "pid": pid})
        self.send({"id": job.id, "event": "started"})

    def on_failed(self, job: Job, message: str) -> None:
        job.finished = True
        del self.jobs[job.id]
        self.close_request(job)
        for name in list(job.open):
            self.close_stream(job, name)
        if job.workdir:
            shutil.rmtree(job.workdir, ignore_errors=True)
        self.send({"id": job.id, "event": "error", "message": message})

    def write_request(self, job: Job) -> None:
        """Feed the request pipe without blocking; once it is all written, drop our copy and close the pipe."""
        assert job.request is not None and job.request_fd is not None
        while job.request:
            try:
                job.request = job.request[os.write(job.request_fd, job.request):]
            except BlockingIOError:
                key = self.selector.get_map().get(job.request_fd)
                if key is None:
                    self.selector.register(job.request_fd, selectors.EVENT_WRITE, ("request", job, None))
                return
            except OSError:  # EPIPE: the child is already gone; its exit report says why
                break
        self.close_request(job)

    def close_request(self, job: Job) -> None:
        if job.request_fd is not None:
            if job.request_fd in self.selector.get_map():
                self.selector.unregister(job.request_fd)
            os.close(job.request_fd)
            job.request_fd = None
        job.request = None

    # Watching jobs ----------------------------------------------------------------------------------------

    def kill(self, job: Job, reason: str) -> None:
        """SIGKILL the job's process group, through the zygote (its parent: the pid cannot have been reused)."""
        if job.killed is None and job.status is None:
            job.killed = reason
        if job.pid is not None and job.status is None:
            self.order({"op": "kill", "pid": job.pid})

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

    def on_zygote(self) -> None:
        """Every message the zygote has sent: forked, failed, exit (status and rusage of a reaped child)."""
        while True:
            try:
                data = self.zygote.recv(1 << 16, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError as exc:
                raise ZygoteGone(str(exc)) from exc
            if not data:
                raise ZygoteGone("EOF")
            message = json.loads(data)
            event = message.get("event")
            if event == "exit":
                job = self.by_pid.pop(message["pid"], None)
                if job is not None:
                    self.on_exit(job, message)
                continue
            job = self.jobs.get(message.get("id"))  # type: ignore[arg-type]
            if event == "forked" and job is not None:
                self.on_forked(job, int(message["pid"]))
            elif event == "failed":
                if job is not None:
                    self.on_failed(job, str(message.get("message")))
                if message.get("fatal"):
                    raise ZygoteGone(str(message.get("message")), zygote.EXIT_MULTITHREADED)

    def on_exit(self, job: Job, report: dict[str, Any]) -> None:
        job.ended = time.monotonic()
        job.status = int(report["status"])
        job.cpu_ms = float(report["cpu_ms"])
        job.maxrss_kb = int(report["maxrss_kb"])
        self.close_request(job)
        # The child is gone, so its pipes hold all they will ever hold: drain them, then close.
        for name in list(job.open):
            while self.on_stream(job, name):
                pass
            self.close_stream(job, name)
        self.finish(job)

    def finish(self, job: Job) -> None:
        job.finished = True
        del self.jobs[job.id]
        if job.workdir:
            shutil.rmtree(job.workdir, ignore_errors=True)  # fd-based, never follows the child's symlinks
        status = job.status or 0
        message = {
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
        }
        job.bufs.clear()  # the user's output is not kept past its answer
        self.send(message)

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
            self.handle(json.loads(line), line)
        return True

    def handle(self, request: dict[str, Any], raw: bytes | bytearray) -> None:
        op = request.get("op")
        if op == "run":
            self.start_job(request, raw)
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
            elif kind == "zygote":
                self.on_zygote()
            elif job.finished:
                continue  # answered earlier in this round; its descriptor may already be another job's
            elif kind == "stream":
                self.on_stream(job, name)
            elif kind == "request":
                self.write_request(job)
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
        except ZygoteGone as exc:
            print(f"fork server: the zygote is gone ({exc}); exiting", file=sys.stderr, flush=True)
            for job in self.jobs.values():  # its children died with it (PDEATHSIG)
                if job.workdir:
                    shutil.rmtree(job.workdir, ignore_errors=True)
            os._exit(exc.code)
        finally:
            # EOF on its socket makes the zygote SIGKILL every child it has not reaped (and then exit).
            self.zygote.close()

    def self_test(self) -> str | None:
        """Run one real job through every layer; the reason it failed, or None."""
        from sandbox.limits import Limits

        limits = Limits(wall_s=30).to_json()
        self.capture_replies = True
        try:
            jobs = [{"id": 0, "code": SELF_TEST, "wants": ["x.grad"], "limits": limits}]
            if self.isolated:
                jobs.append({"id": 1, "code": "import socket\nsocket.socket()\n", "limits": limits})
            for job in jobs:
                self.start_job(job, json.dumps(job).encode())
            while self.jobs:
                self.step()
        except ZygoteGone as exc:
            return f"the fork server's zygote failed during the self-test: {exc}"
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
    # Non-dumpable (inherited by the zygote and every child): /proc/<pid>/{mem,environ} and ptrace of the
    # dispatcher or the zygote need privileges nobody has.
    ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    threads = _thread_count()
    error = None if threads == 1 else f"fork server has {threads} threads after warm-up"
    server = None
    if error is None:
        # Before the first request is read: the template every job is forked from never holds job data.
        zygote_sock, _ = zygote.spawn(isolated=isolated)
        server = Server(isolated=isolated, zygote_sock=zygote_sock)
        error = server.self_test()
    _write_line({
        "id": None, "event": "hello", "ok": error is None, "error": error, "isolated": isolated,
        "torch": torch.__version__, "python": sys.version.split()[0], "threads": threads,
    })
    if server is not None and error is None:
        server.serve()


if __name__ == "__main__":
    main()
