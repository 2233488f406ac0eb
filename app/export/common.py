"""What both exports share: the error type, the card selection and the progress callback."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import case
from sqlmodel import Session, col, select

from app.errors import AppError
from app.models import CardRow

# Called as progress(done, total) while an export works through its cards.
Progress = Callable[[int, int], None]


def no_progress(done: int, total: int) -> None:
    return None


class ExportError(AppError):
    """An export that cannot go ahead (unwritable path, a folder that is not our vault, nothing to export)."""


@dataclass(frozen=True)
class Selection:
    """Which cards to export: all of them, one module, or one topic (optionally within a module)."""

    module: str | None = None
    topic: str | None = None

    def describe(self) -> str:
        parts = [f"module {self.module}" if self.module else "", f"topic {self.topic}" if self.topic else ""]
        return ", ".join(p for p in parts if p) or "all cards"


_DIFFICULTY_ORDER = case({"easy": 0, "medium": 1, "hard": 2}, value=col(CardRow.difficulty), else_=3)


def select_cards(session: Session, *, selection: Selection) -> list[CardRow]:
    """Active cards of the selection in reading order (module, topic, difficulty, title), as the home page lists them."""
    stmt = select(CardRow).where(col(CardRow.retired_at).is_(None))
    if selection.module:
        stmt = stmt.where(col(CardRow.module_id) == selection.module)
    if selection.topic:
        stmt = stmt.where(col(CardRow.topic_id) == selection.topic)
    stmt = stmt.order_by(col(CardRow.module_id), col(CardRow.topic_id), _DIFFICULTY_ORDER, col(CardRow.title_en))
    cards = list(session.exec(stmt))
    if not cards:
        raise ExportError(f"no card to export ({selection.describe()})", status_code=404)
    return cards
