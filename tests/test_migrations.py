"""The Alembic history builds exactly the schema the models describe, and walks down and up again."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import app.models  # noqa: F401
from app.db import alembic_config, include_object, make_engine, migrate


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
