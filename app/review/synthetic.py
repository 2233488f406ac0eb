"""A synthetic learner's review history, for tests and benchmarks (shared so they measure the same user).

The learner's memory follows FSRS with known "true" parameters (they forget faster than fsrs's defaults
predict: lower initial stabilities, a steeper decay); the app schedules them with its own policy. Each
review's outcome is drawn from the true retrievability at that moment, so a fit to the history should
move the parameters toward the true ones and lower the log loss.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from fsrs import Card, Rating, Scheduler
from fsrs.scheduler import DEFAULT_PARAMETERS
from sqlalchemy import insert
from sqlmodel import Session

from app.models import CardRow, ItemState, ReviewItem, ReviewLog
from app.review import scheduler

_TRUE = list(DEFAULT_PARAMETERS)
_TRUE[0:4] = [0.08, 0.5, 0.9, 3.5]  # initial stability (days) after Again/Hard/Good/Easy
_TRUE[20] = 0.45  # decay: a steeper forgetting curve
TRUE_PARAMETERS = tuple(_TRUE)

FIRST_RATINGS = ((1, 2, 3, 4), (0.25, 0.15, 0.5, 0.1))
PASS_RATINGS = ((2, 3, 4), (0.15, 0.75, 0.1))


@dataclass
class SimulatedHistory:
    logs: list[dict[str, Any]] = field(default_factory=list)  # review_log rows (no id), in answer order
    states: list[dict[str, Any]] = field(default_factory=list)  # item_state rows


def add_items(session: Session, count: int, *, now: datetime, prefix: str = "syn") -> list[str]:
    """Insert `count` minimal cards, one review item each (no card files: for tests that never sync a deck)."""
    cards = [
        dict(id=f"{prefix}-{i:05d}", path=f"{prefix}/{prefix}-{i:05d}.md", content_hash="0" * 64, title_zh=f"合成 {i}",
             title_en=f"Synthetic {i}", module_id="m9", module_zh="合成", module_en="Synthetic", topic_id=f"t{i % 10}",
             topic_zh=f"主题 {i % 10}", topic_en=f"Topic {i % 10}", difficulty="medium", tags=[], related=[],
             followup_keys=[], rendered={}, indexed_at=now, retired_at=None)
        for i in range(count)
    ]
    session.execute(insert(CardRow), cards)
    session.execute(insert(ReviewItem), [dict(id=c["id"], card_id=c["id"], followup_key=None, position=0, retired_at=None) for c in cards])
    session.commit()
    return [c["id"] for c in cards]


def _snapshot(state: dict[str, Any]) -> dict[str, Any]:
    """An item_state row as service.answer stores it in state_before/state_after (JSON-ready)."""
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in state.items() if k not in ("user_id", "item_id")}


def simulate(
    item_ids: Sequence[str],
    *,
    user_id: int,
    start: datetime,
    days: int,
    seed: int = 0,
    policy: scheduler.Policy = scheduler.Policy(fuzz=False),
    true_parameters: Sequence[float] = TRUE_PARAMETERS,
    introduce_over: float = 0.5,
    undo_every: int = 0,
    max_logs: int | None = None,
) -> SimulatedHistory:
    """Review every item whenever it is due, from `start` for `days` days; new items arrive evenly over the
    first `introduce_over` of the period. With undo_every=k, every k-th answer is preceded by an answer
    that was undone (its log stays, marked undone, as the app keeps it)."""
    rng = random.Random(seed)
    app_scheduler = scheduler.make_scheduler(policy)
    truth = Scheduler(parameters=true_parameters, enable_fuzzing=False)
    end = start + timedelta(days=days)
    spacing = timedelta(days=days * introduce_over) / max(1, len(item_ids))
    cards = {iid: Card(card_id=0, due=start + n * spacing) for n, iid in enumerate(item_ids)}
    true_cards = {iid: Card(card_id=0, due=start) for iid in item_ids}
    states: dict[str, dict[str, Any]] = {}
    heap = [(card.due, n, iid) for n, (iid, card) in enumerate(cards.items())]
    heapq.heapify(heap)
    out = SimulatedHistory()
    seq = 0
    while heap:
        due, n, iid = heapq.heappop(heap)
        card, true_card = cards[iid], true_cards[iid]
        late = timedelta(minutes=rng.uniform(0, 5)) if card.state != 2 else timedelta(hours=rng.uniform(0, 10))
        at = (due + late).astimezone(UTC)
        if at >= end or (max_logs is not None and len(out.logs) >= max_logs):
            continue
        if card.last_review is None:
            rating = rng.choices(*FIRST_RATINGS)[0]
        else:
            recalled = rng.random() < float(truth.get_card_retrievability(true_card, current_datetime=at))
            rating = rng.choices(*PASS_RATINGS)[0] if recalled else 1
        before = states.get(iid)
        seq += 1
        session_id = f"sim-{at:%Y%m%d}"
        if undo_every and seq % undo_every == 0:
            out.logs.append(dict(
                user_id=user_id, item_id=iid, rating=rng.choice((1, 2, 3, 4)), reviewed_at=at - timedelta(seconds=40),
                duration_ms=rng.randint(2000, 20000), state_before=_snapshot(before) if before else {"state": 0},
                state_after={"state": 1, "undone": True}, study_session=session_id, token=f"sim{seed}-undone-{seq}",
                undone_at=at - timedelta(seconds=30),
            ))
        new_card, _ = app_scheduler.review_card(card, Rating(rating), review_datetime=at)
        true_cards[iid], _ = truth.review_card(true_card, Rating(rating), review_datetime=at)
        cards[iid] = new_card
        stored = scheduler.dump_card(new_card)
        cols = scheduler.columns(stored)
        lapse = 1 if rating == 1 and before is not None and before["state"] == 2 else 0
        after = dict(
            user_id=user_id, item_id=iid, schema_version=scheduler.SCHEMA_VERSION, fsrs_card=stored,
            reps=(before["reps"] if before else 0) + 1, lapses=(before["lapses"] if before else 0) + lapse,
            first_reviewed_at=before["first_reviewed_at"] if before else at, last_reviewed_at=at,
            buried_until=None, suspended=False, **cols,
        )
        states[iid] = after
        out.logs.append(dict(
            user_id=user_id, item_id=iid, rating=rating, reviewed_at=at, duration_ms=rng.randint(2000, 20000),
            state_before=_snapshot(before) if before else {"state": 0}, state_after=_snapshot(after),
            study_session=session_id, token=f"sim{seed}-{seq}", undone_at=None,
        ))
        heapq.heappush(heap, (new_card.due, n, iid))
    out.states = [states[iid] for iid in item_ids if iid in states]
    return out


def write_history(session: Session, history: SimulatedHistory, *, chunk: int = 5000) -> None:
    """Bulk-insert the simulated logs and states (executemany in chunks: ~100k rows a second)."""
    for i in range(0, len(history.logs), chunk):
        session.execute(insert(ReviewLog), history.logs[i : i + chunk])
    for i in range(0, len(history.states), chunk):
        session.execute(insert(ItemState), history.states[i : i + chunk])
    session.commit()
