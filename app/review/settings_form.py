"""The study-settings form: parse and check what a person typed, field by field. Pure: no database, no web.

Steps are written as in Anki ("1m 10m", "10m", "30s 2h"); a bare number means minutes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from app.models import StudySettings
from app.review.days import zone

RETENTION_MIN, RETENTION_MAX = 0.70, 0.97  # Anki's advice: workload rises steeply above 0.90; keep it below 0.97
NEW_PER_DAY_MAX = 9999
REVIEWS_PER_DAY_MAX = 99999
MAX_STEPS = 10
DAY_SECONDS = 86400
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_STEP = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")

FIELDS = (
    "desired_retention",
    "new_per_day",
    "max_reviews_per_day",
    "learning_steps",
    "relearning_steps",
    "day_rollover_hour",
    "timezone",
)


class Message(NamedTuple):
    zh: str
    en: str


@dataclass(frozen=True)
class StudyPrefs:
    """Valid settings, ready to store."""

    desired_retention: float
    new_per_day: int
    max_reviews_per_day: int
    learning_steps: tuple[int, ...]  # seconds
    relearning_steps: tuple[int, ...]
    day_rollover_hour: int
    timezone: str


@dataclass(frozen=True)
class Parsed:
    """The form as typed (to show it again), and either valid prefs or one message per bad field."""

    raw: dict[str, str]
    prefs: StudyPrefs | None
    errors: dict[str, Message] = field(default_factory=dict)


class _Invalid(Exception):
    def __init__(self, zh: str, en: str) -> None:
        super().__init__(en)
        self.message = Message(zh, en)


# Steps ###################################################################


def format_steps(seconds: tuple[int, ...] | list[int]) -> str:
    """(60, 600) -> "1m 10m": each step in the largest unit that divides it."""
    parts = []
    for s in seconds:
        unit = next(u for u in ("d", "h", "m", "s") if s % _UNITS[u] == 0)
        parts.append(f"{s // _UNITS[unit]}{unit}")
    return " ".join(parts)


class StepsError(ValueError):
    """Why a steps text is invalid, in English (str) and Chinese (.zh)."""

    def __init__(self, en: str, zh: str) -> None:
        super().__init__(en)
        self.zh = zh


def parse_steps(text: str) -> tuple[int, ...]:
    """'1m 10m' -> (60, 600). Each step is > 0 and < 1 day; empty means no steps. StepsError otherwise."""
    tokens = [t for t in re.split(r"[\s,]+", text.strip().lower()) if t]
    if len(tokens) > MAX_STEPS:
        raise StepsError(f"at most {MAX_STEPS} steps", f"最多 {MAX_STEPS} 步")
    steps = []
    for token in tokens:
        match = _STEP.match(token)
        if match is None:
            raise StepsError(f"'{token}' is not a step: write a number and a unit, like 1m, 10m, 2h or 30s",
                             f"“{token}”不是步长：请写数字加单位，如 1m、10m、2h 或 30s")
        seconds = round(float(match.group(1)) * _UNITS[match.group(2) or "m"])
        if seconds < 1:
            raise StepsError(f"'{token}' is shorter than one second", f"“{token}”短于一秒")
        if seconds >= DAY_SECONDS:
            raise StepsError(f"'{token}' is not shorter than one day: longer gaps are FSRS's job, not a step's",
                             f"“{token}”不短于一天：更长的间隔由 FSRS 安排，不是步长")
        steps.append(seconds)
    return tuple(steps)


# Fields ##################################################################


def _text(raw: Mapping[str, str], name: str) -> str:
    value = raw.get(name, "").strip()
    if not value:
        raise _Invalid("必填。", "Required.")
    return value


def _whole(raw: Mapping[str, str], name: str, low: int, high: int) -> int:
    value = _text(raw, name)
    if not re.fullmatch(r"[+-]?[0-9]+", value):
        raise _Invalid(f"“{value}” 不是整数。", f"'{value}' is not a whole number.")
    number = int(value)
    if not low <= number <= high:
        raise _Invalid(f"必须在 {low} 到 {high} 之间。", f"Must be between {low} and {high}.")
    return number


def _retention(raw: Mapping[str, str]) -> float:
    value = _text(raw, "desired_retention")
    try:
        number = float(value.rstrip("%").strip())
    except ValueError:
        raise _Invalid(f"“{value}” 不是数字。", f"'{value}' is not a number.") from None
    if not math.isfinite(number):
        raise _Invalid(f"“{value}” 不是数字。", f"'{value}' is not a number.")
    if value.endswith("%") or number > 1:  # "90" and "90%" both mean 0.90
        number /= 100
    number = round(number, 4)
    if not RETENTION_MIN <= number <= RETENTION_MAX:
        raise _Invalid(
            f"必须在 {RETENTION_MIN:.2f} 到 {RETENTION_MAX:.2f} 之间（即 70% 到 97%）。",
            f"Must be between {RETENTION_MIN:.2f} and {RETENTION_MAX:.2f} (70% to 97%).",
        )
    return number


def _steps(raw: Mapping[str, str], name: str) -> tuple[int, ...]:
    try:
        return parse_steps(raw.get(name, ""))
    except StepsError as exc:
        raise _Invalid(f"无效的步长：{exc.zh}。例如“1m 10m”，每一步都少于一天。",
                       f"Invalid steps: {exc}. Write them like '1m 10m'; each must be under one day.") from None


def is_time_zone(name: str) -> bool:
    """An IANA zone name that zoneinfo knows (days.zone raises OSError, not ValueError, for 'America')."""
    if len(name) > 64:
        return False
    try:
        zone(name)
    except (ValueError, OSError):
        return False
    return True


def _timezone(raw: Mapping[str, str]) -> str:
    value = _text(raw, "timezone")
    if not is_time_zone(value):
        raise _Invalid(f"未知时区“{value}”：请用 IANA 名称，如 Asia/Shanghai 或 Europe/Berlin。",
                       f"Unknown time zone '{value}': use an IANA name such as Asia/Shanghai or Europe/Berlin.")
    return value


def parse_form(raw: Mapping[str, str]) -> Parsed:
    """Check every field (not only the first bad one), so the form shows all its problems at once."""
    typed = {name: str(raw.get(name, "")) for name in FIELDS}
    checks = {
        "desired_retention": lambda: _retention(typed),
        "new_per_day": lambda: _whole(typed, "new_per_day", 0, NEW_PER_DAY_MAX),
        "max_reviews_per_day": lambda: _whole(typed, "max_reviews_per_day", 0, REVIEWS_PER_DAY_MAX),
        "learning_steps": lambda: _steps(typed, "learning_steps"),
        "relearning_steps": lambda: _steps(typed, "relearning_steps"),
        "day_rollover_hour": lambda: _whole(typed, "day_rollover_hour", 0, 23),
        "timezone": lambda: _timezone(typed),
    }
    values: dict[str, object] = {}
    errors: dict[str, Message] = {}
    for name, check in checks.items():
        try:
            values[name] = check()
        except _Invalid as exc:
            errors[name] = exc.message
    if errors:
        return Parsed(typed, None, errors)
    return Parsed(typed, StudyPrefs(**values))  # type: ignore[arg-type]


def form_values(settings: StudySettings) -> dict[str, str]:
    """A user's current settings as the form shows them."""
    return {
        "desired_retention": f"{settings.desired_retention:g}",
        "new_per_day": str(settings.new_per_day),
        "max_reviews_per_day": str(settings.max_reviews_per_day),
        "learning_steps": format_steps(settings.learning_steps),
        "relearning_steps": format_steps(settings.relearning_steps),
        "day_rollover_hour": str(settings.day_rollover_hour),
        "timezone": settings.timezone,
    }


def apply(settings: StudySettings, prefs: StudyPrefs) -> None:
    """Copy valid prefs onto a settings row (the caller commits)."""
    settings.desired_retention = prefs.desired_retention
    settings.new_per_day = prefs.new_per_day
    settings.max_reviews_per_day = prefs.max_reviews_per_day
    settings.learning_steps = list(prefs.learning_steps)
    settings.relearning_steps = list(prefs.relearning_steps)
    settings.day_rollover_hour = prefs.day_rollover_hour
    settings.timezone = prefs.timezone
