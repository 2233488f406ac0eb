"""The whole library in cards/: the cards, and the code challenges filed next to them (which depend on the cards)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.cards.deck import Deck, load_deck
from app.cards.model import Problem
from app.challenges.model import ChallengeSet
from app.challenges.spec import load_challenges


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
