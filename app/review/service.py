"""Answering, undoing, burying and suspending: each one transaction, each safe to retry.

Anki's pattern: when an item is shown, its four candidate next states are computed and stored with a
token; answering applies the chosen one. So the intervals on the buttons are exactly what happens, a
double-submitted answer is recognised by its token and applied once, and an answer from a stale tab
(the item was answered elsewhere since) is refused instead of overwriting newer state.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any, TypeVar

from sqlalchemy import Connection, and_, bindparam, delete, insert, update
from sqlmodel import Session, SQLModel, col, select

from app.db import begin_write
from app.errors import AppError, Conflict, NotFound
from app.models import ItemState, ReviewItem, ReviewLog, ShownItem, StudySettings
from app.review import scheduler
from app.review.day_queue import DayQueue
from app.review.days import day_bounds, zone
from app.prepared import Prepared
from app.review.queue import QueueChange, version_query
from app.review.scheduler import NEW_STATE, REVIEW_STATE


M = TypeVar("M", bound=SQLModel)


@dataclass(frozen=True)
class Shown:
    item: ReviewItem
    token: str
    intervals: dict[int, str]  # rating -> "10m", "3d"


@dataclass(frozen=True)
class Answered:
    log_id: int
    item_id: str
    replayed: bool  # True when this token had already been answered: nothing was applied twice
    change: QueueChange | None = None  # what it did to the user's queue (None when replayed)


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


def _columns(model: type[SQLModel], *, but: tuple[str, ...] = ()) -> tuple[str, ...]:
    return tuple(column.name for column in model.__table__.columns if column.name not in but)  # type: ignore[attr-defined]


# What an answer sets on an item's state: answered()'s keys.
ANSWERED_COLUMNS = (
    "fsrs_card", "schema_version", "reps", "lapses", "first_reviewed_at", "last_reviewed_at", "buried_until",
    "due", "stability", "difficulty", "state",
)


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


# The answer round trip runs these on every answer: compiled once, run on the session's connection
# (app/prepared.py: about 40 us a statement less than connection.execute, ten times per answer).
_STATE = Prepared(
    select(ItemState).where(col(ItemState.user_id) == bindparam("user_id"), col(ItemState.item_id) == bindparam("item_id"))
)
# An item with the user's state, if any, in one statement (outer join: a new item has none).
_ITEM_AND_STATE = Prepared(
    select(ReviewItem, ItemState.fsrs_card, ItemState.reps)
    .outerjoin(ItemState, and_(col(ItemState.item_id) == col(ReviewItem.id), col(ItemState.user_id) == bindparam("user_id")))
    .where(col(ReviewItem.id) == bindparam("item_id"))
)
# The token, and the queue version the answer starts from.
_SHOWN = Prepared(
    select(ShownItem, version_query(bindparam("user_id")).label("version")).where(col(ShownItem.token) == bindparam("token"))
)
_INSERT_SHOWN = Prepared(insert(ShownItem), set_columns=_columns(ShownItem))
_INSERT_STATE = Prepared(insert(ItemState), set_columns=_columns(ItemState))
_INSERT_LOG = Prepared(insert(ReviewLog).returning(col(ReviewLog.id)), set_columns=_columns(ReviewLog, but=("id",)))


@cache
def _update_state(columns: tuple[str, ...]) -> Prepared:
    """UPDATE item_state SET these columns, conditional on the reps read (bound names differ from the columns,
    which the SET clause takes from the parameters)."""
    return Prepared(
        update(ItemState).where(
            col(ItemState.user_id) == bindparam("w_user_id"), col(ItemState.item_id) == bindparam("w_item_id"),
            col(ItemState.reps) == bindparam("w_reps"),
        ),
        set_columns=columns,
    )


# SQLite rewrites an index's entry whenever a column of it is assigned, changed or not: an answer leaves these
# out of its UPDATE when they keep their value (most answers), sparing two index writes.
_USUALLY_UNCHANGED = ("first_reviewed_at", "buried_until")


def _changes(state: ItemState, values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k not in _USUALLY_UNCHANGED or getattr(state, k) != v}
# Claim the token, returning the queue version the answer's writes left (its triggers have run by then).
_CLAIM_SHOWN = Prepared(
    update(ShownItem)
    .where(col(ShownItem.token) == bindparam("w_token"), col(ShownItem.answered_log_id).is_(None))
    .values(answered_log_id=bindparam("log_id"))
    .returning(version_query(bindparam("w_user_id")).label("version"))
)


def _from_row(model: type[M], row: dict[str, Any]) -> M:
    """model's columns out of a row. Straight from the database, already typed: model_construct skips
    validation (6x cheaper than the constructor)."""
    return model.model_construct(**{name: row[name] for name in _columns(model)})


def _state(connection: Connection, *, user_id: int, item_id: str) -> ItemState | None:
    row = _STATE.first(connection, user_id=user_id, item_id=item_id)
    return None if row is None else _from_row(ItemState, row)


@contextmanager
def writing(session: Session) -> Iterator[None]:
    """One write transaction, holding SQLite's write lock from its first read: committed, or rolled back on error."""
    begin_write(session)
    try:
        yield
    except BaseException:
        session.rollback()
        raise
    session.commit()


def record_shown(session: Session, *, user_id: int, item_id: str, settings: StudySettings, now: datetime) -> Shown:
    """Issue a token for showing item_id, with its candidate next states, in the caller's transaction."""
    connection = session.connection()
    row = _ITEM_AND_STATE.first(connection, item_id=item_id, user_id=user_id)
    if row is None or row["retired_at"] is not None:
        raise NotFound(f"no review item '{item_id}'")
    reps = row["reps"] or 0  # None: no state yet
    candidates = scheduler.next_states(row["fsrs_card"] if reps else None, policy=policy_for(settings), now=now)
    token = secrets.token_urlsafe(18)
    _INSERT_SHOWN.run(
        connection, token=token, user_id=user_id, item_id=item_id, shown_at=now, reps_when_shown=reps,
        candidates={str(r): c for r, c in candidates.items()}, answered_log_id=None,
    )
    intervals = {r: scheduler.interval_label(scheduler.columns(c)["due"], now) for r, c in candidates.items()}
    return Shown(item=_from_row(ReviewItem, row), token=token, intervals=intervals)


def show(session: Session, *, user_id: int, item_id: str, settings: StudySettings, now: datetime) -> Shown:
    """Issue a token for showing item_id, with its candidate next states."""
    shown = record_shown(session, user_id=user_id, item_id=item_id, settings=settings, now=now)
    session.commit()
    return shown


def show_next(session: Session, *, user_id: int, queue: DayQueue, settings: StudySettings, now: datetime) -> Shown | None:
    """Show the queue's next item (None when nothing is left for today)."""
    item_id = queue.next_item(now)
    return None if item_id is None else show(session, user_id=user_id, item_id=item_id, settings=settings, now=now)


# Answered tokens only matter for replaying a retried request; unanswered ones for a tab left open.
SHOWN_RETENTION = timedelta(days=2)


def prune_shown(session: Session, *, now: datetime) -> int:
    """Forget tokens older than SHOWN_RETENTION (an answer with one gets a 409 and the page reloads)."""
    result = session.execute(delete(ShownItem).where(col(ShownItem.shown_at) < now - SHOWN_RETENTION))
    session.commit()
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


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
    """Apply one answer in its own transaction (see record_answer)."""
    with writing(session):
        return record_answer(session, user_id=user_id, item_id=item_id, token=token, rating=rating,
                             duration_ms=duration_ms, study_session=study_session, now=now)


def record_answer(
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
    """Apply one answer, at most once per token: the item's new state and its log row.

    Runs in the caller's `writing` transaction: holding the write lock from the first read, nobody can answer
    the same token or item between what is read here and what is written.
    """
    if rating not in scheduler.RATINGS:
        raise AppError(f"rating must be 1 (Again), 2 (Hard), 3 (Good) or 4 (Easy), not {rating}")
    if duration_ms is not None and not 0 <= duration_ms <= 24 * 3600 * 1000:
        raise AppError("duration_ms must be between 0 and one day")
    connection = session.connection()
    row = _SHOWN.first(connection, token=token, user_id=user_id)
    if row is None or row["user_id"] != user_id:
        raise Conflict("this answer's token is unknown or expired: reload to get the current item")
    shown, version_before = _from_row(ShownItem, row), row["version"]
    if shown.item_id != item_id:
        raise AppError(f"the token was issued for item '{shown.item_id}', not '{item_id}'")
    if shown.answered_log_id is not None:
        return Answered(shown.answered_log_id, item_id, replayed=True)

    state = _state(connection, user_id=user_id, item_id=item_id)
    reps_before = state.reps if state else 0
    if reps_before != shown.reps_when_shown:
        raise Conflict("this item was answered elsewhere since it was shown: reload to continue")
    before = snapshot(state)
    values = answered(state, shown.candidates[str(rating)], rating=rating, at=now)
    if state is None:
        _INSERT_STATE.run(connection, user_id=user_id, item_id=item_id, suspended=False, **values)
    else:
        changes = _changes(state, values)
        if _update_state(tuple(changes)).run(connection, w_user_id=user_id, w_item_id=item_id, w_reps=reps_before, **changes) != 1:
            raise Conflict("this item was answered elsewhere since it was shown: reload to continue")
    log = _INSERT_LOG.first(
        connection, user_id=user_id, item_id=item_id, rating=rating, reviewed_at=now, duration_ms=duration_ms,
        state_before=before if before is not None else {"state": NEW_STATE}, state_after=as_log_json(values),
        study_session=study_session, token=token, undone_at=None,
    )
    assert log is not None
    log_id = log["id"]
    claimed = _CLAIM_SHOWN.first(connection, w_token=token, log_id=log_id, w_user_id=user_id)
    if claimed is None:
        raise Conflict("this answer was already applied")
    change = QueueChange(
        user_id=user_id, item_id=item_id, version_before=version_before or 0, version_after=claimed["version"],
        due_before=state.due if state is not None and state.reps else None,
        introduced=state is None or state.first_reviewed_at is None,
        was_review=state is not None and state.state == REVIEW_STATE,
        state=values["state"], due=values["due"], suspended=state is not None and state.suspended,
    )
    return Answered(log_id, item_id, replayed=False, change=change)


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
