"""card: the markdown of each section, so exports read the index instead of re-parsing files

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('card', schema=None) as batch_op:
        batch_op.add_column(sa.Column('source', sa.JSON(), server_default='{}', nullable=False))
    # Cards indexed before this have no source yet: forget their hashes so the next sync re-parses them.
    op.execute("UPDATE card SET content_hash = ''")


def downgrade() -> None:
    with op.batch_alter_table('card', schema=None) as batch_op:
        batch_op.drop_column('source')
