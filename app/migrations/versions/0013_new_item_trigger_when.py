"""new_item: its item_state update trigger runs only when an item's newness can change

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-30

An answer to an item already answered changes reps from n to n + 1: whether the item is new cannot change, yet
the trigger of migration 0011 ran its two statements on every answer. With a WHEN it runs only when reps
leaves or comes back to 0, or suspended changes.
"""

from __future__ import annotations

import importlib

from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

NAME = "new_item_state_update"
NEWNESS_CAN_CHANGE = "(OLD.reps = 0) != (NEW.reps = 0) OR OLD.suspended != NEW.suspended"


def _body() -> str:
    # The same body as 0011's: only the condition to run it changes.
    new_items = importlib.import_module("app.migrations.versions.0011_new_items")
    return new_items.TRIGGERS[NAME][1]


def upgrade() -> None:
    op.execute(f"DROP TRIGGER {NAME}")
    op.execute(f"CREATE TRIGGER {NAME} AFTER UPDATE OF reps, suspended ON item_state WHEN {NEWNESS_CAN_CHANGE} BEGIN {_body()} END")


def downgrade() -> None:
    op.execute(f"DROP TRIGGER {NAME}")
    op.execute(f"CREATE TRIGGER {NAME} AFTER UPDATE OF reps, suspended ON item_state BEGIN {_body()} END")
