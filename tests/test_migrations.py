"""The Alembic history builds exactly the schema the models describe, and walks down and up again."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlmodel import SQLModel

import app.models  # noqa: F401
from app.db import alembic_config, include_object, make_engine, migrate
from app.library import open_indexed


def test_migrations_match_the_models(tmp_path: Path) -> None:
    engine = make_engine(tmp_path / "db.sqlite3")
    migrate(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_object": include_object})
        assert compare_metadata(context, SQLModel.metadata) == []


def test_downgrade_to_base_and_back(tmp_path: Path) -> None:
    engine = make_engine(tmp_path / "db.sqlite3")
    migrate(engine)
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
    migrate(engine)
    with engine.connect() as conn:
        tables = {row[0] for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"card", "card_fts", "item_state", "review_log", "user"} <= tables


def test_new_items_are_backfilled_from_existing_history(tmp_path: Path, cards_dir: Path) -> None:
    """Migration 0011 fills new_item from the states already there: answered and suspended items are not new."""
    engine, _ = open_indexed(tmp_path / "db.sqlite3", cards_dir, now=datetime(2026, 11, 30, 9, tzinfo=UTC))
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0010")
        for item, reps, suspended in (("alpha", 2, 0), ("beta", 0, 1), ("gamma", 0, 0)):
            conn.execute(text(
                "INSERT INTO item_state (user_id, item_id, schema_version, fsrs_card, due, state, reps, lapses, suspended) "
                f"VALUES (1, '{item}', 1, '{{}}', '2026-11-30 09:00:00.000000', 0, {reps}, 0, {suspended})"
            ))
    migrate(engine)
    with engine.connect() as conn:
        new = {row[0] for row in conn.execute(text("SELECT item_id FROM new_item WHERE user_id = 1"))}
    assert new == {"alpha#why-raise", "beta#why-raise", "gamma", "gamma#why-raise"}
