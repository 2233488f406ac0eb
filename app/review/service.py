"""Answering, undoing, burying and suspending: each one transaction, each safe to retry.

Anki's pattern: when an item is shown, its four candidate next states are computed and stored with a
token; answering applies the chosen one. So the intervals on the buttons are exactly what happens, a
double-submitted answer is recognised by its token and applied once, and an answer from a stale tab
(the item was answered elsewhere since) is refused instead of overwriting newer state.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.errors import AppError, Conflict, NotFound
from app.models import ItemState, ReviewItem, ReviewLog, ShownItem, StudySettings
from app.review import scheduler
from app.review.days import day_bounds, zone
from app.review.queue import REVIEW_STATE, Deck, Today, next_item


@dataclass(frozen=True)
class Shown:
    item: ReviewItem
    token: str
    intervals: dict[int, str]  # rating -> "10m", "3d"
    state: ItemState | None


@dataclass(frozen=True)
class Answered:
    log_id: int
    item_id: str
    replayed: bool  # True when this token had already been answered: nothing was applied twice


def policy_for(settings: StudySettings) -> scheduler.Policy:
    return scheduler.Policy(
        desired_retention=settings.desired_retention,
        learning_steps=tuple(settings.learning_steps),
        relearning_steps=tuple(settings.relearning_steps),
        parameters=tuple(settings.fsrs_parameters) if settings.fsrs_parameters else None,
        fuzz=settings.fuzz,
    )


def get_settings(session: Session, *, user_id: int) -> StudySettings:
    settings = session.get(StudySettings, user_id)
    if settings is None:
        settings = StudySettings(user_id=user_id)
        session.add(settings)
        session.commit()
        session.refresh(settings)
    return settings


def snapshot(state: ItemState | None) -> dict[str, Any] | None:
    """Everything needed to put an item's state back exactly (for undo)."""
    if state is None:
        return None
    data = state.model_dump(mode="json")
    data.pop("user_id")
    data.pop("item_id")
    return data


def answered(state: ItemState | None, chosen: dict[str, Any], *, rating: int, at: datetime) -> dict[str, Any]:
    """An item's new column values after an answer at `at` that chose the fsrs card `chosen`."""
    lapse = 1 if rating == 1 and state is not None and state.state == REVIEW_STATE else 0
    return dict(
        fsrs_card=chosen,
        schema_version=scheduler.SCHEMA_VERSION,
        reps=(state.reps if state else 0) + 1,
        lapses=(state.lapses if state else 0) + lapse,
        first_reviewed_at=(state.first_reviewed_at if state and state.first_reviewed_at else at),
        last_reviewed_at=at,
        buried_until=None,
        **scheduler.columns(chosen),
    )


def as_log_json(values: dict[str, Any]) -> dict[str, Any]:
    """answered()'s values as stored in ReviewLog.state_after (datetimes as ISO strings)."""
    return {
        **values,
        **{key: values[key].isoformat() for key in ("due", "first_reviewed_at", "last_reviewed_at")},
    }


def show(session: Session, *, user_id: int, item_id: str, settings: StudySettings, now: datetime) -> Shown:
    """Issue a token for showing item_id, with its candidate next states."""
    item = session.get(ReviewItem, item_id)
    if item is None or item.retired_at is not None:
        raise NotFound(f"no review item '{item_id}'")
    state = session.get(ItemState, (user_id, item_id))
    candidates = scheduler.next_states(state.fsrs_card if state and state.reps else None, policy=policy_for(settings), now=now)
    token = secrets.token_urlsafe(18)
    session.add(
        ShownItem(
            token=token,
            user_id=user_id,
            item_id=item_id,
            shown_at=now,
            reps_when_shown=state.reps if state else 0,
            candidates={str(r): c for r, c in candidates.items()},
        )
    )
    session.commit()
    intervals = {r: scheduler.interval_label(scheduler.columns(c)["due"], now) for r, c in candidates.items()}
    return Shown(item=item, token=token, intervals=intervals, state=state)


# Answered tokens only matter for replaying a retried request; unanswered ones for a tab left open.
SHOWN_RETENTION = timedelta(days=2)


def prune_shown(session: Session, *, now: datetime) -> int:
    """Forget tokens older than SHOWN_RETENTION (an answer with one gets a 409 and the page reloads)."""
    result = session.execute(delete(ShownItem).where(col(ShownItem.shown_at) < now - SHOWN_RETENTION))
    session.commit()
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def show_next(
    session: Session, *, user_id: int, deck: Deck, settings: StudySettings, now: datetime, day: Today | None = None
) -> Shown | None:
    item_id = next_item(session, user_id=user_id, deck=deck, settings=settings, now=now, day=day)
    return None if item_id is None else show(session, user_id=user_id, item_id=item_id, settings=settings, now=now)


def answer(
    session: Session,
    *,
    user_id: int,
    item_id: str,
    token: str,
    rating: int,
    duration_ms: int | None,
    study_session: str,
    now: datetime,
) -> Answered:
    """Apply one answer: the item's new state and its log row in one transaction, at most once per token."""
    if rating not in scheduler.RATINGS:
        raise AppError(f"rating must be 1 (Again), 2 (Hard), 3 (Good) or 4 (Easy), not {rating}")
    if duration_ms is not None and not 0 <= duration_ms <= 24 * 3600 * 1000:
        raise AppError("duration_ms must be between 0 and one day")
    shown = session.get(ShownItem, token)
    if shown is None or shown.user_id != user_id:
        raise Conflict("this answer's token is unknown or expired: reload to get the current item")
    if shown.item_id != item_id:
        raise AppError(f"the token was issued for item '{shown.item_id}', not '{item_id}'")
    if shown.answered_log_id is not None:
        return Answered(shown.answered_log_id, item_id, replayed=True)

    state = session.get(ItemState, (user_id, item_id))
    reps_before = state.reps if state else 0
    if reps_before != shown.reps_when_shown:
        raise Conflict("this item was answered elsewhere since it was shown: reload to continue")
    before = snapshot(state)
    values = answered(state, shown.candidates[str(rating)], rating=rating, at=now)
    try:
        if state is None or before is None:
            session.add(ItemState(user_id=user_id, item_id=item_id, suspended=False, **values))
            session.flush()
        else:
            # Conditional on the reps we read: a concurrent answer from another tab makes this match nothing.
            result = session.execute(
                update(ItemState)
                .where(col(ItemState.user_id) == user_id, col(ItemState.item_id) == item_id, col(ItemState.reps) == reps_before)
                .values(**values)
            )
            if result.rowcount != 1:  # type: ignore[attr-defined]
                raise Conflict("this item was answered elsewhere since it was shown: reload to continue")
        log = ReviewLog(
            user_id=user_id,
            item_id=item_id,
            rating=rating,
            reviewed_at=now,
            duration_ms=duration_ms,
            state_before=before if before is not None else {"state": 0},
            state_after=as_log_json(values),
            study_session=study_session,
            token=token,
        )
        session.add(log)
        session.flush()
        claimed = session.execute(
            update(ShownItem).where(col(ShownItem.token) == token, col(ShownItem.answered_log_id).is_(None)).values(answered_log_id=log.id)
        )
        if claimed.rowcount != 1:  # type: ignore[attr-defined]
            raise Conflict("this answer was already applied")
        session.commit()
    except IntegrityError:
        # Another request with the same token (or for the same new item) committed first.
        session.rollback()
        replay = session.get(ShownItem, token)
        if replay is not None and replay.answered_log_id is not None:
            return Answered(replay.answered_log_id, item_id, replayed=True)
        raise Conflict("this item was answered elsewhere since it was shown: reload to continue") from None
    except Exception:
        session.rollback()
        raise
    assert log.id is not None
    return Answered(log.id, item_id, replayed=False)


def undo(session: Session, *, user_id: int, study_session: str, now: datetime) -> str | None:
    """Undo this study session's most recent answer: the item's state goes back exactly; returns its id."""
    log = session.exec(
        select(ReviewLog)
        .where(col(ReviewLog.user_id) == user_id, col(ReviewLog.study_session) == study_session, col(ReviewLog.undone_at).is_(None))
        .order_by(col(ReviewLog.id).desc())
        .limit(1)
    ).first()
    if log is None:
        return None
    state = session.get(ItemState, (user_id, log.item_id))
    before = log.state_before or {}
    if not before.get("reps"):
        # It was new: remove its state, exactly as before the answer.
        session.execute(delete(ItemState).where(col(ItemState.user_id) == user_id, col(ItemState.item_id) == log.item_id))
    else:
        restored = ItemState.model_validate({"user_id": user_id, "item_id": log.item_id, **before})
        if state is None:
            session.add(restored)
        else:
            for key, value in restored.model_dump().items():
                setattr(state, key, value)
            session.add(state)
    log.undone_at = now
    session.add(log)
    session.commit()
    return log.item_id


def _ensure_state(session: Session, *, user_id: int, item_id: str, now: datetime) -> ItemState:
    item = session.get(ReviewItem, item_id)
    if item is None or item.retired_at is not None:
        raise NotFound(f"no review item '{item_id}'")
    state = session.get(ItemState, (user_id, item_id))
    if state is None:
        card = scheduler.new_card(now)
        state = ItemState(user_id=user_id, item_id=item_id, fsrs_card=card, due=now, state=0, reps=0)
    return state


def bury(session: Session, *, user_id: int, item_id: str, settings: StudySettings, now: datetime) -> None:
    """Hide an item until the next study day starts."""
    state = _ensure_state(session, user_id=user_id, item_id=item_id, now=now)
    _, tomorrow = day_bounds(now, tz=zone(settings.timezone), rollover_hour=settings.day_rollover_hour)
    state.buried_until = tomorrow
    session.add(state)
    session.commit()


def set_suspended(session: Session, *, user_id: int, item_id: str, suspended: bool, now: datetime) -> None:
    """Suspend an item until it is unsuspended (or unsuspend it)."""
    state = _ensure_state(session, user_id=user_id, item_id=item_id, now=now)
    state.suspended = suspended
    session.add(state)
    session.commit()
