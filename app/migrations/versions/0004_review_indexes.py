"""review: indexes for the due queue and the answer round trip (bench/review_bench.py)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

Measured on a synthetic user with 10,000 items and ~200,000 review logs (no ANALYZE statistics, as in a
fresh install):
- "items introduced today" (queue.today, on every next_item and counts) searched item_state by user_id
  alone: 6 ms -> 0.01 ms with (user_id, first_reviewed_at);
- the study-session summary (every answer) picked ix_review_log_user_id, i.e. every log of the user:
  58 ms -> 0.01 ms with (study_session, user_id);
- the new-items query looked up card.retired_at in each card row, which sits after the large `rendered`
  JSON (overflow pages): 11.5 ms -> 6 ms with covering indexes on card and review_item.
"""

from __future__ import annotations

from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_item_state_user_first", "item_state", ["user_id", "first_reviewed_at"])
    op.create_index("ix_review_log_session_user", "review_log", ["study_session", "user_id"])
    op.create_index("ix_card_active_order", "card", ["id", "retired_at", "module_id", "topic_id", "title_en"])
    op.create_index("ix_review_item_active", "review_item", ["retired_at", "card_id", "id", "position"])


def downgrade() -> None:
    op.drop_index("ix_review_item_active", "review_item")
    op.drop_index("ix_card_active_order", "card")
    op.drop_index("ix_review_log_session_user", "review_log")
    op.drop_index("ix_item_state_user_first", "item_state")
