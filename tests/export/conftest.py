"""An indexed copy of the real deck (math, code, Chinese and English) and a fixed clock."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from app.db import open_database
from app.library import open_indexed
from app.models import LOCAL_USER_ID, StudySettings
from tests.conftest import CARDS_DIR

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def deck_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real deck indexed once; each test gets a copy of the folder (anki's getEmptyCol pattern)."""
    root = tmp_path_factory.mktemp("export-deck")
    shutil.copytree(CARDS_DIR, root / "cards")
    engine, _ = open_indexed(root / "data" / "depthcards.sqlite3", root / "cards", now=T0)
    with Session(engine) as session:
        settings = session.get(StudySettings, LOCAL_USER_ID)
        assert settings is not None
        settings.fuzz = False  # deterministic intervals
        session.add(settings)
        session.commit()
    engine.dispose()
    return root


@pytest.fixture
def deck(tmp_path: Path, deck_template: Path) -> Path:
    """A private copy: <deck>/cards and <deck>/data/depthcards.sqlite3."""
    copy = tmp_path / "deck"
    shutil.copytree(deck_template, copy)
    return copy


@pytest.fixture
def engine(deck: Path) -> Iterator[Engine]:
    engine = open_database(deck / "data" / "depthcards.sqlite3")
    yield engine
    engine.dispose()


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    with Session(engine) as s:
        yield s
