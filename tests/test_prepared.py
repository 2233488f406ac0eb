"""Prepared statements give exactly what connection.execute gives: the same rows read, the same bytes stored."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, bindparam, insert, select, update
from sqlmodel import Session, col

from app.db import open_database
from app.models import LOCAL_USER_ID, ItemState, ReviewItem, ShownItem
from app.prepared import Prepared
from app.review import service
from app.review.queue import _VERSION
from app.review.reviewer import _CARD_FACE
from app.review.session_stats import _SUMMARY

WHEN = datetime(2026, 11, 30, 9, 15, 30, 123456, tzinfo=UTC)
CARD = {"schema_version": 1, "card_id": 0, "state": 2, "step": None, "stability": 3.25, "difficulty": 5.5,
        "due": "2026-12-03T09:15:30.123456+00:00", "last_review": "2026-11-30T09:15:30.123456+00:00"}
STATE = dict(user_id=LOCAL_USER_ID, item_id="it", schema_version=1, fsrs_card=CARD, due=WHEN, stability=3.25,
             difficulty=5.5, state=2, reps=3, lapses=1, first_reviewed_at=WHEN, last_reviewed_at=WHEN,
             buried_until=None, suspended=False)


def database(path: Path) -> Engine:
    engine = open_database(path)
    with engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO card (id, path, content_hash, title_zh, title_en, module_id, module_zh, module_en, "
                                   "topic_id, topic_zh, topic_en, difficulty, tags, related, followup_keys, rendered, source, "
                                   "indexed_at) VALUES ('c', 'c.md', 'h', '卡', 'Card', 'm', 'm', 'm', 't', 't', 't', 'easy', "
                                   "'[]', '[]', '[]', '{\"sections\": {}}', '{}', '2026-11-30 00:00:00.000000')")
        connection.execute(insert(ReviewItem), [dict(id="it", card_id="c", followup_key=None, position=0, retired_at=None)])
    return engine


def stored(path: Path, table: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as raw:
        return raw.execute(f"SELECT * FROM {table}").fetchall()


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Engine, Engine]:
    return database(tmp_path / "prepared.sqlite3"), database(tmp_path / "core.sqlite3")


def test_an_insert_and_an_update_store_the_same_bytes_as_core(twins: tuple[Engine, Engine], tmp_path: Path) -> None:
    prepared_db, core_db = twins
    shown = dict(token="tok", user_id=LOCAL_USER_ID, item_id="it", shown_at=WHEN, reps_when_shown=3,
                 candidates={"1": CARD, "3": CARD}, answered_log_id=None)
    changed = {**{k: STATE[k] for k in service.ANSWERED_COLUMNS}, "reps": 4, "buried_until": WHEN}
    where = dict(w_user_id=LOCAL_USER_ID, w_item_id="it", w_reps=3)
    with prepared_db.begin() as connection:
        service._INSERT_SHOWN.run(connection, **shown)
        service._INSERT_STATE.run(connection, **STATE)
        assert service._update_state(tuple(changed)).run(connection, **where, **changed) == 1
    with core_db.begin() as connection:
        connection.execute(insert(ShownItem), [shown])
        connection.execute(insert(ItemState), [STATE])
        connection.execute(service._update_state(tuple(changed)).statement, {**where, **changed})
    for table in ("shown_item", "item_state"):
        assert stored(tmp_path / "prepared.sqlite3", table) == stored(tmp_path / "core.sqlite3", table)
    assert stored(tmp_path / "prepared.sqlite3", "item_state")[0][12] == "2026-11-30 09:15:30.123456"  # buried_until


def test_reads_give_the_same_values_as_core(twins: tuple[Engine, Engine]) -> None:
    engine, _ = twins
    with engine.begin() as connection:
        connection.execute(insert(ItemState), [STATE])
        connection.execute(insert(ShownItem), [dict(token="tok", user_id=1, item_id="it", shown_at=WHEN, reps_when_shown=3,
                                                    candidates={"3": CARD}, answered_log_id=None)])
    reads = [
        (service._STATE, dict(user_id=1, item_id="it")),
        (service._SHOWN, dict(token="tok", user_id=1)),
        (service._ITEM_AND_STATE, dict(item_id="it", user_id=1)),
        (_VERSION, dict(user_id=1)),
        (_SUMMARY, dict(user_id=1, study_session="s")),
        (_CARD_FACE, dict(card_id="c")),
    ]
    with Session(engine) as session:
        connection = session.connection()
        for prepared, values in reads:
            core = [dict(row._mapping) for row in connection.execute(prepared.statement, values)]
            assert prepared.rows(connection, **values) == core, prepared.statement
        state = service._STATE.first(connection, user_id=1, item_id="it")
        assert state is not None and state["due"] == WHEN and state["fsrs_card"] == CARD and state["suspended"] is False


def test_a_missing_value_is_an_error_not_a_null(twins: tuple[Engine, Engine]) -> None:
    engine, _ = twins
    statement = Prepared(update(ItemState).where(col(ItemState.item_id) == bindparam("w_item")), set_columns=["reps"])
    with engine.begin() as connection, pytest.raises(KeyError, match="reps"):
        statement.run(connection, w_item="it")
    literal = Prepared(select(ReviewItem.id).where(col(ReviewItem.position) == 0))
    with engine.begin() as connection:
        assert literal.rows(connection) == [{"id": "it"}]  # a value written into the statement needs none
