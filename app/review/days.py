"""Study days: when "today" starts and ends for a user (rollover hour in their time zone)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def zone(name: str) -> ZoneInfo:
    """The named time zone; raises ValueError with a readable message when unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: 'America' is a folder of zones
        raise ValueError(f"unknown time zone {name!r}") from exc


def study_day(now: datetime, *, tz: ZoneInfo, rollover_hour: int) -> date:
    """The study day `now` falls in: a day runs from rollover_hour to rollover_hour local time."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    local = now.astimezone(tz)
    return (local - timedelta(hours=rollover_hour)).date()


def day_start(day: date, *, tz: ZoneInfo, rollover_hour: int) -> datetime:
    """The UTC instant a study day starts (DST-aware: local wall-clock rollover_hour)."""
    return datetime.combine(day, time(rollover_hour), tzinfo=tz).astimezone(UTC)


def day_bounds(now: datetime, *, tz: ZoneInfo, rollover_hour: int) -> tuple[datetime, datetime]:
    """[start, end) of the study day containing now, in UTC."""
    today = study_day(now, tz=tz, rollover_hour=rollover_hour)
    return (
        day_start(today, tz=tz, rollover_hour=rollover_hour),
        day_start(today + timedelta(days=1), tz=tz, rollover_hour=rollover_hour),
    )
