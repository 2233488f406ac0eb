"""The challenge format: the real deck, a good file of each kind, and each kind of mistake with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cards.deck import iter_card_files, load_deck
from app.library import load_library
from app.challenges import harness
from app.challenges.spec import ChallengeSet, load_challenges, parse_challenge
from tests.conftest import CARDS_DIR

PATH = "cards/m3/t/challenges/x.md"

TRIGGER = """---
id: tiny-trigger
card: alpha
kind: trigger
title:
  zh: 触发
  en: Trigger it
expect:
  outcome: inplace_version_error
  inplace_op: mul_
hints:
  - zh: 提示
    en: A hint
---

## Prompt · 题目

### zh
写代码。

### en
Write code.

## Starter

```python
import torch
```

## Solution

```python
import torch
x = torch.ones(2, requires_grad=True)
y = x.exp()
y.mul_(2)
y.sum().backward()
```
"""

FIX = """---
id: tiny-fix
card: alpha
kind: fix
title: {zh: 修复, en: Fix it}
inputs:
  x: {shape: [3, 2], dtype: float64}
  w: {shape: [2], requires_grad: false, init: ones}
budget_bytes: 48
tolerance: {rtol: 0.001}
hints:
  - {zh: 提示, en: A hint}
---

## Prompt

### en
Fix it.

### zh
修好它。

## Starter

```python
def forward(x, w):
    return (x * w).sum()
```

## Solution

```python
def forward(x, w):
    return (x * w).sum()
```
"""

PREDICT = """---
id: tiny-predict
card: alpha
kind: predict
title: {zh: 预测, en: Predict}
choices:
  - {id: ok, zh: 正常, en: Runs, match: {outcome: ok, stdout: "2"}}
  - {id: boom, zh: 报错, en: Raises, match: {outcome: runtime_error, line: 1}}
answer: ok
---

## Prompt

### zh
会怎样？

### en
What happens?

## Snippet

```python
print(1 + 1)
```
"""


def problems_of(text: str) -> list[str]:
    return [f"{p.line}: {p.message}" for p in parse_challenge(text, PATH)[1]]


def test_the_first_deck_has_at_least_ten_sound_challenges_of_every_kind() -> None:
    deck = load_deck(CARDS_DIR)
    loaded = load_challenges(CARDS_DIR, card_ids=deck.cards)
    assert loaded.problems == [] and deck.problems == []
    assert len(loaded.challenges) >= 10
    assert {c.kind for c in loaded.challenges.values()} == {"trigger", "fix", "predict"}
    for challenge in loaded.challenges.values():
        assert challenge.card in deck.cards
        assert challenge.path == f"cards/m3-foundations/backprop-autodiff/challenges/{challenge.id}.md"
        assert challenge.title.zh and challenge.title.en and challenge.prompt.zh and challenge.prompt.en
        if challenge.kind != "predict":
            assert challenge.hints and challenge.starter and challenge.solution
    assert any(c.budget_bytes for c in loaded.challenges.values())


def test_cards_skip_challenge_files() -> None:
    files = [f.rel for f in iter_card_files(CARDS_DIR)]
    assert files and not any("/challenges/" in f for f in files)


def test_good_files_of_each_kind_parse() -> None:
    trigger, problems = parse_challenge(TRIGGER, PATH)
    assert problems == [] and trigger is not None
    assert trigger.expect is not None and trigger.expect.outcome == "inplace_version_error"
    assert trigger.expect.diagnosis == {"inplace_op": "mul_"}
    assert trigger.solution.startswith("import torch\nx = ") and trigger.hints[0].en == "A hint"

    fix, problems = parse_challenge(FIX, PATH)
    assert problems == [] and fix is not None
    assert [(i.name, i.shape, i.dtype, i.init, i.requires_grad) for i in fix.inputs] == [
        ("x", (3, 2), "float64", "randn", True), ("w", (2,), "float32", "ones", False)]
    assert (fix.call, fix.budget_bytes, fix.rtol, fix.atol, fix.backward) == ("forward", 48, 1e-3, 1e-6, True)
    assert harness.wants(fix) == ["_dc_out", "_dc_grad_x", "_dc_saved_bytes", "_dc_probe_ok"]
    assert "_dc_in_w.detach().clone().requires_grad_(False)" in harness.epilogue(fix)

    predict, problems = parse_challenge(PREDICT, PATH)
    assert problems == [] and predict is not None
    assert [c.id for c in predict.choices] == ["ok", "boom"] and predict.answer == "ok"
    assert predict.snippet == "print(1 + 1)\n" and predict.hints == ()


# (text to replace, replacement, expected "line: message"), one mistake each.
BAD = [
    (TRIGGER, "kind: trigger", "kind: guess", "4: unknown kind 'guess' (expected one of: trigger, fix, predict)"),
    (TRIGGER, "id: tiny-trigger", "id: Tiny Trigger", "2: id 'Tiny Trigger' is not a slug (lowercase letters, digits and single hyphens)"),
    (TRIGGER, "  en: Trigger it\n", "", "5: 'title' is missing its 'en' text"),
    (TRIGGER, "  outcome: inplace_version_error", "  outcome: ok",
     "8: 'expect' outcome 'ok' is not one of: inplace_version_error, leaf_inplace_error, view_inplace_error, memory_overlap_error, runtime_error"),
    (TRIGGER, "  inplace_op: mul_", "  inplace_opp: mul_",
     "10: unknown or empty 'expect.inplace_opp' (allowed: message, inplace_op, saved_by_op, backward_op, output_of)"),
    (TRIGGER, "hints:\n  - zh: 提示\n    en: A hint\n", "", "1: a trigger challenge needs at least one hint ('hints' list of zh/en entries)"),
    (TRIGGER, "    en: A hint\n", "", "12: 'hint 1' is missing its 'en' text"),
    (TRIGGER, "## Solution\n", "## Answer\n", "30: unknown section '## Answer' (expected one of: Prompt, Starter, Solution, Snippet, Explanation)"),
    (TRIGGER, "### en\nWrite code.\n", "", "16: section '## Prompt' is missing its '### en' block"),
    (TRIGGER, "```python\nimport torch\n```", "```python\nimport torch\n```\n\n```python\nx = 1\n```",
     "24: '## Starter' must hold exactly one ```python block (found 2)"),
    (TRIGGER, "y.mul_(2)\n", "y.mul_(2\n", "36: '## Solution' code does not compile: '(' was never closed"),
    (TRIGGER, "expect:", "budget_bytes: 3\nexpect:", "8: unknown front-matter field 'budget_bytes' of a trigger challenge"),
    (TRIGGER, "title:\n  zh: 触发", "title:\n  zh: [触发", "7: malformed YAML front matter: did not find expected ',' or ']'"),
    (FIX, "  x: {shape: [3, 2], dtype: float64}", "  x: {shape: [3, 0]}",
     "7: input 'x' needs a 'shape': a list of at most 6 sizes from 1 to 4096"),
    (FIX, "dtype: float64", "dtype: int64", "7: input 'x' has dtype 'int64' (expected one of: float32, float64)"),
    (FIX, "budget_bytes: 48", "budget_bytes: -1", "9: 'budget_bytes' must be a positive whole number of bytes"),
    (FIX, "def forward(x, w):\n    return (x * w).sum()\n```\n\n## Solution",
     "def forwards(x, w):\n    return (x * w).sum()\n```\n\n## Solution",
     "23: '## Starter' does not define forward() at top level (the checker calls it)"),
    (FIX, "inputs:\n  x: {shape: [3, 2], dtype: float64}\n  w: {shape: [2], requires_grad: false, init: ones}\n", "",
     "1: a fix challenge needs 'inputs': a mapping of name -> {shape, dtype, init, requires_grad}"),
    (PREDICT, "answer: ok", "answer: maybe", "9: answer 'maybe' is not the id of a choice"),
    (PREDICT, "match: {outcome: runtime_error, line: 1}", "match: {outcome: ok, stdout: \"2\"}",
     "6: two choices have the same 'match': the sandbox could not tell them apart"),
    (PREDICT, "match: {outcome: runtime_error, line: 1}", "match: {outcome: boom}",
     "8: choice 'boom' needs 'match' with an 'outcome' (one of: ok, inplace_version_error, leaf_inplace_error, "
     "view_inplace_error, memory_overlap_error, runtime_error, timeout, memory_limit, output_limit, "
     "security_violation, internal_error)"),
    (PREDICT, "## Snippet", "## Starter", "20: a predict challenge has no '## Starter' section"),
]


@pytest.mark.parametrize(("good", "old", "new", "expected"), BAD, ids=[b[3][:48] for b in BAD])
def test_each_mistake_is_reported_with_its_line(good: str, old: str, new: str, expected: str) -> None:
    assert old in good
    assert expected in problems_of(good.replace(old, new, 1))


def test_a_broken_section_is_not_also_reported_missing() -> None:
    assert problems_of(TRIGGER.replace("### en\nWrite code.\n", "")) == ["16: section '## Prompt' is missing its '### en' block"]


def test_missing_front_matter() -> None:
    assert problems_of("# no front matter\n") == ["1: missing YAML front matter (the file must start with a '---' line)"]


def write(root: Path, name: str, text: str) -> None:
    folder = root / "cards" / "m3" / "t" / "challenges"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")


def test_cross_file_problems_and_check_command(tmp_path: Path, good_card_text: str) -> None:
    card_dir = tmp_path / "cards" / "m3" / "t"
    card_dir.mkdir(parents=True)
    (card_dir / "alpha.md").write_text(good_card_text.replace("id: tiny-card", "id: alpha"), encoding="utf-8")
    write(tmp_path, "one.md", TRIGGER)
    write(tmp_path, "two.md", TRIGGER)  # same id
    write(tmp_path, "three.md", PREDICT.replace("card: alpha", "card: nowhere"))
    loaded: ChallengeSet = load_challenges(tmp_path / "cards", card_ids={"alpha"})
    assert list(loaded.challenges) == ["tiny-trigger"]
    assert [str(p) for p in loaded.problems] == [
        "cards/m3/t/challenges/three.md:3: card 'nowhere' does not exist",
        "cards/m3/t/challenges/two.md:2: duplicate challenge id 'tiny-trigger' (also used by cards/m3/t/challenges/one.md)",
    ]
    library = load_library(tmp_path / "cards")  # what `depthcards check` prints
    assert list(library.deck.cards) == ["alpha"]
    assert [str(p) for p in library.problems] == [str(p) for p in loaded.problems]
