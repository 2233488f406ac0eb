"""item_state: drop (user_id, due), which nothing reads any more

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-30

The day queue reads (user_id, state, due, ...) since migration 0008, and the statistics read states by their
primary key; every answer still rewrote this index's entry.
"""

from __future__ import annotations

from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_item_state_user_due", "item_state")


def downgrade() -> None:
    op.create_index("ix_item_state_user_due", "item_state", ["user_id", "due"])
