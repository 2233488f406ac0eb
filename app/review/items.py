"""Review items derived from the card index: a card's core question plus one item per follow-up.

Ids are stable (card id, card id#follow-up key) so rewording keeps history; an item whose card or
follow-up disappears is retired, never deleted, and its reviews stay.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col, select

from app.models import CardRow, ReviewItem


def item_id(card_id: str, followup_key: str | None = None) -> str:
    return card_id if followup_key is None else f"{card_id}#{followup_key}"


def sync_items(engine: Engine, *, now: datetime) -> tuple[int, int]:
    """Create items for new cards/follow-ups and retire the orphaned ones; returns (active, retired now)."""
    with Session(engine) as session:
        cards = session.exec(select(CardRow.id, CardRow.followup_keys).where(col(CardRow.retired_at).is_(None)))
        wanted: dict[str, dict[str, object]] = {}
        for card_id, keys in cards:
            wanted[card_id] = {"id": card_id, "card_id": card_id, "followup_key": None, "position": 0}
            for position, key in enumerate(keys, start=1):
                iid = item_id(card_id, key)
                wanted[iid] = {"id": iid, "card_id": card_id, "followup_key": key, "position": position}
        existing = {row[0]: row[1] for row in session.exec(select(ReviewItem.id, ReviewItem.retired_at))}
        changed = [v for k, v in wanted.items() if k not in existing or existing[k] is not None]
        if changed:
            stmt = sqlite_insert(ReviewItem)
            stmt = stmt.on_conflict_do_update(
                index_elements=["id"], set_={"retired_at": None, "position": stmt.excluded.position}
            )
            session.execute(stmt, [{**v, "retired_at": None} for v in changed])
        orphans = [k for k, retired in existing.items() if k not in wanted and retired is None]
        for start in range(0, len(orphans), 500):
            chunk = orphans[start : start + 500]
            session.execute(update(ReviewItem).where(col(ReviewItem.id).in_(chunk)).values(retired_at=now))
        session.commit()
        return len(wanted), len(orphans)
