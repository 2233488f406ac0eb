"""new_item: each user's never-answered, unsuspended items, kept by triggers

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30

Building a day queue has to find the first new items in reading order. Without this it was an anti-join
over every item against the user's states (10,000 items: 6 ms of a 16 ms build, bench/review_bench.py);
with it, a range of this table's primary key. The rule it keeps, whoever writes:

    (user, item) is here  <=>  the item is not retired, and the user has no state for it with reps > 0
                               or suspended.

Burial ends with time, not with a write, so it is checked when the queue is built, as is the card's
retirement and the deck.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

ANSWERED_OR_SUSPENDED = "(s.reps > 0 OR s.suspended)"


def _insert_for_users(item: str, *, when: str = "1") -> str:
    """Insert `item` (an expression) for every user with no answered or suspended state for it, if `when`."""
    return (
        f'INSERT OR IGNORE INTO new_item (user_id, item_id) SELECT u.id, {item} FROM "user" u WHERE {when} '
        f"AND NOT EXISTS (SELECT 1 FROM item_state s WHERE s.user_id = u.id AND s.item_id = {item} "
        f"AND {ANSWERED_OR_SUSPENDED});"
    )


ITEM_ACTIVE = "EXISTS (SELECT 1 FROM review_item r WHERE r.id = {item} AND r.retired_at IS NULL)"

TRIGGERS = {
    "new_item_review_item_insert": (
        "AFTER INSERT ON review_item WHEN NEW.retired_at IS NULL", _insert_for_users("NEW.id")
    ),
    "new_item_review_item_retire": (
        "AFTER UPDATE OF retired_at ON review_item",
        "DELETE FROM new_item WHERE item_id = NEW.id AND NEW.retired_at IS NOT NULL; "
        + _insert_for_users("NEW.id", when="NEW.retired_at IS NULL"),
    ),
    "new_item_review_item_delete": ("AFTER DELETE ON review_item", "DELETE FROM new_item WHERE item_id = OLD.id;"),
    "new_item_state_insert": (
        "AFTER INSERT ON item_state WHEN NEW.reps > 0 OR NEW.suspended",
        "DELETE FROM new_item WHERE user_id = NEW.user_id AND item_id = NEW.item_id;",
    ),
    "new_item_state_update": (
        "AFTER UPDATE OF reps, suspended ON item_state",
        "DELETE FROM new_item WHERE user_id = NEW.user_id AND item_id = NEW.item_id AND (NEW.reps > 0 OR NEW.suspended); "
        "INSERT OR IGNORE INTO new_item (user_id, item_id) SELECT NEW.user_id, NEW.item_id "
        f"WHERE NEW.reps = 0 AND NOT NEW.suspended AND {ITEM_ACTIVE.format(item='NEW.item_id')};",
    ),
    "new_item_state_delete": (
        "AFTER DELETE ON item_state",
        "INSERT OR IGNORE INTO new_item (user_id, item_id) SELECT OLD.user_id, OLD.item_id "
        f'WHERE {ITEM_ACTIVE.format(item="OLD.item_id")} AND EXISTS (SELECT 1 FROM "user" WHERE id = OLD.user_id);',
    ),
    "new_item_user_insert": (
        'AFTER INSERT ON "user"',
        "INSERT OR IGNORE INTO new_item (user_id, item_id) SELECT NEW.id, id FROM review_item WHERE retired_at IS NULL;",
    ),
}


def upgrade() -> None:
    op.create_table(
        "new_item",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["item_id"], ["review_item.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id", "item_id"),
    )
    for name, (when, body) in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {when} BEGIN {body} END")
    op.execute(
        'INSERT INTO new_item (user_id, item_id) SELECT u.id, r.id FROM "user" u, review_item r WHERE r.retired_at IS NULL '
        f"AND NOT EXISTS (SELECT 1 FROM item_state s WHERE s.user_id = u.id AND s.item_id = r.id AND {ANSWERED_OR_SUSPENDED})"
    )


def downgrade() -> None:
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER {name}")
    op.drop_table("new_item")
