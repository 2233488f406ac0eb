"""The daily loop in a real browser: reveal with Space, grade with 3, undo with u, counters follow."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def counters(page: Page) -> tuple[int, int, int]:
    new, learning, review = (int(page.locator(f"#reviewer .c-{k}").inner_text()) for k in ("new", "learning", "review"))
    return new, learning, review


def test_reveal_grade_and_undo_with_the_keyboard(page: Page, artifacts: Path) -> None:
    page.goto("/review")
    item = page.locator("#reviewer").get_attribute("data-item")
    assert item
    new, learning, review = counters(page)
    assert new > 0

    back = page.locator("#reviewer .back")
    expect(back).to_be_hidden()
    page.keyboard.press("Space")
    expect(back).to_be_visible()
    expect(page.locator("#reviewer .grades")).to_be_visible()
    page.wait_for_function("document.querySelectorAll('#reviewer .math:not([data-rendered])').length === 0")
    page.screenshot(path=str(artifacts / "review-revealed.png"))

    page.keyboard.press("3")  # Good: a new item moves to learning
    expect(page.locator("#reviewer")).not_to_have_attribute("data-item", item)
    assert counters(page) == (new - 1, learning + 1, review)
    expect(page.locator("#reviewer .session-done .l-en")).to_have_text("1 answered")

    page.keyboard.press("u")  # undo brings the same item back, counters restored
    expect(page.locator("#reviewer")).to_have_attribute("data-item", item)
    assert counters(page) == (new, learning, review)
    expect(page.locator("#reviewer .back")).to_be_hidden()


def test_help_overlay_and_buttons_work_with_a_mouse(page: Page) -> None:
    page.goto("/review")
    page.keyboard.press("?")
    expect(page.locator("dialog#help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("dialog#help")).to_be_hidden()
    item = page.locator("#reviewer").get_attribute("data-item")
    page.locator("[data-reveal]").click()
    page.locator(".grades .grade-4").click()  # Easy
    expect(page.locator("#reviewer")).not_to_have_attribute("data-item", item)


def test_phone_shows_full_width_buttons(page: Page, artifacts: Path) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/review")
    page.locator("[data-reveal]").click()
    button = page.locator(".grades .grade-3").bounding_box()
    assert button is not None and button["width"] > 150  # two columns of big targets on a phone
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(artifacts / "review-phone.png"))
