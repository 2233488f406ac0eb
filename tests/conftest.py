from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CARDS_DIR = ROOT / "cards"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def good_card_text() -> str:
    return (FIXTURES / "good_card.md").read_text(encoding="utf-8")
