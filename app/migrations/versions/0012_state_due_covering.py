"""item_state: the day queue's state-and-due index also holds suspended and buried_until

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30

Building a day queue reads each due review's state row only to check that it is neither suspended nor
buried; with both in the index it never leaves it (899 due reviews: 2.65 -> 1.34 ms, bench/review_bench.py).
"""

from __future__ import annotations

from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

NAME = "ix_item_state_user_state_due"


def upgrade() -> None:
    op.drop_index(NAME, "item_state")
    op.create_index(NAME, "item_state", ["user_id", "state", "due", "item_id", "suspended", "buried_until"])


def downgrade() -> None:
    op.drop_index(NAME, "item_state")
    op.create_index(NAME, "item_state", ["user_id", "state", "due", "item_id"])
