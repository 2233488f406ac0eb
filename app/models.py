"""Every table, in one module so Alembic's metadata is complete."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index
from sqlmodel import Field, SQLModel


class CardRow(SQLModel, table=True):
    """A card as last indexed from disk. Retired (not deleted) when its file disappears: history hangs on it."""

    __tablename__ = "card"
    # The due queue checks retired_at and sorts by reading order; this covers both, so it never reads a row's
    # large `rendered` JSON (which retired_at sits after: overflow pages). Migration 0004.
    __table_args__ = (
        Index("ix_card_active_order", "id", "retired_at", "module_id", "topic_id", "title_en"),
        # A card page's previous/next within its topic, read from the index alone (migration 0007).
        Index("ix_card_topic_siblings", "topic_id", "module_id", "retired_at", "difficulty", "title_en", "id", "title_zh"),
    )

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
    # The markdown of each section and follow-up, so exports need not re-read and re-parse the files.
    source: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, server_default="{}"))
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


# Study ####################################################################
# Per user from the start: local mode has one user (id 1) and no login.

LOCAL_USER_ID = 1


class User(SQLModel, table=True):
    __tablename__ = "user"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    created_at: datetime


class StudySettings(SQLModel, table=True):
    __tablename__ = "study_settings"

    user_id: int = Field(primary_key=True, foreign_key="user.id", ondelete="CASCADE")
    desired_retention: float = 0.90
    new_per_day: int = 20
    max_reviews_per_day: int = 200
    learning_steps: list[int] = Field(default_factory=lambda: [60, 600], sa_column=Column(JSON, nullable=False))
    relearning_steps: list[int] = Field(default_factory=lambda: [600], sa_column=Column(JSON, nullable=False))
    day_rollover_hour: int = 4
    timezone: str = "UTC"
    fuzz: bool = True
    fsrs_parameters: list[float] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


class ReviewItem(SQLModel, table=True):
    """One schedulable unit: a card's core question or one of its follow-ups (the same item in zh and en)."""

    __tablename__ = "review_item"
    # Covers the new-items query of the due queue (migration 0004).
    __table_args__ = (Index("ix_review_item_active", "retired_at", "card_id", "id", "position"),)

    id: str = Field(primary_key=True)  # "<card id>" or "<card id>#<follow-up key>": stable across rewording
    card_id: str = Field(foreign_key="card.id", index=True)
    followup_key: str | None = None
    position: int = 0  # order within the card: core first, then follow-ups
    retired_at: datetime | None = Field(default=None, index=True)


class ItemState(SQLModel, table=True):
    """A user's scheduling state for one item: the fsrs card (versioned JSON) plus columns to query on."""

    __tablename__ = "item_state"
    # "Introduced today" counts by first_reviewed_at (migration 0004).
    __table_args__ = (
        Index("ix_item_state_user_first", "user_id", "first_reviewed_at"),
        # The day queue's learning and review lists, each one range of it, read from it alone (migrations 0008, 0012).
        Index("ix_item_state_user_state_due", "user_id", "state", "due", "item_id", "suspended", "buried_until"),
        # When a buried item comes back (migration 0008).
        Index("ix_item_state_user_buried", "user_id", "buried_until"),
    )

    user_id: int = Field(primary_key=True, foreign_key="user.id", ondelete="CASCADE")
    item_id: str = Field(primary_key=True, foreign_key="review_item.id", index=True)
    schema_version: int = 1
    fsrs_card: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    due: datetime
    stability: float | None = None
    difficulty: float | None = None
    state: int = 0  # 0 new, then fsrs.State: 1 learning, 2 review, 3 relearning
    reps: int = 0
    lapses: int = 0
    first_reviewed_at: datetime | None = None
    last_reviewed_at: datetime | None = None
    buried_until: datetime | None = None
    suspended: bool = False


class ReviewLog(SQLModel, table=True):
    """One answer. Never deleted: an undone answer is marked, so history is never lost."""

    __tablename__ = "review_log"
    # Covers the per-day counts and the first-answer-of-the-day ranking of the stats page, so a year of logs
    # is read from the index without touching the rows' JSON (bench/stats_bench.py).
    # A study session's summary (on every answer) from the index alone: study_session first, or SQLite reads every
    # log of the user (migrations 0004, 0010).
    __table_args__ = (
        Index("ix_review_log_user_time", "user_id", "reviewed_at", "item_id", "undone_at"),
        Index("ix_review_log_session_summary", "study_session", "user_id", "undone_at", "rating", "duration_ms"),
    )

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", ondelete="CASCADE")  # indexed by ix_review_log_user_time
    item_id: str = Field(foreign_key="review_item.id", index=True)
    rating: int
    reviewed_at: datetime
    duration_ms: int | None = None
    state_before: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    state_after: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    study_session: str  # indexed by ix_review_log_session_summary
    token: str = Field(unique=True)
    undone_at: datetime | None = None


class ShownItem(SQLModel, table=True):
    """An item as shown, with its token and the four candidate next states computed when shown."""

    __tablename__ = "shown_item"

    token: str = Field(primary_key=True)
    user_id: int = Field(foreign_key="user.id", ondelete="CASCADE")
    item_id: str = Field(foreign_key="review_item.id")
    shown_at: datetime
    reps_when_shown: int  # the item's reps then: a mismatch at answer time means someone answered first
    candidates: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    answered_log_id: int | None = None


class QueueVersion(SQLModel, table=True):
    """A counter per user that triggers bump on every write the due queue is built from (migration 0008).

    A day queue kept in memory is labelled with the version it was built at; any other version means someone
    (another request, another process) changed what is due, and the queue is built again.
    """

    __tablename__ = "queue_version"

    user_id: int = Field(primary_key=True, foreign_key="user.id", ondelete="CASCADE")
    version: int


class NewItem(SQLModel, table=True):
    """A user's item that has never been answered and is not suspended: kept by triggers (migration 0011).

    The day queue reads the first new items in reading order from here instead of comparing every item with
    the user's states. Burial, the card's retirement and the deck are checked when the queue is built.
    """

    __tablename__ = "new_item"

    user_id: int = Field(primary_key=True, foreign_key="user.id", ondelete="CASCADE")
    item_id: str = Field(primary_key=True, foreign_key="review_item.id", ondelete="CASCADE")


# Challenges ###############################################################
# A submission is stored before it runs, so a restart finds every queued or running one and runs it again.
# Challenges themselves are read from cards/ at startup (app/challenges/spec.py); only ids are stored here.


class Submission(SQLModel, table=True):
    """One graded attempt at a challenge: the code (or the chosen answer), its status and, once done, its verdict."""

    __tablename__ = "submission"
    # The history on a challenge page: one user's attempts at one challenge, newest first.
    __table_args__ = (Index("ix_submission_user_challenge", "user_id", "challenge_id", "created_at"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", ondelete="CASCADE")
    challenge_id: str | None = None  # None: a playground run (not stored today, kept possible)
    kind: str  # trigger | fix | predict
    code: str = ""
    choice: str | None = None  # predict: the id of the chosen answer
    seed: int = 0  # the random inputs of a fix challenge come from it, so a re-run grades the same inputs
    status: str = Field(default="queued", index=True)  # queued | running | done
    attempts: int = 0  # times a worker started it; a submission that keeps killing the server is given up on
    verdict: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
