"""queue_version: a per-user counter that triggers bump on every write the due queue depends on

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30

The reviewer keeps each user's day queue in memory and updates it per answer (app/review/queue_cache.py).
Whoever else writes (undo, bury, a settings change, a card sync, `depthcards import` or `restore` from
another process), these triggers bump the user's version in the same transaction, so a kept queue labelled
with an older version is never used again. A change to the cards themselves bumps every user.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

# Tables holding one user's rows: bump that user.
PER_USER = ("item_state", "review_log", "study_settings")
# Tables every user's queue is built from: bump everyone.
SHARED = ("card", "card_tag", "review_item")
EVENTS = ("INSERT", "UPDATE", "DELETE")


def _bump_user(row: str) -> str:
    return (
        f"INSERT INTO queue_version (user_id, version) VALUES ({row}.user_id, 1) "
        "ON CONFLICT (user_id) DO UPDATE SET version = version + 1;"
    )


BUMP_EVERYONE = (
    'INSERT INTO queue_version (user_id, version) SELECT id, 1 FROM "user" WHERE true '
    "ON CONFLICT (user_id) DO UPDATE SET version = version + 1;"
)


def _triggers() -> list[tuple[str, str, str, str]]:
    """(name, event, table, body) of every trigger."""
    triggers = []
    for table in PER_USER:
        for event in EVENTS:
            body = _bump_user("OLD" if event == "DELETE" else "NEW")
            triggers.append((f"queue_version_{table}_{event.lower()}", event, table, body))
    for table in SHARED:
        for event in EVENTS:
            triggers.append((f"queue_version_{table}_{event.lower()}", event, table, BUMP_EVERYONE))
    return triggers


def upgrade() -> None:
    op.create_table(
        "queue_version",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id"),
    )
    for name, event, table, body in _triggers():
        op.execute(f'CREATE TRIGGER {name} AFTER {event} ON "{table}" BEGIN {body} END')
    # The day queue's learning and review lists: one range of this index each.
    op.create_index("ix_item_state_user_state_due", "item_state", ["user_id", "state", "due", "item_id"])
    op.create_index("ix_item_state_user_buried", "item_state", ["user_id", "buried_until"])


def downgrade() -> None:
    op.drop_index("ix_item_state_user_buried", "item_state")
    op.drop_index("ix_item_state_user_state_due", "item_state")
    for name, *_ in _triggers():
        op.execute(f"DROP TRIGGER {name}")
    op.drop_table("queue_version")
