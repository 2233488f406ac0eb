"""The fsrs adapter with fixed clocks, and study-day boundaries across rollover hours and time zones."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from app.review import scheduler
from app.review.days import day_bounds, study_day, zone
from tests.review.conftest import T0

POLICY = scheduler.Policy(fuzz=False)


def test_new_item_candidates_follow_learning_steps() -> None:
    states = scheduler.next_states(None, policy=POLICY, now=T0)
    dues = {r: scheduler.columns(c)["due"] - T0 for r, c in states.items()}
    assert dues[1] == timedelta(minutes=1)  # Again: first learning step
    assert dues[3] == timedelta(minutes=10)  # Good: next learning step
    assert dues[4] >= timedelta(days=1)  # Easy graduates straight to review
    assert scheduler.columns(states[4])["state"] == 2


def test_candidates_are_a_pure_function_of_state_and_now() -> None:
    first = scheduler.next_states(None, policy=POLICY, now=T0)
    assert scheduler.next_states(None, policy=POLICY, now=T0) == first
    good = first[3]
    later = scheduler.columns(good)["due"]
    second = scheduler.next_states(good, policy=POLICY, now=later)
    assert scheduler.columns(second[3])["due"] - later >= timedelta(days=1)  # Good after the last step graduates


def test_higher_retention_means_shorter_intervals() -> None:
    easy = scheduler.next_states(None, policy=POLICY, now=T0)[4]
    at = scheduler.columns(easy)["due"]
    low = scheduler.next_states(easy, policy=scheduler.Policy(desired_retention=0.80, fuzz=False), now=at)[3]
    high = scheduler.next_states(easy, policy=scheduler.Policy(desired_retention=0.95, fuzz=False), now=at)[3]
    assert scheduler.columns(high)["due"] < scheduler.columns(low)["due"]


def test_stored_cards_carry_a_schema_version() -> None:
    card = scheduler.new_card(T0)
    assert card["schema_version"] == scheduler.SCHEMA_VERSION
    with pytest.raises(ValueError, match="unsupported fsrs card schema version 99"):
        scheduler.load_card({**card, "schema_version": 99})


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        scheduler.next_states(None, policy=POLICY, now=datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("seconds", "label"),
    [(30, "<1m"), (60, "1m"), (600, "10m"), (3 * 3600, "3h"), (86400, "1d"), (4 * 86400, "4d"), (60 * 86400, "2mo"), (400 * 86400, "1.1y")],
)
def test_interval_labels(seconds: int, label: str) -> None:
    assert scheduler.interval_label(T0 + timedelta(seconds=seconds), T0) == label


@pytest.mark.parametrize(
    ("now", "tz", "hour", "expected"),
    [
        (datetime(2026, 11, 30, 3, 59, tzinfo=UTC), "UTC", 4, date(2026, 11, 29)),  # before 4 am: still yesterday
        (datetime(2026, 11, 30, 4, 0, tzinfo=UTC), "UTC", 4, date(2026, 11, 30)),
        (datetime(2026, 11, 30, 20, 30, tzinfo=UTC), "Asia/Shanghai", 4, date(2026, 12, 1)),  # 04:30 local
        (datetime(2026, 11, 30, 23, 0, tzinfo=UTC), "UTC", 0, date(2026, 11, 30)),
        (datetime(2026, 3, 8, 9, 30, tzinfo=UTC), "America/New_York", 4, date(2026, 3, 8)),  # 05:30 EDT on DST day
    ],
)
def test_study_day(now: datetime, tz: str, hour: int, expected: date) -> None:
    assert study_day(now, tz=zone(tz), rollover_hour=hour) == expected


def test_study_day_in_shanghai_before_rollover_is_the_previous_day() -> None:
    # 2026-12-01 03:30 in Shanghai is before the 4 am rollover: the study day is still 30 November.
    now = datetime(2026, 11, 30, 19, 30, tzinfo=UTC)
    assert study_day(now, tz=zone("Asia/Shanghai"), rollover_hour=4) == date(2026, 11, 30)


def test_day_bounds_follow_daylight_saving() -> None:
    # New York springs forward at 2 am on 2026-03-08: the study day from 4 am on the 7th to 4 am on the 8th is 23 hours.
    start, end = day_bounds(datetime(2026, 3, 7, 12, tzinfo=UTC), tz=zone("America/New_York"), rollover_hour=4)
    assert start == datetime(2026, 3, 7, 9, tzinfo=UTC)  # 4 am EST
    assert end == datetime(2026, 3, 8, 8, tzinfo=UTC)  # 4 am EDT
    assert end - start == timedelta(hours=23)


@pytest.mark.parametrize("name", ["Mars/Olympus", "America", "x" * 300, "../etc/passwd", ""])
def test_unknown_time_zone(name: str) -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        zone(name)
