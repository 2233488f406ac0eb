"""Day queues kept in memory between requests, each labelled with the queue version it was built at.

Building a queue reads every due item of the deck; an answer changes one item. So the reviewer builds a
user's queue once and, after each answer, updates it in memory (DayQueue.answered), as Anki's scheduler
keeps its queues. What keeps this honest is the queue_version counter (migration 0008): triggers bump it,
in the same transaction, on every write the queue is built from, whoever writes. A kept queue is used only
while the database still has the version it is labelled with; an answer moves the label from the version
its transaction started at to the one it ended at. Anything else (undo, bury, settings, a card sync,
another process) leaves a label behind, and the queue is built again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime

from sqlmodel import Session

from app.models import StudySettings
from app.review.day_queue import DayQueue
from app.review.queue import Deck, QueueChange, load_day_queue, read_version


@dataclass(frozen=True)
class Kept:
    """A user's queue for one deck and the settings it was built under (read-only: a copy, not a session's row)."""

    version: int
    settings: StudySettings
    queue: DayQueue


class QueueCache:
    """The most recently used day queues, by (user, deck); safe to share between request threads."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[int, str], Kept] = OrderedDict()
        self._lock = threading.Lock()
        self.builds = 0  # how many queues were built from the database (for tests and benchmarks)

    def get(self, session: Session, *, user_id: int, deck: Deck, now: datetime) -> Kept:
        """The user's queue for deck at now: the kept one if the database hasn't changed since, else a new one."""
        key = (user_id, deck.spec)
        # Read the version before the rows: a write landing in between leaves the label older than the rows,
        # which costs a rebuild later, never a stale queue.
        version = read_version(session.connection(), user_id=user_id)
        with self._lock:
            kept = self._entries.get(key)
            if kept is not None and kept.version == version and kept.queue.covers(now):
                self._entries.move_to_end(key)
                return kept
        kept = self._build(session, user_id=user_id, deck=deck, now=now, version=version)
        self.put(kept, user_id=user_id, deck=deck)
        return kept

    def carry(self, session: Session, change: QueueChange, *, deck: Deck, now: datetime) -> Kept:
        """The deck's queue after an answer, inside the answer's transaction: the kept queue carried across it,
        or, when none was kept for the version the answer started from, one built from what the transaction sees.
        Not kept yet: `put` it once the transaction has committed."""
        with self._lock:
            kept = self._entries.get((change.user_id, deck.spec))
        if (
            kept is not None and kept.version == change.version_before and kept.queue.covers(now)
            and kept.queue.holds(change.item_id, due=change.due_before)
        ):
            queue = kept.queue.answered(
                change.item_id, due_before=change.due_before, introduced=change.introduced, was_review=change.was_review,
                state=change.state, due=change.due, suspended=change.suspended,
            )
            return replace(kept, version=change.version_after, queue=queue)
        return self._build(session, user_id=change.user_id, deck=deck, now=now, version=change.version_after)

    def put(self, kept: Kept, *, user_id: int, deck: Deck) -> None:
        with self._lock:
            self._store((user_id, deck.spec), kept)

    def _build(self, session: Session, *, user_id: int, deck: Deck, now: datetime, version: int) -> Kept:
        # Read only (defaults when the user has saved none): this may run inside an answer's transaction.
        settings = session.get(StudySettings, user_id) or StudySettings(user_id=user_id)
        queue = load_day_queue(session, user_id=user_id, deck=deck, settings=settings, now=now)
        with self._lock:
            self.builds += 1
        return Kept(version, StudySettings.model_validate(settings.model_dump()), queue)

    def _store(self, key: tuple[int, str], kept: Kept) -> None:
        self._entries[key] = kept
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
