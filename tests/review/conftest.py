from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

from app.library import open_indexed
from app.models import LOCAL_USER_ID, StudySettings
from app.review import service
from app.review.queue import Deck, load_day_queue

# A fixed clock: Monday 2026-11-30 09:00 UTC (domain code never reads the wall clock).
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture
def engine(tmp_path: Path, cards_dir: Path) -> Engine:
    """A real SQLite file with the small fixture deck indexed and its review items created."""
    engine, _ = open_indexed(tmp_path / "study.sqlite3", cards_dir, now=T0)
    with Session(engine) as session:
        settings = session.get(StudySettings, LOCAL_USER_ID)
        assert settings is not None
        settings.fuzz = False  # deterministic intervals
        session.add(settings)
        session.commit()
    return engine


@pytest.fixture
def session(engine: Engine) -> Session:
    with Session(engine) as s:
        yield s  # type: ignore[misc]


def show_next(session: Session, *, now: datetime = T0, deck: Deck | None = None) -> service.Shown | None:
    """Show the local user's next item of deck (everything by default), from a freshly built queue."""
    settings = service.get_settings(session, user_id=LOCAL_USER_ID)
    queue = load_day_queue(session, user_id=LOCAL_USER_ID, deck=deck or Deck(), settings=settings, now=now)
    return service.show_next(session, user_id=LOCAL_USER_ID, queue=queue, settings=settings, now=now)


# What a failed write raises: the driver's error, or SQLAlchemy's wrapping of it.
WRITE_FAILED = (sqlite3.DatabaseError, DBAPIError)


@contextmanager
def failing_insert(engine: Engine, table: str, *, when: str = "1") -> Iterator[None]:
    """Every INSERT into table fails while inside (a real SQLite error, from a trigger), if `when` holds for it."""
    with engine.begin() as connection:
        connection.execute(text(
            f"CREATE TRIGGER test_failing_insert BEFORE INSERT ON {table} WHEN {when} "
            "BEGIN SELECT RAISE(ABORT, 'disk full (a test made this insert fail)'); END"
        ))
    try:
        yield
    finally:
        with engine.begin() as connection:
            connection.execute(text("DROP TRIGGER test_failing_insert"))
