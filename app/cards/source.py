"""A card's markdown, section by section, as JSON for the index (and back): what exports build notes from."""

from __future__ import annotations

from typing import Any

from app.cards.model import Bilingual, Card, FollowUp, Section

SOURCE_VERSION = 1


def card_source(card: Card) -> dict[str, Any]:
    return {
        "version": SOURCE_VERSION,
        "sections": {
            key: {"line": s.line, "shared": s.shared, "zh": s.text.zh, "en": s.text.en}
            for key, s in card.sections.items()
        },
        "followups": [
            {"key": f.key, "line": f.line, "question": {"zh": f.question.zh, "en": f.question.en},
             "answer": {"zh": f.answer.zh, "en": f.answer.en}}
            for f in card.followups
        ],
    }


def sections_from_source(source: dict[str, Any]) -> tuple[dict[str, Section], tuple[FollowUp, ...]] | None:
    """Sections and follow-ups back from card_source(), or None if this row predates it."""
    if source.get("version") != SOURCE_VERSION:
        return None
    sections = {
        key: Section(key, s["line"], s["shared"], Bilingual(zh=s["zh"], en=s["en"])) for key, s in source["sections"].items()
    }
    followups = tuple(
        FollowUp(
            key=f["key"], line=f["line"],
            question=Bilingual(zh=f["question"]["zh"], en=f["question"]["en"]),
            answer=Bilingual(zh=f["answer"]["zh"], en=f["answer"]["en"]),
        )
        for f in source["followups"]
    )
    return sections, followups
