"""review_log: the study-session summary reads the index alone

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30

The reviewer counts this session's answers, agains and seconds after every answer. The index on
(study_session, user_id) found the rows but each row was then read for rating, duration and undone_at;
with those in the index the count never leaves it (a 250-answer session: 64 -> 15 us).
"""

from __future__ import annotations

from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

OLD = ["study_session", "user_id"]
NEW = ["study_session", "user_id", "undone_at", "rating", "duration_ms"]


def upgrade() -> None:
    op.drop_index("ix_review_log_session_user", "review_log")
    op.create_index("ix_review_log_session_summary", "review_log", NEW)


def downgrade() -> None:
    op.drop_index("ix_review_log_session_summary", "review_log")
    op.create_index("ix_review_log_session_user", "review_log", OLD)
