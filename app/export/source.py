"""Card markdown for the vault: each indexed card's sections and follow-ups as markdown source.

The index stores every card's markdown by section (CardRow.source, written when the card was parsed), so an
export reads it from the database. A card whose file changed since it was indexed is parsed afresh, so the
vault never holds text the index has not validated.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from app.cards import parser as card_parser
from app.cards.model import FollowUp, Problem, Section
from app.cards.source import sections_from_source
from app.models import CardRow


@dataclass(frozen=True)
class CardSource:
    row: CardRow
    sections: dict[str, Section]
    followups: tuple[FollowUp, ...]


def read_sources(rows: list[CardRow], *, cards_dir: Path) -> tuple[list[CardSource], list[Problem]]:
    """The markdown of each indexed card (in the rows' order); cards whose file is gone or broken are reported."""
    base = cards_dir.parent
    sources: list[CardSource] = []
    problems: list[Problem] = []
    for row in rows:
        path = base / row.path
        try:
            data = path.read_bytes()
        except OSError as exc:
            problems.append(Problem(row.path, 0, f"cannot read the card file: {exc.strerror or exc}"))
            continue
        stored = sections_from_source(row.source) if hashlib.sha256(data).hexdigest() == row.content_hash else None
        if stored is not None:
            sources.append(CardSource(row, *stored))
            continue
        card, found = card_parser.parse_card(data.decode("utf-8", errors="replace"), row.path)
        if card is None or card.id != row.id:
            problems.extend(found or [Problem(row.path, 1, f"the file no longer holds card '{row.id}'")])
            continue
        sources.append(CardSource(row, card.sections, card.followups))
    return sources, problems
