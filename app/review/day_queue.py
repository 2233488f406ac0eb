"""Today's queue for one user and deck: what is due, in which order, and how many are left.

The rules of the reviewer live here once, free of the database: learning steps that are due come first,
then reviews by due date, then new items in reading order; a learning step due within LEARN_AHEAD is shown
early only when nothing else is left (as Anki does). queue.load_day_queue builds one from the database;
`answered` updates it for one answer, so the reviewer need not query every table again after each answer
(Anki's v3 scheduler keeps its queues the same way). A DayQueue is immutable: an update returns a new one,
so a request reading it never sees another request's change half-made.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from app.review.scheduler import LEARNING_STATES, REVIEW_STATE

LEARN_AHEAD = timedelta(minutes=20)

Queued = tuple[datetime, str]  # (due, item id): sorts by due, then by id so ties have one order


@dataclass(frozen=True)
class Counts:
    new: int
    learning: int
    review: int

    @property
    def total(self) -> int:
        return self.new + self.learning + self.review


@dataclass(frozen=True)
class DayQueue:
    start: datetime  # the study day [start, end) this queue is for
    end: datetime
    new_left: int  # of the daily new limit
    reviews_left: int  # of the daily review limit
    new: tuple[str, ...]  # available new items in reading order, the first new_left of them
    reviews: tuple[Queued, ...]  # review-state items due before the day ends, sorted
    learning: tuple[Queued, ...]  # learning and relearning items, any due, sorted
    valid_until: datetime  # the day's end, or earlier when a buried item comes back before it

    def covers(self, now: datetime) -> bool:
        """Whether this queue still describes `now` (the day has not rolled over, no buried item is back)."""
        return self.start <= now < self.valid_until

    def counts(self, now: datetime) -> Counts:
        return Counts(
            new=min(len(self.new), self.new_left),
            learning=bisect_right(self.learning, (now + LEARN_AHEAD, "\U0010ffff")),
            review=min(len(self.reviews), self.reviews_left),
        )

    def next_item(self, now: datetime) -> str | None:
        """The item to show now, or None when nothing is left for today."""
        if self.learning and self.learning[0][0] <= now:
            return self.learning[0][1]
        if self.reviews_left > 0 and self.reviews:
            return self.reviews[0][1]
        if self.new_left > 0 and self.new:
            return self.new[0]
        if self.learning and self.learning[0][0] <= now + LEARN_AHEAD:
            return self.learning[0][1]
        return None

    def next_learning_due(self) -> datetime | None:
        """When the next learning step of today comes due (for "come back in 8 minutes")."""
        if self.learning and self.learning[0][0] < self.end:
            return self.learning[0][0]
        return None

    def holds(self, item_id: str, *, due: datetime | None) -> bool:
        """Whether the item, due at `due` (None: never answered), is in this queue."""
        if due is None:
            return item_id in self.new
        return _find(self.reviews, (due, item_id)) is not None or _find(self.learning, (due, item_id)) is not None

    def answered(
        self, item_id: str, *, due_before: datetime | None, introduced: bool, was_review: bool, state: int, due: datetime,
        suspended: bool,
    ) -> DayQueue:
        """This queue after one answer to an item it holds.

        due_before: the item's due date before the answer (None: it had never been answered), which finds it;
        introduced: this was the item's first answer ever (it counts against today's new limit);
        was_review: the item was in the review state (it counts against today's review limit);
        state, due, suspended: the item's values after the answer, which say where it goes now.
        Finding and removing cost a binary search and a copy, however long the backlog.
        """
        if not self.holds(item_id, due=due_before):
            raise ValueError(f"{item_id!r} is not in this queue: build it again instead")
        new, reviews, learning = self.new, self.reviews, self.learning
        if due_before is None:
            new = new[1:] if new[0] == item_id else tuple(i for i in new if i != item_id)
        else:
            reviews, learning = _without(reviews, (due_before, item_id)), _without(learning, (due_before, item_id))
        if not suspended:
            if state in LEARNING_STATES:
                learning = _with(learning, (due, item_id))
            elif state == REVIEW_STATE and due < self.end:
                reviews = _with(reviews, (due, item_id))
        return replace(
            self,
            new=new,
            reviews=reviews,
            learning=learning,
            new_left=max(0, self.new_left - introduced),
            reviews_left=max(0, self.reviews_left - was_review),
        )


def _find(queued: tuple[Queued, ...], entry: Queued) -> int | None:
    i = bisect_left(queued, entry)
    return i if i < len(queued) and queued[i] == entry else None


def _without(queued: tuple[Queued, ...], entry: Queued) -> tuple[Queued, ...]:
    i = _find(queued, entry)
    return queued if i is None else queued[:i] + queued[i + 1 :]


def _with(queued: tuple[Queued, ...], entry: Queued) -> tuple[Queued, ...]:
    i = bisect_left(queued, entry)
    return queued[:i] + (entry,) + queued[i:]
