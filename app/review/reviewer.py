"""The reviewer's steps, between the service (what an answer writes) and the kept day queues (what comes next).

Each step ends in a Screen: everything the reviewer shows, read in the step's own transaction. Answering is
one transaction: the answer, the next item's token and the reads for the screen, with one commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlmodel import Session, col

from app.models import CardRow
from app.prepared import Prepared
from app.review import service
from app.review.day_queue import DayQueue
from app.review.queue import Deck
from app.review.queue_cache import Kept, QueueCache
from app.review.session_stats import SessionSummary, session_summary

_CARD_FACE = Prepared(
    select(CardRow.id, CardRow.title_zh, CardRow.title_en, CardRow.difficulty, CardRow.rendered)
    .where(col(CardRow.id) == bindparam("card_id"))
)


@dataclass(frozen=True)
class Screen:
    """What the reviewer shows: today's queue, the item shown (None: nothing left for now) and its card's
    titles and rendered sections, and this study session so far."""

    queue: DayQueue
    shown: service.Shown | None
    card: dict[str, Any] | None  # id, title_zh, title_en, difficulty, rendered
    summary: SessionSummary


def _screen(session: Session, *, user_id: int, queue: DayQueue, shown: service.Shown | None, study_session: str) -> Screen:
    connection = session.connection()
    card = None if shown is None else _CARD_FACE.first(connection, card_id=shown.item.card_id)
    return Screen(queue, shown, card, session_summary(connection, user_id=user_id, study_session=study_session))


def show(
    session: Session, queues: QueueCache, *, user_id: int, deck: Deck, study_session: str, now: datetime,
    shown: service.Shown | None = None,
) -> Screen:
    """The screen showing `shown`, or else the deck's next item."""
    kept = queues.get(session, user_id=user_id, deck=deck, now=now)
    if shown is None:
        shown = service.show_next(session, user_id=user_id, queue=kept.queue, settings=kept.settings, now=now)
    return _screen(session, user_id=user_id, queue=kept.queue, shown=shown, study_session=study_session)


def answer_and_show_next(
    session: Session,
    queues: QueueCache,
    *,
    user_id: int,
    deck: Deck,
    item_id: str,
    token: str,
    rating: int,
    duration_ms: int | None,
    study_session: str,
    now: datetime,
) -> Screen:
    """Apply the answer, then show the deck's next item: one transaction, one commit."""
    with service.writing(session):
        done = service.record_answer(
            session, user_id=user_id, item_id=item_id, token=token, rating=rating,
            duration_ms=duration_ms, study_session=study_session, now=now,
        )
        kept: Kept = (
            queues.carry(session, done.change, deck=deck, now=now) if done.change is not None
            else queues.get(session, user_id=user_id, deck=deck, now=now)
        )
        following = kept.queue.next_item(now)
        shown = None if following is None else service.record_shown(
            session, user_id=user_id, item_id=following, settings=kept.settings, now=now
        )
        screen = _screen(session, user_id=user_id, queue=kept.queue, shown=shown, study_session=study_session)
    queues.put(kept, user_id=user_id, deck=deck)  # kept only once committed
    return screen
