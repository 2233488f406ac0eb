"""The handbook file: one of everything inlined, the filters, the download route and the CLI."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session
from typer.testing import CliRunner

from app.export import math
from app.export.cli import export_app
from app.export.common import ExportError, Selection, select_cards
from app.export.handbook import Assets, DuplicateAsset, HandbookReport, build_handbook
from app.main import create_app
from app.settings import Settings
from app.templating import STATIC_DIR
from tests.export.conftest import T0

FONTS = sorted((math.KATEX_DIR / "fonts").glob("*.woff2"))


def test_every_asset_is_inlined_once_and_nothing_is_fetched(session: Session, deck: Path) -> None:
    book = build_handbook(session, now=T0, cards_root=deck / "cards")
    html = book.html
    assert not re.search(r'(src|href)="(https?:)?//', html) and "url(http" not in html and "@import" not in html
    assert "<link rel=\"stylesheet\"" not in html and "<script src" not in html
    for font in FONTS:
        assert html.count(base64.b64encode(font.read_bytes()).decode()[:200]) <= 1, font.name
    assert html.count((STATIC_DIR / "export" / "handbook.js").read_text(encoding="utf-8")[:300]) == 1
    assert book.report.math_prerendered and book.report.formulas > 100
    assert 'class="math inline" data-rendered="1"><span class="katex">' in html
    assert "KaTeX_Main" in html and "katex.min.js" not in "".join(book.report.assets)
    assert book.report.cards == len(select_cards(session, selection=Selection())) and all(n > 1000 for n in book.report.card_bytes.values())
    assert "per card" in book.report.summary()


def test_assets_refuse_a_second_copy(tmp_path: Path) -> None:
    assets = Assets(HandbookReport())
    a, b = tmp_path / "a.woff2", tmp_path / "b.woff2"
    a.write_bytes(b"same bytes")
    b.write_bytes(b"same bytes")
    assets.data_url(a)
    with pytest.raises(DuplicateAsset):
        assets.data_url(b)


def test_math_rendered_by_the_page_when_not_prerendered(session: Session) -> None:
    book = build_handbook(session, now=T0, prerender_math=False)
    assert not book.report.math_prerendered
    assert "vendor/katex-0.19.1/katex.min.js" in book.report.assets
    assert sum(name.endswith(".woff2") for name in book.report.assets) == len(FONTS)  # any font may be needed
    assert 'data-rendered="1"' not in book.html


def test_language_and_selection_filters(session: Session) -> None:
    zh = build_handbook(session, now=T0, lang="zh").html
    assert 'data-lang="zh"' in zh and 'data-lang-mode="en"' not in zh
    assert "Every tensor (together with all of its views) carries a version counter" not in zh
    assert "每个张量（连同它的所有视图）都带一个版本计数器" in zh
    topic = build_handbook(session, now=T0, selection=Selection(module="m3", topic="backprop-autodiff"))
    assert topic.report.cards == len(select_cards(session, selection=Selection(topic="backprop-autodiff")))
    with pytest.raises(ExportError, match="no card to export"):
        build_handbook(session, now=T0, selection=Selection(module="no-such-module"))


def test_download_route(deck: Path) -> None:
    settings = Settings(data_dir=deck / "data", cards_dir=deck / "cards")
    with TestClient(create_app(settings)) as client:
        response = client.get("/export/handbook.html", params={"lang": "en", "topic": "backprop-autodiff"})
        assert response.status_code == 200
        assert response.headers["content-disposition"] == 'attachment; filename="depthcards-handbook-backprop-autodiff-en.html"'
        assert response.text.startswith("<!doctype html>") and 'id="inplace-version-counter"' in response.text
        assert client.get("/export/handbook.html", params={"lang": "fr"}).status_code == 400
        assert client.get("/export/handbook.html", params={"module": "nope"}).status_code == 404
        assert 'href="/export/handbook.html"' in client.get("/").text


def test_cli_writes_the_file_and_reports_sizes(deck: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "book.html"
    args = ["html", "--out", str(out), "--cards-dir", str(deck / "cards"), "--data-dir", str(deck / "data")]
    result = CliRunner().invoke(export_app, args)
    assert result.exit_code == 0, result.output
    assert out.is_file() and "per card" in result.output and " cards, " in result.output
    bad = CliRunner().invoke(export_app, [*args[:3], "--lang", "fr", *args[3:]])
    assert bad.exit_code == 2 and "--lang" in bad.output
