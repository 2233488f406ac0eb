"""Card markdown for the vault: each indexed card's sections and follow-ups as markdown source.

The index already validated every active card, and it keeps the file's SHA-256. A file that still has that hash
is split by a fence-aware scan of its headings (no markdown-it parse: ten times faster, which is what keeps a
1000-card vault export within its budget); the parser's own body reader then cuts the sections, so the rules
stay the parser's. Any file that changed since it was indexed, or that the quick path reads differently from
the index, goes through the full parser.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from app.cards import parser as card_parser
from app.cards.model import SECTIONS, FollowUp, Problem, Section
from app.models import CardRow

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_BODY_SECTIONS = [key for key in SECTIONS if key != "followups"]


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
        text = data.decode("utf-8", errors="replace")
        quick = _quick(text, row) if hashlib.sha256(data).hexdigest() == row.content_hash else None
        if quick is not None:
            sources.append(CardSource(row, *quick))
            continue
        card, found = card_parser.parse_card(text, row.path)
        if card is None or card.id != row.id:
            problems.extend(found or [Problem(row.path, 1, f"the file no longer holds card '{row.id}'")])
            continue
        sources.append(CardSource(row, card.sections, card.followups))
    return sources, problems


def _quick(text: str, row: CardRow) -> tuple[dict[str, Section], tuple[FollowUp, ...]] | None:
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None
    start = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if start is None:
        return None
    tokens: list[Any] = []
    fence: str | None = None
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                fence = None
            continue
        opened = _FENCE_OPEN.match(line)
        if opened is not None:
            fence = opened.group(1)
            continue
        heading = _ATX.match(line)
        if heading is not None:
            tokens.append(SimpleNamespace(type="heading_open", tag=f"h{len(heading.group(1))}", map=[i, i + 1]))
            tokens.append(SimpleNamespace(type="inline", content=heading.group(2) or ""))
    collector = card_parser._Collector(row.path)
    sections, followups = card_parser._read_body(tokens, lines, collector)
    # Only trust the quick read when it sees exactly what the index saw.
    if collector.problems or [f.key for f in followups] != list(row.followup_keys):
        return None
    if any(key not in sections for key in _BODY_SECTIONS):
        return None
    return sections, tuple(followups)
