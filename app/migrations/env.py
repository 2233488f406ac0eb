"""Alembic environment: runs on the connection app.db.migrate hands over (or a URL for the alembic CLI)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool
from sqlmodel import SQLModel

import app.models  # noqa: F401  - registers every table on the metadata
from app.db import include_object

config = context.config
target_metadata = SQLModel.metadata


def run_migrations() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        # render_as_batch: SQLite cannot ALTER most columns, so Alembic rebuilds tables instead.
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True, include_object=include_object)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = engine_from_config(config.get_section(config.config_ini_section) or {}, prefix="sqlalchemy.", poolclass=pool.NullPool)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True, include_object=include_object)
        with context.begin_transaction():
            context.run_migrations()


run_migrations()
