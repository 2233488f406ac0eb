"""The plugin's syntax as our port reads it: card kinds, code blocks, scheduling comments."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.export import srs_syntax
from app.export.srs_syntax import CardType, FsrsSchedule


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Question::Answer", [(CardType.SINGLE_LINE, 0, 0)]),
        ("A:::B", [(CardType.SINGLE_LINE_REVERSED, 0, 0)]),
        ("::no front", []),
        ("`a::b` in code", []),
        ("Front\n?\nBack", [(CardType.MULTI_LINE, 0, 2)]),
        ("Front\n??\nBack", [(CardType.MULTI_LINE_REVERSED, 0, 2)]),
        ("F1\nF2\n?\nB1\nB2\n<!--SR:!2024-08-16,51,230-->\n\nafter", [(CardType.MULTI_LINE, 0, 5)]),
        ("Front\n?\n```python\nx = 1\n\ny = 2\n```\nmore\n\nloose", [(CardType.MULTI_LINE, 0, 7)]),
        ("Front\n?\n\nBack", []),  # the back must touch the separator
        ("text ==cloze== here", [(CardType.CLOZE, 0, 0)]),
        ("a\nb ==c==\nd\n\ne", [(CardType.CLOZE, 0, 2)]),
        ("```\nx::y\n==a==\n```", []),
        ("<!-- a::b\nc::d -->\nplain", []),
        ("%%fu k%%\n**Q:** x\n?\n**A:** y", [(CardType.MULTI_LINE, 0, 3)]),
        ("> [!note]+ t\n> x == 1 and y == 2", [(CardType.CLOZE, 0, 1)]),
    ],
)
def test_card_grammar(text: str, expected: list[tuple[CardType, int, int]]) -> None:
    assert [(c.type, c.first_line, c.last_line) for c in srs_syntax.parse_cards(text)] == expected


def test_front_back_and_schedule_of_a_multiline_card() -> None:
    comment = "<!--SR:!fsrs,2026-12-05T09:00:00.000Z,5,4.93,5.1,2,3,0,0,2026-11-30T09:00:00.000Z-->"
    card = srs_syntax.parse_cards(f"F1\nF2\n?\nB1\n{comment}")[0]
    assert card.front == "F1\nF2"
    assert card.back == "B1"
    (schedule,) = card.schedule
    assert isinstance(schedule, FsrsSchedule)
    assert schedule.due == datetime(2026, 12, 5, 9, tzinfo=UTC)
    assert (schedule.interval, schedule.stability, schedule.difficulty, schedule.state) == (5, 4.93, 5.1, 2)
    assert schedule.comment() == comment  # written back exactly as the plugin writes it


@pytest.mark.parametrize(
    ("value", "js"), [(5.0, "5"), (0.0, "0"), (4.93, "4.93"), (2.3065, "2.3065"), (1 / 3, "0.3333333333333333")]
)
def test_numbers_are_written_as_javascript_does(value: float, js: str) -> None:
    assert srs_syntax._js_number(value) == js


def test_timestamps_and_placeholders() -> None:
    at = datetime(2026, 11, 30, 9, 0, 1, 234567, tzinfo=UTC)
    assert srs_syntax.format_timestamp(at) == "2026-11-30T09:00:01.234Z"
    assert srs_syntax.format_timestamp(None) == "-"
    assert srs_syntax.parse_timestamp("2026-11-30T09:00:01.234Z") == datetime(2026, 11, 30, 9, 0, 1, 234000, tzinfo=UTC)
    # The plugin's placeholder for a sibling never reviewed reads as "no schedule"; SM-2 segments are recognised.
    assert srs_syntax.parse_comment("<!--SR:!fsrs,-,0,0,0,0,0,0,0,-!2024-08-16,51,230-->") == [
        None,
        srs_syntax.Sm2Schedule("2024-08-16", 51, 230),
    ]


def test_strip_comments_removes_lines_and_inline_comments() -> None:
    text = "a\n<!--SR:!fsrs,x-->\nb <!--SR:!2024-01-01,1,250-->"
    assert srs_syntax.strip_comments(text) == "a\nb "
