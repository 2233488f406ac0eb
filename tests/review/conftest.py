from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from app.cards.index import sync_cards
from app.db import open_database
from app.models import LOCAL_USER_ID, StudySettings
from app.review.items import sync_items

# A fixed clock: Monday 2026-11-30 09:00 UTC (domain code never reads the wall clock).
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture
def engine(tmp_path: Path, cards_dir: Path) -> Engine:
    """A real SQLite file with the small fixture deck indexed and its review items created."""
    engine = open_database(tmp_path / "study.sqlite3")
    sync_cards(engine, cards_dir, now=T0)
    sync_items(engine, now=T0)
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
