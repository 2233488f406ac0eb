"""A real server killed with SIGKILL while submissions wait, restarted on the same data dir, finishes them all."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.conftest import CARDS_DIR, ROOT

# Slow enough that the others are still queued behind it when the server dies; still hits the right error.
SLOW_SOLUTION = """import time, torch
time.sleep(1.0)
w = torch.randn(3, requires_grad=True)
y = w.exp()
y.mul_(2)
y.sum().backward()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(data_dir: Path, log_name: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "DEPTHCARDS_SANDBOX_MAX_CONCURRENT": "1",  # one worker: the second and third submissions must wait
        "DEPTHCARDS_PER_USER_IN_FLIGHT": "10",
    }
    cmd = [sys.executable, "-m", "app", "serve", "--port", str(port), "--data-dir", str(data_dir), "--cards-dir", str(CARDS_DIR)]
    log = (data_dir / log_name).open("wb")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    log.close()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1).read()
            return proc, base
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("server did not start:\n" + (data_dir / log_name).read_text()) from None
            time.sleep(0.1)


def _json(method: str, url: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _statuses(db: Path) -> dict[int, str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT id, status FROM submission ORDER BY id").fetchall())


def test_server_killed_with_jobs_queued_finishes_them_after_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    proc, base = _start(data_dir, "first.log")
    try:
        ids = []
        for _ in range(3):
            status, body = _json("POST", f"{base}/api/challenges/trigger-version-counter/submissions", {"code": SLOW_SOLUTION})
            assert (status, body["status"]) == (202, "queued")
            ids.append(body["id"])
        before = _statuses(data_dir / "depthcards.sqlite3")
        assert set(before) == set(ids) and "queued" in before.values() and "done" not in before.values()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    proc, base = _start(data_dir, "second.log")
    try:
        deadline = time.monotonic() + 90
        while True:
            states = [_json("GET", f"{base}/api/submissions/{i}")[1] for i in ids]
            if all(s["status"] == "done" for s in states) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert [s["status"] for s in states] == ["done"] * 3, states
        for state in states:
            assert state["verdict"]["passed"] is True, state
            assert state["verdict"]["outcome"] == "inplace_version_error"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
