"""card: covering index for a card page's previous/next within its topic

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30

Without it the page read every sibling's row, large `rendered` JSON included: 1.4 ms per page at 500 cards a topic.
"""

from __future__ import annotations

from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_card_topic_siblings", "card",
        ["topic_id", "module_id", "retired_at", "difficulty", "title_en", "id", "title_zh"],
    )


def downgrade() -> None:
    op.drop_index("ix_card_topic_siblings", "card")
