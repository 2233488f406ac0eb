"""cards, tags, links and load problems

Revision ID: 0001
Revises: 
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('card',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('path', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('content_hash', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('title_zh', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('title_en', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('module_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('module_zh', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('module_en', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('topic_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('topic_zh', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('topic_en', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('difficulty', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('tags', sa.JSON(), nullable=False),
    sa.Column('related', sa.JSON(), nullable=False),
    sa.Column('followup_keys', sa.JSON(), nullable=False),
    sa.Column('rendered', sa.JSON(), nullable=False),
    sa.Column('indexed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('retired_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('card', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_card_difficulty'), ['difficulty'], unique=False)
        batch_op.create_index(batch_op.f('ix_card_module_id'), ['module_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_card_path'), ['path'], unique=False)
        batch_op.create_index(batch_op.f('ix_card_retired_at'), ['retired_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_card_topic_id'), ['topic_id'], unique=False)

    op.create_table('load_problem',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('path', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('line', sa.Integer(), nullable=False),
    sa.Column('message', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('found_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('card_link',
    sa.Column('src_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('dst_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.ForeignKeyConstraint(['src_id'], ['card.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('src_id', 'dst_id')
    )
    with op.batch_alter_table('card_link', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_card_link_dst_id'), ['dst_id'], unique=False)

    op.create_table('card_tag',
    sa.Column('card_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('tag', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.ForeignKeyConstraint(['card_id'], ['card.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('card_id', 'tag')
    )
    with op.batch_alter_table('card_tag', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_card_tag_tag'), ['tag'], unique=False)

    # Full-text search over both languages. Chinese has no spaces, so app/cards/search.py
    # indexes CJK runs as overlapping character bigrams: any word of 2+ characters is findable.
    op.execute("CREATE VIRTUAL TABLE card_fts USING fts5(card_id UNINDEXED, zh, en, tokenize='unicode61')")


def downgrade() -> None:
    op.execute("DROP TABLE card_fts")
    with op.batch_alter_table('card_tag', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_card_tag_tag'))

    op.drop_table('card_tag')
    with op.batch_alter_table('card_link', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_card_link_dst_id'))

    op.drop_table('card_link')
    op.drop_table('load_problem')
    with op.batch_alter_table('card', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_card_topic_id'))
        batch_op.drop_index(batch_op.f('ix_card_retired_at'))
        batch_op.drop_index(batch_op.f('ix_card_path'))
        batch_op.drop_index(batch_op.f('ix_card_module_id'))
        batch_op.drop_index(batch_op.f('ix_card_difficulty'))

    op.drop_table('card')
