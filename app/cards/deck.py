"""A folder of card files -> valid cards plus every problem, including cross-card ones."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from app.cards.model import Card, Named, Problem
from app.cards.parser import parse_card


@dataclass(frozen=True)
class CardFile:
    path: Path
    rel: str  # path shown to people: relative to the cards dir's parent, e.g. cards/m3/x.md
    text: str
    sha256: str


@dataclass
class Deck:
    cards: dict[str, Card] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def iter_card_files(cards_dir: Path) -> Iterator[CardFile]:
    """Every *.md card under cards_dir in a stable order (README-style files starting with '_' are skipped).

    Files in a `challenges/` folder are code challenges, not cards (app/challenges/spec.py reads them).
    """
    base = cards_dir.parent
    for path in sorted(cards_dir.rglob("*.md")):
        if path.name.startswith(("_", ".")) or path.name.lower() == "readme.md":
            continue
        if "challenges" in path.relative_to(cards_dir).parts[:-1]:
            continue
        data = path.read_bytes()
        try:
            rel = str(path.relative_to(base))
        except ValueError:
            rel = str(path)
        yield CardFile(path=path, rel=rel, text=data.decode("utf-8", errors="replace"), sha256=hashlib.sha256(data).hexdigest())


def parse_files(files: Iterable[CardFile]) -> Deck:
    """Parse each file and check what no single file can: unique ids, related links, shared names."""
    deck = Deck()
    first_path: dict[str, str] = {}
    for file in files:
        if "\ufffd" in file.text:
            deck.problems.append(Problem(file.rel, 1, "file is not valid UTF-8"))
            continue
        card, problems = parse_card(file.text, file.rel)
        deck.problems.extend(problems)
        if card is None:
            continue
        if card.id in first_path:
            line = card.field_lines.get("id", 1)
            deck.problems.append(Problem(file.rel, line, f"duplicate id '{card.id}' (also used by {first_path[card.id]})"))
            continue
        first_path[card.id] = file.rel
        deck.cards[card.id] = card
    deck.problems.extend(check_links(deck.cards.values(), known_ids=set(deck.cards)))
    deck.problems.extend(check_names(deck.cards.values()))
    return deck


def check_links(cards: Iterable[Card], *, known_ids: set[str]) -> list[Problem]:
    problems = []
    for card in cards:
        line = card.field_lines.get("related", 1)
        for target in card.related:
            if target == card.id:
                problems.append(Problem(card.path, line, f"card relates to itself ('{target}')"))
            elif target not in known_ids:
                problems.append(Problem(card.path, line, f"related id '{target}' does not exist"))
    return problems


def check_names(cards: Iterable[Card]) -> list[Problem]:
    """Every card of one module (topic) must name it the same way, or menus would disagree."""
    problems = []
    seen: dict[tuple[str, str], tuple[Named, str]] = {}
    for card in cards:
        for kind, named in (("module", card.module), ("topic", card.topic)):
            first = seen.setdefault((kind, named.id), (named, card.path))
            if first[0] != named:
                problems.append(
                    Problem(
                        card.path,
                        card.field_lines.get(kind, 1),
                        f"{kind} '{named.id}' is named differently in {first[1]} ({first[0].en} / {first[0].zh})",
                    )
                )
    return problems


def load_deck(cards_dir: Path) -> Deck:
    """The valid cards under cards_dir and every problem found (challenges: app/library.py)."""
    if not cards_dir.is_dir():
        return Deck(problems=[Problem(str(cards_dir), 0, "cards directory does not exist")])
    return parse_files(iter_card_files(cards_dir))
