"""Card files -> parsed, validated and rendered cards (pure: no database)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from app.cards.deck import CardFile
from app.cards.model import Card, Problem
from app.cards.parser import parse_card
from app.cards.render import render_card


@dataclass(frozen=True)
class Compiled:
    """A card file parsed, validated and rendered (card is None when it has problems)."""

    file: CardFile
    card: Card | None
    rendered: dict[str, Any] | None
    problems: list[Problem]

    @property
    def card_id(self) -> str:
        assert self.card is not None
        return self.card.id


def compile_file(file: CardFile) -> Compiled:
    card, problems = parse_card(file.text, file.rel)
    if card is None:
        return Compiled(file, None, None, problems)
    rendered = render_card(card)
    # The tokens served their purpose (one parse for validation and rendering); don't keep them alive.
    return Compiled(file, dataclasses.replace(card, tokens=()), rendered, problems)


def compile_files(files: list[CardFile]) -> list[Compiled]:
    """Parse, validate and render each file.

    One process on purpose: a process pool measured 1.9 s against 2.2 s for 1000 cards on 2 cores, because
    each spawned worker re-imports the CLI that started the server (0.6 s); not worth its fragility.
    """
    return [compile_file(file) for file in files]
