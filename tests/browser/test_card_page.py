"""A person reading a card in a real browser: language switch, KaTeX math, follow-ups, search."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

CARD = "/cards/inplace-version-counter"


def test_read_a_card(page: Page, artifacts: Path) -> None:
    page.goto(CARD)
    expect(page.locator("h1.card-title")).to_be_visible()

    # KaTeX rendered every math element, and no raw $...$ is left in the text.
    page.wait_for_function("document.querySelectorAll('.math:not([data-rendered])').length === 0")
    assert page.locator(".math .katex").count() >= 2
    assert page.locator(".math.display .katex-display").count() >= 1
    body_text = page.locator("#card").inner_text()
    assert "$$" not in body_text and "\\frac" not in body_text

    # Switch to English only, then Chinese only; the choice survives a reload.
    zh_answer = page.locator("#answer .bi > .l-zh")
    en_answer = page.locator("#answer .bi > .l-en")
    page.get_by_role("button", name="EN", exact=True).click()
    expect(zh_answer).to_be_hidden()
    expect(en_answer).to_be_visible()
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-lang", "en")
    expect(zh_answer).to_be_hidden()
    page.keyboard.press("l")  # en -> zh
    expect(page.locator("html")).to_have_attribute("data-lang", "zh")
    expect(en_answer).to_be_hidden()
    expect(zh_answer).to_be_visible()

    # A follow-up answer is hidden until opened.
    first = page.locator("details.followup").first
    answer = first.locator(".answer")
    expect(answer).to_be_hidden()
    first.locator("summary").click()
    expect(answer).to_be_visible()

    page.get_by_role("button", name="中 | EN").click()
    page.screenshot(path=str(artifacts / "card-page.png"), full_page=True)


def test_live_search_in_chinese_and_english(page: Page, artifacts: Path) -> None:
    page.goto("/")
    total = page.locator(".card-list a").count()
    assert total >= 12
    page.fill("#q", "版本计数")
    expect(page.locator(".card-list a")).not_to_have_count(total)
    assert page.locator(".card-list a[href='/cards/inplace-version-counter']").count() == 1
    assert "q=" in page.url  # the search is in the address bar, so it can be shared and restored
    page.fill("#q", "checkpoint")
    expect(page.locator(".card-list a[href='/cards/gradient-checkpointing']")).to_have_count(1)
    page.screenshot(path=str(artifacts / "search.png"))


def test_knowledge_graph_draws_and_navigates(page: Page, artifacts: Path) -> None:
    page.goto("/graph")
    page.wait_for_function("document.getElementById('graph').dataset.ready >= 12")
    page.screenshot(path=str(artifacts / "graph.png"))


def test_phone_layout_is_one_column(page: Page) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(CARD)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"page scrolls sideways on a phone ({width}px)"
