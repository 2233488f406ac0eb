"""study: users, settings, items, states, logs

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('user',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('review_item',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('card_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('followup_key', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('retired_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['card_id'], ['card.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('review_item', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_review_item_card_id'), ['card_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_review_item_retired_at'), ['retired_at'], unique=False)

    op.create_table('study_settings',
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('desired_retention', sa.Float(), nullable=False),
    sa.Column('new_per_day', sa.Integer(), nullable=False),
    sa.Column('max_reviews_per_day', sa.Integer(), nullable=False),
    sa.Column('learning_steps', sa.JSON(), nullable=False),
    sa.Column('relearning_steps', sa.JSON(), nullable=False),
    sa.Column('day_rollover_hour', sa.Integer(), nullable=False),
    sa.Column('timezone', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('fuzz', sa.Boolean(), nullable=False),
    sa.Column('fsrs_parameters', sa.JSON(), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('user_id')
    )
    op.create_table('item_state',
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('item_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('schema_version', sa.Integer(), nullable=False),
    sa.Column('fsrs_card', sa.JSON(), nullable=False),
    sa.Column('due', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('stability', sa.Float(), nullable=True),
    sa.Column('difficulty', sa.Float(), nullable=True),
    sa.Column('state', sa.Integer(), nullable=False),
    sa.Column('reps', sa.Integer(), nullable=False),
    sa.Column('lapses', sa.Integer(), nullable=False),
    sa.Column('first_reviewed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('last_reviewed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('buried_until', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('suspended', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['item_id'], ['review_item.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('user_id', 'item_id')
    )
    with op.batch_alter_table('item_state', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_item_state_due'), ['due'], unique=False)
        batch_op.create_index(batch_op.f('ix_item_state_item_id'), ['item_id'], unique=False)

    op.create_table('review_log',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('item_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('rating', sa.Integer(), nullable=False),
    sa.Column('reviewed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('duration_ms', sa.Integer(), nullable=True),
    sa.Column('state_before', sa.JSON(), nullable=True),
    sa.Column('state_after', sa.JSON(), nullable=False),
    sa.Column('study_session', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('token', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('undone_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['item_id'], ['review_item.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token')
    )
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_review_log_item_id'), ['item_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_review_log_reviewed_at'), ['reviewed_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_review_log_study_session'), ['study_session'], unique=False)
        batch_op.create_index(batch_op.f('ix_review_log_user_id'), ['user_id'], unique=False)

    op.create_table('shown_item',
    sa.Column('token', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('item_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('shown_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('reps_when_shown', sa.Integer(), nullable=False),
    sa.Column('candidates', sa.JSON(), nullable=False),
    sa.Column('answered_log_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['item_id'], ['review_item.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('token')
    )

    op.create_index("ix_item_state_user_due", "item_state", ["user_id", "due"])
    op.execute("INSERT INTO user (id, name, created_at) VALUES (1, 'local', CURRENT_TIMESTAMP)")
    op.execute("INSERT INTO study_settings (user_id, desired_retention, new_per_day, max_reviews_per_day, learning_steps, "
               "relearning_steps, day_rollover_hour, timezone, fuzz) VALUES (1, 0.9, 20, 200, '[60, 600]', '[600]', 4, 'UTC', 1)")


def downgrade() -> None:
    op.drop_index("ix_item_state_user_due", "item_state")
    op.drop_table('shown_item')
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_review_log_user_id'))
        batch_op.drop_index(batch_op.f('ix_review_log_study_session'))
        batch_op.drop_index(batch_op.f('ix_review_log_reviewed_at'))
        batch_op.drop_index(batch_op.f('ix_review_log_item_id'))

    op.drop_table('review_log')
    with op.batch_alter_table('item_state', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_item_state_item_id'))
        batch_op.drop_index(batch_op.f('ix_item_state_due'))

    op.drop_table('item_state')
    op.drop_table('study_settings')
    with op.batch_alter_table('review_item', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_review_item_retired_at'))
        batch_op.drop_index(batch_op.f('ix_review_item_card_id'))

    op.drop_table('review_item')
    op.drop_table('user')
