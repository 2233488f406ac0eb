"""The FSRS optimizer on a user's own history: fsrs's real threshold, the metrics, saving and rescheduling."""

from __future__ import annotations

import itertools
import math
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fsrs.scheduler import DEFAULT_PARAMETERS
from sqlalchemy import insert, update
from sqlmodel import Session, col, select

from app.db import open_database
from app.main import create_app
from app.models import LOCAL_USER_ID, ItemState, ReviewLog, StudySettings
from app.review import optimize, scheduler, synthetic
from app.review.service import policy_for
from app.settings import Settings
from tests.conftest import ROOT

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(days=400)
DB = "depthcards.sqlite3"


_tokens = itertools.count()


def _log(item_id: str, at: datetime, rating: int = 3, *, undone: bool = False) -> dict[str, Any]:
    return dict(user_id=LOCAL_USER_ID, item_id=item_id, rating=rating, reviewed_at=at, duration_ms=5000,
                state_before=None, state_after={"state": 2}, study_session="hand", token=f"hand-{next(_tokens)}",
                undone_at=at + timedelta(seconds=5) if undone else None)


def hand_history(session: Session, *, plain: int, singles: int) -> int:
    """Logs built so that exactly 3 * plain + 63 + singles reviews count; returns that number.

    Each 'plain' item: 09:00, 09:10 (same day), next day 09:05 (23 h 55 min later: does not count),
    then +24 h exactly, +3 d and +7 d (count), plus an undone answer between them (never counts).
    One long item is reviewed daily 70 times: only its first 64 reviews are used, so 63 count.
    Each 'single' item has two reviews two days apart: 1 counts.
    """
    ids = synthetic.add_items(session, plain + singles + 1, now=T0, prefix="hand")
    logs = []
    for n, item in enumerate(ids[:plain]):
        start = T0 + timedelta(hours=n)
        t2 = start + timedelta(days=1, minutes=5)
        times = [start, start + timedelta(minutes=10), t2, t2 + timedelta(days=1), t2 + timedelta(days=4), t2 + timedelta(days=11)]
        logs += [_log(item, at, rating=1 if k == 4 and n % 3 == 0 else 3) for k, at in enumerate(times)]
        logs.append(_log(item, t2 + timedelta(days=2), rating=1, undone=True))
    for k in range(70):
        logs.append(_log(ids[plain], T0 + timedelta(days=k, minutes=k)))
    for n, item in enumerate(ids[plain + 1 :]):
        logs += [_log(item, T0 + timedelta(minutes=n)), _log(item, T0 + timedelta(days=2, minutes=n))]
    session.execute(insert(ReviewLog), logs)
    session.commit()
    return 3 * plain + 63 + singles


@pytest.fixture
def db(tmp_path: Path) -> Session:
    engine = open_database(tmp_path / DB)
    with Session(engine) as session:
        yield session  # type: ignore[misc]
    engine.dispose()


def test_constants_are_fsrs_own() -> None:
    import fsrs.optimizer

    assert (optimize.MIN_REVIEWS, optimize.MAX_SEQ_LEN, optimize.EPOCHS) == (
        fsrs.optimizer.mini_batch_size, fsrs.optimizer.max_seq_len, fsrs.optimizer.num_epochs)


def test_refuses_below_the_threshold_saying_how_many_more(db: Session) -> None:
    counted = hand_history(db, plain=140, singles=0)
    assert counted == 483
    assert optimize.counted_reviews(optimize.load_history(db, user_id=LOCAL_USER_ID, now=NOW)) == 483
    assert optimize.count_in_db(db, user_id=LOCAL_USER_ID, now=NOW) == 483  # the pages' SQL count agrees
    with pytest.raises(optimize.NotEnoughHistory) as refused:
        optimize.optimize(db, user_id=LOCAL_USER_ID, now=NOW)
    assert "483 of the 512 reviews needed count, so 29 more are needed" in refused.value.message
    assert db.get(StudySettings, LOCAL_USER_ID).fsrs_parameters is None  # type: ignore[union-attr]


@pytest.mark.parametrize("singles", [1, 2])
def test_our_count_is_the_one_fsrs_applies(db: Session, singles: int) -> None:
    """At 511 counted reviews fsrs returns its defaults untrained; at 512 it trains."""
    from fsrs import Optimizer

    counted = hand_history(db, plain=149, singles=singles)
    history = optimize.load_history(db, user_id=LOCAL_USER_ID, now=NOW)
    assert optimize.counted_reviews(history) == counted == 510 + singles
    assert optimize.count_in_db(db, user_id=LOCAL_USER_ID, now=NOW) == counted
    fitted = Optimizer(optimize.fsrs_logs(history)).compute_optimal_parameters()
    assert (list(fitted) == list(DEFAULT_PARAMETERS)) is (counted < optimize.MIN_REVIEWS)


def test_metrics_follow_the_documented_formulas() -> None:
    at = T0
    history = {
        "a": [optimize.Review(3, at, None), optimize.Review(3, at + timedelta(days=3), None), optimize.Review(1, at + timedelta(days=10), None),
              optimize.Review(3, at + timedelta(days=10, minutes=10), None), optimize.Review(3, at + timedelta(days=12), None)],
        "b": [optimize.Review(4, at, None), optimize.Review(2, at + timedelta(hours=5), None), optimize.Review(3, at + timedelta(days=20), None)],
    }
    from fsrs import Card, Rating, Scheduler

    sched = Scheduler(parameters=DEFAULT_PARAMETERS, enable_fuzzing=False)
    scored = []  # (y, p, elapsed days, review number, lapses before)
    for reviews in history.values():
        card, lapses = Card(card_id=0, due=reviews[0].at), 0
        for i, r in enumerate(reviews, start=1):
            if card.last_review is not None and (days := (r.at - card.last_review).days) > 0:
                scored.append((float(r.rating > 1), sched.get_card_retrievability(card, r.at), days, i, lapses))
                lapses += r.rating == 1
            card, _ = sched.review_card(card, Rating(r.rating), review_datetime=r.at)
    # elapsed days count from the previous review, same-day ones included (10 d 10 min -> 12 d is 1 day)
    assert [(s[2], s[3], s[4]) for s in scored] == [(3, 2, 0), (7, 3, 0), (1, 5, 1), (19, 3, 0)]
    log_loss = -sum(y * math.log(p) + (1 - y) * math.log(1 - p) for y, p, *_ in scored) / 4
    # bins: Δt 3 -> 2.48, 7 -> 8.98, 1 -> 2.48, 19 -> 32.5; i 2 -> 4 (3.76), 3 -> 4, 5 -> 7 (7.11); lapses 1 -> 2 (1.65)
    bins: dict[tuple[float, float, float], list[tuple[float, float]]] = {}
    for (y, p, *_), key in zip(scored, [(2.48, 4, 0), (8.98, 4, 0), (2.48, 7, 2), (32.5, 4, 0)]):
        bins.setdefault(key, []).append((y, p))
    rmse = math.sqrt(sum(len(v) * (sum(y for y, _ in v) / len(v) - sum(p for _, p in v) / len(v)) ** 2 for v in bins.values()) / 4)
    metrics = optimize.evaluate(history, DEFAULT_PARAMETERS)
    assert metrics.reviews == 4
    assert metrics.log_loss == pytest.approx(log_loss, rel=1e-12)
    assert metrics.rmse_bins == pytest.approx(rmse, rel=1e-12)


def simulated_user(session: Session, *, items: int, days: int = 365, seed: int = 1) -> None:
    ids = synthetic.add_items(session, items, now=T0)
    synthetic.write_history(session, synthetic.simulate(ids, user_id=LOCAL_USER_ID, start=T0, days=days, seed=seed, undo_every=25))
    session.execute(update(StudySettings).values(fuzz=False))  # rescheduled due dates are then exact
    session.commit()


def test_fit_saves_better_parameters_and_reschedules_every_item(db: Session) -> None:
    simulated_user(db, items=120)
    before = {s.item_id: (s.due, s.stability) for s in db.exec(select(ItemState))}
    phases: list[tuple[str, int, int]] = []

    report = optimize.optimize(db, user_id=LOCAL_USER_ID, now=NOW, progress=lambda *p: phases.append(p))

    assert report.counted_reviews == 1099 == optimize.count_in_db(db, user_id=LOCAL_USER_ID, now=NOW)
    assert report.saved and report.rescheduled == 120
    assert report.new_parameters != tuple(DEFAULT_PARAMETERS) and report.old_parameters == tuple(DEFAULT_PARAMETERS)
    assert all(math.isfinite(v) for v in (report.old.log_loss, report.old.rmse_bins, report.new.log_loss, report.new.rmse_bins))
    assert report.new.log_loss < report.old.log_loss
    assert report.old.reviews == report.new.reviews == report.counted_reviews
    assert ("fit", 5, 5) in phases and ("reschedule", 120, 120) in phases

    db.expire_all()
    settings = db.get(StudySettings, LOCAL_USER_ID)
    assert settings is not None and settings.fsrs_parameters == list(report.new_parameters)
    policy = policy_for(settings)
    changed = 0
    for state in db.exec(select(ItemState)):
        logs = db.exec(select(ReviewLog.rating, ReviewLog.reviewed_at, ReviewLog.duration_ms).where(
            col(ReviewLog.item_id) == state.item_id, col(ReviewLog.undone_at).is_(None)).order_by(col(ReviewLog.reviewed_at))).all()
        expected = scheduler.reschedule(state.fsrs_card, [tuple(row) for row in logs], policy=policy)
        assert state.fsrs_card == expected and state.due == scheduler.columns(expected)["due"]
        changed += (state.due, state.stability) != before[state.item_id]
    assert changed >= 100  # new parameters, new due dates


def test_a_fit_that_is_no_better_is_not_saved(db: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    simulated_user(db, items=60)
    worse = (100.0, 100.0, 100.0, 100.0) + tuple(DEFAULT_PARAMETERS[4:])  # "remembered for 100 days after one look"
    monkeypatch.setattr(optimize, "fit", lambda history, progress=None: worse)
    report = optimize.optimize(db, user_id=LOCAL_USER_ID, now=NOW)
    assert not report.saved and report.rescheduled == 0 and report.new.log_loss > report.old.log_loss
    assert db.get(StudySettings, LOCAL_USER_ID).fsrs_parameters is None  # type: ignore[union-attr]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": "error"})


def test_cli_refuses_then_fits(tmp_path: Path) -> None:
    engine = open_database(tmp_path / DB)
    with Session(engine) as session:
        simulated_user(session, items=60, days=120)
    refused = cli("optimize", "--data-dir", str(tmp_path))
    assert refused.returncode == 1
    assert re.search(r"\d+ of the 512 reviews needed count, so \d+ more are needed", refused.stderr)

    with Session(engine) as session:
        ids = synthetic.add_items(session, 70, now=T0, prefix="more")
        synthetic.write_history(session, synthetic.simulate(ids, user_id=LOCAL_USER_ID, start=T0, days=365, seed=9))
    fitted = cli("optimize", "--data-dir", str(tmp_path))
    assert fitted.returncode == 0, fitted.stderr
    assert re.search(r"log loss\s+0\.\d{4}\s+0\.\d{4}", fitted.stdout) and re.search(r"RMSE\(bins\)\s+0\.\d{4}\s+0\.\d{4}", fitted.stdout)
    with Session(engine) as session:
        assert ("Saved the new parameters" in fitted.stdout) is (session.get(StudySettings, LOCAL_USER_ID).fsrs_parameters is not None)  # type: ignore[union-attr]
    engine.dispose()


def test_the_settings_page_button_runs_the_fit_with_progress(tmp_path: Path) -> None:
    engine = open_database(tmp_path / DB)
    with Session(engine) as session:
        simulated_user(session, items=60)
    engine.dispose()
    hx = {"HX-Request": "true"}
    with TestClient(create_app(Settings(data_dir=tmp_path, cards_dir=tmp_path / "no-cards"))) as client:
        started = client.post("/settings/optimize", headers=hx)
        assert started.status_code == 200 and started.text.lstrip().startswith('<div id="optimizer"')
        assert 'hx-trigger="every 1s"' in started.text  # the block polls while the fit runs
        deadline = time.monotonic() + 120
        while 'hx-trigger="every 1s"' in (status := client.get("/settings/optimize", headers=hx)).text:
            assert time.monotonic() < deadline
            time.sleep(0.5)
        assert "Log loss" in status.text and "RMSE (bins)" in status.text
        assert "New parameters saved; 60 items rescheduled." in status.text
        page = client.get("/settings")
        assert "your own (optimized)" in page.text


def test_the_button_refuses_below_the_threshold(tmp_path: Path) -> None:
    with TestClient(create_app(Settings(data_dir=tmp_path, cards_dir=tmp_path / "no-cards"))) as client:
        refused = client.post("/settings/optimize", headers={"HX-Request": "true"})
        assert refused.status_code == 200
        assert "0 of the 512 reviews needed count, so 512 more are needed" in refused.text
        assert "hx-trigger" not in refused.text
        page = client.post("/settings/optimize")  # without htmx: the whole page, with the same message
        assert "<html" in page.text and "512 more are needed" in page.text
