"""A real server killed with SIGKILL while submissions wait, restarted on the same data dir, finishes them all."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from app.devserver import ServerProcess, start_server
from tests.conftest import CARDS_DIR

# Slow enough that the others are still queued behind it when the server dies; still hits the right error.
SLOW_SOLUTION = """import time, torch
time.sleep(1.0)
w = torch.randn(3, requires_grad=True)
y = w.exp()
y.mul_(2)
y.sum().backward()
"""


# One worker: the second and third submissions must wait in the queue when the server dies.
ONE_WORKER = {"DEPTHCARDS_SANDBOX_MAX_CONCURRENT": "1", "DEPTHCARDS_PER_USER_IN_FLIGHT": "10"}


def _start(data_dir: Path, log_name: str) -> ServerProcess:
    return start_server(data_dir=data_dir, cards_dir=CARDS_DIR, env=ONE_WORKER, log_path=data_dir / log_name, timeout=60)


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
    server = _start(data_dir, "first.log")
    base = server.base
    try:
        ids = []
        for _ in range(3):
            status, body = _json("POST", f"{base}/api/challenges/trigger-version-counter/submissions", {"code": SLOW_SOLUTION})
            assert (status, body["status"]) == (202, "queued")
            ids.append(body["id"])
        before = _statuses(data_dir / "depthcards.sqlite3")
        assert set(before) == set(ids) and "queued" in before.values() and "done" not in before.values()
    finally:
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=10)

    server = _start(data_dir, "second.log")
    base = server.base
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
        server.stop()
