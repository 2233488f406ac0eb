"""Every python block in cards/ claims an outcome; run each against the installed torch and hold it to it."""

from __future__ import annotations

import traceback
import warnings

import pytest
import torch

from app.cards.deck import load_deck
from app.cards.model import CodeExample
from sandbox.outcomes import OK, classify_exception
from tests.conftest import CARDS_DIR

SNIPPET_FILE = "<card-example>"


def _examples() -> list[tuple[str, CodeExample]]:
    deck = load_deck(CARDS_DIR)
    return [(card.path, example) for card in deck.cards.values() for example in card.examples]


EXAMPLES = _examples()


def run_snippet(code: str) -> tuple[str, int | None, BaseException | None]:
    """Run code in a fresh namespace; return (outcome, line in the snippet where it raised, exception)."""
    namespace: dict[str, object] = {"__name__": "__card_example__"}
    grad_mode, anomaly = torch.is_grad_enabled(), torch.is_anomaly_enabled()
    try:
        with warnings.catch_warnings():
            # A claim is about behaviour, not about what torch chose to warn.
            warnings.simplefilter("ignore")
            exec(compile(code, SNIPPET_FILE, "exec"), namespace)
    except Exception as exc:  # noqa: BLE001 - any exception is a possible claimed outcome
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SNIPPET_FILE]
        return classify_exception(exc), (frames[-1].lineno if frames else None), exc
    finally:
        torch.set_grad_enabled(grad_mode)
        torch.autograd.set_detect_anomaly(anomaly)
    return OK, None, None


def test_the_deck_has_claims_to_check() -> None:
    assert len(EXAMPLES) >= 1 or not any(CARDS_DIR.rglob("*.md"))


@pytest.mark.parametrize(
    ("path", "example"), EXAMPLES, ids=[f"{p.rsplit('/', 1)[-1]}:{e.line}" for p, e in EXAMPLES]
)
def test_example_claim_holds(path: str, example: CodeExample) -> None:
    torch.manual_seed(0)
    outcome, line, exc = run_snippet(example.code)
    where = f"{path}:{example.line}"
    detail = f"{type(exc).__name__}: {exc}" if exc else "no exception"
    assert outcome == example.expect, f"{where}: claims expect={example.expect}, got {outcome} ({detail})"
    if example.expect_line is not None:
        assert line == example.expect_line, f"{where}: claims the error surfaces on line {example.expect_line}, it did on {line}"


@pytest.mark.parametrize(
    ("code", "expect", "line"),
    [
        ("import torch\nx = torch.randn(2, requires_grad=True)\nx.add_(1)\n", "leaf_inplace_error", 3),
        ("import torch\nx = torch.ones(2)\nassert x.sum() == 3\n", "runtime_error", 3),
        ("import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\nassert torch.equal(x.grad, torch.full((2,), 2.0))\n", "ok", None),
    ],
)
def test_the_checker_itself_distinguishes_outcomes(code: str, expect: str, line: int | None) -> None:
    outcome, where, _ = run_snippet(code)
    assert (outcome, where) == (expect, line)
