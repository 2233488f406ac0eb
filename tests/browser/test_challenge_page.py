"""Challenge pages in a real browser: type into CodeMirror, Submit, the verdict arrives through htmx polling,
and the diagnosis lines light up in the editor (cm-diag-raised / -saved / -modified)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

SANDBOX_START = 60_000  # ms: the first job may have to wait for the fork server to import torch

SOLUTION = """import torch

w = torch.randn(3, requires_grad=True)
y = w.exp()
y.mul_(2)
y.sum().backward()
"""


def replace_code(page: Page, code: str) -> None:
    editor = page.locator("#solve .cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)
    expect(page.locator("#solve .cm-line").first).to_have_text("import torch")


def test_submit_shows_the_verdict_and_highlights_the_diagnosis(page: Page, artifacts: Path) -> None:
    page.goto("/challenges/trigger-version-counter")
    expect(page.locator("[data-editor][data-ready=true] .cm-editor")).to_be_visible()
    expect(page.locator("textarea[name=code]")).to_be_hidden()  # the editor replaced it
    expect(page.locator("#solve .cm-line").first.locator("span").first).to_have_text("import")  # Python is highlighted
    replace_code(page, SOLUTION)
    page.locator("[data-submit]").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_attribute("data-status", "done", timeout=SANDBOX_START)
    expect(verdict).to_have_class("verdict passed")
    expect(verdict.locator(".check[data-check=outcome] .mark")).to_have_text("✓")
    expect(page.locator(".cm-line.cm-diag-raised")).to_have_text("y.sum().backward()")
    expect(page.locator(".cm-line.cm-diag-saved")).to_have_text("y = w.exp()")
    expect(page.locator(".cm-line.cm-diag-modified")).to_have_text("y.mul_(2)")
    expect(page.locator("#history .history-list li").first).to_contain_text("inplace_version_error")
    page.screenshot(path=str(artifacts / "challenge-verdict.png"), full_page=True)
    # Editing the code clears the marks: they described the code as it was submitted.
    page.locator("#solve .cm-content").press("End")
    page.keyboard.type(" ")
    expect(page.locator(".cm-line.cm-diag")).to_have_count(0)


def test_run_reset_and_staged_hints(page: Page) -> None:
    page.goto("/challenges/trigger-version-counter")
    expect(page.locator("[data-editor][data-ready=true]")).to_be_visible()
    replace_code(page, "import torch\nx = 1\n")
    page.locator("[data-reset]").click()  # back to the starter, which hits the leaf error
    expect(page.locator("#solve .cm-line").nth(3)).to_have_text("w.mul_(2)              # w is a leaf: this line raises at once")
    page.locator("[data-run]").click()
    output = page.locator("#run-output")
    expect(output.locator(".outcome")).to_have_text("leaf_inplace_error", timeout=SANDBOX_START)
    expect(page.locator(".cm-line.cm-diag-raised")).to_have_text("w.mul_(2)              # w is a leaf: this line raises at once")
    expect(page.locator("#verdict")).to_have_attribute("data-status", "none")  # Run grades nothing, stores nothing

    hints = page.locator("#hints")
    expect(hints.locator(".hint")).to_have_count(0)
    for shown in (1, 2, 3):
        hints.locator("button.stage").click()
        expect(page.locator("#hints .hint")).to_have_count(shown)
        expect(page.locator("#hints .solution")).to_have_count(0)
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#hints button.stage").click()
    expect(page.locator("#hints .solution")).to_contain_text("y.mul_(2)")


def test_predict_is_graded_by_the_sandbox_and_marks_the_snippet(page: Page, artifacts: Path) -> None:
    page.goto("/challenges/predict-exp-add-inplace")
    page.locator("input[name=choice][value=version-error]").check()
    page.locator("[data-submit]").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_attribute("data-status", "done", timeout=SANDBOX_START)
    expect(verdict).to_have_class("verdict passed")
    expect(verdict.locator(".truth")).to_contain_text("version-counter error")
    expect(page.locator("#snippet #code-line-5")).to_have_class("cm-diag cm-diag-raised")
    expect(page.locator("#snippet #code-line-4")).to_have_class("cm-diag cm-diag-modified")
    page.screenshot(path=str(artifacts / "challenge-predict.png"), full_page=True)


def test_playground_runs_through_the_api(page: Page, artifacts: Path) -> None:
    page.goto("/playground")
    expect(page.locator("[data-editor][data-ready=true]")).to_be_visible()
    page.locator("#solve .cm-content").click()
    page.keyboard.press("Control+Enter")
    output = page.locator("#run-output")
    expect(output.locator(".outcome")).to_have_text("inplace_version_error", timeout=SANDBOX_START)
    expect(output.locator(".diagnosis .l-en")).to_contain_text("`sigmoid` on line 4")
    expect(page.locator(".cm-line.cm-diag-modified")).to_contain_text("y.mul_(2)")
    page.locator("[data-examples]").select_option("ok")
    expect(page.locator(".cm-line.cm-diag")).to_have_count(0)
    page.locator("[data-run]").click()
    expect(output.locator(".outcome")).to_have_text("ok")
    expect(output.locator(".stdout")).to_contain_text("tensor([")
    page.screenshot(path=str(artifacts / "playground.png"), full_page=True)
