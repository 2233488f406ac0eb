"""Fit FSRS parameters to one user's own review history (fsrs's Optimizer, on torch), then reschedule.

What counts as history, and how much is enough, mirrors fsrs 6.3's optimizer (fsrs/optimizer.py):
- each item's reviews are replayed in time order, and only its first 64 (`max_seq_len`) are used;
- a review counts only if it comes at least one whole day (24 h: `timedelta.days > 0`) after the
  previous review of the same item: same-day learning steps carry no forgetting signal;
- `compute_optimal_parameters` silently returns the default parameters below 512 (`mini_batch_size`)
  counted reviews, so we refuse first and say how many more are needed.
Undone answers are never history: their logs stay in the table but are not read here.

After fitting, old and new parameters are scored on the same history. As Anki does, the new ones are
saved only when their log loss is lower; then every reviewed item is rescheduled (fsrs's reschedule_card
on its non-undone answers) in the same transaction as the save.

Metrics (computed here, the package has none) over every review at least a day after the item's
previous one (all of them, not only each item's first 64; same-day reviews are not scored, as in the
benchmark), replaying each item's answers under the parameters being judged:
- log loss = -(1/N) * sum(y*ln p + (1-y)*ln(1-p)), y = 0 for Again, 1 otherwise; p = fsrs's predicted
  retrievability at the review (whole elapsed days, as fsrs computes it), clipped to [1e-7, 1 - 1e-7];
- RMSE(bins), as in the FSRS benchmark (open-spaced-repetition/srs-benchmark, utils.py:rmse_matrix):
  reviews are binned by (elapsed days, review number, lapses), each rounded down on a log scale:
      Δt  -> round(2.48 * 3.62 ** floor(log(Δt) / log(3.62)), 2)
      i   -> round(1.99 * 1.89 ** floor(log(i) / log(1.89)))        (i: 1 = the item's first review)
      L   -> 0 if L == 0 else round(1.65 * 1.73 ** floor(log(L) / log(1.73)))
             (L: earlier Again answers that were themselves ≥ 1 day after their previous review)
  then RMSE(bins) = sqrt(sum_b n_b * (mean y_b - mean p_b)^2 / sum_b n_b).
"""

from __future__ import annotations

import math
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fsrs import Card, Rating, Scheduler
from fsrs import ReviewLog as FsrsLog
from fsrs.scheduler import DEFAULT_PARAMETERS
from sqlalchemy import text, update
from sqlmodel import Session, col, select

from app.errors import AppError
from app.models import ItemState, ReviewLog, StudySettings
from app.review import scheduler
from app.review.service import get_settings, policy_for

MIN_REVIEWS = 512  # fsrs.optimizer.mini_batch_size: below it fsrs returns the defaults
MAX_SEQ_LEN = 64  # fsrs.optimizer.max_seq_len: only each item's first 64 reviews train
EPOCHS = 5  # fsrs.optimizer.num_epochs (for the progress bar)

Progress = Callable[[str, int, int], None]  # (phase, done, total)


class NotEnoughHistory(AppError):
    """Too few reviews that count for fitting; the message says how many more are needed."""

    status_code = 409

    def __init__(self, counted: int) -> None:
        self.counted = counted
        self.missing = MIN_REVIEWS - counted
        super().__init__(
            f"Not enough review history to optimize: {counted} of the {MIN_REVIEWS} reviews needed count, "
            f"so {self.missing} more are needed. A review counts when it comes at least one day after the "
            f"previous review of the same item (only each item's first {MAX_SEQ_LEN} reviews are used; undone "
            f"answers never count)."
        )


@dataclass(frozen=True)
class Review:
    rating: int
    at: datetime
    duration_ms: int | None


History = dict[str, list[Review]]  # item id -> its reviews in time order


@dataclass(frozen=True)
class Metrics:
    log_loss: float
    rmse_bins: float
    reviews: int  # how many reviews were scored


@dataclass(frozen=True)
class OptimizeReport:
    counted_reviews: int
    old_parameters: tuple[float, ...]
    new_parameters: tuple[float, ...]
    old: Metrics
    new: Metrics
    saved: bool  # False when the fit was no better than the current parameters (they are kept, as Anki does)
    rescheduled: int  # items whose due date was recomputed
    optimized_at: datetime


# History #################################################################


def load_history(session: Session, *, user_id: int, now: datetime) -> History:
    """A user's answers that were not undone, up to now, per item in time order."""
    rows = session.exec(
        select(ReviewLog.item_id, ReviewLog.rating, ReviewLog.reviewed_at, ReviewLog.duration_ms)
        .where(col(ReviewLog.user_id) == user_id, col(ReviewLog.undone_at).is_(None), col(ReviewLog.reviewed_at) <= now)
        .order_by(col(ReviewLog.item_id), col(ReviewLog.reviewed_at), col(ReviewLog.id))
    )
    history: History = defaultdict(list)
    for item_id, rating, at, duration_ms in rows:
        history[item_id].append(Review(rating, at.astimezone(UTC), duration_ms))
    return dict(history)


def counted_reviews(history: History) -> int:
    """How many reviews fsrs's optimizer trains on (its `_num_reviews`): see the module docstring."""
    total = 0
    for reviews in history.values():
        first = reviews[:MAX_SEQ_LEN]
        total += sum(1 for prev, cur in zip(first, first[1:]) if (cur.at - prev.at).days > 0)
    return total


_COUNT_SQL = text("""
SELECT count(*) FROM (
  SELECT reviewed_at AS at, lag(reviewed_at) OVER w AS prev, row_number() OVER w AS n
  FROM review_log
  WHERE user_id = :user_id AND undone_at IS NULL AND reviewed_at <= :now
  WINDOW w AS (PARTITION BY item_id ORDER BY reviewed_at, id)
) WHERE n <= :max_seq AND prev IS NOT NULL AND at >= datetime(prev, '+1 day') || substr(prev, 20)
""")


def count_in_db(session: Session, *, user_id: int, now: datetime) -> int:
    """counted_reviews computed by SQLite, for pages (0.4 s instead of 1 s at 200,000 logs).

    Exact, not approximate: datetimes are stored as 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), so the previous
    review plus 24 h is datetime(prev, '+1 day') with prev's own microseconds appended, compared as text.
    """
    stamp = now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return int(session.scalar(_COUNT_SQL, {"user_id": user_id, "now": stamp, "max_seq": MAX_SEQ_LEN}) or 0)


# Metrics #################################################################


def _bin(value: float, base: float, scale: float, digits: int) -> float:
    return round(scale * base ** math.floor(math.log(value) / math.log(base)), digits)


def evaluate(history: History, parameters: Sequence[float]) -> Metrics:
    """Log loss and RMSE(bins) of `parameters` on this history (formulas in the module docstring)."""
    sched = Scheduler(parameters=parameters, enable_fuzzing=False)
    eps = 1e-7
    loss = 0.0
    n = 0
    bins: dict[tuple[float, float, float], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # n, sum y, sum p
    for reviews in history.values():
        card = Card(card_id=0, due=reviews[0].at)
        lapses = 0
        for i, review in enumerate(reviews, start=1):
            elapsed = (review.at - card.last_review).days if card.last_review is not None else 0
            if elapsed > 0:
                p = min(max(float(sched.get_card_retrievability(card, current_datetime=review.at)), eps), 1 - eps)
                y = 0.0 if review.rating == Rating.Again else 1.0
                loss -= y * math.log(p) + (1 - y) * math.log(1 - p)
                n += 1
                key = (
                    _bin(elapsed, 3.62, 2.48, 2),
                    _bin(i, 1.89, 1.99, 0),
                    _bin(lapses, 1.73, 1.65, 0) if lapses else 0.0,
                )
                cell = bins[key]
                cell[0] += 1
                cell[1] += y
                cell[2] += p
                if review.rating == Rating.Again:
                    lapses += 1
            card, _ = sched.review_card(card, Rating(review.rating), review_datetime=review.at)
    if n == 0:
        return Metrics(math.nan, math.nan, 0)
    squared = sum(c[0] * (c[1] / c[0] - c[2] / c[0]) ** 2 for c in bins.values())
    return Metrics(loss / n, math.sqrt(squared / n), n)


# Fitting #################################################################

_FIT_LOCK = threading.Lock()


@contextmanager
def _epoch_progress(progress: Progress | None) -> Iterator[None]:
    """Report fsrs's epochs as they finish.

    fsrs shows epochs only through `tqdm(range(num_epochs))` in fsrs.optimizer; for one fit we swap that
    name for a counter. The lock makes fits run one at a time (each one uses every core anyway). If a
    later fsrs drops the name, fitting still works, only without per-epoch progress.
    """
    import fsrs.optimizer as fsrs_optimizer

    with _FIT_LOCK:
        original = getattr(fsrs_optimizer, "tqdm", None)
        if progress is None or original is None:
            yield
            return

        def counting(iterable: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            items = list(iterable)
            progress("fit", 0, len(items))
            for done, item in enumerate(items, start=1):
                yield item
                progress("fit", done, len(items))

        fsrs_optimizer.tqdm = counting
        try:
            yield
        finally:
            fsrs_optimizer.tqdm = original


def fsrs_logs(history: History) -> list[FsrsLog]:
    """The history as fsrs ReviewLogs (fsrs wants integer card ids: items are numbered in id order)."""
    return [
        FsrsLog(card_id=number, rating=Rating(r.rating), review_datetime=r.at, review_duration=r.duration_ms)
        for number, item_id in enumerate(sorted(history))
        for r in history[item_id]
    ]


def fit(history: History, *, progress: Progress | None = None) -> tuple[float, ...]:
    """New parameters from fsrs's Optimizer; NotEnoughHistory below its threshold."""
    counted = counted_reviews(history)
    if counted < MIN_REVIEWS:
        raise NotEnoughHistory(counted)
    from fsrs import Optimizer  # torch, pandas: imported only when fitting

    with _epoch_progress(progress):
        parameters = Optimizer(fsrs_logs(history)).compute_optimal_parameters()
    if parameters is None:  # every epoch's loss was NaN
        raise AppError("the optimizer did not converge on this history; the current parameters are kept")
    return tuple(float(p) for p in parameters)


# Saving ##################################################################


def _reschedule_all(session: Session, *, user_id: int, settings: StudySettings, progress: Progress | None) -> int:
    """Replay every reviewed item's non-undone answers under the settings' parameters; returns how many."""
    policy = policy_for(settings)
    logs: dict[str, list[tuple[int, datetime, int | None]]] = defaultdict(list)
    rows = session.exec(
        select(ReviewLog.item_id, ReviewLog.rating, ReviewLog.reviewed_at, ReviewLog.duration_ms)
        .where(col(ReviewLog.user_id) == user_id, col(ReviewLog.undone_at).is_(None))
        .order_by(col(ReviewLog.item_id), col(ReviewLog.reviewed_at), col(ReviewLog.id))
    )
    for item_id, rating, at, duration_ms in rows:
        logs[item_id].append((rating, at, duration_ms))
    states = list(session.exec(select(ItemState).where(col(ItemState.user_id) == user_id, col(ItemState.reps) > 0)))
    done = 0
    for number, state in enumerate(states, start=1):
        item_logs = logs.get(state.item_id)
        if item_logs:
            card = scheduler.reschedule(state.fsrs_card, item_logs, policy=policy)
            cols = scheduler.columns(card)
            state.fsrs_card = card
            state.schema_version = scheduler.SCHEMA_VERSION
            state.due, state.stability, state.difficulty, state.state = cols["due"], cols["stability"], cols["difficulty"], cols["state"]
            session.add(state)
            done += 1
        if progress is not None and (number % 200 == 0 or number == len(states)):
            progress("reschedule", number, len(states))
    return done


def optimize(session: Session, *, user_id: int, now: datetime, progress: Progress | None = None) -> OptimizeReport:
    """Fit, compare old and new on the user's history, and (if better) save and reschedule in one transaction."""
    settings = get_settings(session, user_id=user_id)
    old = tuple(settings.fsrs_parameters) if settings.fsrs_parameters else tuple(DEFAULT_PARAMETERS)
    history = load_history(session, user_id=user_id, now=now)
    counted = counted_reviews(history)
    session.commit()  # no read transaction held open while fitting
    new = fit(history, progress=progress)
    if progress is not None:
        progress("evaluate", 0, 2)
    old_metrics = evaluate(history, old)
    if progress is not None:
        progress("evaluate", 1, 2)
    new_metrics = evaluate(history, new)
    if progress is not None:
        progress("evaluate", 2, 2)
    saved = new_metrics.log_loss < old_metrics.log_loss
    rescheduled = 0
    if saved:
        try:
            # Write first: the transaction then holds SQLite's write lock, so an answer given while we
            # fitted is either already committed (and replayed below) or waits; none is overwritten.
            session.execute(
                update(StudySettings).where(col(StudySettings.user_id) == user_id).values(fsrs_parameters=list(new))
            )
            session.expire_all()
            fresh = session.get(StudySettings, user_id)
            assert fresh is not None
            rescheduled = _reschedule_all(session, user_id=user_id, settings=fresh, progress=progress)
            session.commit()
        except Exception:
            session.rollback()
            raise
    return OptimizeReport(counted, old, new, old_metrics, new_metrics, saved, rescheduled, now)
