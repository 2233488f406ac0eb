"""A real uvicorn server on a free port and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.conftest import CARDS_DIR, ROOT

ARTIFACTS = ROOT / "test-artifacts"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    data_dir = tmp_path_factory.mktemp("browser-data")
    cmd = [sys.executable, "-m", "app", "serve", "--port", str(port), "--data-dir", str(data_dir), "--cards-dir", str(CARDS_DIR)]
    log = (data_dir / "server.log").open("wb")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                log.close()
                raise RuntimeError("server did not start:\n" + (data_dir / "server.log").read_text())
            time.sleep(0.2)
    yield base
    proc.terminate()
    proc.wait(timeout=10)
    log.close()


@pytest.fixture
def page(chromium: Browser, server: str) -> Iterator[Page]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, base_url=server)
    page = context.new_page()
    outside: list[str] = []
    page.on("request", lambda request: outside.append(request.url) if not request.url.startswith(server) else None)
    yield page
    context.close()
    assert outside == [], f"requests left the server: {outside}"


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
