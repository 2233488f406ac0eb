"""Read-side queries over the card index. Keyword-only, session passed in, no web types."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, text
from sqlalchemy.orm import defer
from sqlmodel import Session, col, select

from app.cards.search import match_query
from app.models import CardLink, CardRow, CardTag, LoadProblem

_DIFFICULTY_ORDER = case({"easy": 0, "medium": 1, "hard": 2}, value=col(CardRow.difficulty), else_=3)


@dataclass(frozen=True)
class Topic:
    id: str
    zh: str
    en: str
    cards: list[CardRow]


@dataclass(frozen=True)
class Module:
    id: str
    zh: str
    en: str
    topics: list[Topic]

    @property
    def count(self) -> int:
        return sum(len(t.cards) for t in self.topics)


def _active() -> Any:
    """Active cards, without their rendered HTML and markdown: lists never show them, and decoding those
    JSON columns for every card was most of a listing's cost (1000 cards: about 200 ms)."""
    return (
        select(CardRow)
        .where(col(CardRow.retired_at).is_(None))
        .options(defer(CardRow.rendered), defer(CardRow.source))  # type: ignore[arg-type]
    )


def count_active(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(CardRow).where(col(CardRow.retired_at).is_(None))) or 0)


def list_cards(
    session: Session, *, query: str | None = None, difficulty: str | None = None, tag: str | None = None
) -> list[CardRow]:
    """Active cards matching every given filter, in reading order (module, topic, difficulty, title)."""
    stmt = _active()
    if difficulty:
        stmt = stmt.where(col(CardRow.difficulty) == difficulty)
    if tag:
        stmt = stmt.where(col(CardRow.id).in_(select(CardTag.card_id).where(col(CardTag.tag) == tag)))
    if query:
        expression = match_query(query)
        if expression is None:
            return []
        hits = session.execute(text("SELECT card_id FROM card_fts WHERE card_fts MATCH :q"), {"q": expression})
        stmt = stmt.where(col(CardRow.id).in_([row[0] for row in hits]))
    stmt = stmt.order_by(col(CardRow.module_id), col(CardRow.topic_id), _DIFFICULTY_ORDER, col(CardRow.title_en))
    return list(session.exec(stmt))


def group_by_module(cards: list[CardRow]) -> list[Module]:
    modules: dict[str, Module] = {}
    topics: dict[tuple[str, str], Topic] = {}
    for card in cards:
        module = modules.setdefault(card.module_id, Module(card.module_id, card.module_zh, card.module_en, []))
        key = (card.module_id, card.topic_id)
        if key not in topics:
            topics[key] = Topic(card.topic_id, card.topic_zh, card.topic_en, [])
            module.topics.append(topics[key])
        topics[key].cards.append(card)
    return list(modules.values())


def modules_and_topics(session: Session) -> list[tuple[str, str, str, str, str, str]]:
    """(module id, zh, en, topic id, zh, en) of active cards, in reading order; reads no card bodies."""
    stmt = (
        select(CardRow.module_id, CardRow.module_zh, CardRow.module_en, CardRow.topic_id, CardRow.topic_zh, CardRow.topic_en)
        .where(col(CardRow.retired_at).is_(None))
        .distinct()
        .order_by(col(CardRow.module_id), col(CardRow.topic_id))
    )
    return [tuple(row) for row in session.exec(stmt)]  # type: ignore[misc]


def tag_counts(session: Session) -> list[tuple[str, int]]:
    stmt = (
        select(CardTag.tag, func.count())
        .join(CardRow, col(CardRow.id) == col(CardTag.card_id))
        .where(col(CardRow.retired_at).is_(None))
        .group_by(col(CardTag.tag))
        .order_by(func.count().desc(), col(CardTag.tag))
    )
    return [(tag, count) for tag, count in session.exec(stmt)]


def difficulty_counts(cards: list[CardRow]) -> dict[str, int]:
    counts = Counter(card.difficulty for card in cards)
    return {d: counts.get(d, 0) for d in ("easy", "medium", "hard")}


def get_card(session: Session, *, card_id: str) -> CardRow | None:
    """The card with this id, retired or not (a retired card is still shown, flagged)."""
    return session.get(CardRow, card_id)


@dataclass(frozen=True)
class CardTitle:
    id: str
    title_zh: str
    title_en: str


def cards_by_id(session: Session, *, ids: list[str]) -> list[CardTitle]:
    """Titles of the active cards among ids, in the order given (dangling ids are skipped)."""
    stmt = select(CardRow.id, CardRow.title_zh, CardRow.title_en).where(
        col(CardRow.retired_at).is_(None), col(CardRow.id).in_(ids)
    )
    found = {row[0]: CardTitle(*row) for row in session.exec(stmt)}
    return [found[i] for i in ids if i in found]


def backlinks(session: Session, *, card_id: str) -> list[CardTitle]:
    """Titles of the active cards whose `related` names this card."""
    # IN (subquery) rather than a join: without ANALYZE statistics SQLite would scan every card (5000 cards: 6 ms).
    sources = select(CardLink.src_id).where(col(CardLink.dst_id) == card_id)
    stmt = (
        select(CardRow.id, CardRow.title_zh, CardRow.title_en)
        .where(col(CardRow.id).in_(sources), col(CardRow.retired_at).is_(None))
        .order_by(col(CardRow.title_en))
    )
    return [CardTitle(*row) for row in session.exec(stmt)]


def topic_neighbours(session: Session, *, card: CardRow) -> tuple[CardTitle | None, CardTitle | None]:
    """The previous and next card in reading order within the card's topic (titles only: no bodies loaded)."""
    stmt = (
        select(CardRow.id, CardRow.title_zh, CardRow.title_en)
        .where(col(CardRow.retired_at).is_(None), col(CardRow.topic_id) == card.topic_id, col(CardRow.module_id) == card.module_id)
        .order_by(_DIFFICULTY_ORDER, col(CardRow.title_en))
    )
    siblings = [CardTitle(*row) for row in session.exec(stmt)]
    ids = [c.id for c in siblings]
    if card.id not in ids:
        return None, None
    i = ids.index(card.id)
    return (siblings[i - 1] if i > 0 else None, siblings[i + 1] if i + 1 < len(siblings) else None)


def graph_elements(session: Session) -> dict[str, list[dict[str, Any]]]:
    """Cards as nodes inside topic group nodes, `related` links as edges (cytoscape's element format)."""
    cards = list(session.exec(_active()))
    ids = {c.id for c in cards}
    nodes: list[dict[str, Any]] = []
    for topic_key in sorted({(c.module_id, c.topic_id, c.topic_zh, c.topic_en) for c in cards}):
        module_id, topic_id, zh, en = topic_key
        nodes.append({"data": {"id": f"topic:{module_id}/{topic_id}", "zh": zh, "en": en, "kind": "topic"}})
    for c in cards:
        nodes.append(
            {
                "data": {
                    "id": c.id,
                    "zh": c.title_zh,
                    "en": c.title_en,
                    "kind": "card",
                    "difficulty": c.difficulty,
                    "parent": f"topic:{c.module_id}/{c.topic_id}",
                    "href": f"/cards/{c.id}",
                }
            }
        )
    links = session.exec(select(CardLink).where(col(CardLink.src_id).in_(ids)))
    edges = [
        {"data": {"id": f"{link.src_id}->{link.dst_id}", "source": link.src_id, "target": link.dst_id}}
        for link in links
        if link.dst_id in ids
    ]
    return {"nodes": nodes, "edges": edges}


def load_problems(session: Session) -> list[LoadProblem]:
    return list(session.exec(select(LoadProblem).order_by(col(LoadProblem.path), col(LoadProblem.line))))


def retired_cards(session: Session) -> list[CardRow]:
    return list(session.exec(select(CardRow).where(col(CardRow.retired_at).is_not(None)).order_by(col(CardRow.id))))
