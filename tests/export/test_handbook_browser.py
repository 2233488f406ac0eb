"""The handbook opened from file:// in headless Chromium with every network request blocked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route, expect
from sqlmodel import Session

from app.export.common import Selection, select_cards
from app.export.handbook import build_handbook
from tests.conftest import ROOT
from tests.export.conftest import T0

pytestmark = pytest.mark.browser
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def offline(chromium: Browser, session: Session, tmp_path: Path) -> Iterator[tuple[Page, str, list[str]]]:
    book = tmp_path / "handbook.html"
    book.write_text(build_handbook(session, now=T0).html, encoding="utf-8")
    url = book.as_uri()
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    requests: list[str] = []

    def block(route: Route) -> None:
        requests.append(route.request.url)
        if route.request.url.split("#")[0] == url:
            route.continue_()
        else:
            route.abort()

    context.route("**/*", block)
    context.on("request", lambda r: None if r.url in requests else requests.append(r.url))
    page = context.new_page()
    yield page, url, requests
    context.close()


def test_handbook_works_offline(offline: tuple[Page, str, list[str]], session: Session) -> None:
    page, url, requests = offline
    TOTAL = len(select_cards(session, selection=Selection()))  # noqa: N806
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    page.evaluate("document.fonts.ready")

    # Every card is there, and the math is real KaTeX output in KaTeX's own (inlined) fonts.
    cards = page.locator("article.hb-card")
    expect(cards).to_have_count(TOTAL)
    assert page.locator(".math .katex").count() > 100 and page.locator(".math-error").count() == 0
    assert page.evaluate("document.fonts.check('16px KaTeX_Main') && document.fonts.check('italic 16px KaTeX_Math')")
    assert page.evaluate("[...document.fonts].some(f => f.family.includes('KaTeX_Math') && f.status === 'loaded')")

    # Search over both languages, in the page.
    page.fill("#dc_q", "版本计数")
    expect(page.locator("#dc_count")).not_to_have_text("")
    visible = page.locator("article.hb-card:not([hidden])")
    assert 0 < visible.count() < TOTAL
    expect(page.locator("#inplace-version-counter")).to_be_visible()
    page.fill("#dc_q", "checkpoint")
    expect(page.locator("#gradient-checkpointing")).to_be_visible()
    expect(page.locator("#leaf-tensors-requires-grad")).to_be_hidden()
    page.fill("#dc_q", "")
    expect(page.locator("article.hb-card:not([hidden])")).to_have_count(TOTAL)

    # A follow-up answer opens on click; the language toggle hides the other language.
    first = page.locator("#inplace-version-counter details.followup").first
    first.scroll_into_view_if_needed()
    expect(first.locator(".answer")).to_be_hidden()
    first.locator("summary").click()
    expect(first.locator(".answer")).to_be_visible()
    page.get_by_role("button", name="EN", exact=True).click()
    expect(page.locator("#inplace-version-counter--answer .bi > .l-zh")).to_be_hidden()
    page.get_by_role("button", name="中 | EN").click()

    # Related cards jump within the file; ←/→ move between cards.
    link = page.locator("#inplace-version-counter .links a[href^='#']").first
    target = link.get_attribute("href")
    link.click()
    assert page.evaluate("location.hash") == target
    page.keyboard.press("ArrowRight")
    after_right = page.evaluate("location.hash")
    assert after_right != target
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("location.hash") == target

    # Printing: one card per page, answers open.
    page.emulate_media(media="print")
    assert page.evaluate("getComputedStyle(document.querySelectorAll('article.hb-card')[1]).breakBefore") == "page"
    assert page.evaluate("getComputedStyle(document.querySelector('.hb-toc')).display") == "none"
    page.emulate_media(media="screen")

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "handbook.png"))
    assert [r for r in requests if r.split("#")[0] != url] == []


def test_a_deep_link_lands_on_its_card(offline: tuple[Page, str, list[str]]) -> None:
    page, url, requests = offline
    page.goto(url + "#saved-tensors")
    page.wait_for_selector("body[data-ready]")
    page.wait_for_timeout(300)
    box = page.locator("#saved-tensors").bounding_box()
    assert box is not None and 0 <= box["y"] <= 120, box
    expect(page.locator(".toc-cards li.current a")).to_have_attribute("href", "#saved-tensors")
    assert [r for r in requests if r.split("#")[0] != url] == []
