"""A real `depthcards serve` in a child process on a free port, for browser tests, restart tests and benchmarks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.settings import PROJECT_DIR


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ServerProcess:
    proc: subprocess.Popen[bytes]
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, timeout: float = 30) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=timeout)


def start_server(
    *,
    data_dir: Path,
    cards_dir: Path,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    timeout: float = 120,
) -> ServerProcess:
    """Start the server and wait for /healthz; output goes to log_path (or nowhere), quoted if it fails to start."""
    port = free_port()
    cmd = [sys.executable, "-m", "app", "serve", "--port", str(port), "--data-dir", str(data_dir), "--cards-dir", str(cards_dir)]
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    if log_path is not None:
        with log_path.open("wb") as log:
            proc = subprocess.Popen(cmd, cwd=PROJECT_DIR, stdout=log, stderr=subprocess.STDOUT, env=full_env)
    else:
        proc = subprocess.Popen(cmd, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=full_env)
    server = ServerProcess(proc, port)
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(server.base + "/healthz", timeout=1).read()
            return server
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                output = log_path.read_text(errors="replace") if log_path is not None else ""
                raise RuntimeError("the server did not start" + (":\n" + output if output else "")) from None
            time.sleep(0.1)


@contextmanager
def running_server(**kwargs: object) -> Iterator[ServerProcess]:
    """start_server(**kwargs), stopped on the way out."""
    server = start_server(**kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
