"""Every table, in one module so Alembic's metadata is complete."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel


class CardRow(SQLModel, table=True):
    """A card as last indexed from disk. Retired (not deleted) when its file disappears: history hangs on it."""

    __tablename__ = "card"

    id: str = Field(primary_key=True)
    path: str = Field(index=True)
    content_hash: str
    title_zh: str
    title_en: str
    module_id: str = Field(index=True)
    module_zh: str
    module_en: str
    topic_id: str = Field(index=True)
    topic_zh: str
    topic_en: str
    difficulty: str = Field(index=True)
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    related: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    followup_keys: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    rendered: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    indexed_at: datetime
    retired_at: datetime | None = Field(default=None, index=True)


class CardTag(SQLModel, table=True):
    __tablename__ = "card_tag"

    card_id: str = Field(primary_key=True, foreign_key="card.id", ondelete="CASCADE")
    tag: str = Field(primary_key=True, index=True)


class CardLink(SQLModel, table=True):
    """A `related` edge of the knowledge graph, as written in the source card."""

    __tablename__ = "card_link"

    src_id: str = Field(primary_key=True, foreign_key="card.id", ondelete="CASCADE")
    dst_id: str = Field(primary_key=True, index=True)


class LoadProblem(SQLModel, table=True):
    """A problem found by the last card sync; the status page lists them."""

    __tablename__ = "load_problem"

    id: int | None = Field(default=None, primary_key=True)
    path: str
    line: int
    message: str
    found_at: datetime
