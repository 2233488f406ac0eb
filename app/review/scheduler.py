"""The one adapter over the `fsrs` package (FSRS-6). Domain code passes `now`; nothing here reads the clock.

States are stored as fsrs's own card dict plus SCHEMA_VERSION, so a future fsrs layout change can be migrated
(py-fsrs changed its serialized layout before: see research/srs-anchors.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from fsrs import Card, Rating, Scheduler, State

SCHEMA_VERSION = 1
# An item's state column: 0 before its first answer, then fsrs's State.
NEW_STATE = 0
LEARNING_STATES = (int(State.Learning), int(State.Relearning))
REVIEW_STATE = int(State.Review)
RATINGS = (1, 2, 3, 4)  # Again, Hard, Good, Easy
RATING_NAMES = {1: ("重来", "Again"), 2: ("困难", "Hard"), 3: ("良好", "Good"), 4: ("简单", "Easy")}


@dataclass(frozen=True)
class Policy:
    """What the scheduler needs from a user's settings."""

    desired_retention: float = 0.90
    learning_steps: tuple[int, ...] = (60, 600)  # seconds
    relearning_steps: tuple[int, ...] = (600,)
    parameters: tuple[float, ...] | None = None  # None: fsrs's defaults
    fuzz: bool = True


def make_scheduler(policy: Policy) -> Scheduler:
    kwargs: dict[str, Any] = {}
    if policy.parameters is not None:
        kwargs["parameters"] = policy.parameters
    return Scheduler(
        desired_retention=policy.desired_retention,
        learning_steps=tuple(timedelta(seconds=s) for s in policy.learning_steps),
        relearning_steps=tuple(timedelta(seconds=s) for s in policy.relearning_steps),
        enable_fuzzing=policy.fuzz,
        **kwargs,
    )


def _utc(now: datetime) -> datetime:
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    return now.astimezone(UTC)


def new_card(now: datetime) -> dict[str, Any]:
    """A never-reviewed item's fsrs card, due now."""
    return {"schema_version": SCHEMA_VERSION, **Card(card_id=0, due=_utc(now)).to_dict()}


def load_card(stored: dict[str, Any]) -> Card:
    version = stored.get("schema_version", 1)
    if version != SCHEMA_VERSION:
        raise ValueError(f"unsupported fsrs card schema version {version}")
    return Card.from_dict({k: v for k, v in stored.items() if k != "schema_version"})


def dump_card(card: Card) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, **card.to_dict()}


def next_states(stored: dict[str, Any] | None, *, policy: Policy, now: datetime) -> dict[int, dict[str, Any]]:
    """The four candidate next cards (Again..Easy) for an item reviewed at `now`, computed once, applied later."""
    now = _utc(now)
    scheduler = make_scheduler(policy)
    card = load_card(stored) if stored is not None else Card(card_id=0, due=now)
    return {rating: dump_card(scheduler.review_card(card, Rating(rating), review_datetime=now)[0]) for rating in RATINGS}


def columns(stored: dict[str, Any]) -> dict[str, Any]:
    """The queryable columns of a stored card: due, stability, difficulty, state."""
    card = load_card(stored)
    return {"due": card.due, "stability": card.stability, "difficulty": card.difficulty, "state": int(card.state)}


def retrievability(stored: dict[str, Any], *, policy: Policy, now: datetime) -> float:
    return float(make_scheduler(policy).get_card_retrievability(load_card(stored), current_datetime=_utc(now)))


def reschedule(stored: dict[str, Any], logs: Sequence[tuple[int, datetime, int | None]], *, policy: Policy) -> dict[str, Any]:
    """Replay an item's history (rating, reviewed_at, duration_ms) under new parameters."""
    from fsrs import ReviewLog

    card = load_card(stored)
    review_logs = [ReviewLog(card_id=card.card_id, rating=Rating(r), review_datetime=_utc(at), review_duration=d) for r, at, d in logs]
    return dump_card(make_scheduler(policy).reschedule_card(card, review_logs))


def interval_label(due: datetime, now: datetime) -> str:
    """A short human interval like Anki's buttons: 1m, 10m, 3h, 4d, 2.5mo, 1.1y."""
    seconds = max(0.0, (_utc(due) - _utc(now)).total_seconds())
    if seconds < 60:
        return "<1m"
    if seconds < 3600:
        return f"{round(seconds / 60)}m"
    if seconds < 86400:
        return f"{round(seconds / 3600)}h"
    days = seconds / 86400
    if days < 30:
        return f"{round(days)}d"
    if days < 365:
        return f"{days / 30:.1f}mo".replace(".0mo", "mo")
    return f"{days / 365:.1f}y".replace(".0y", "y")
