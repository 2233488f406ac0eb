"""Card markdown -> HTML fragments (math left for KaTeX, code highlighted by Pygments)."""

from __future__ import annotations

from typing import Any

from markdown_it.token import Token

from app.cards.markdown import MD as _MD
from app.cards.model import LANGS, Card, Span

def to_html(markdown: str) -> str:
    return _MD.render(markdown) if markdown.strip() else ""


def to_inline_html(markdown: str) -> str:
    return _MD.renderInline(markdown)


def render_card(card: Card) -> dict[str, Any]:
    """Everything a page needs, as JSON-able HTML strings keyed by section and language."""
    if not card.tokens:
        return _render_from_markdown(card)
    slicer = _TokenSlicer(list(card.tokens))
    sections = {
        key: {part: slicer.html(span) for part, span in s.spans.items()}
        for key, s in card.sections.items()
        if key != "followups"
    }
    followups = [
        {
            "key": f.key,
            "question": {lang: slicer.html(f.spans[f"q-{lang}"], strip_label=True, inline=True) for lang in LANGS},
            "answer": {lang: slicer.html(f.spans[f"a-{lang}"], strip_label=True) for lang in LANGS},
        }
        for f in card.followups
    ]
    return {"sections": sections, "followups": followups}


class _TokenSlicer:
    """Renders the block tokens of one parse that fall in a line span: one parse serves every piece."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.starts = [(i, t.map[0]) for i, t in enumerate(tokens) if t.level == 0 and t.map is not None and t.nesting >= 0]

    def html(self, span: Span, *, strip_label: bool = False, inline: bool = False) -> str:
        start, end = span
        first = next((i for i, line in self.starts if line >= start), len(self.tokens))
        stop = next((i for i, line in self.starts if line >= end), len(self.tokens))
        chosen = self.tokens[first:stop]
        if not chosen:
            return ""
        if strip_label:
            chosen = _without_label(chosen)
        if inline and len(chosen) == 3 and chosen[1].type == "inline":
            return str(_MD.renderer.render(chosen[1].children or [], _MD.options, {}))
        return str(_MD.renderer.render(chosen, _MD.options, {}))


def _without_label(tokens: list[Token]) -> list[Token]:
    """Drop the leading **问：** / **Q:** (or 答 / A) label from the first paragraph."""
    tokens = list(tokens)
    for i, token in enumerate(tokens):
        if token.type == "inline" and token.children:
            kids = [k for k in token.children if not (k.type == "text" and not k.content)]
            if len(kids) >= 3 and kids[0].type == "strong_open" and kids[2].type == "strong_close":
                rest = [k.copy() for k in kids[3:]]
                if rest and rest[0].type == "text":
                    rest[0].content = rest[0].content.lstrip()
                stripped = token.copy()
                stripped.children = rest
                tokens[i] = stripped
            break
    return tokens


def _render_from_markdown(card: Card) -> dict[str, Any]:
    """Fallback for a Card built without tokens: render each piece from its markdown."""
    pieces: list[tuple[str, bool]] = []  # (markdown, inline?)

    def add(markdown: str, *, inline: bool = False) -> int:
        pieces.append((markdown, inline))
        return len(pieces) - 1

    sections = {
        key: {"shared": add(s.shared), **{lang: add(s.text.get(lang)) for lang in LANGS}}
        for key, s in card.sections.items()
        if key != "followups"
    }
    followups = [
        {
            "key": f.key,
            "question": {lang: add(f.question.get(lang), inline=True) for lang in LANGS},
            "answer": {lang: add(f.answer.get(lang)) for lang in LANGS},
        }
        for f in card.followups
    ]
    html_pieces = _render_many(pieces)
    for parts in sections.values():
        for name, index in parts.items():
            parts[name] = html_pieces[index]  # type: ignore[assignment]
    for f in followups:
        for part in ("question", "answer"):
            f[part] = {lang: html_pieces[i] for lang, i in f[part].items()}  # type: ignore[union-attr]
    return {"sections": sections, "followups": followups}


_SEPARATOR = "\n\nDEPTHCARDS-PIECE-BREAK\n\n"
_SEPARATOR_HTML = "<p>DEPTHCARDS-PIECE-BREAK</p>\n"


def _render_many(pieces: list[tuple[str, bool]]) -> list[str]:
    """Render many small markdown pieces in one markdown-it pass (one parse per card, not one per piece).

    The pieces are independent blocks (fences and math are checked closed by the parser), so a
    separator paragraph between them splits the HTML back exactly.
    """
    source = _SEPARATOR.join(markdown.strip() or "DEPTHCARDS-EMPTY" for markdown, _ in pieces)
    chunks = _MD.render(source).split(_SEPARATOR_HTML)
    if len(chunks) != len(pieces):  # a piece defeated the separator: fall back to one pass each
        return [to_inline_html(md) if inline else to_html(md) for md, inline in pieces]
    out = []
    for chunk, (markdown, inline) in zip(chunks, pieces):
        if not markdown.strip():
            out.append("")
        elif inline and chunk.startswith("<p>") and chunk.rstrip().endswith("</p>"):
            out.append(chunk.strip()[3:-4])
        else:
            out.append(chunk)
    return out


def plain_text(card: Card, lang: str) -> str:
    """The card's searchable text in one language (markdown source is close enough to plain text)."""
    parts = [card.title.get(lang)]  # type: ignore[arg-type]
    for key, section in card.sections.items():
        if key != "followups":
            parts.append(section.text.get(lang))  # type: ignore[arg-type]
    for f in card.followups:
        parts += [f.question.get(lang), f.answer.get(lang)]  # type: ignore[arg-type]
    return "\n".join(parts)
