"""What the app imports: Sandbox(limits).run(code, wants=...) -> RunResult.

Thread-safe for a small worker pool (FastAPI runs sync routes in threads): one fork server serves all threads,
jobs are matched to answers by id, and at most `max_concurrent` children run at once. The server is started
on first use (or by start()), restarted when it dies, and killed and restarted when it stops answering.
Without bubblewrap or user namespaces the sandbox refuses to run (SandboxUnavailable -> 503) unless
allow_unisolated=True, which is meant for a single-user machine and logs a warning.
"""

from __future__ import annotations

import collections
import itertools
import json
import logging
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sandbox import jail, seccomp
from sandbox.limits import Limits
from sandbox.protocol import TensorData, check_want
from sandbox.verdict import RunResult, build, internal_error

if TYPE_CHECKING:
    import torch

log = logging.getLogger("sandbox")

UNISOLATED_WARNING = (
    "The PyTorch sandbox is running WITHOUT isolation: submitted code can read and change this user's files "
    "and use the network. Only acceptable on a single-user machine."
)


class SandboxUnavailable(RuntimeError):
    """Isolation is not available here and unisolated runs were not allowed; `reason` says why (HTTP 503)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Status:
    """Whether runs can happen, whether they are isolated, and why not."""

    available: bool
    isolated: bool
    reason: str | None = None
    warning: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"available": self.available, "isolated": self.isolated, "reason": self.reason,
                "warning": self.warning}


class _ServerGone(Exception):
    pass


class _Pending:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.done = threading.Event()
        self.response: dict[str, Any] | None = None
        self.error: str | None = None
        self.acked = False


class _Launcher:
    """Starts server processes from one long-lived thread.

    bubblewrap's --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that forked it exits,
    not the process. A server started from a short-lived request thread would die with that thread; starting
    every server here ties its life to the app's instead.
    """

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[Callable[[], subprocess.Popen[bytes]], queue.SimpleQueue[Any]]] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._serve, name="sandbox-launcher", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            start, reply = self._requests.get()
            try:
                reply.put(start())
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller, which re-raises it
                reply.put(exc)

    def popen(self, start: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        reply: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._requests.put((start, reply))
        result = reply.get()
        if isinstance(result, BaseException):
            raise result
        return result  # type: ignore[no-any-return]


_LAUNCHER: _Launcher | None = None
_LAUNCHER_LOCK = threading.Lock()


def _launcher() -> _Launcher:
    global _LAUNCHER
    with _LAUNCHER_LOCK:
        if _LAUNCHER is None:
            _LAUNCHER = _Launcher()
        return _LAUNCHER


class _ServerProcess:
    """One fork server process (jailed or not) and the thread that reads its answers."""

    def __init__(self, argv: list[str], env: dict[str, str], *, isolated: bool, max_line: int) -> None:
        self.isolated = isolated
        self.max_line = max_line
        self.proc = _launcher().popen(
            lambda: subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd="/",
                close_fds=True, start_new_session=True,
            )
        )
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._stdin_fd = self.proc.stdin.fileno()
        os.set_blocking(self._stdin_fd, False)
        self.pending: dict[int, _Pending] = {}
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.hello: dict[str, Any] | None = None
        self.hello_event = threading.Event()
        self.dead_reason: str | None = None
        self.stderr_tail: collections.deque[bytes] = collections.deque(maxlen=64)
        threading.Thread(target=self._read_stdout, name="sandbox-server-out", daemon=True).start()
        threading.Thread(target=self._read_stderr, name="sandbox-server-err", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self.dead_reason is None and self.proc.poll() is None

    def stderr_text(self) -> str:
        return b"".join(self.stderr_tail).decode("utf-8", "replace")[-2000:]

    def _read_stderr(self) -> None:
        assert self.proc.stderr
        for chunk in iter(lambda: self.proc.stderr.read1(4096), b""):  # type: ignore[union-attr]
            self.stderr_tail.append(chunk)
        self.proc.stderr.close()

    def _read_stdout(self) -> None:
        assert self.proc.stdout
        reason = "the sandbox server exited"
        while True:
            line = self.proc.stdout.readline(self.max_line)
            if not line:
                break
            if not line.endswith(b"\n"):
                reason = "the sandbox server sent an over-long line"
                self.kill()
                break
            try:
                message = json.loads(line)
            except ValueError:
                reason = "the sandbox server sent invalid JSON"
                self.kill()
                break
            self._dispatch(message)
        self._mark_dead(reason)
        self.proc.stdout.close()
        try:
            self.proc.wait(timeout=10)  # reap it, so no zombie (or ResourceWarning) is left behind
        except subprocess.TimeoutExpired:
            self.kill()

    def _dispatch(self, message: dict[str, Any]) -> None:
        event = message.get("event")
        if event == "hello":
            self.hello = message
            self.hello_event.set()
            return
        with self.lock:
            pending = self.pending.get(message.get("id"))  # type: ignore[arg-type]
            if pending is None:
                return
            if event == "started":
                pending.acked = True
                pending.started.set()
                return
            del self.pending[message["id"]]
        if event == "done":
            pending.acked = True
            pending.response = message
        else:
            pending.error = str(message.get("message") or event)
        pending.started.set()
        pending.done.set()

    def _mark_dead(self, reason: str) -> None:
        with self.lock:
            if self.dead_reason is None:
                self.dead_reason = reason
            pending, self.pending = self.pending, {}
        for item in pending.values():
            item.error = reason
            item.done.set()
            item.started.set()
        self.hello_event.set()

    def submit(self, job_id: int, request: dict[str, Any], timeout: float) -> _Pending:
        pending = _Pending()
        with self.lock:
            if self.dead_reason is not None:
                raise _ServerGone(self.dead_reason)
            self.pending[job_id] = pending
        data = (json.dumps(request) + "\n").encode()
        deadline = time.monotonic() + timeout
        # Non-blocking writes with a deadline: a wedged server must not hang the calling thread.
        with self.write_lock:
            while data:
                remaining = deadline - time.monotonic()
                try:
                    if remaining <= 0 or not select.select([], [self._stdin_fd], [], remaining)[1]:
                        raise _ServerGone("the sandbox server stopped reading requests")
                    data = data[os.write(self._stdin_fd, data):]
                except BlockingIOError:
                    continue
                except (OSError, ValueError) as exc:  # EPIPE, or the pipe was closed by kill()
                    raise _ServerGone(f"the sandbox server is gone ({exc})") from exc
        return pending

    def kill(self) -> None:
        """SIGKILL the whole process group; bwrap's --die-with-parent and PID namespace take the jail with it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._mark_dead("the sandbox server was killed")
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass


class Sandbox:
    """Runs untrusted PyTorch snippets in a warm, jailed fork server."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        allow_unisolated: bool = False,
        isolate: bool = True,
        max_concurrent: int = 4,
        start_timeout_s: float = 120.0,
        ack_timeout_s: float = 5.0,
        grace_s: float = 5.0,
        python: str | None = None,
        bwrap: str | None = None,
    ) -> None:
        """`isolate=False` (benchmarks, debugging) needs `allow_unisolated=True` too; `bwrap` overrides the
        bubblewrap binary found on PATH (a missing path means: no isolation available)."""
        if not isolate and not allow_unisolated:
            raise ValueError("isolate=False requires allow_unisolated=True")
        self.limits = limits or Limits()
        self.allow_unisolated = allow_unisolated
        self.isolate = isolate
        self.start_timeout_s = start_timeout_s
        self.ack_timeout_s = ack_timeout_s
        self.grace_s = grace_s
        self.python = python or sys.executable
        self.bwrap = bwrap or jail.find_bwrap()
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._lock = threading.Lock()
        self._server: _ServerProcess | None = None
        self._status: Status | None = None
        self._ids = itertools.count(1)
        self.restarts = 0

    # Lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> Status:
        """Start the fork server now (instead of on the first run); raises SandboxUnavailable."""
        self._ensure_server()
        assert self._status is not None
        return self._status

    def status(self) -> Status:
        """Whether the sandbox can run jobs, isolated or not, and why not (starts the server to find out)."""
        try:
            return self.start()
        except SandboxUnavailable as exc:
            return Status(available=False, isolated=False, reason=exc.reason)

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.kill()
                self._server = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def server_pid(self) -> int | None:
        """Host pid of the fork server's Python process (inside the jail), for monitoring and tests."""
        server = self._server
        if server is None or not server.alive:
            return None
        if not server.isolated:
            return server.proc.pid
        return _find_descendant(server.proc.pid, b"sandbox.forkserver")

    def _host_problem(self) -> str | None:
        if self.bwrap is None or not os.access(self.bwrap, os.X_OK):
            return "bubblewrap is not installed (apt-get install bubblewrap)"
        return seccomp.unsupported_reason() or jail.userns_problem()

    def _spawn(self, *, isolated: bool) -> _ServerProcess:
        env = jail.server_env()
        max_line = 8 * (self.limits.result_bytes + self.limits.output_bytes) + (16 << 20)
        if isolated:
            assert self.bwrap is not None
            argv = jail.bwrap_command(
                self.bwrap,
                jail.server_argv(jail.jail_python(self.python), isolated=True, package_root=jail.JAIL_PACKAGE_ROOT),
                env,
            )
            host_env = {"PATH": "/usr/bin:/bin"}
        else:
            argv = jail.server_argv(self.python, isolated=False, package_root=jail.host_package_root())
            host_env = env
        server = _ServerProcess(argv, host_env, isolated=isolated, max_line=max_line)
        if not server.hello_event.wait(self.start_timeout_s) or not server.hello or not server.hello.get("ok"):
            detail = (server.hello or {}).get("error") or server.dead_reason or "no answer"
            stderr = server.stderr_text().strip()
            server.kill()
            raise SandboxUnavailable(f"the sandbox server did not start: {detail}" + (f"\n{stderr}" if stderr else ""))
        return server

    def _ensure_server(self) -> _ServerProcess:
        with self._lock:
            if self._server is not None and self._server.alive:
                return self._server
            if self._server is not None:
                self._server.kill()
                self._server = None
                self.restarts += 1
            self._server = self._start_locked()
            return self._server

    def _start_locked(self) -> _ServerProcess:
        reason = self._host_problem() if self.isolate else "isolation turned off (isolate=False)"
        if reason is None:
            try:
                server = self._spawn(isolated=True)
                self._status = Status(available=True, isolated=True)
                return server
            except SandboxUnavailable as exc:
                reason = exc.reason
        if not self.allow_unisolated:
            self._status = Status(available=False, isolated=False, reason=reason)
            raise SandboxUnavailable(reason)
        log.warning("%s (%s)", UNISOLATED_WARNING, reason)
        server = self._spawn(isolated=False)
        self._status = Status(available=True, isolated=False, reason=reason, warning=UNISOLATED_WARNING)
        return server

    def _discard(self, server: _ServerProcess) -> None:
        with self._lock:
            server.kill()
            if self._server is server:
                self._server = None
                self.restarts += 1

    # Running ----------------------------------------------------------------------------------------------

    def run(
        self,
        code: str,
        *,
        wants: Sequence[str] = (),
        inputs: Mapping[str, torch.Tensor] | None = None,
        epilogue: str | None = None,
        limits: Limits | None = None,
        seed: int = 0,
        diagnose: bool = True,
    ) -> RunResult:
        """Run `code` (then the trusted `epilogue`, e.g. a checker calling `loss.backward()`) in a fresh child.

        `wants` are dotted names read after the run ("a.grad", "model.fc.weight.grad"); their tensors come back
        in RunResult.values as raw data for grading on this side. `inputs` are tensors put into the
        snippet's globals before it runs. Raises SandboxUnavailable when isolation is missing and not waived.
        """
        limits = limits or self.limits
        if limits.result_bytes > self.limits.result_bytes or limits.output_bytes > self.limits.output_bytes:
            # The server's answer line is size-checked against the Sandbox's own caps.
            raise ValueError("per-run result_bytes/output_bytes may not exceed the Sandbox's limits")
        wants = [check_want(name) for name in wants]
        request = {
            "op": "run",
            "code": code,
            "epilogue": epilogue or "",
            "wants": wants,
            "inputs": {check_want(k): TensorData.from_torch(v).to_json() for k, v in (inputs or {}).items()},
            "limits": limits.to_json(),
            "seed": int(seed),
            "diagnose": bool(diagnose),
        }
        with self._slots:
            return self._run(request, code=code, wants=wants, limits=limits)

    def _run(self, request: dict[str, Any], *, code: str, wants: list[str], limits: Limits) -> RunResult:
        began = time.monotonic()
        for _attempt in range(2):  # a job the server never acknowledged is retried once on a fresh server
            server = self._ensure_server()
            job_id = next(self._ids)
            request["id"] = job_id
            try:
                pending = server.submit(job_id, request, self.ack_timeout_s)
            except _ServerGone:
                self._discard(server)
                continue
            if not pending.started.wait(self.ack_timeout_s) or not pending.acked:
                # Wedged or dead before the job started: nothing ran, so retrying is safe.
                log.warning("sandbox server did not acknowledge job %s; restarting it", job_id)
                self._discard(server)
                continue
            if not pending.done.wait(limits.wall_s + self.grace_s):
                log.warning("sandbox server stopped answering during job %s; restarting it", job_id)
                self._discard(server)
                return internal_error(
                    "The sandbox server stopped answering; it has been restarted.", isolated=server.isolated,
                    duration_ms=(time.monotonic() - began) * 1000,
                )
            if pending.response is None:
                if server.alive:
                    self._discard(server)
                return internal_error(
                    f"The sandbox server failed during the run ({pending.error}); it will be restarted.",
                    isolated=server.isolated, duration_ms=(time.monotonic() - began) * 1000,
                )
            return build(pending.response, code=code, wants=wants, limits=limits, isolated=server.isolated)
        return internal_error("The sandbox server could not start the job.")


def _find_descendant(root: int, needle: bytes) -> int | None:
    """First descendant of `root` whose command line contains `needle` (walks /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    queue = [root]
    while queue:
        pid = queue.pop(0)
        for child in children.get(pid, []):
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                if needle in b" ".join(argv) and not argv[0].endswith(b"bwrap"):
                    return child
            except OSError:
                pass
            queue.append(child)
    return None
