"""Keep the database's card index in step with the cards folder.

Unchanged files (same path, same SHA-256) are neither parsed nor rewritten, which is
what makes a restart cheap. A card whose file disappears is retired, never deleted;
a file that breaks keeps its last good version served and its problems listed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import json
from typing import Any

from sqlalchemy import Engine, delete, insert, text, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col, select

from app.cards.deck import CardFile, check_names, iter_card_files
from app.cards.model import LANGS, Card, Problem
from app.cards.compile import Compiled, compile_files
from app.cards.render import plain_text
from app.cards.source import card_source
from app.cards.search import index_text
from app.models import CardLink, CardRow, CardTag, LoadProblem

log = logging.getLogger(__name__)


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    retired: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{len(self.added)} added, {len(self.changed)} changed, {self.unchanged} unchanged, "
            f"{len(self.retired)} retired, {len(self.problems)} problem(s)"
        )


@dataclass(frozen=True)
class _Indexed:
    id: str
    path: str
    content_hash: str
    retired_at: datetime | None


def sync_cards(engine: Engine, cards_dir: Path, *, now: datetime | None = None) -> SyncReport:
    """Index cards_dir into the database in one transaction and record the problems found."""
    now = now or datetime.now(UTC)
    report = SyncReport()
    files = list(iter_card_files(cards_dir)) if cards_dir.is_dir() else []
    if not cards_dir.is_dir():
        report.problems.append(Problem(str(cards_dir), 0, "cards directory does not exist"))

    with Session(engine) as session:
        # Only the bookkeeping columns: a restart must not decode every card's rendered body.
        rows = {
            row[0]: _Indexed(*row)
            for row in session.exec(select(CardRow.id, CardRow.path, CardRow.content_hash, CardRow.retired_at))
        }
        by_path = {row.path: row for row in rows.values() if row.retired_at is None}

        keep: set[str] = set()  # ids that stay active
        to_compile: list[CardFile] = []
        for file in files:
            row = by_path.get(file.rel)
            if row is not None and row.content_hash == file.sha256:
                keep.add(row.id)
                report.unchanged += 1
            else:
                to_compile.append(file)
        parsed: list[Compiled] = []
        for compiled in compile_files(to_compile):
            report.problems.extend(compiled.problems)
            if compiled.card is not None:
                parsed.append(compiled)
            elif (row := by_path.get(compiled.file.rel)) is not None:
                keep.add(row.id)  # broken edit: keep serving the last good version

        fresh = _drop_duplicates(parsed, keep, rows, report)
        fresh_cards = [c.card for c in fresh if c.card is not None]
        active_ids = keep | {card.id for card in fresh_cards}
        _check_links(session, fresh_cards, keep, active_ids, report)
        report.problems.extend(check_names(fresh_cards))

        for compiled in fresh:
            existing = rows.get(compiled.card_id)
            (report.changed if existing is not None and existing.retired_at is None else report.added).append(compiled.card_id)
        _write_cards(session, fresh, now)
        retire = sorted(row.id for row in rows.values() if row.id not in active_ids and row.retired_at is None)
        for chunk in _chunks(retire, 500):
            session.execute(update(CardRow).where(col(CardRow.id).in_(chunk)).values(retired_at=now))
        report.retired.extend(retire)

        session.execute(delete(LoadProblem))
        session.add_all(LoadProblem(path=p.path, line=p.line, message=p.message, found_at=now) for p in report.problems)
        session.commit()

    for problem in report.problems:
        log.warning("card problem: %s", problem)
    return report


def _drop_duplicates(
    parsed: list[Compiled], keep: set[str], rows: dict[str, _Indexed], report: SyncReport
) -> list[Compiled]:
    owner = {card_id: rows[card_id].path for card_id in keep}
    fresh = []
    for compiled in parsed:
        card = compiled.card
        assert card is not None
        if card.id in owner and owner[card.id] != compiled.file.rel:
            line = card.field_lines.get("id", 1)
            report.problems.append(Problem(compiled.file.rel, line, f"duplicate id '{card.id}' (also used by {owner[card.id]})"))
            continue
        owner[card.id] = compiled.file.rel
        fresh.append(compiled)
    return fresh


def _check_links(
    session: Session, fresh: list[Card], keep: set[str], active_ids: set[str], report: SyncReport
) -> None:
    for card in fresh:
        line = card.field_lines.get("related", 1)
        for target in card.related:
            if target == card.id:
                report.problems.append(Problem(card.path, line, f"card relates to itself ('{target}')"))
            elif target not in active_ids:
                report.problems.append(Problem(card.path, line, f"related id '{target}' does not exist"))
    # An unchanged card may point at a card that has just gone away.
    fresh_ids = {card.id for card in fresh}
    stale = session.exec(select(CardLink, CardRow.path).join(CardRow, col(CardRow.id) == col(CardLink.src_id)))
    for link, path in stale:
        if link.src_id in keep and link.src_id not in fresh_ids and link.dst_id not in active_ids:
            report.problems.append(Problem(path, 1, f"related id '{link.dst_id}' does not exist"))


def _card_values(compiled: Compiled, now: datetime) -> dict[str, Any]:
    file, card = compiled.file, compiled.card
    assert card is not None
    return dict(
        id=card.id,
        path=file.rel,
        content_hash=file.sha256,
        title_zh=card.title.zh,
        title_en=card.title.en,
        module_id=card.module.id,
        module_zh=card.module.zh,
        module_en=card.module.en,
        topic_id=card.topic.id,
        topic_zh=card.topic.zh,
        topic_en=card.topic.en,
        difficulty=card.difficulty,
        tags=list(card.tags),
        related=list(card.related),
        followup_keys=[f.key for f in card.followups],
        rendered=compiled.rendered,
        source=card_source(card),
        indexed_at=now,
        retired_at=None,
    )


def _write_cards(session: Session, fresh: list[Compiled], now: datetime) -> None:
    """Upsert the new and changed cards and their tags, links and search text, in a few bulk statements."""
    if not fresh:
        return
    values = [_card_values(compiled, now) for compiled in fresh]
    cards = [compiled.card for compiled in fresh if compiled.card is not None]
    ids = [v["id"] for v in values]
    upsert = sqlite_insert(CardRow)
    # An upsert, never delete-and-insert: other tables (review history) will hang on card ids.
    upsert = upsert.on_conflict_do_update(
        index_elements=["id"], set_={c: upsert.excluded[c] for c in values[0] if c != "id"}
    )
    session.execute(upsert, values)
    for chunk in _chunks(ids, 500):
        session.execute(delete(CardTag).where(col(CardTag.card_id).in_(chunk)))
        session.execute(delete(CardLink).where(col(CardLink.src_id).in_(chunk)))
        session.execute(text("DELETE FROM card_fts WHERE card_id IN (SELECT value FROM json_each(:ids))"), {"ids": json.dumps(chunk)})
    tags = [{"card_id": card.id, "tag": tag} for card in cards for tag in dict.fromkeys(card.tags)]
    links = [{"src_id": card.id, "dst_id": dst} for card in cards for dst in dict.fromkeys(card.related)]
    if tags:
        session.execute(insert(CardTag), tags)
    if links:
        session.execute(insert(CardLink), links)
    texts = [{"id": card.id, **{lang: index_text(plain_text(card, lang)) for lang in LANGS}} for card in cards]
    session.execute(text("INSERT INTO card_fts (card_id, zh, en) VALUES (:id, :zh, :en)"), texts)


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
