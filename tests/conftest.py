from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import shutil

import pytest

if TYPE_CHECKING:
    from fastapi.testclient import TestClient
    from playwright.sync_api import Browser

    from app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
CARDS_DIR = ROOT / "cards"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def good_card_text() -> str:
    return (FIXTURES / "good_card.md").read_text(encoding="utf-8")


def make_card(good_card_text: str, card_id: str, *, title_en: str | None = None, related: list[str] | None = None,
              difficulty: str = "easy", tags: list[str] | None = None) -> str:
    """A variant of the fixture card with another id (and optionally title, links, difficulty, tags)."""
    text = good_card_text.replace("id: tiny-card", f"id: {card_id}", 1)
    text = text.replace("  en: A tiny card", f"  en: {title_en or card_id.replace('-', ' ').title()}", 1)
    text = text.replace("related: []", f"related: [{', '.join(related or [])}]", 1)
    text = text.replace("difficulty: easy", f"difficulty: {difficulty}", 1)
    return text.replace("tags: [autograd]", f"tags: [{', '.join(tags if tags is not None else ['autograd'])}]", 1)


@pytest.fixture
def cards_dir(tmp_path: Path, good_card_text: str) -> Path:
    """A small deck: three linked cards and one broken file."""
    root = tmp_path / "cards" / "m3" / "backprop"
    root.mkdir(parents=True)
    (root / "alpha.md").write_text(make_card(good_card_text, "alpha", title_en="Alpha card", related=["beta"], tags=["autograd", "inplace"]), encoding="utf-8")
    (root / "beta.md").write_text(make_card(good_card_text, "beta", title_en="Beta card", related=["gamma"], difficulty="hard"), encoding="utf-8")
    (root / "gamma.md").write_text(make_card(good_card_text, "gamma", title_en="Gamma card", difficulty="medium"), encoding="utf-8")
    (root / "broken.md").write_text(good_card_text.replace("id: tiny-card", "id: broken").replace("difficulty: easy", "difficulty: brutal"), encoding="utf-8")
    return tmp_path / "cards"


@pytest.fixture
def settings(tmp_path: Path, cards_dir: Path) -> "Settings":
    from app.settings import Settings

    return Settings(data_dir=tmp_path / "data", cards_dir=cards_dir)


@pytest.fixture
def client(settings: "Settings") -> Iterator["TestClient"]:
    from fastapi.testclient import TestClient

    from app.main import create_app

    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def chromium() -> Iterator["Browser"]:
    """Debian's Chromium driven by Playwright: one per test process (the sync API allows only one)."""
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Debian's chromium is not installed: run bash .ci/setup --test")
    # The background-networking flags stop Chromium from calling home on a machine without internet.
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-quic"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=args)
        yield browser
        browser.close()
