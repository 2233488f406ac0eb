"""A real uvicorn server on a free port and Debian's Chromium driven by Playwright."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from app.devserver import running_server
from tests.conftest import CARDS_DIR, ROOT

ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("browser-data")
    with running_server(data_dir=data_dir, cards_dir=CARDS_DIR, log_path=data_dir / "server.log") as running:
        yield running.base


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
