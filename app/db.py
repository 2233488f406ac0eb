"""The SQLite engine: WAL, foreign keys, a busy timeout, and migrations to head on open."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, event
from sqlmodel import Session, create_engine

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets pages read while a sync or an answer writes; the timeout turns lock contention into a short wait.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def make_engine(db_path: Path) -> Engine:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(f"sqlite:///{db_path}", connect_args={"check_same_thread": False})
    event.listen(engine, "connect", _on_connect)
    return engine


def include_object(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    """Alembic's autogenerate filter: card_fts and its shadow tables are FTS5, made by hand in 0001, not models."""
    return not (type_ == "table" and name is not None and name.startswith("card_fts"))


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (a no-op when it already is)."""
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def open_database(db_path: Path) -> Engine:
    engine = make_engine(db_path)
    migrate(engine)
    return engine


def begin_write(session: Session) -> None:
    """Take SQLite's write lock now, so what this transaction reads is what it changes, and nobody writes between.

    pysqlite only begins a transaction at the first INSERT, UPDATE or DELETE: reads before it each see whatever was
    committed at that moment. BEGIN IMMEDIATE waits (busy_timeout) for another writer to finish instead.
    The session's commit or rollback ends the transaction.
    """
    connection = session.connection()
    dbapi_connection = connection.connection.dbapi_connection
    assert dbapi_connection is not None
    if dbapi_connection.in_transaction:  # type: ignore[attr-defined]
        raise RuntimeError("begin_write needs the session's earlier writes committed or rolled back first")
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def session_for(engine: Engine) -> Iterator[Session]:
    with Session(engine) as session:
        yield session
