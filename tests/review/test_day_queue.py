"""The reviewer's queue rules, without a database: order, limits, learn-ahead, and one answer's effect."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.review.day_queue import LEARN_AHEAD, Counts, DayQueue
from app.review.scheduler import REVIEW_STATE

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
START, END = datetime(2026, 11, 30, 4, 0, tzinfo=UTC), datetime(2026, 12, 1, 4, 0, tzinfo=UTC)
LEARNING, RELEARNING = 1, 3


def queue(**fields: object) -> DayQueue:
    values: dict[str, object] = dict(
        start=START, end=END, new_left=20, reviews_left=200, new=(), reviews=(), learning=(), valid_until=END
    )
    values.update(fields)
    return DayQueue(**values)  # type: ignore[arg-type]


def minutes(n: float) -> datetime:
    return NOW + timedelta(minutes=n)


def test_due_learning_then_reviews_by_due_then_new_in_reading_order() -> None:
    q = queue(
        new=("n1", "n2"),
        reviews=((minutes(-60), "r-older"), (minutes(-5), "r-newer")),
        learning=((minutes(-1), "l-due"), (minutes(10), "l-soon")),
    )
    assert q.next_item(NOW) == "l-due"
    without_due_learning = queue(new=("n1", "n2"), reviews=q.reviews, learning=((minutes(10), "l-soon"),))
    assert without_due_learning.next_item(NOW) == "r-older"
    assert queue(new=("n1", "n2"), learning=((minutes(10), "l-soon"),)).next_item(NOW) == "n1"


def test_a_learning_step_inside_the_learn_ahead_window_comes_only_when_nothing_else_is_left() -> None:
    soon = (minutes(10), "l-soon")
    assert queue(new=("n1",), learning=(soon,)).next_item(NOW) == "n1"
    assert queue(learning=(soon,)).next_item(NOW) == "l-soon"
    beyond = (NOW + LEARN_AHEAD + timedelta(seconds=1), "l-later")
    assert queue(learning=(beyond,)).next_item(NOW) is None
    assert queue(learning=(beyond,)).next_learning_due() == beyond[0]


def test_counts_respect_the_daily_limits_and_count_learning_due_within_the_window() -> None:
    q = queue(
        new=("n1", "n2", "n3"), new_left=2,
        reviews=tuple((minutes(-i), f"r{i}") for i in range(5)), reviews_left=4,
        learning=((minutes(-1), "a"), (minutes(20), "b"), (minutes(21), "c")),
    )
    assert q.counts(NOW) == Counts(new=2, learning=2, review=4)
    assert queue(new=("n1",), new_left=0).next_item(NOW) is None
    assert queue(reviews=((minutes(-1), "r"),), reviews_left=0).next_item(NOW) is None


def test_answering_a_new_item_moves_it_to_learning_and_uses_one_of_todays_new() -> None:
    q = queue(new=("n1", "n2"), new_left=2)
    after = q.answered("n1", due_before=None, introduced=True, was_review=False, state=LEARNING, due=minutes(1), suspended=False)
    assert after.new == ("n2",) and after.new_left == 1
    assert after.learning == ((minutes(1), "n1"),)
    assert after.counts(NOW) == Counts(new=1, learning=1, review=0)
    assert q.new == ("n1", "n2"), "a queue is never changed in place"


def test_answering_a_review_uses_one_of_todays_reviews_and_a_lapse_relearns() -> None:
    q = queue(reviews=((minutes(-9), "r1"), (minutes(-8), "r2")), reviews_left=10)
    passed = q.answered("r1", due_before=minutes(-9), introduced=False, was_review=True, state=REVIEW_STATE, due=NOW + timedelta(days=4), suspended=False)
    assert passed.reviews == ((minutes(-8), "r2"),) and passed.reviews_left == 9 and passed.learning == ()
    lapsed = q.answered("r1", due_before=minutes(-9), introduced=False, was_review=True, state=RELEARNING, due=minutes(10), suspended=False)
    assert lapsed.learning == ((minutes(10), "r1"),) and lapsed.reviews_left == 9


def test_a_graduation_due_before_the_day_ends_is_a_review_today() -> None:
    # A 25-hour study day (the clocks go back): a 1-day interval can fall before it ends.
    q = queue(learning=((minutes(-1), "l"),))
    after = q.answered("l", due_before=minutes(-1), introduced=False, was_review=False, state=REVIEW_STATE,
                       due=END - timedelta(minutes=1), suspended=False)
    assert after.reviews == ((END - timedelta(minutes=1), "l"),)
    later = q.answered("l", due_before=minutes(-1), introduced=False, was_review=False, state=REVIEW_STATE, due=END, suspended=False)
    assert later.reviews == () and later.learning == ()


def test_a_suspended_item_answered_from_a_stale_tab_goes_nowhere() -> None:
    q = queue(learning=((minutes(-1), "l"),))
    assert q.answered("l", due_before=minutes(-1), introduced=False, was_review=False, state=LEARNING, due=minutes(10),
                      suspended=True).learning == ()


def test_an_item_the_queue_does_not_hold_cannot_be_carried_across() -> None:
    q = queue(new=("n1",), reviews=((minutes(-9), "r1"),))
    assert q.holds("r1", due=minutes(-9)) and not q.holds("r1", due=minutes(-8)) and not q.holds("n1", due=minutes(-9))
    with pytest.raises(ValueError, match="not in this queue"):
        q.answered("elsewhere", due_before=None, introduced=True, was_review=False, state=LEARNING, due=NOW, suspended=False)


def test_an_answer_in_a_long_backlog_moves_only_that_item() -> None:
    backlog = tuple((minutes(-i), f"r{i:04d}") for i in range(3000, 0, -1))
    q = queue(reviews=backlog, reviews_left=9999)
    after = q.answered("r1500", due_before=minutes(-1500), introduced=False, was_review=True, state=REVIEW_STATE,
                       due=minutes(-1500.5), suspended=False)  # still due today: it moves, in due order
    assert len(after.reviews) == 3000 and after.reviews == tuple(sorted(after.reviews))
    assert (minutes(-1500.5), "r1500") in after.reviews and (minutes(-1500), "r1500") not in after.reviews


def test_a_queue_covers_its_day_until_a_buried_item_comes_back() -> None:
    q = queue(valid_until=minutes(30))
    assert q.covers(NOW) and not q.covers(minutes(30)) and not q.covers(START - timedelta(seconds=1))
    assert queue().covers(END - timedelta(seconds=1)) and not queue().covers(END)
