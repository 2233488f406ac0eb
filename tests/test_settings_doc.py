"""docs/settings.md documents every DEPTHCARDS_* setting with its default and help, exactly as the code has them."""

from __future__ import annotations

from app.settings import describe_settings, settings_markdown
from tests.conftest import ROOT


def test_settings_doc_is_current() -> None:
    doc = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert doc == settings_markdown(), "regenerate it: .venv/bin/depthcards settings --markdown > docs/settings.md"


def test_every_setting_has_a_help_line() -> None:
    assert all(help_text.strip() for _, _, help_text in describe_settings())
