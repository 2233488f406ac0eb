"""The stats page's numbers against a real SQLite file, with history made by the real service at fixed clocks."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.models import LOCAL_USER_ID, ItemState, StudySettings
from app.review import service, stats
from tests.review.conftest import T0  # Monday 2026-11-30 09:00 UTC

U = LOCAL_USER_ID


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def settings_of(session: Session, *, timezone: str = "UTC", rollover: int = 4) -> StudySettings:
    settings = service.get_settings(session, user_id=U)
    settings.timezone, settings.day_rollover_hour = timezone, rollover
    session.add(settings)
    session.commit()
    return settings


def answer(session: Session, item_id: str, rating: int, at: datetime, *, study_session: str = "s1") -> None:
    """Show then answer, through the real service, at `at`."""
    settings = service.get_settings(session, user_id=U)
    shown = service.show(session, user_id=U, item_id=item_id, settings=settings, now=at)
    service.answer(session, user_id=U, item_id=item_id, token=shown.token, rating=rating, duration_ms=1000,
                   study_session=study_session, now=at)


def overview(session: Session, now: datetime = T0) -> stats.Stats:
    return stats.overview(session, user_id=U, settings=service.get_settings(session, user_id=U), now=now)


def nonzero(series: list[stats.DayCount]) -> dict[date, int]:
    return {d.day: d.count for d in series if d.count}


# Heatmap ##################################################################


@pytest.mark.parametrize(
    ("timezone", "rollover", "at", "day"),
    [
        ("UTC", 4, utc(2026, 11, 20, 3, 59, 59), date(2026, 11, 19)),  # before the rollover: still yesterday
        ("UTC", 4, utc(2026, 11, 20, 4, 0), date(2026, 11, 20)),
        ("Asia/Shanghai", 4, utc(2026, 11, 20, 19, 59), date(2026, 11, 20)),  # 03:59 on the 21st, local
        ("Asia/Shanghai", 4, utc(2026, 11, 20, 20, 0), date(2026, 11, 21)),
        ("Europe/Berlin", 4, utc(2026, 7, 1, 1, 59), date(2026, 6, 30)),  # CEST: 03:59
        ("Europe/Berlin", 4, utc(2026, 10, 25, 2, 30), date(2026, 10, 24)),  # clocks went back at 01:00 UTC: 03:30 CET
        ("Europe/Berlin", 4, utc(2026, 10, 25, 3, 30), date(2026, 10, 25)),  # 04:30 CET
        ("America/New_York", 0, utc(2026, 3, 8, 4, 59), date(2026, 3, 7)),  # 23:59 EST
        ("America/New_York", 0, utc(2026, 3, 9, 4, 0), date(2026, 3, 9)),  # midnight EDT
    ],
)
def test_heatmap_counts_each_answer_on_its_study_day(session: Session, timezone: str, rollover: int, at: datetime, day: date) -> None:
    settings_of(session, timezone=timezone, rollover=rollover)
    answer(session, "alpha", 3, at)
    heatmap = overview(session).heatmap
    assert nonzero(heatmap.days) == {day: 1}
    assert len(heatmap.days) == stats.HEATMAP_DAYS and heatmap.days[-1].day == date(2026, 11, 30)


def test_heatmap_window_is_the_365_study_days_ending_today(session: Session) -> None:
    settings_of(session)
    answer(session, "alpha", 4, T0 - timedelta(days=365))  # 2025-11-30 09:00: one day too old
    answer(session, "beta", 4, T0 - timedelta(days=364))
    heatmap = overview(session).heatmap
    assert heatmap.days[0].day == date(2025, 12, 1)
    assert nonzero(heatmap.days) == {date(2025, 12, 1): 1}


# True retention, heatmap and undo on one history ##########################
# (UTC, rollover 04:00; today is 2026-11-30, the week starts 11-24 and the month 11-01.)


def _history(session: Session) -> None:
    settings_of(session)
    # alpha: Easy (8 d), Good on time (39 d), then Again when overdue: a mature fail.
    answer(session, "alpha", 4, utc(2026, 10, 1, 9))
    answer(session, "alpha", 3, utc(2026, 10, 9, 9))  # young pass, before the month
    answer(session, "alpha", 1, utc(2026, 11, 28, 10))  # mature fail (scheduled 39 d)
    answer(session, "alpha", 3, utc(2026, 11, 28, 10, 15))  # relearning step: not a test
    # beta: Easy (8 d), Good on time (39 d): a young pass this month; today reviewed early: a mature pass.
    answer(session, "beta", 4, utc(2026, 11, 10, 9))  # first-ever answer: not a test
    answer(session, "beta", 3, utc(2026, 11, 18, 9))  # young pass
    answer(session, "beta", 3, utc(2026, 11, 30, 8), study_session="undo-me")
    assert service.undo(session, user_id=U, study_session="undo-me", now=utc(2026, 11, 30, 8, 1)) == "beta"
    answer(session, "beta", 2, utc(2026, 11, 30, 8, 30))  # Hard: a mature pass, the day's first answer left
    # gamma: Easy (8 d), then Again a day late: a young fail; relearnt; then answered again the same day.
    answer(session, "gamma", 4, utc(2026, 11, 20, 9))
    answer(session, "gamma", 1, utc(2026, 11, 29, 9))  # young fail
    answer(session, "gamma", 3, utc(2026, 11, 29, 9, 10))  # relearning step
    answer(session, "gamma", 3, utc(2026, 11, 29, 9, 20))  # in review again, but not the day's first answer
    # A new item answered at 03:30, before the rollover: it belongs to yesterday.
    answer(session, "alpha#why-raise", 4, utc(2026, 11, 30, 3, 30))


def test_true_retention_counts_first_answers_of_review_items_by_period(session: Session) -> None:
    _history(session)
    table = {row.period: row for row in overview(session).retention}
    R = stats.Retention
    assert [row.period for row in overview(session).retention] == ["today", "week", "month"]
    assert (table["today"].young, table["today"].mature, table["today"].all) == (R(0, 0, None), R(1, 0, 1.0), R(1, 0, 1.0))
    assert (table["week"].young, table["week"].mature) == (R(0, 1, 0.0), R(1, 1, 0.5))
    assert table["week"].all == R(1, 2, pytest.approx(1 / 3))
    assert (table["month"].young, table["month"].mature, table["month"].all) == (R(1, 1, 0.5), R(1, 1, 0.5), R(2, 2, 0.5))
    assert [row.first_day for row in table.values()] == [date(2026, 11, 30), date(2026, 11, 24), date(2026, 11, 1)]


def test_heatmap_of_the_same_history_skips_the_undone_answer(session: Session) -> None:
    _history(session)
    heatmap = overview(session).heatmap
    assert nonzero(heatmap.days) == {
        date(2026, 10, 1): 1, date(2026, 10, 9): 1, date(2026, 11, 10): 1, date(2026, 11, 18): 1, date(2026, 11, 20): 1,
        date(2026, 11, 28): 2, date(2026, 11, 29): 4, date(2026, 11, 30): 1,
    }
    assert (heatmap.total, heatmap.active_days, heatmap.busiest, heatmap.streak) == (12, 8, 4, 3)


def test_an_undone_answer_is_not_a_retention_test(session: Session) -> None:
    settings_of(session)
    answer(session, "beta", 4, utc(2026, 11, 20, 9))
    answer(session, "beta", 1, utc(2026, 11, 30, 8), study_session="oops")
    service.undo(session, user_id=U, study_session="oops", now=utc(2026, 11, 30, 8, 1))
    today = overview(session).retention[0]
    assert today.all == stats.Retention(0, 0, None)


def test_streak_survives_a_today_without_reviews_yet(session: Session) -> None:
    settings_of(session)
    answer(session, "alpha", 4, utc(2026, 11, 28, 9))
    answer(session, "beta", 4, utc(2026, 11, 29, 9))
    assert overview(session).heatmap.streak == 2
    answer(session, "gamma", 4, utc(2026, 11, 30, 5))
    assert overview(session).heatmap.streak == 3


# Forecast #################################################################


def test_forecast_buckets_by_study_day_with_overdue_today_buried_later_suspended_never(session: Session) -> None:
    settings = settings_of(session)
    answer(session, "alpha", 4, utc(2026, 11, 20, 9))  # due 11-28: overdue, so today
    answer(session, "beta", 4, utc(2026, 11, 25, 9))  # due 12-03
    answer(session, "gamma", 4, utc(2026, 11, 30, 3, 30))  # due 12-08 03:30, before the rollover: study day 12-07
    answer(session, "beta#why-raise", 4, utc(2026, 11, 21, 9))  # due 11-29, but buried until tomorrow
    service.bury(session, user_id=U, item_id="beta#why-raise", settings=settings, now=T0)
    answer(session, "gamma#why-raise", 4, utc(2026, 11, 27, 9))  # due 12-05, but suspended
    service.set_suspended(session, user_id=U, item_id="gamma#why-raise", suspended=True, now=T0)
    service.bury(session, user_id=U, item_id="alpha#why-raise", settings=settings, now=T0)  # never answered: not due
    forecast = overview(session).forecast
    assert len(forecast) == stats.FORECAST_DAYS and forecast[0].day == date(2026, 11, 30)
    assert nonzero(forecast) == {date(2026, 11, 30): 1, date(2026, 12, 1): 1, date(2026, 12, 3): 1, date(2026, 12, 7): 1}


def test_forecast_ends_after_30_days(session: Session) -> None:
    settings_of(session)
    answer(session, "alpha", 4, utc(2026, 10, 1, 9))
    answer(session, "alpha", 3, utc(2026, 10, 9, 9))  # due 11-17: overdue
    answer(session, "beta", 4, utc(2026, 11, 20, 9))
    answer(session, "beta", 3, utc(2026, 11, 28, 9))  # due 2027-01-06: beyond the 30 days
    assert nonzero(overview(session).forecast) == {date(2026, 11, 30): 1}


# Counts by state and distributions ########################################


def test_counts_by_state_put_every_active_item_in_one_bucket(session: Session) -> None:
    settings = settings_of(session)
    answer(session, "alpha", 3, T0 - timedelta(hours=1))  # learning
    answer(session, "beta", 4, T0 - timedelta(hours=1))  # review
    answer(session, "gamma", 4, T0 - timedelta(days=10))
    answer(session, "gamma", 1, T0 - timedelta(hours=1))  # relearning
    service.set_suspended(session, user_id=U, item_id="alpha#why-raise", suspended=True, now=T0)
    service.bury(session, user_id=U, item_id="beta#why-raise", settings=settings, now=T0)
    # gamma#why-raise is untouched: new, with no state row at all.
    assert overview(session).states == stats.StateCounts(
        new=1, learning=1, review=1, relearning=1, suspended=1, buried=1, total=6
    )
    # Tomorrow the burial is over and the buried item is new again.
    assert overview(session, T0 + timedelta(days=1)).states.new == 2


def test_difficulty_and_stability_bins_hold_each_answered_item_once(session: Session) -> None:
    settings_of(session)
    for item, rating in (("alpha", 1), ("beta", 4), ("gamma", 3)):
        answer(session, item, rating, T0 - timedelta(hours=2))
    result = overview(session)
    assert [b.label for b in result.difficulty][:2] == ["1.0–1.9", "1.9–2.8"] and len(result.difficulty) == 10
    assert result.stability[0].label == "<1d" and result.stability[-1].label == "≥2y"
    states = [session.get(ItemState, (U, item)) for item in ("alpha", "beta", "gamma")]
    expected_difficulty = [0] * 10
    expected_stability = [0] * len(result.stability)
    for state in states:
        assert state is not None and state.difficulty is not None and state.stability is not None
        expected_difficulty[min(9, int((state.difficulty - 1) / 0.9))] += 1
        expected_stability[sum(1 for edge in stats.STABILITY_EDGES if state.stability >= edge)] += 1
    assert [b.count for b in result.difficulty] == expected_difficulty
    assert [b.count for b in result.stability] == expected_stability
    assert sum(expected_difficulty) == 3


# Page and JSON ############################################################


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def test_stats_page_has_the_tables_and_the_heatmap(client: TestClient) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with Session(engine) as session:
        answer(session, "alpha", 3, datetime.now(UTC))
    response = client.get("/stats")
    assert response.status_code == 200 and "<html" in response.text
    page = _soup(response.text)
    rows = page.select("table.retention tbody tr")
    assert [r["data-period"] for r in rows] == ["today", "week", "month"]
    assert [td.get_text() for td in rows[0].select("td")] == ["0", "0", "—"] * 3  # a first answer is no test
    states = {tr["data-state"]: tr.select_one("td").get_text() for tr in page.select("table.states tbody tr")}
    assert states == {"new": "5", "learning": "1", "review": "0", "relearning": "0", "suspended": "0", "buried": "0"}
    cells = page.select(".hm-grid .hm")
    assert len(cells) == stats.HEATMAP_DAYS and cells[-1]["class"] == ["hm", "l4"]  # today, the busiest day
    assert page.select_one('nav a[href="/stats"]') is not None
    scripts = [s["src"] for s in page.select("script[src]")]
    assert any(src.startswith("/static/vendor/chart-4.6.1.umd.min.js?v=") for src in scripts)
    assert any(src.startswith("/static/stats.js?v=") for src in scripts)
    for canvas in page.select("canvas"):
        assert canvas["role"] == "img" and canvas["aria-label"]


def test_stats_page_fragment_for_htmx(client: TestClient) -> None:
    fragment = client.get("/stats", headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and "<html" not in fragment.text and 'id="stats"' in fragment.text


def test_stats_json_has_the_same_data(client: TestClient) -> None:
    data = client.get("/stats.json").json()
    assert set(data) == {"today", "heatmap", "forecast", "retention", "states", "difficulty", "stability"}
    assert len(data["heatmap"]["days"]) == 365 and data["heatmap"]["days"][-1] == {"day": data["today"], "count": 0}
    assert len(data["forecast"]) == 30 and data["forecast"][0]["day"] == data["today"]
    assert [r["period"] for r in data["retention"]] == ["today", "week", "month"]
    assert data["retention"][0]["all"] == {"passed": 0, "failed": 0, "rate": None}
    assert data["states"]["new"] == data["states"]["total"] == 6
    assert len(data["difficulty"]) == 10 and data["stability"][0] == {"label": "<1d", "low": 0, "high": 1, "count": 0}


def test_chart_library_is_served_from_the_app(client: TestClient) -> None:
    vendor = client.get("/static/vendor/chart-4.6.1.umd.min.js")
    assert vendor.status_code == 200 and b"Chart.js v4.6.1" in vendor.content[:200]
    assert client.get("/static/stats.js").status_code == 200
