"""Statistics for one user: pure queries over review logs and item states, grouped in SQL.

Every number on the stats page means exactly this:

- Study day: from the user's rollover hour to the next, local time (app.review.days.day_start), DST included.
- Undone answers (review_log.undone_at set) never count, anywhere.
- Reviews per day (heatmap): every answer, learning steps included, on each of the 365 study days that end
  with today. Answers to items retired since still count: history is history.
- Due forecast: active items (item and card not retired) that have been answered at least once (reps > 0)
  and are not suspended, by the study day they come due; a buried item counts when it comes back if that is
  later. Overdue items count as due today. 30 study days, today first. New items are not "due".
- True retention, as in Anki's True Retention table (rslib/src/stats/graphs/retention.rs), per period:
  * Only the first answer to an item on a study day counts, and only when the item was in the review state
    just before it (state_before.state == 2). First-ever answers (state_before == {"state": 0}) and
    (re)learning steps are not retention tests; a same-day re-answer after Again is not a second test.
  * Again (1) is a fail; Hard, Good and Easy are passes. Rate = passed / (passed + failed), None if none.
  * Young vs mature by the interval the item had been scheduled for when it was answered:
    state_before.fsrs_card.due - state_before.fsrs_card.last_review, mature at >= 21 days. This is Anki's
    revlog lastIvl; elapsed time was not used, so a young item does not turn mature by being neglected.
  * Periods: today = this study day; week = the last 7 study days; month = the last 30, today included.
- Counts by state: every active item in exactly one bucket, first match wins: suspended; buried
  (buried_until > now); new (no state row, or reps 0); learning; review; relearning.
- Difficulty (FSRS D, 1..10 in 10 equal bins) and stability (days, roughly log-spaced bins): active items
  answered at least once, suspended ones included.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import ColumnElement, Integer, and_, case, cast, column, func, or_, select, values
from sqlalchemy.orm import aliased
from sqlmodel import Session, col
from sqlmodel.sql.sqltypes import UTCDateTime

from app.models import CardRow, ItemState, ReviewItem, ReviewLog, StudySettings
from app.review.days import day_start, study_day, zone
from app.review.scheduler import REVIEW_STATE

HEATMAP_DAYS = 365
FORECAST_DAYS = 30
MATURE_DAYS = 21
PERIODS = (("today", 1), ("week", 7), ("month", 30))  # name, study days ending today
DIFFICULTY_BINS = 10
# Stability bin edges in days: about doubling, on lengths people think in (a week, a month, a year).
STABILITY_EDGES = (1, 2, 4, 7, 14, 30, 60, 120, 240, 365, 730)


@dataclass(frozen=True)
class DayCount:
    day: date
    count: int


@dataclass(frozen=True)
class Heatmap:
    days: list[DayCount]  # HEATMAP_DAYS entries, oldest first, zeros included
    total: int
    active_days: int
    busiest: int  # the most answers on one day
    streak: int  # consecutive study days with reviews, ending today (or yesterday if today has none yet)


@dataclass(frozen=True)
class Retention:
    passed: int
    failed: int
    rate: float | None  # passed / (passed + failed); None when there was nothing to test

    @classmethod
    def of(cls, passed: int, failed: int) -> Retention:
        total = passed + failed
        return cls(passed, failed, passed / total if total else None)


@dataclass(frozen=True)
class RetentionRow:
    period: str  # today | week | month
    first_day: date
    young: Retention
    mature: Retention
    all: Retention


@dataclass(frozen=True)
class StateCounts:
    new: int
    learning: int
    review: int
    relearning: int
    suspended: int
    buried: int
    total: int


@dataclass(frozen=True)
class Bin:
    label: str  # compact and the same in both languages, like the review buttons' "3d"
    low: float
    high: float | None  # None: open-ended
    count: int


@dataclass(frozen=True)
class Stats:
    today: date
    heatmap: Heatmap
    forecast: list[DayCount]  # FORECAST_DAYS entries, today first
    retention: list[RetentionRow]
    states: StateCounts
    difficulty: list[Bin]
    stability: list[Bin]


# Study days in SQL ########################################################
# SQLite knows no time zones, so study days go in as their UTC bounds from days.day_start (DST-exact by
# construction) and rows are matched to days by comparison, never by date arithmetic in SQL.


@dataclass(frozen=True)
class _Days:
    today: date
    tz: ZoneInfo
    rollover: int

    def start(self, offset: int) -> datetime:
        """When the study day `offset` days from today starts, in UTC."""
        return day_start(self.today + timedelta(days=offset), tz=self.tz, rollover_hour=self.rollover)

    def bounds(self, first: int, count: int) -> list[datetime]:
        """The UTC starts of `count` + 1 consecutive study days, from `first` days from today."""
        return [self.start(first + i) for i in range(count + 1)]

    def ranges(self, first: int, count: int) -> Any:
        """CTE days(i, lo, hi): i = 0.. for `count` study days from `first` days from today; [lo, hi) in UTC.

        For an indexed column: each day is one index range, no per-row arithmetic and no sort.
        """
        bounds = self.bounds(first, count)
        table = values(column("i", Integer), column("lo", UTCDateTime()), column("hi", UTCDateTime()), name="days")
        return table.data([(i, bounds[i], bounds[i + 1]) for i in range(count)]).cte("days")

    def index(self, value: Any, first: int, count: int) -> ColumnElement[int]:
        """SQL for which of `count` study days from `first` days from today `value` falls in (earlier: 0; later: NULL).

        For an expression no index serves: a short CASE per row beats joining every row to every day.
        """
        bounds = self.bounds(first, count)
        return case(*((value < bounds[i + 1], i) for i in range(count)), else_=None)


def _days(settings: StudySettings, now: datetime) -> _Days:
    tz = zone(settings.timezone)
    return _Days(study_day(now, tz=tz, rollover_hour=settings.day_rollover_hour), tz, settings.day_rollover_hour)


def _answered(user_id: int) -> list[ColumnElement[bool]]:
    return [col(ReviewLog.user_id) == user_id, col(ReviewLog.undone_at).is_(None)]


def _active() -> list[ColumnElement[bool]]:
    return [col(ReviewItem.retired_at).is_(None), col(CardRow.retired_at).is_(None)]


# Queries ##################################################################


def heatmap(session: Session, *, user_id: int, settings: StudySettings, now: datetime) -> Heatmap:
    """Answers per study day over the HEATMAP_DAYS days ending today."""
    days = _days(settings, now)
    ranges = days.ranges(1 - HEATMAP_DAYS, HEATMAP_DAYS)
    per_day = (
        select(func.count())
        .where(*_answered(user_id), col(ReviewLog.reviewed_at) >= ranges.c.lo, col(ReviewLog.reviewed_at) < ranges.c.hi)
        .scalar_subquery()
    )
    counts = [0] * HEATMAP_DAYS
    for i, n in session.execute(select(ranges.c.i, per_day)).all():
        counts[i] = int(n)
    first = days.today - timedelta(days=HEATMAP_DAYS - 1)
    series = [DayCount(first + timedelta(days=i), n) for i, n in enumerate(counts)]
    streak = 0
    for i, n in enumerate(reversed(counts)):
        if n:
            streak += 1
        elif i > 0 or streak:  # no reviews yet today doesn't break yesterday's streak
            break
    return Heatmap(series, sum(counts), sum(1 for n in counts if n), max(counts), streak)


def forecast(session: Session, *, user_id: int, settings: StudySettings, now: datetime) -> list[DayCount]:
    """Items due on each of the next FORECAST_DAYS study days; overdue ones count as today."""
    days = _days(settings, now)
    # A buried item comes back when its burial ends, if that is after it is due.
    due = func.max(col(ItemState.due), func.coalesce(col(ItemState.buried_until), col(ItemState.due)))
    day = days.index(due, 0, FORECAST_DAYS)
    rows = session.execute(
        select(day, func.count())
        .select_from(ItemState)
        .join(ReviewItem, col(ReviewItem.id) == col(ItemState.item_id))
        .join(CardRow, col(CardRow.id) == col(ReviewItem.card_id))
        .where(col(ItemState.user_id) == user_id, col(ItemState.reps) > 0, col(ItemState.suspended).is_(False), *_active())
        .where(due < days.start(FORECAST_DAYS))
        .group_by(day)
    ).all()
    counts = [0] * FORECAST_DAYS
    for i, n in rows:
        counts[i] = int(n)
    return [DayCount(days.today + timedelta(days=i), n) for i, n in enumerate(counts)]


def _seconds(value: Any) -> ColumnElement[int]:
    return cast(func.strftime("%s", value), Integer)


def retention(session: Session, *, user_id: int, settings: StudySettings, now: datetime) -> list[RetentionRow]:
    """True retention for today, the last 7 and the last 30 study days (see the module docstring)."""
    days = _days(settings, now)
    longest = max(n for _, n in PERIODS)
    ranges = days.ranges(1 - longest, longest)
    # Rank each day's answers per item on the index columns only; read the JSON of the first ones alone.
    ranked = (
        select(
            col(ReviewLog.id).label("log_id"),
            ranges.c.i.label("day"),
            func.row_number()
            .over(partition_by=(col(ReviewLog.item_id), ranges.c.i), order_by=(col(ReviewLog.reviewed_at), col(ReviewLog.id)))
            .label("nth"),
        )
        .join(ReviewLog, and_(col(ReviewLog.reviewed_at) >= ranges.c.lo, col(ReviewLog.reviewed_at) < ranges.c.hi))
        .where(*_answered(user_id))
        .subquery()
    )
    log = aliased(ReviewLog)
    before = col(log.state_before)
    interval = _seconds(func.json_extract(before, "$.fsrs_card.due")) - _seconds(
        func.json_extract(before, "$.fsrs_card.last_review")
    )
    is_mature = func.coalesce(interval >= MATURE_DAYS * 86400, False)
    is_failed = col(log.rating) == 1
    rows = session.execute(
        select(ranked.c.day, is_mature, is_failed, func.count())
        .join(log, col(log.id) == ranked.c.log_id)
        .where(ranked.c.nth == 1, func.json_extract(before, "$.state") == REVIEW_STATE)
        .group_by(ranked.c.day, is_mature, is_failed)
    ).all()
    result = []
    for period, length in PERIODS:
        tally = {(m, f): 0 for m in (False, True) for f in (False, True)}
        for i, mature, failed, n in rows:
            if i >= longest - length:
                tally[bool(mature), bool(failed)] += int(n)
        young = Retention.of(tally[False, False], tally[False, True])
        grown = Retention.of(tally[True, False], tally[True, True])
        both = Retention.of(young.passed + grown.passed, young.failed + grown.failed)
        result.append(RetentionRow(period, days.today - timedelta(days=length - 1), young, grown, both))
    return result


def state_counts(session: Session, *, user_id: int, settings: StudySettings, now: datetime) -> StateCounts:
    """Every active item in exactly one bucket (see the module docstring)."""
    state = ItemState.__table__.alias("s")  # type: ignore[attr-defined]
    bucket = case(
        (state.c.suspended.is_(True), "suspended"),
        (and_(state.c.buried_until.is_not(None), state.c.buried_until > now), "buried"),
        (or_(state.c.item_id.is_(None), state.c.reps == 0), "new"),
        (state.c.state == 1, "learning"),
        (state.c.state == REVIEW_STATE, "review"),
        (state.c.state == 3, "relearning"),
        else_="new",
    )
    rows = session.execute(
        select(bucket, func.count())
        .select_from(ReviewItem)
        .join(CardRow, col(CardRow.id) == col(ReviewItem.card_id))
        .outerjoin(state, and_(state.c.item_id == col(ReviewItem.id), state.c.user_id == user_id))
        .where(*_active())
        .group_by(bucket)
    ).all()
    found = {name: int(n) for name, n in rows}
    names = ("new", "learning", "review", "relearning", "suspended", "buried")
    return StateCounts(**{name: found.get(name, 0) for name in names}, total=sum(found.values()))


def _reviewed_items(user_id: int, column: Any) -> Any:
    return (
        select(column, func.count())
        .select_from(ItemState)
        .join(ReviewItem, col(ReviewItem.id) == col(ItemState.item_id))
        .join(CardRow, col(CardRow.id) == col(ReviewItem.card_id))
        .where(col(ItemState.user_id) == user_id, col(ItemState.reps) > 0, *_active())
        .group_by(column)
    )


def difficulty_bins(session: Session, *, user_id: int, settings: StudySettings, now: datetime) -> list[Bin]:
    """FSRS difficulty (1..10) of answered items in DIFFICULTY_BINS equal bins."""
    width = 9 / DIFFICULTY_BINS
    index = func.max(0, func.min(DIFFICULTY_BINS - 1, cast((col(ItemState.difficulty) - 1) / width, Integer)))
    query = _reviewed_items(user_id, index).where(col(ItemState.difficulty).is_not(None))
    found = {int(i): int(n) for i, n in session.execute(query).all()}
    return [
        Bin(f"{1 + i * width:.1f}–{1 + (i + 1) * width:.1f}", round(1 + i * width, 2), round(1 + (i + 1) * width, 2), found.get(i, 0))
        for i in range(DIFFICULTY_BINS)
    ]


def _days_label(days: float) -> str:
    if days < 14:
        return f"{days:g}d"
    if days < 60:
        return f"{days / 7:g}w" if days % 7 == 0 else f"{days / 30:g}mo"
    if days < 365:
        return f"{days / 30:g}mo"
    return f"{days / 365:g}y"


def stability_bins(session: Session, *, user_id: int, settings: StudySettings, now: datetime) -> list[Bin]:
    """FSRS stability (days) of answered items, in bins edged by STABILITY_EDGES."""
    index = case(
        *((col(ItemState.stability) < edge, i) for i, edge in enumerate(STABILITY_EDGES)), else_=len(STABILITY_EDGES)
    )
    query = _reviewed_items(user_id, index).where(col(ItemState.stability).is_not(None))
    found = {int(i): int(n) for i, n in session.execute(query).all()}
    lows = (0, *STABILITY_EDGES)
    highs: tuple[float | None, ...] = (*STABILITY_EDGES, None)
    bins = []
    for i, (low, high) in enumerate(zip(lows, highs, strict=True)):
        if high is None:
            label = f"≥{_days_label(low)}"
        elif low == 0:
            label = f"<{_days_label(high)}"
        else:
            label = f"{_days_label(low)}–{_days_label(high)}"
        bins.append(Bin(label, low, high, found.get(i, 0)))
    return bins


def overview(session: Session, *, user_id: int, settings: StudySettings, now: datetime) -> Stats:
    """Everything the stats page shows."""
    args: dict[str, Any] = {"user_id": user_id, "settings": settings, "now": now}
    return Stats(
        today=_days(settings, now).today,
        heatmap=heatmap(session, **args),
        forecast=forecast(session, **args),
        retention=retention(session, **args),
        states=state_counts(session, **args),
        difficulty=difficulty_bins(session, **args),
        stability=stability_bins(session, **args),
    )
