"""Kept day queues against a real SQLite file: after any sequence of answers and other writes, the queue kept
in memory is exactly the one the database gives, and an answer alone never makes it read the database again."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session

from app.cards.synthetic import write_synthetic_deck
from app.db import open_database
from app.library import open_indexed
from app.models import LOCAL_USER_ID, StudySettings
from app.review import service
from app.review.queue import Deck, load_day_queue, read_version
from app.review.queue_cache import QueueCache
from app.review.reviewer import answer_and_show_next
from tests.review.conftest import T0, WRITE_FAILED, failing_insert

U = LOCAL_USER_ID
DECKS = (Deck(), Deck.parse("topic:topic-3"), Deck.parse("module:m9"))


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    """12 synthetic cards (48 items), small daily limits so that they bind."""
    cards = tmp_path / "cards"
    write_synthetic_deck(cards, 12)
    engine, _ = open_indexed(tmp_path / "study.sqlite3", cards, now=T0)
    with Session(engine) as session:
        settings = service.get_settings(session, user_id=U)
        settings.new_per_day, settings.max_reviews_per_day = 7, 12
        session.add(settings)
        session.commit()
    return engine


# new_item's rule (migration 0011), written the long way: active items with no answered or suspended state.
NEW_BY_DEFINITION = text(
    "SELECT u.id, r.id FROM user u, review_item r WHERE r.retired_at IS NULL AND NOT EXISTS "
    "(SELECT 1 FROM item_state s WHERE s.user_id = u.id AND s.item_id = r.id AND (s.reps > 0 OR s.suspended))"
)


def assert_new_items_kept(session: Session) -> None:
    connection = session.connection()
    kept = set(connection.execute(text("SELECT user_id, item_id FROM new_item")).all())
    assert kept == set(connection.execute(NEW_BY_DEFINITION).all())


def assert_kept_is_fresh(session: Session, queues: QueueCache, deck: Deck, now: object) -> None:
    kept = queues.get(session, user_id=U, deck=deck, now=now)  # type: ignore[arg-type]
    fresh = load_day_queue(session, user_id=U, deck=deck, settings=service.get_settings(session, user_id=U), now=now)  # type: ignore[arg-type]
    assert kept.queue == fresh
    assert_new_items_kept(session)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_kept_queue_stays_equal_to_a_fresh_one(engine: Engine, seed: int) -> None:
    rng = random.Random(seed)
    queues = QueueCache()
    now = T0
    deck = Deck()
    answers = carried = 0
    with Session(engine) as session:
        shown = service.show_next(session, user_id=U, queue=queues.get(session, user_id=U, deck=deck, now=now).queue,
                                  settings=service.get_settings(session, user_id=U), now=now)
        for _ in range(400):
            op = rng.choices(["answer", "wait", "undo", "bury", "suspend", "deck", "limits", "day"],
                             weights=[60, 12, 5, 3, 2, 4, 2, 3])[0]
            if op == "answer" and shown is not None:
                builds = queues.builds
                shown = answer_and_show_next(
                    session, queues, user_id=U, deck=deck, item_id=shown.item.id, token=shown.token,
                    rating=rng.choice([1, 2, 3, 3, 3, 4]), duration_ms=rng.randrange(500, 20_000),
                    study_session="s", now=now,
                ).shown
                answers += 1
                carried += queues.builds == builds
                assert_kept_is_fresh(session, queues, deck, now)
                continue
            if op == "wait":
                now += timedelta(minutes=rng.randrange(1, 40))
            elif op == "day":
                now += timedelta(days=rng.randrange(1, 4), hours=rng.randrange(0, 5))
            elif op == "undo":
                undone = service.undo(session, user_id=U, study_session="s", now=now)
                if undone is not None:
                    shown = service.show(session, user_id=U, item_id=undone, settings=service.get_settings(session, user_id=U), now=now)
                    assert_kept_is_fresh(session, queues, deck, now)
                    continue
            elif op in ("bury", "suspend") and shown is not None:
                if op == "bury":
                    service.bury(session, user_id=U, item_id=shown.item.id, settings=service.get_settings(session, user_id=U), now=now)
                else:
                    service.set_suspended(session, user_id=U, item_id=shown.item.id, suspended=True, now=now)
            elif op == "deck":
                deck = rng.choice(DECKS)
            elif op == "limits":
                settings = service.get_settings(session, user_id=U)
                settings.new_per_day = rng.randrange(0, 10)
                session.add(settings)
                session.commit()
            assert_kept_is_fresh(session, queues, deck, now)
            kept = queues.get(session, user_id=U, deck=deck, now=now)
            shown = service.show_next(session, user_id=U, queue=kept.queue, settings=kept.settings, now=now)
    assert answers > 100
    assert carried > 0.8 * answers, f"only {carried} of {answers} answers carried the kept queue across"


def test_answers_in_the_browser_build_the_queue_once(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings
    from tests.review.test_review_pages import HX, fields

    cards = tmp_path / "cards"
    write_synthetic_deck(cards, 5)
    app = create_app(Settings(data_dir=tmp_path / "data", cards_dir=cards))
    with TestClient(app) as client:
        form = fields(client.get("/review").text)
        for _ in range(8):
            response = client.post("/review/answer", data={**form, "rating": "3"}, headers=HX)
            assert response.status_code == 200
            form = fields(response.text)
        assert app.state.queues.builds == 1
        # Anything else that writes (here: suspending the shown item) makes the next request build it again.
        client.post("/review/suspend", data={"item_id": form["item_id"], "study_session": form["study_session"]}, headers=HX)
        assert app.state.queues.builds == 2


# Each write the queue is built from, made on another connection (as another process, e.g. `depthcards import`).
OUTSIDE_WRITES: dict[str, str] = {
    "item state": "UPDATE item_state SET suspended = 1 WHERE item_id = (SELECT min(item_id) FROM item_state)",
    "new state": "INSERT INTO item_state (user_id, item_id, schema_version, fsrs_card, due, state, reps, lapses, suspended) "
                 "SELECT 1, id, 1, '{}', '2026-11-30 09:00:00.000000', 0, 0, 0, 1 FROM review_item "
                 "WHERE id NOT IN (SELECT item_id FROM item_state) LIMIT 1",
    "log undone": "UPDATE review_log SET undone_at = '2026-11-30 10:00:00.000000'",
    "settings": "UPDATE study_settings SET new_per_day = 3",
    "card retired": "UPDATE card SET retired_at = '2026-11-30 10:00:00.000000' WHERE id = 'synthetic-00001'",
    "item retired": "UPDATE review_item SET retired_at = '2026-11-30 10:00:00.000000' WHERE id = 'synthetic-00002#q1'",
    "tag removed": "DELETE FROM card_tag WHERE card_id = 'synthetic-00003'",
}


@pytest.mark.parametrize("write", OUTSIDE_WRITES.values(), ids=OUTSIDE_WRITES.keys())
def test_a_write_on_another_connection_makes_the_kept_queue_stale(engine: Engine, tmp_path: Path, write: str) -> None:
    queues = QueueCache()
    with Session(engine) as session:
        shown = service.show_next(session, user_id=U, queue=queues.get(session, user_id=U, deck=Deck(), now=T0).queue,
                                  settings=service.get_settings(session, user_id=U), now=T0)
        assert shown is not None
        service.answer(session, user_id=U, item_id=shown.item.id, token=shown.token, rating=1, duration_ms=None,
                       study_session="s", now=T0)
        before = read_version(session.connection(), user_id=U)
        queues.get(session, user_id=U, deck=Deck(), now=T0)
        builds = queues.builds
        other = open_database(tmp_path / "study.sqlite3")
        with other.begin() as connection:
            assert connection.execute(text(write)).rowcount >= 1
        other.dispose()
        assert read_version(session.connection(), user_id=U) > before
        assert_kept_is_fresh(session, queues, Deck(), T0 + timedelta(minutes=1))
        assert queues.builds == builds + 1


NEW_ITEM_WRITES: dict[str, str] = {
    "item retired": "UPDATE review_item SET retired_at = '2026-11-30 10:00:00.000000' WHERE id = 'synthetic-00002#q1'",
    "item back": "UPDATE review_item SET retired_at = NULL WHERE id = 'synthetic-00002#q1'",
    "state deleted (undo of a first answer)": "DELETE FROM item_state WHERE reps = 1",
    "a new item suspended": "UPDATE item_state SET suspended = 1 WHERE item_id = 'synthetic-00003'",
    "and unsuspended": "UPDATE item_state SET suspended = 0 WHERE item_id = 'synthetic-00003'",
    "new card": "INSERT INTO review_item (id, card_id, followup_key, position) VALUES ('synthetic-00005#q9', 'synthetic-00005', 'q9', 9)",
    "new user": "INSERT INTO user (id, name, created_at) VALUES (2, 'second', '2026-11-30 10:00:00.000000')",
    "user removed": "DELETE FROM user WHERE id = 2",
}


def test_new_items_follow_every_kind_of_write(engine: Engine) -> None:
    with Session(engine) as session:
        for item in ("synthetic-00000", "synthetic-00001", "synthetic-00004"):
            shown = service.show(session, user_id=U, item_id=item, settings=service.get_settings(session, user_id=U), now=T0)
            service.answer(session, user_id=U, item_id=item, token=shown.token, rating=3, duration_ms=None, study_session="s", now=T0)
        service.bury(session, user_id=U, item_id="synthetic-00003", settings=service.get_settings(session, user_id=U), now=T0)
        assert_new_items_kept(session)
        new = {row[0] for row in session.connection().execute(text("SELECT item_id FROM new_item"))}
        assert "synthetic-00000" not in new and "synthetic-00003" in new  # burial is checked when the queue is built
        session.commit()
        for write in NEW_ITEM_WRITES.values():
            session.connection().execute(text(write))
            session.commit()
            assert_new_items_kept(session)


def test_a_failed_answer_leaves_the_kept_queue_as_it_was(engine: Engine) -> None:
    queues = QueueCache()
    with Session(engine) as session:
        kept = queues.get(session, user_id=U, deck=Deck(), now=T0)
        shown = service.show_next(session, user_id=U, queue=kept.queue, settings=kept.settings, now=T0)
        assert shown is not None
        # The next item's token fails: after the answer's writes, before its commit.
        with failing_insert(engine, "shown_item"), pytest.raises(WRITE_FAILED):
            answer_and_show_next(session, queues, user_id=U, deck=Deck(), item_id=shown.item.id, token=shown.token,
                                 rating=3, duration_ms=None, study_session="s", now=T0)
        assert queues.get(session, user_id=U, deck=Deck(), now=T0) is kept  # still valid: nothing was committed
        assert_kept_is_fresh(session, queues, Deck(), T0)
        following = answer_and_show_next(session, queues, user_id=U, deck=Deck(), item_id=shown.item.id,
                                         token=shown.token, rating=3, duration_ms=None, study_session="s", now=T0).shown
        assert following is not None and following.item.id != shown.item.id


def test_settings_changed_on_the_settings_page_reach_the_reviewer(engine: Engine) -> None:
    queues = QueueCache()
    with Session(engine) as session:
        assert queues.get(session, user_id=U, deck=Deck(), now=T0).settings.new_per_day == 7
        settings = session.get(StudySettings, U)
        assert settings is not None
        settings.new_per_day = 2
        session.add(settings)
        session.commit()
        kept = queues.get(session, user_id=U, deck=Deck(), now=T0)
        assert kept.settings.new_per_day == 2 and kept.queue.counts(T0).new == 2
