"""Building a user's day queue for a deck from the database (the rules it then follows: day_queue.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, bindparam, func, or_, select, text
from sqlmodel import Session, col

from app.models import CardRow, CardTag, ItemState, NewItem, QueueVersion, ReviewItem, ReviewLog, StudySettings
from app.prepared import Prepared
from app.review.day_queue import Counts, DayQueue
from app.review.days import day_bounds, zone
from app.review.scheduler import LEARNING_STATES, REVIEW_STATE


@dataclass(frozen=True)
class Deck:
    """Which cards to study: everything, a module, a topic or a tag."""

    kind: str = "all"  # all | module | topic | tag
    value: str = ""

    @classmethod
    def parse(cls, spec: str) -> Deck:
        """'all', 'module:m3', 'topic:backprop-autodiff' or 'tag:inplace'; ValueError otherwise."""
        spec = (spec or "all").strip()
        if spec == "all":
            return cls()
        kind, _, value = spec.partition(":")
        if kind not in ("module", "topic", "tag") or not value or len(value) > 64:
            raise ValueError(f"unknown deck {spec!r}: use all, module:<id>, topic:<id> or tag:<tag>")
        return cls(kind, value)

    @property
    def spec(self) -> str:
        return "all" if self.kind == "all" else f"{self.kind}:{self.value}"



@dataclass(frozen=True)
class Today:
    start: datetime
    end: datetime
    new_left: int  # of the daily new limit
    reviews_left: int  # of the daily review limit


# "Introduced today" and "reviews answered today": the daily limits' used parts.
_INTRODUCED = Prepared(
    select(func.count().label("n")).select_from(ItemState).where(
        col(ItemState.user_id) == bindparam("user_id"),
        col(ItemState.first_reviewed_at) >= bindparam("day_start"),
        col(ItemState.first_reviewed_at) < bindparam("day_end"),
    )
)
_REVIEWED = Prepared(
    select(func.count().label("n")).select_from(ReviewLog).where(
        col(ReviewLog.user_id) == bindparam("user_id"),
        col(ReviewLog.reviewed_at) >= bindparam("day_start"),
        col(ReviewLog.reviewed_at) < bindparam("day_end"),
        col(ReviewLog.undone_at).is_(None),
        func.json_extract(ReviewLog.state_before, "$.state") == REVIEW_STATE,
    )
)


def today(session: Session, *, user_id: int, settings: StudySettings, now: datetime) -> Today:
    start, end = day_bounds(now, tz=zone(settings.timezone), rollover_hour=settings.day_rollover_hour)
    connection = session.connection()
    day = {"user_id": user_id, "day_start": start, "day_end": end}
    introduced = _count(_INTRODUCED, connection, day)
    reviewed = _count(_REVIEWED, connection, day)
    return Today(start, end, max(0, settings.new_per_day - introduced), max(0, settings.max_reviews_per_day - reviewed))


def _count(statement: Prepared, connection: Connection, values: dict[str, Any]) -> int:
    row = statement.first(connection, **values)
    return int(row["n"]) if row else 0


def _in_deck(kind: str) -> ColumnElement[bool]:
    """Cards of a deck of this kind, its value bound as :deck (one prepared statement serves every module)."""
    if kind == "module":
        return col(CardRow.module_id) == bindparam("deck")
    if kind == "topic":
        return col(CardRow.topic_id) == bindparam("deck")
    if kind == "tag":
        return col(CardRow.id).in_(select(CardTag.card_id).where(col(CardTag.tag) == bindparam("deck")))
    return text("1 = 1")  # type: ignore[return-value]


def _active(deck_kind: str) -> list[Any]:
    """Items not retired, of cards not retired, in a deck of this kind.

    The queries start from the user's rows (item_state, new_item). SQLite's unary + keeps them off the
    review_item index, which it would otherwise prefer (no statistics) and then look up every item's state:
    4.5 ms -> 0.01 ms for learning.
    """
    return [text("+review_item.retired_at IS NULL"), col(CardRow.retired_at).is_(None), _in_deck(deck_kind)]


def _not_buried() -> ColumnElement[bool]:
    return or_(col(ItemState.buried_until).is_(None), col(ItemState.buried_until) <= bindparam("now"))


@cache
def _scheduled(deck_kind: str) -> Prepared:
    """(due, item id) of the user's items in :state, neither suspended nor buried, in a deck of this kind.

    One state per run, each one range of ix_item_state_user_state_due; :day_end, when given, keeps those due
    before it.
    """
    return Prepared(
        select(ItemState.due, ItemState.item_id)
        .join(ReviewItem, col(ReviewItem.id) == col(ItemState.item_id))
        .join(CardRow, col(CardRow.id) == col(ReviewItem.card_id))
        .where(
            col(ItemState.user_id) == bindparam("user_id"),
            col(ItemState.state) == bindparam("state"),
            col(ItemState.due) < bindparam("day_end"),
            col(ItemState.suspended).is_(False),
            _not_buried(),
            *_active(deck_kind),
        )
    )


@cache
def _new(deck_kind: str) -> Prepared:
    """The first :limit items never answered and not suspended (new_item, kept by triggers), not buried, in a deck
    of this kind, in reading order."""
    return Prepared(
        select(ReviewItem.id)
        .select_from(NewItem)
        .join(ReviewItem, col(ReviewItem.id) == col(NewItem.item_id))
        .join(CardRow, col(CardRow.id) == col(ReviewItem.card_id))
        .outerjoin(ItemState, and_(col(ItemState.user_id) == col(NewItem.user_id), col(ItemState.item_id) == col(NewItem.item_id)))
        .where(col(NewItem.user_id) == bindparam("user_id"), *_active(deck_kind), _not_buried())
        .order_by(
            col(CardRow.module_id), col(CardRow.topic_id), col(CardRow.title_en), col(ReviewItem.position), col(ReviewItem.id)
        )
        .limit(bindparam("limit"))
    )


# A buried item comes back when its burial ends: normally the next day, but imported data may say otherwise.
_COMEBACK = Prepared(
    select(func.min(ItemState.buried_until).label("at")).where(
        col(ItemState.user_id) == bindparam("user_id"),
        col(ItemState.buried_until) > bindparam("now"),
        col(ItemState.buried_until) < bindparam("day_end"),
    )
)
# Learning steps are kept whenever they are due: the learn-ahead window can reach past the day's end.
_NO_END = datetime.max.replace(tzinfo=UTC)


def version_query(user_id: Any) -> Any:
    """The user's queue version as a scalar subquery: it changes with every write the queue is built from
    (migration 0008). No row yet reads as NULL: version 0."""
    return select(QueueVersion.version).where(col(QueueVersion.user_id) == user_id).scalar_subquery()


_VERSION = Prepared(select(version_query(bindparam("user_id")).label("version")))


@dataclass(frozen=True)
class QueueChange:
    """One answer's effect on the user's queue, and the queue versions its transaction went from and to."""

    user_id: int
    item_id: str
    version_before: int
    version_after: int
    due_before: datetime | None  # None: the item had never been answered
    introduced: bool  # the item's first answer ever: it counts against today's new limit
    was_review: bool  # it was in the review state: it counts against today's review limit
    state: int  # its values after the answer
    due: datetime
    suspended: bool


def read_version(connection: Connection, *, user_id: int) -> int:
    row = _VERSION.first(connection, user_id=user_id)
    return (row and row["version"]) or 0


def load_day_queue(session: Session, *, user_id: int, deck: Deck, settings: StudySettings, now: datetime) -> DayQueue:
    """The user's queue for `deck` as the database has it now."""
    day = today(session, user_id=user_id, settings=settings, now=now)
    connection = session.connection()
    values = {"user_id": user_id, "deck": deck.value, "now": now}
    scheduled = _scheduled(deck.kind)
    learning = [row for state in LEARNING_STATES for row in scheduled.rows(connection, **values, state=state, day_end=_NO_END)]
    reviews = scheduled.rows(connection, **values, state=REVIEW_STATE, day_end=day.end)
    new = _new(deck.kind).rows(connection, **values, limit=day.new_left) if day.new_left > 0 else []
    comeback = _COMEBACK.first(connection, **values, day_end=day.end)
    return DayQueue(
        start=day.start,
        end=day.end,
        new_left=day.new_left,
        reviews_left=day.reviews_left,
        new=tuple(row["id"] for row in new),
        # Sorted here: an ORDER BY due would steer SQLite to the (user, due) index and past every state.
        reviews=tuple(sorted((row["due"], row["item_id"]) for row in reviews)),
        learning=tuple(sorted((row["due"], row["item_id"]) for row in learning)),
        valid_until=(comeback and comeback["at"]) or day.end,
    )


def counts(session: Session, *, user_id: int, deck: Deck, settings: StudySettings, now: datetime) -> Counts:
    """New, learning and review items left today."""
    return load_day_queue(session, user_id=user_id, deck=deck, settings=settings, now=now).counts(now)


def next_item(session: Session, *, user_id: int, deck: Deck, settings: StudySettings, now: datetime) -> str | None:
    """The id of the item to show now, or None when nothing is left for today."""
    return load_day_queue(session, user_id=user_id, deck=deck, settings=settings, now=now).next_item(now)
