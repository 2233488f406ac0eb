"""The whole library in cards/: the cards, the code challenges filed next to them, and its index in the database."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from datetime import datetime

from sqlalchemy import Engine

from app.cards.deck import Deck, load_deck
from app.cards.index import SyncReport, sync_cards
from app.cards.model import Problem
from app.challenges.model import ChallengeSet
from app.challenges.spec import load_challenges
from app.db import open_database
from app.review.items import sync_items


@dataclass(frozen=True)
class Library:
    deck: Deck
    challenges: ChallengeSet

    @property
    def problems(self) -> list[Problem]:
        return [*self.deck.problems, *self.challenges.problems]


def load_library(cards_dir: Path) -> Library:
    """Everything `depthcards check` validates, with every problem located by file and line."""
    deck = load_deck(cards_dir)
    challenges = load_challenges(cards_dir, card_ids=deck.cards) if cards_dir.is_dir() else ChallengeSet()
    return Library(deck=deck, challenges=challenges)


def open_indexed(db_path: Path, cards_dir: Path, *, now: datetime) -> tuple[Engine, SyncReport]:
    """The database, migrated, with the card index and the review items brought up to date with cards_dir."""
    engine = open_database(db_path)
    report = sync_cards(engine, cards_dir, now=now)
    sync_items(engine, now=now)
    return engine, report
