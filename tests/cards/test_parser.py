"""The card parser and validator: a good card, and each kind of bad card with its exact message and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cards.deck import load_deck
from app.cards.parser import parse_card

PATH = "cards/m3/t/tiny.md"


def problems_of(text: str) -> list[str]:
    _, problems = parse_card(text, PATH)
    return [str(p) for p in problems]


def test_good_card_parses_completely(good_card_text: str) -> None:
    card, problems = parse_card(good_card_text, PATH)
    assert problems == []
    assert card is not None
    assert (card.id, card.difficulty, card.tags) == ("tiny-card", "easy", ("autograd",))
    assert card.title.zh == "小卡片" and card.module.en == "M3 Deep Learning Foundations"
    assert list(card.sections) == ["answer", "insights", "math", "tradeoffs", "pitfalls", "followups", "examples"]
    assert card.sections["math"].shared.startswith("$$")
    assert card.sections["answer"].text.en == "The version counter counts in-place writes to a tensor."
    [followup] = card.followups
    assert followup.key == "why-raise"
    assert followup.question.zh == "为什么报错？" and followup.question.en == "Why does it raise?"
    assert followup.answer.en == "Because a saved tensor was overwritten.\n\nSecond paragraph."
    [example] = card.examples
    assert (example.expect, example.expect_line, example.line) == ("inplace_version_error", 4, 86)
    assert example.code.startswith("import torch\n")


# (what to replace, replacement, expected "line: message") — each a single kind of mistake.
BAD_CARDS = [
    ("title:\n  zh: 小卡片", "title:\n  zh: [小卡片", "5: malformed YAML front matter: did not find expected ',' or ']'"),
    ("id: tiny-card\n", "", "1: missing front-matter field 'id'"),
    ("difficulty: easy", "difficulty: brutal", "14: unknown difficulty 'brutal' (expected one of: easy, medium, hard)"),
    ("id: tiny-card", "id: Tiny Card", "2: id 'Tiny Card' is not a slug (lowercase letters, digits and single hyphens)"),
    ("  en: A tiny card\n", "", "3: 'title' is missing its 'en' text"),
    ("tags: [autograd]", "tags: autograd", "15: 'tags' must be a list of slugs"),
    ("related: []", "related: []\nauthor: me", "17: unknown front-matter field 'author'"),
    ("### en\nThe version counter", "### fr\nThe version counter", "26: unknown language block '### fr' in '## Answer' (expected zh or en)"),
    ("### en\nThe version counter counts in-place writes to a tensor.\n", "", "21: section '## Answer' is missing its '### en' block"),
    ("### zh\n- 每次原地操作加一。\n", "### zh\n\n", "31: '## Key insights' has an empty '### zh' block"),
    ("## Trade-offs", "## Tradeoffs and more", "49: unknown section '## Tradeoffs and more' (expected one of: Answer, Key insights, Math, Trade-offs, Pitfalls, Follow-ups, Examples)"),
    ("**答：** 因为保存的张量被改写了。", "因为保存的张量被改写了。", "70: follow-up 'why-raise' (zh) has no answer (a paragraph starting with **答：**)"),
    ("**Q:** Why does it raise?", "Why does it raise?", "77: follow-up 'why-raise' (en) must start with its question, labelled **Q:**"),
    ("#### en\n**Q:**", "#### de\n**Q:**", "76: unknown language block '#### de' in follow-up 'why-raise'"),
    ("### why-raise", "### Why Raise", "67: follow-up key 'Why Raise' is not a slug"),
    ("其中 $J$ 是", "其中 $J 是", "44: unbalanced math delimiter '$' (close it, or escape a literal dollar as \\$)"),
    ("$$\n\\frac{\\partial L}{\\partial x} = v^\\top J\n$$", "$$\n\\frac{\\partial L}{\\partial x}", "39: unbalanced math delimiter '$' (close it, or escape a literal dollar as \\$)"),
    ("$$\n\\frac{\\partial L}{\\partial x} = v^\\top J\n$$", "$$\nJ\n$$\n\nHere J is the Jacobian.", "43: prose in the shared part of '## Math': write it in the '### zh' and '### en' blocks (only math, code and tables are shown in both languages)"),
    ("python expect=inplace_version_error line=4", "python", "85: python block has no expect= claim (one of: ok, inplace_version_error, leaf_inplace_error, view_inplace_error, memory_overlap_error, runtime_error)"),
    ("expect=inplace_version_error line=4", "expect=explodes", "85: unknown expect=explodes (expected one of: ok, inplace_version_error, leaf_inplace_error, view_inplace_error, memory_overlap_error, runtime_error)"),
    ("expect=inplace_version_error line=4", "expect=inplace_version_error line=9", "85: line=9 is not a line of this 4-line block"),
]


@pytest.mark.parametrize(("old", "new", "expected"), BAD_CARDS, ids=[b[2].split(": ", 1)[1][:40] for b in BAD_CARDS])
def test_each_bad_card_is_named_with_file_and_line(good_card_text: str, old: str, new: str, expected: str) -> None:
    assert old in good_card_text, "test table out of date with the fixture"
    card, problems = parse_card(good_card_text.replace(old, new, 1), PATH)
    assert card is None
    assert f"{PATH}:{expected}" in [str(p) for p in problems]


def test_missing_and_reordered_sections(good_card_text: str) -> None:
    start = good_card_text.index("## Pitfalls")
    end = good_card_text.index("## Follow-ups")
    without_pitfalls = good_card_text[:start] + good_card_text[end:]
    assert f"{PATH}:57: missing section '## Pitfalls'" in problems_of(without_pitfalls)
    swapped = good_card_text.replace("## Math", "## MATHTMP").replace("## Trade-offs", "## Math").replace("## MATHTMP", "## Trade-offs")
    assert f"{PATH}:37: sections are out of order; expected: Answer, Key insights, Math, Trade-offs, Pitfalls, Follow-ups, Examples" in problems_of(swapped)


def test_every_problem_is_reported_not_just_the_first(good_card_text: str) -> None:
    text = good_card_text.replace("difficulty: easy", "difficulty: brutal").replace("其中 $J$ 是", "其中 $J 是")
    text = text.replace("**A:** Because", "Because")
    found = problems_of(text)
    assert len(found) == 3, found


def test_no_front_matter() -> None:
    assert problems_of("# Just a note\n") == [f"{PATH}:1: missing YAML front matter (the file must start with a '---' line)"]


def _write(tmp_path: Path, name: str, text: str) -> None:
    target = tmp_path / "cards" / "m3" / "t" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def test_deck_checks_duplicate_ids_related_ids_and_names(tmp_path: Path, good_card_text: str) -> None:
    _write(tmp_path, "a.md", good_card_text.replace("related: []", "related: [ghost, tiny-card]"))
    _write(tmp_path, "b.md", good_card_text)
    other = good_card_text.replace("id: tiny-card", "id: other").replace("zh: M3 深度学习基础", "zh: 模块三")
    _write(tmp_path, "c.md", other)
    found = [str(p) for p in load_deck(tmp_path / "cards").problems]
    assert "cards/m3/t/b.md:2: duplicate id 'tiny-card' (also used by cards/m3/t/a.md)" in found
    assert "cards/m3/t/a.md:16: related id 'ghost' does not exist" in found
    assert "cards/m3/t/a.md:16: card relates to itself ('tiny-card')" in found
    assert "cards/m3/t/c.md:6: module 'm3' is named differently in cards/m3/t/a.md (M3 Deep Learning Foundations / M3 深度学习基础)" in found
    assert len(found) == 4, found
