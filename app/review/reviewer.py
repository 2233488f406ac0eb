"""The reviewer's answer step: record an answer and issue the next item's token, in one transaction.

Between the service (what an answer writes) and the kept day queues (what comes next): the route and the
benchmark both go through here.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Session

from app.review import service
from app.review.queue import Deck
from app.review.queue_cache import Kept, QueueCache


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
) -> tuple[Kept, service.Shown | None]:
    """Apply the answer, then show the deck's next item (None when today is done): one commit in all."""
    with service.writing(session):
        done = service.record_answer(
            session, user_id=user_id, item_id=item_id, token=token, rating=rating,
            duration_ms=duration_ms, study_session=study_session, now=now,
        )
        kept = (
            queues.carry(session, done.change, deck=deck, now=now) if done.change is not None
            else queues.get(session, user_id=user_id, deck=deck, now=now)
        )
        following = kept.queue.next_item(now)
        shown = None if following is None else service.record_shown(
            session, user_id=user_id, item_id=following, settings=kept.settings, now=now
        )
    queues.put(kept, user_id=user_id, deck=deck)  # kept only once committed
    return kept, shown
