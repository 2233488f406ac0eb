"""stats: a covering index on review_log for per-day counts

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_review_log_user_time", "review_log", ["user_id", "reviewed_at", "item_id", "undone_at"])


def downgrade() -> None:
    op.drop_index("ix_review_log_user_time", "review_log")
